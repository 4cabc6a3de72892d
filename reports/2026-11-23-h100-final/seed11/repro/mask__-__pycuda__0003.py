# caiconform reproducer: check mask, producer None, consumer pycuda
# the run saw: fail [CAI-MASK-TRUTH]: reference->pycuda v3 mask random |b1 (1,): got the mask dropped: 1 invalid element(s) returned as valid data, expected the mask honoured, or the export refused [CAI-MASK-TRUTH]
"""mask: a CAI v3 export with mask 'random' read by pycuda: invalid elements must not come back as
valid data [CAI-MASK-TRUTH].

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
import pycuda.autoprimaryctx
from pycuda import gpuarray
from pycuda.compiler import SourceModule
from caiconform.adapters.pycuda_adapter import GATHER_SOURCE, c_strides_of
d = obj.__cuda_array_interface__
shape, dtype = tuple(d['shape']), np.dtype(d['typestr'])
strides = d.get('strides') or c_strides_of(shape, dtype.itemsize)
n = int(np.prod(shape))
dst = gpuarray.empty(n * dtype.itemsize, np.uint8)
meta = gpuarray.to_gpu(np.array([*shape, *strides, 0], dtype=np.int64))
SourceModule(GATHER_SOURCE).get_function('gather')(obj, dst, np.int64(n), np.int32(len(shape)), np.int32(dtype.itemsize), meta, block=(256, 1, 1), grid=(max(1, -(-n // 256)), 1))
result = dst.get().view(dtype).reshape(shape)
result = getattr(result, 'values', result)

print('read:', result, type(result))
