# caiconform reproducer: check mask, producer None, consumer cuda.cccl
# the run saw: fail [CAI-MASK-TRUTH]: reference->cuda.cccl v3 mask random |b1 (1,): got the mask dropped: 1 invalid element(s) returned as valid data, expected the mask honoured, or the export refused [CAI-MASK-TRUTH]
"""mask: a CAI v3 export with mask 'random' read by cuda.cccl: invalid elements must not come back
as valid data [CAI-MASK-TRUTH].

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

from caiconform.checks.mask import mask_values
from caiconform.reference.producer import ReferenceArray
from caiconform.spec.layout import Layout

mask = mask_values('random', (1,), 0)
obj = ReferenceArray(values, Layout((1,)), '|b1', version=3, mask=mask)
print(obj.__cuda_array_interface__)
print('mask:', mask)

import numpy as np
import cupy
from cuda.compute import OpKind, unary_transform
d = obj.__cuda_array_interface__
n = int(np.prod(d['shape']))
out = cupy.empty(n, dtype=d['typestr'])
unary_transform(d_in=obj, d_out=out, op=OpKind.IDENTITY, num_items=n)
result = out.get().reshape(d['shape'])  # C order; an F-order input differs
result = getattr(result, 'values', result)

print('read:', result, type(result))
