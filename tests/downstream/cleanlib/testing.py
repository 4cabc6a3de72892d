"""cleanlib's two functions for the plugin: a factory that makes CuPy arrays (views of a larger
allocation for the strided layout kinds) and a consumer that reads any CAI object with
`cupy.asarray(obj).get()`."""

from __future__ import annotations

import numpy as np

from caiconform.adapters.base import SkipExchange
from caiconform.spec.dtypes import is_named
from caiconform.spec.layout import Layout

#: layout kinds made as real views into a larger allocation; the others as contiguous copies
VIEW_KINDS = ("F", "sliced", "padded", "negative")


def allocate(values: np.ndarray, layout: Layout, typestr: str):
    """(base allocation, the array of `values` laid out as `layout` inside it)."""
    import cupy

    if is_named(typestr):  # bfloat16, float8, structured: caiconform's names, no CuPy dtype
        raise SkipExchange(f"cleanlib has no {typestr} arrays")
    dtype = np.dtype(typestr)
    if dtype.kind not in "biufc" or dtype.itemsize > 8 * (2 if dtype.kind == "c" else 1):
        raise SkipExchange(f"cleanlib has no {typestr} arrays")
    if dtype.itemsize > 1 and not dtype.isnative:
        raise SkipExchange(f"cleanlib has no byte-swapped ({typestr}) arrays")
    host = np.asarray(values, dtype=dtype)
    if layout.kind not in VIEW_KINDS or layout.strides is None or host.size == 0:
        array = cupy.asarray(host)
        return array, array
    base = cupy.zeros(max(layout.allocation_bytes(dtype.itemsize), 1), dtype=cupy.uint8)
    view = cupy.ndarray(
        layout.shape, dtype, memptr=base.data + layout.offset, strides=layout.strides
    )
    view[...] = cupy.asarray(host)
    cupy.cuda.get_current_stream().synchronize()
    return base, view


def make_array(values: np.ndarray, layout: Layout, typestr: str, stream_scenario: str):
    """A CuPy array holding `values` in `layout` (synchronized: cleanlib has no pending work)."""
    if stream_scenario != "none":
        raise SkipExchange("cleanlib exports synchronized arrays only")
    return allocate(values, layout, typestr)[1]


def to_host(obj) -> np.ndarray:
    """Read any CAI object through CuPy."""
    import cupy

    return cupy.asarray(obj).get()
