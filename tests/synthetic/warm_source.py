"""An adapter source with `warm` beside `probe`, recording which a cell's prepare called
(tests/test_speed.py): `probe` stands for the expensive one (CuPy's and RMM's version lookup)."""

from __future__ import annotations

calls: list[tuple[str, str]] = []


def names() -> list[str]:
    return ["a", "b"]


def probe(name: str) -> dict:
    calls.append(("probe", name))
    return {"name": name, "available": True, "reason": "", "version": "1", "needs_gpu": False}


def warm(name: str) -> None:
    calls.append(("warm", name))
