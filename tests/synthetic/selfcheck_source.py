"""The synthetic adapter source (`adapters.py`) whose `wrong` library's probe answers a self-check
that differed (`caiconform.adapters.selfcheck`) in the slice its examples fall in: the run must
file that library's failures under `caiconform`, a harness defect."""

from __future__ import annotations

from tests.synthetic import adapters

names = adapters.names
preload = adapters.preload

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


def probe(name: str) -> dict:
    info = adapters.probe(name)
    if name == "wrong":
        info["selfcheck"] = {"adapter": name, "seconds": 0.001, "checks": [DIFFERED]}
    elif name == "good":
        info["selfcheck"] = {"adapter": name, "seconds": 0.001, "checks": []}
    return info
