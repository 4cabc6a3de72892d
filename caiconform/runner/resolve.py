"""Functions named by "package.module:function" strings.

Tasks, health hooks and adapter sources travel to the workers by name, so a worker imports
exactly what a task needs (and tests can point the runner at synthetic modules).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

__all__ = ["resolve"]

_resolved: dict[str, Callable] = {}


def resolve(spec: str) -> Callable:
    """The callable named by "package.module:function" (cached per process)."""
    if spec not in _resolved:
        module_name, sep, attr = spec.partition(":")
        if not sep or not module_name or not attr:
            raise ValueError(f"expected 'module:function', got {spec!r}")
        _resolved[spec] = getattr(importlib.import_module(module_name), attr)
    return _resolved[spec]
