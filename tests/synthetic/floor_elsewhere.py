"""Floors built in a worker process (`floor_data`) and taken by the parent (`seed_floor`), as
`caiconform.checks.adversarial` does at a run's start."""

from __future__ import annotations

import os

from caiconform.checks._floor import FloorExample

#: the floor this process took from elsewhere, or built itself
cache: list[FloorExample] = []


def floor(producer: str | None, consumer: str | None) -> list[FloorExample]:
    if not cache:
        cache.extend(FloorExample(c, p) for c, p in floor_data())  # built here
    return list(cache)


FLOOR_PARTS = 2


def floor_data(part: int = 0, parts: int = 1) -> list:
    """The process that built each part is in its params."""
    return [[{"dtype": "int"}, {"n": n, "built_by": os.getpid()}] for n in range(part, 4, parts)]


def seed_floor(parts: list) -> None:
    if not cache:
        cache.extend(FloorExample(c, p) for part in parts for c, p in part)
