"""`tests/synthetic/probes.py` with an estimate of each probe's time (`probe_seconds`), and
probes that record when they began (tests/test_startup.py): the start probes the longest
first."""

from __future__ import annotations

import time

from tests.synthetic.probes import probe as _probe

NAMES = ["quick", "slow", "middling"]
_SECONDS = {"quick": 0.1, "slow": 9.0, "middling": 3.0}


def names() -> list[str]:
    return list(NAMES)


def probe_seconds(name: str) -> float:
    return _SECONDS[name]


def probe(name: str) -> dict:
    began = time.monotonic()  # when this probe began, to order them by
    info = _probe(name)
    info["reason"] = repr(began)
    return info
