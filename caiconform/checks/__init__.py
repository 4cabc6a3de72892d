"""The check families: one module per kind of conformance question.

Each family module defines `FAMILY`, `ROLES` ("pair", "producer" or "consumer"), `NEEDS_GPU`,
`examples(producer, consumer)` (a hypothesis strategy of JSON-able params, drawn in the parent),
`execute(params, producer, consumer) -> Result` (run in an isolated worker) and
`repro(params, producer, consumer) -> str` (a standalone reproducer script). A family none of
whose examples needs two streams' work to overlap says `SINGLE_QUEUE = True`: its forked workers
make their CUDA contexts with one hardware queue, much cheaper to make beside others
(`runner.forkserver.queues_for`); the streams family, whose spin exposes a consumer that does
not wait, must not. Modules are imported only when asked for, so listing the families stays
cheap.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["FAMILIES", "load"]

#: Every family, in the order a run goes through them (cheap, dict-only checks first).
FAMILIES = (
    "schema",
    "zero_size",
    "roundtrip",
    "versions",
    "readonly",
    "aliasing",
    "mask",
    "adversarial",
    "streams",
    "lifetime",
    "devices",
    "agreement",
)


def load(family: str) -> ModuleType:
    """The module of `family`; ValueError names the known families for an unknown one."""
    if family not in FAMILIES:
        raise ValueError(f"unknown check family {family!r}; expected one of {', '.join(FAMILIES)}")
    return importlib.import_module(f"caiconform.checks.{family}")
