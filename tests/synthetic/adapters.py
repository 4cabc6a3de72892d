"""A synthetic adapter source (the runner's `adapter_source`): the libraries of `checks.py`,
plus one that needs a GPU and one that is not installed, to test what a run skips and says.
`slow-X` behaves as `X` but takes a second to "import" (the first probe or preload in a
process, like a heavy library; a forked process inherits the import)."""

from __future__ import annotations

import time

from tests.synthetic.checks import THRESHOLD

_EXTRA = {
    "gpu-only": {"available": True, "reason": "", "needs_gpu": True},
    "missing": {"available": False, "reason": "missing not importable: ModuleNotFoundError"},
}


#: seconds a `slow-` library takes to import
SLOW_IMPORT_S = 1.0


def names() -> list[str]:
    return [*THRESHOLD, *_EXTRA, *(f"slow-{name}" for name in THRESHOLD)]


#: slow libraries "imported" in this process
_imported: set[str] = set()


def preload(name: str) -> None:
    """Import only (what a fork server does before it forks workers)."""
    if name.startswith("slow-") and name not in _imported:
        time.sleep(SLOW_IMPORT_S)
        _imported.add(name)


def probe(name: str) -> dict:
    preload(name)
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
