# caiconform reproducer: check readonly, producer None, consumer numba
# the run saw: fail [CAI-DATA-READONLY-HONOURED]: reference->numba read-only |b1 (1,): got the write through the numba view reached read-only memory: 1 of 1 elements differ; first at (0,): got fe, expected 01 (bytes), expected the write refused or the data exposed read-only [CAI-DATA-READONLY-HONOURED]
"""readonly: numba imports a read-only CAI export and is asked to write through it; the read-only
memory must not change [CAI-DATA-READONLY-HONOURED].

Run with: python this_file.py
"""

import numpy as np

from caiconform.spec.dtypes import numpy_dtype


def make_values(
    typestr: str,
    shape: list[int] | tuple[int, ...],
    seed: int,
    strides: list[int] | tuple[int, ...] | None = None,
) -> np.ndarray:
    """Random element bit patterns for `typestr` and `shape`, the same for the same seed.

    Random bytes rather than random numbers: every bit pattern a dtype can hold is exercised
    (NaN payloads, infinities, subnormals, negative zero), which is what a byte-exact exchange
    must preserve. Booleans are reduced to 0/1, the only patterns a bool may hold. Along axes
    whose byte stride in `strides` is 0 (a broadcast layout: one element in memory) the values
    repeat, as they must to be storable at all.
    """
    dtype = numpy_dtype(typestr)
    shape = tuple(int(n) for n in shape)
    if strides is None:
        source = shape
    else:
        source = tuple(1 if s == 0 else n for n, s in zip(shape, strides, strict=True))
    count = 1
    for extent in source:
        count *= extent
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=count * dtype.itemsize, dtype=np.uint8)
    if dtype.kind == "b":
        raw &= 1
    return np.broadcast_to(raw.view(dtype).reshape(source), shape).copy()


values = make_values('|b1', [1], 0)

from caiconform.checks._views import hold, writer
from caiconform.reference.consumer import consume
from caiconform.reference.producer import ReferenceArray, sentinel_of
from caiconform.spec.layout import Layout

obj = ReferenceArray(values, Layout((1,)), '|b1', readonly=True)
print(obj.__cuda_array_interface__)
view = hold('numba', obj)
print('write:', writer('numba', view, sentinel_of(values))())
after = consume(obj).values
print('memory intact:', after.tobytes() == values.tobytes())
