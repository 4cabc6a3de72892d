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
Each reports numba-cuda-mlir's distribution version; its kernels need no numpy shim.
"""

from __future__ import annotations

from caiconform.adapters.numba_adapter import (
    NumbaAdapter,
    NumbaFromCAIAdapter,
    NumbaKernelAdapter,
)

__all__ = ["NumbaMlirAdapter", "NumbaMlirFromCAIAdapter", "NumbaMlirKernelAdapter"]


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


class NumbaMlirFromCAIAdapter(_Mlir, NumbaFromCAIAdapter):
    """Consumes through numba-cuda-mlir's `cuda.from_cuda_array_interface(desc, owner=obj)`."""

    name = "numba-mlir-from-cai"


class NumbaMlirKernelAdapter(_Mlir, NumbaKernelAdapter):
    """Consumes by passing the object straight to a numba-cuda-mlir `cuda.jit` copy kernel."""

    name = "numba-mlir-kernel"
