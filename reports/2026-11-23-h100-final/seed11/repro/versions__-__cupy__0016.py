# caiconform reproducer: check versions, producer None, consumer cupy
# the run saw: accepted-invalid [CAI-VERSION-KNOWN]: reference->cupy version 4 <f8 (1,): got accepted, read shape (1,), expected a clean rejection (an exception) [CAI-VERSION-KNOWN]
"""versions: a CAI v2 export, version replaced by 4, read by cupy.

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


values = make_values('<f8', [1], 0)

from caiconform.reference.producer import ReferenceArray
from caiconform.spec.layout import Layout

ref = ReferenceArray(values, Layout((1,)), '<f8', version=2)
d = dict(ref.__cuda_array_interface__)
d['version'] = 4


class Export:
    __cuda_array_interface__ = d


obj = Export()

import cupy
result = cupy.asnumpy(cupy.asarray(obj))
result = getattr(result, 'values', result)

print("interface:", obj.__cuda_array_interface__)
import numpy as np
result = np.asarray(result)
print("read:", result)
print("expected:", values)
same = result.shape == values.shape and result.tobytes() == values.tobytes()
print("bitwise equal:", same)
