"""Which Numba CUDA implementation a Numba adapter, check or EMM run drives: numba-cuda
(`numba.cuda`) or its successor numba-cuda-mlir (`numba_cuda_mlir.cuda`).

numba-cuda-mlir 0.6.0 keeps numba-cuda's public API under its own package, read in its sources:
`numba_cuda_mlir/cuda/__init__.py` re-exports `numba_cuda_mlir.numba_cuda` (as_cuda_array,
from_cuda_array_interface, device_array, streams, events, set_memory_manager, the memory-manager
classes) with its own `jit`; the driver, device arrays and config sit at numba-cuda's relative
paths (`numba_cuda_mlir/numba_cuda/cudadrv/driver.py`, `cudadrv/devicearray.py`,
`core/config.py`, which reads the same NUMBA_CUDA_MEMORY_MANAGER and
NUMBA_CUDA_ARRAY_INTERFACE_SYNC). The two install side by side, so every Numba adapter and
check takes the implementation as data (module names here) and imports only the one it drives.
Only names; nothing is imported until asked.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

__all__ = [
    "NumbaImpl",
    "IMPLS",
    "DEFAULT",
    "ROLES",
    "ADAPTERS",
    "role",
    "impl_of",
    "cuda_of",
    "twin",
    "installed",
]


@dataclass(frozen=True)
class NumbaImpl:
    """One implementation: `name` (also its distribution, for its version), `cuda` (the module a
    user imports as `cuda`), `package` (where `cudadrv/` and `core/config` live), and whether
    kernels compile under numpy 2.5 only with `numba_adapter.numpy_shim` (numba-cuda 0.30.4
    overloads `np.row_stack` unconditionally; numba-cuda-mlir 0.6.0's
    `numba_cuda/np/arrayobj.py` only `if (2, 0) <= numpy_version < (2, 5)`)."""

    name: str
    cuda: str
    package: str
    needs_shim: bool

    def import_cuda(self) -> ModuleType:
        return importlib.import_module(self.cuda)

    def submodule(self, relative: str) -> ModuleType:
        """`relative` ("cudadrv.driver", "cudadrv.devicearray", "core.config") of this one."""
        return importlib.import_module(f"{self.package}.{relative}")


IMPLS: dict[str, NumbaImpl] = {
    "numba-cuda": NumbaImpl("numba-cuda", "numba.cuda", "numba.cuda", needs_shim=True),
    "numba-cuda-mlir": NumbaImpl(
        "numba-cuda-mlir", "numba_cuda_mlir.cuda", "numba_cuda_mlir.numba_cuda", needs_shim=False
    ),
}
DEFAULT = "numba-cuda"

#: the three ways a Numba adapter consumes (numba_adapter's docstring), by numba-cuda's names
ROLES = ("numba", "numba-from-cai", "numba-kernel")

#: adapter name -> (its role, its implementation)
ADAPTERS: dict[str, tuple[str, str]] = {
    "numba": ("numba", "numba-cuda"),
    "numba-from-cai": ("numba-from-cai", "numba-cuda"),
    "numba-kernel": ("numba-kernel", "numba-cuda"),
    "numba-mlir": ("numba", "numba-cuda-mlir"),
    "numba-mlir-from-cai": ("numba-from-cai", "numba-cuda-mlir"),
    "numba-mlir-kernel": ("numba-kernel", "numba-cuda-mlir"),
}


def role(adapter: str | None) -> str | None:
    """The numba-cuda adapter name `adapter` mirrors ("numba-mlir-kernel" -> "numba-kernel"),
    None for an adapter that is no Numba one."""
    return ADAPTERS[adapter][0] if adapter in ADAPTERS else None


def impl_of(adapter: str | None) -> NumbaImpl:
    """The implementation a Numba adapter drives (numba-cuda for any other name)."""
    return IMPLS[ADAPTERS[adapter][1] if adapter in ADAPTERS else DEFAULT]


def cuda_of(adapter: str | None) -> ModuleType:
    """The `cuda` module the adapter's library calls go through (imports it)."""
    return impl_of(adapter).import_cuda()


def installed(name: str) -> str | None:
    """The installed version of implementation `name`'s distribution, None when it is not
    installed (read from the distribution's metadata: nothing is imported)."""
    from importlib import metadata

    try:
        return metadata.version(IMPLS[name].name)
    except metadata.PackageNotFoundError:
        return None


def twin(adapter: str) -> str | None:
    """The adapter of the same role under the other implementation ("numba" <->
    "numba-mlir"), None for an adapter that is no Numba one."""
    if adapter not in ADAPTERS:
        return None
    mine = ADAPTERS[adapter]
    for name, (other_role, impl) in ADAPTERS.items():
        if other_role == mine[0] and impl != mine[1]:
            return name
    return None
