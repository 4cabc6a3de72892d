"""The adapter registry: built-in adapters plus third-party ones from entry points.

A library ships its own adapter by declaring, in its package metadata,

    [project.entry-points."caiconform.adapters"]
    mylib = "mylib.testing.caiconform:MyLibAdapter"

Listing (`names()`) reads only package metadata: no adapter module and no array library is
imported, so `caiconform` and its CLI stay fast. `get(name)` imports the adapter's module (not
its library: adapters import their library inside their methods) and keeps one instance per
process. An entry point that cannot be loaded — its module fails to import, the attribute is
missing, it is not an `Adapter` subclass, its constructor raises — does not break the
registry: `get` returns an `UnavailableAdapter` whose `available()` gives the reason. A
third-party name that collides with a built-in one is recorded the same way; built-ins win.
"""

from __future__ import annotations

import importlib
import threading
from importlib import metadata
from typing import Any

import numpy as np

from caiconform.adapters.base import Adapter, SkipExchange
from caiconform.spec.layout import Layout

__all__ = [
    "ENTRY_POINT_GROUP",
    "BUILTIN",
    "UnavailableAdapter",
    "names",
    "get",
    "available_names",
    "unavailable",
    "clear_cache",
]

ENTRY_POINT_GROUP = "caiconform.adapters"

#: built-in adapters: name -> "module:Class" (imported only by `get`)
BUILTIN: dict[str, str] = {
    "reference": "caiconform.adapters.reference:ReferenceAdapter",
    "numba": "caiconform.adapters.numba_adapter:NumbaAdapter",
    "numba-from-cai": "caiconform.adapters.numba_adapter:NumbaFromCAIAdapter",
    "numba-kernel": "caiconform.adapters.numba_adapter:NumbaKernelAdapter",
    "numba-mlir": "caiconform.adapters.numba_mlir_adapter:NumbaMlirAdapter",
    "numba-mlir-from-cai": "caiconform.adapters.numba_mlir_adapter:NumbaMlirFromCAIAdapter",
    "numba-mlir-kernel": "caiconform.adapters.numba_mlir_adapter:NumbaMlirKernelAdapter",
    "cupy": "caiconform.adapters.cupy_adapter:CupyAdapter",
    "torch": "caiconform.adapters.torch_adapter:TorchAdapter",
    "jax": "caiconform.adapters.jax_adapter:JaxAdapter",
    "cuda.core": "caiconform.adapters.cuda_core_adapter:CudaCoreAdapter",
    "mpi4py": "caiconform.adapters.mpi4py_adapter:Mpi4pyAdapter",
    "pycuda": "caiconform.adapters.pycuda_adapter:PycudaAdapter",
    "warp": "caiconform.adapters.warp_adapter:WarpAdapter",
    "rmm": "caiconform.adapters.rmm_adapter:RmmAdapter",
    "cuda.cccl": "caiconform.adapters.cccl_adapter:CcclAdapter",
    "dali": "caiconform.adapters.dali_adapter:DaliAdapter",
    "pyarrow": "caiconform.adapters.pyarrow_adapter:PyarrowAdapter",
    "numpy": "caiconform.adapters.numpy_adapter:NumpyAdapter",
}

_lock = threading.Lock()
_instances: dict[str, Adapter] = {}


class UnavailableAdapter(Adapter):
    """Stands in for an adapter that could not be loaded; says why, does nothing else."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason

    def version(self) -> str | None:
        return None

    def available(self) -> tuple[bool, str]:
        return False, self.reason

    def produce(
        self, values: np.ndarray, layout: Layout, typestr: str, stream_scenario: str = "none"
    ) -> Any:
        raise SkipExchange(self.reason)

    def consume(self, obj: Any) -> np.ndarray:
        raise SkipExchange(self.reason)


def _entry_points() -> dict[str, metadata.EntryPoint]:
    found: dict[str, metadata.EntryPoint] = {}
    for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(entry_point.name, entry_point)
    return found


def names() -> list[str]:
    """Every adapter name: built-ins in their fixed order, then third-party ones sorted."""
    extra = sorted(set(_entry_points()) - set(BUILTIN))
    return [*BUILTIN, *extra]


def _load_builtin(name: str) -> Adapter:
    module_name, _, class_name = BUILTIN[name].partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls()


def _load_entry_point(name: str, entry_point: metadata.EntryPoint) -> Adapter:
    where = f"entry point {name} = {entry_point.value!r} (group {ENTRY_POINT_GROUP})"
    try:
        cls = entry_point.load()
    except Exception as exc:  # a third party's import error must not break the registry
        return UnavailableAdapter(name, f"{where} failed to load: {type(exc).__name__}: {exc}")
    if not (isinstance(cls, type) and issubclass(cls, Adapter)):
        return UnavailableAdapter(name, f"{where} is {cls!r}, not an Adapter subclass")
    try:
        adapter = cls()
    except Exception as exc:  # nor may its constructor
        return UnavailableAdapter(name, f"{where} could not be constructed: {exc}")
    if adapter.name != name:
        adapter.name = name
    return adapter


def get(name: str) -> Adapter:
    """The adapter called `name` (one instance per process). KeyError for an unknown name."""
    with _lock:
        if name in _instances:
            return _instances[name]
        if name in BUILTIN:
            adapter = _load_builtin(name)
        else:
            entry_points = _entry_points()
            if name not in entry_points:
                raise KeyError(f"no adapter named {name!r}; known adapters: {', '.join(names())}")
            adapter = _load_entry_point(name, entry_points[name])
        _instances[name] = adapter
        return adapter


def available_names() -> list[str]:
    """Names of the adapters whose library works here (this imports those libraries)."""
    return [name for name in names() if get(name).available()[0]]


def unavailable() -> dict[str, str]:
    """name -> reason, for every adapter that is not available here, shadowed entry points
    included (under "<name> (entry point)")."""
    reasons = {}
    for name in names():
        ok, why = get(name).available()
        if not ok:
            reasons[name] = why
    for name, entry_point in _entry_points().items():
        if name in BUILTIN:
            reasons[f"{name} (entry point)"] = (
                f"entry point {name} = {entry_point.value!r} is shadowed by the built-in adapter"
            )
    return reasons


def clear_cache() -> None:
    """Forget the cached instances (tests; a process normally keeps them for its lifetime)."""
    with _lock:
        _instances.clear()
