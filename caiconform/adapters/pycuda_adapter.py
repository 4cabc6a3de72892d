"""PyCUDA as a CAI producer: `pycuda.gpuarray.to_gpu(values)`, C-contiguous layouts only.

PyCUDA's `GPUArray` exports `__cuda_array_interface__`; it has no public path that builds a
`GPUArray` from another object's CAI, so it does not consume. It is imported through
`pycuda.autoprimaryctx`, which makes the device's *primary* context current — the one the
other libraries share — instead of `pycuda.autoinit`'s private context, in which pointers from
other libraries would not resolve.

PyCUDA is not installed on the machines this project runs on, so this adapter has only been
checked for `available()` reporting that; produce is kept to the one call users make.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from caiconform.adapters import _staging
from caiconform.adapters._plain import PlainProducer

__all__ = ["PycudaAdapter", "SUPPORTED"]

#: GPUArray holds any numpy dtype as bytes
SUPPORTED = frozenset(_staging.ALL_DTYPE_KEYS)


class PycudaAdapter(PlainProducer):
    """PyCUDA GPUArrays in the primary context; producer only."""

    name = "pycuda"
    module = "pycuda.autoprimaryctx"
    distribution = "pycuda"
    supported = SUPPORTED

    def upload(self, values: np.ndarray) -> Any:
        import pycuda.autoprimaryctx  # makes the primary context current
        from pycuda import gpuarray

        array = gpuarray.to_gpu(values)
        pycuda.autoprimaryctx.context.synchronize()
        return array
