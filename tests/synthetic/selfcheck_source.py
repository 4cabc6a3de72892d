"""The synthetic adapter source (`adapters.py`) whose `wrong` library's self-check differed
(`caiconform.adapters.selfcheck`) in the slice its examples fall in: the run must file that
library's failures under `caiconform`, a harness defect. `segfault`'s self-check kills its
worker: the library stays available, its self-check records the loss."""

from __future__ import annotations

import ctypes

from tests.synthetic import adapters

names = adapters.names
preload = adapters.preload
probe = adapters.probe

#: the self-check the `wrong` library's probe answers: its producer differs in every example's
#: slice (the synthetic family's examples have no layout or typestr: layout C, no dtype class)
DIFFERED = {
    "adapter": "wrong",
    "role": "producer",
    "layout": "C",
    "dtype": "",
    "memory": "device",
    "typestr": "<f4",
    "status": "differs",
    "field": "shape",
    "seen": "(1,)",
    "expected": "()",
}


def selfcheck(name: str) -> dict | None:
    if name == "segfault":
        ctypes.string_at(0)
    checks = [DIFFERED] if name == "wrong" else []
    return {"adapter": name, "seconds": 0.001, "checks": checks}
