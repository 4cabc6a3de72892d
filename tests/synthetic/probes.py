"""An adapter source whose probes say which process ran them (tests/test_startup.py): `version`
is the probing process's pid; `crash` kills that process."""

from __future__ import annotations

import os
import time

NAMES = ["a", "b", "c", "crash", "d"]


def names() -> list[str]:
    return list(NAMES)


def probe(name: str) -> dict:
    if name == "crash":
        os._exit(3)
    time.sleep(0.2)  # long enough that an idle probing process takes the next name
    return {
        "name": name,
        "available": True,
        "reason": "",
        "version": str(os.getpid()),
        "capabilities": ["produce", "consume"],
        "needs_gpu": False,
    }


def dump_state() -> list[int]:
    """[PR_GET_DUMPABLE, RLIMIT_CORE soft limit] of the calling process (Linux)."""
    import ctypes
    import resource

    return [ctypes.CDLL(None).prctl(3, 0, 0, 0, 0), resource.getrlimit(resource.RLIMIT_CORE)[0]]


def build(tag: str, seconds: float = 0.0, fail: bool = False) -> dict:
    """A library's build as `libraries.builds` names one (tests/test_startup.py): which process
    made it, after `seconds`; `fail` raises instead."""
    time.sleep(seconds)
    if fail:
        raise ValueError(f"build {tag} failed")
    return {tag: os.getpid()}
