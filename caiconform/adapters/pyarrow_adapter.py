"""PyArrow (`pyarrow.cuda`) as a CAI consumer: `Context.buffer_from_object(obj)`.

What PyArrow does, read in `python/pyarrow/_cuda.pyx` (apache/arrow) and the "CUDA
Integration" page of its documentation (arrow.apache.org/docs/python/integration/cuda.html):
- `pyarrow.cuda` exists only in builds with CUDA enabled ("This functionality is optional and
  must have been enabled at build time"); the wheels on PyPI are built without it, so there
  `import pyarrow.cuda` fails;
- import: `Context.buffer_from_object(obj)` accepts "arbitrary objects that implement the CUDA
  array interface": it reads `data[0]`, `shape`, `strides` and `typestr`'s item size, and
  returns a `CudaBuffer` view (`foreign_buffer(addr + start, end - start, base=obj)`) of the
  contiguous byte span the array covers (`pyarrow.util.get_contiguous_span`), keeping `obj`
  as its base; it reads neither `stream`, the read-only flag nor `mask`;
- export: `CudaBuffer` has no `__cuda_array_interface__` (its bridge to other libraries is
  `to_numba()`), so PyArrow is not a CAI producer.

The consumer copies the span to the host (`CudaBuffer.copy_to_host()`) and lays the elements
out at the dict's strides relative to the span's start.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from caiconform.adapters import _staging
from caiconform.adapters._repro import Missing, Repro
from caiconform.adapters.base import Adapter
from caiconform.spec.layout import byte_extent

__all__ = ["PyarrowAdapter"]


class PyarrowAdapter(Adapter):
    """`pyarrow.cuda.Context(0).buffer_from_object(obj)`, read back with `copy_to_host`."""

    name = "pyarrow"
    module = "pyarrow.cuda"
    distribution = "pyarrow"
    capabilities = frozenset({"consume"})
    repro: Repro = Missing(
        {
            "consume": "the reproducers write no pyarrow.cuda read: no run has exercised this "
            "adapter (docs/adapters.md: PyPI's pyarrow is built without CUDA)"
        }
    )

    def available(self) -> tuple[bool, str]:
        ok, why = super().available()
        if not ok:
            version = self.version()
            if version is not None:
                why = f"pyarrow {version} is built without CUDA support: {why}"
            return False, why
        return _staging.on_gpu((True, ""))

    def consume(self, obj: Any) -> np.ndarray:
        from pyarrow import cuda

        wrapped = _staging.cai_only(obj)
        desc = wrapped.__cuda_array_interface__
        shape = tuple(desc["shape"])
        dtype = np.dtype(desc["typestr"])
        buf = cuda.Context(0).buffer_from_object(wrapped)
        raw = np.frombuffer(buf.copy_to_host(), dtype=np.uint8)
        if 0 in shape:
            return np.empty(shape, dtype)
        strides = desc.get("strides")
        lo, _ = byte_extent(shape, tuple(strides) if strides else None, dtype.itemsize)
        return np.ndarray(shape, dtype, buffer=raw, offset=-lo, strides=strides).copy()

    def repro_consume(self) -> str:
        return (
            "import numpy as np\n"
            "from pyarrow import cuda\n"
            "buf = cuda.Context(0).buffer_from_object(obj)\n"
            "raw = np.frombuffer(buf.copy_to_host(), dtype=np.uint8)\n"
        )
