"""numba-cuda-mlir as a CAI producer and three consumers, beside numba-cuda.

numba-cuda-mlir (`numba_cuda_mlir`, numba-cuda's successor) keeps numba-cuda's CAI code, read
in its `numba_cuda_mlir/numba_cuda/api.py` and `cudadrv/devicearray.py`: the same
`from_cuda_array_interface(desc, owner=None, sync=True)` (a mask refused, the stream made the
array's default stream and synchronized on unless `sync=False` or
NUMBA_CUDA_ARRAY_INTERFACE_SYNC=0), `as_cuda_array(obj, sync=True)`, and
`DeviceNDArray.__cuda_array_interface__`; its kernels are compiled by its own MLIR-based
`jit`. So the adapters are numba_adapter's, driving `numba_cuda_mlir.cuda` (`numba_impls`):
- `numba-mlir`: its device arrays in every layout and stream scenario numba's adapter makes;
  consumes through `cuda.as_cuda_array(obj)`;
- `numba-mlir-from-cai`: `cuda.from_cuda_array_interface(obj.__cuda_array_interface__,
  owner=obj)`;
- `numba-mlir-kernel`: the object itself passed to a `cuda.jit` copy kernel (ndim 0-3).
Each reports numba-cuda-mlir's distribution version; its kernels need no numpy shim. A
standalone reproducer writes numba-cuda's lines with numba-cuda-mlir's imports (`MlirRepro`).
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any

from caiconform.adapters._repro import Array, Pending, Repro, Snip
from caiconform.adapters.numba_adapter import (
    REPRO_SHIM,
    NumbaAdapter,
    NumbaFromCAIAdapter,
    NumbaKernelAdapter,
)

__all__ = ["NumbaMlirAdapter", "NumbaMlirFromCAIAdapter", "NumbaMlirKernelAdapter", "MlirRepro"]

#: numba-cuda's import lines -> numba-cuda-mlir's
_MLIR_IMPORTS = {
    "from numba import cuda": "from numba_cuda_mlir import cuda",
    "from numba.cuda.cudadrv.devicearray import DeviceNDArray": (
        "from numba_cuda_mlir.numba_cuda.cudadrv.devicearray import DeviceNDArray"
    ),
}


def _as_mlir(snip: Any) -> Any:
    """numba-cuda's `Snip` or `Pending` with numba-cuda-mlir's imports, and no numpy shim
    (numba-cuda-mlir 0.6.0 overloads `np.row_stack` only where numpy has it)."""
    if snip is None:
        return None
    changes: dict[str, Any] = {"imports": tuple(_MLIR_IMPORTS.get(i, i) for i in snip.imports)}
    if isinstance(snip, Snip):
        changes["setup"] = snip.setup.replace(REPRO_SHIM + "\n\n\n", "")
    return dataclasses.replace(snip, **changes)


class MlirRepro(Repro):
    """The lines of the numba-cuda adapter of the same role (`numba_impls.role`: the same
    API), with numba-cuda-mlir's imports in place of numba-cuda's."""

    distributions = MappingProxyType({"numba_cuda_mlir": "numba-cuda-mlir"})

    def __init__(self, numba: Repro) -> None:
        self.numba = numba
        self.imports = tuple(_MLIR_IMPORTS.get(i, i) for i in numba.imports)
        self.missing = numba.missing

    def consume(self, array: Array | None) -> Snip | None:
        return _as_mlir(self.numba.consume(array))

    def consume_dlpack(self, array: Array) -> Snip | None:
        return _as_mlir(self.numba.consume_dlpack(array))

    def hold(self) -> Snip | None:
        return _as_mlir(self.numba.hold())

    def write(self, ndim: int) -> Snip | None:
        return _as_mlir(self.numba.write(ndim))

    def produce(self, array: Array) -> Snip | None:
        return _as_mlir(self.numba.produce(array))

    def pending(self, scenario: str, array: Array) -> Pending | Snip | None:
        return _as_mlir(self.numba.pending(scenario, array))


class _Mlir:
    """What differs from numba-cuda: the module, the distribution, the implementation."""

    module = "numba_cuda_mlir.cuda"
    distribution = "numba-cuda-mlir"
    implementation = "numba-cuda-mlir"
    producer_name = "numba-mlir"
    repro_import = "from numba_cuda_mlir import cuda\n"


class NumbaMlirAdapter(_Mlir, NumbaAdapter):
    """numba-cuda-mlir device arrays; consumes through `cuda.as_cuda_array(obj)`."""

    name = "numba-mlir"
    repro: Repro = MlirRepro(NumbaAdapter.repro)


class NumbaMlirFromCAIAdapter(_Mlir, NumbaFromCAIAdapter):
    """Consumes through numba-cuda-mlir's `cuda.from_cuda_array_interface(desc, owner=obj)`."""

    name = "numba-mlir-from-cai"
    repro: Repro = MlirRepro(NumbaFromCAIAdapter.repro)


class NumbaMlirKernelAdapter(_Mlir, NumbaKernelAdapter):
    """Consumes by passing the object straight to a numba-cuda-mlir `cuda.jit` copy kernel."""

    name = "numba-mlir-kernel"
    repro: Repro = MlirRepro(NumbaKernelAdapter.repro)
