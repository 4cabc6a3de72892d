"""A synthetic adapter source (the runner's `adapter_source`): the libraries of `checks.py`,
plus one that needs a GPU and one that is not installed, to test what a run skips and says."""

from __future__ import annotations

from tests.synthetic.checks import THRESHOLD

_EXTRA = {
    "gpu-only": {"available": True, "reason": "", "needs_gpu": True},
    "missing": {"available": False, "reason": "missing not importable: ModuleNotFoundError"},
}


def names() -> list[str]:
    return [*THRESHOLD, *_EXTRA]


def probe(name: str) -> dict:
    info = {
        "name": name,
        "available": True,
        "reason": "",
        "version": "0.0-synthetic",
        "capabilities": ["produce", "consume"],
        "needs_gpu": False,
    }
    info.update(_EXTRA.get(name, {}))
    return info
