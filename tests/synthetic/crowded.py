"""A synthetic family whose examples slow down when a "device" is crowded, as a GPU given more
worker processes than it takes is (issue 27: 32 workers on one H100 made ordinary cells 20-100x
slower than 16).

The device is the worker's `CUDA_VISIBLE_DEVICES` ("all" without one): each example counts the
examples running on its device at once (a counter file per device under CROWD_DIR_ENV, under
`flock`), sleeps FAST_S while at most CROWD_K_ENV (default 2) run there and SLOW_S past that,
and passes with `seen` = {"device", "crowd"}. Its cells need a GPU (the `gpu-only` library):
on a machine without one they run only where the run is told of GPUs (`--gpus N`), which
then are fake ones.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from hypothesis import strategies as st

from caiconform.results.outcome import PASS, Result

FAMILY = "synthetic-crowded"
ROLES = "producer"
NEEDS_GPU = True

CROWD_DIR_ENV = "CAICONFORM_TEST_CROWD_DIR"
CROWD_K_ENV = "CAICONFORM_TEST_CROWD_K"
FAST_S = 0.05
SLOW_S = 0.5


def examples(producer: str, consumer: str | None) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({"n": st.integers(0, 10**6)})


def _add(path: Path, delta: int) -> int:
    """Add `delta` to the counter in `path` (under its lock); the new value."""
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            value = int(path.read_text() or "0") if path.exists() else 0
            value += delta
            path.write_text(str(value))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return value


def execute(params: dict, producer: str, consumer: str | None) -> Result:
    device = os.environ.get("CUDA_VISIBLE_DEVICES", "all")
    path = Path(os.environ[CROWD_DIR_ENV]) / f"device-{device}"
    crowd = _add(path, +1)
    try:
        time.sleep(FAST_S if crowd <= int(os.environ.get(CROWD_K_ENV, "2")) else SLOW_S)
    finally:
        _add(path, -1)
    return Result(PASS, seen={"device": device, "crowd": crowd})
