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
from caiconform.adapters.base import Adapter, SkipExchange
from caiconform.spec.layout import Layout

__all__ = ["PycudaAdapter", "SUPPORTED"]

#: GPUArray holds any numpy dtype as bytes
SUPPORTED = frozenset(_staging.ALL_DTYPE_KEYS)


class PycudaAdapter(Adapter):
    """PyCUDA GPUArrays in the primary context; producer only."""

    name = "pycuda"
    module = "pycuda.autoprimaryctx"
    distribution = "pycuda"
    capabilities = frozenset({"produce"})

    def available(self) -> tuple[bool, str]:
        return _staging.on_gpu(super().available())

    def produce(
        self, values: np.ndarray, layout: Layout, typestr: str, stream_scenario: str = "none"
    ) -> Any:
        values, dtype = _staging.check_request(
            "pycuda", values, layout, typestr, stream_scenario, SUPPORTED
        )
        if stream_scenario != "none":
            raise SkipExchange("the pycuda adapter covers stream scenario 'none' only")
        if not _staging.is_plain_c(layout, dtype.itemsize):
            raise SkipExchange("the pycuda adapter produces C-contiguous arrays at offset 0 only")
        import pycuda.autoprimaryctx  # makes the primary context current
        from pycuda import gpuarray

        array = gpuarray.to_gpu(np.ascontiguousarray(values))
        pycuda.autoprimaryctx.context.synchronize()
        return array
