"""A synthetic adapter source (the runner's `adapter_source`): the libraries of `checks.py`,
plus one that needs a GPU and one that is not installed, to test what a run skips and says.
`slow-X` behaves as `X` but takes a second to "import" (the first probe or preload in a
process, like a heavy library; a forked process inherits the import)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.synthetic.checks import THRESHOLD

#: set: a library `crash-import` is known, whose import (preload or probe) aborts the process
CRASH_IMPORT_ENV = "CAICONFORM_TEST_CRASH_IMPORT"
#: a directory of worker logs: each probe waits (up to 20 s) for a fork server there to say
#: its preload is done, and says in its version whether it saw one (a test of the start order)
PROBE_WAITS_ENV = "CAICONFORM_TEST_PROBE_WAITS"

_EXTRA = {
    "gpu-only": {"available": True, "reason": "", "needs_gpu": True},
    "missing": {"available": False, "reason": "missing not importable: ModuleNotFoundError"},
}


#: seconds a `slow-` library takes to import
SLOW_IMPORT_S = 1.0


def names() -> list[str]:
    crash = ["crash-import"] if os.environ.get(CRASH_IMPORT_ENV) else []
    return [*THRESHOLD, *_EXTRA, *(f"slow-{name}" for name in THRESHOLD), *crash]


#: slow libraries "imported" in this process
_imported: set[str] = set()


def preload(name: str) -> None:
    """Import only (what a fork server does before it forks workers)."""
    if name == "crash-import":
        os.abort()
    if name.startswith("slow-") and name not in _imported:
        time.sleep(SLOW_IMPORT_S)
        _imported.add(name)


def _preloaded_server(logs: Path) -> bool:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for log in logs.glob("worker-*.log"):
            if "fork server: preloaded" in log.read_text(errors="replace"):
                return True
        time.sleep(0.05)
    return False


def probe(name: str) -> dict:
    preload(name)
    version = "0.0-synthetic"
    if os.environ.get(PROBE_WAITS_ENV):
        seen = _preloaded_server(Path(os.environ[PROBE_WAITS_ENV]))
        version += "+saw-a-preloaded-server" if seen else "+no-server"
    info = {
        "name": name,
        "available": True,
        "reason": "",
        "version": version,
        "capabilities": ["produce", "consume"],
        "needs_gpu": False,
    }
    info.update(_EXTRA.get(name, {}))
    return info
