# caiconform reproducer: check streams, producer cupy, consumer pycuda
# the run saw: fail [CAI-SYNC-CONSUMER]: cupy->pycuda external (v3, exported stream 476377808) |b1 (2,): got 2 of 2 elements read before the producer's pending write (sentinel), while the reference consumer, waiting on the exported stream, read every element final: pycuda did not synchronize, expected every element after the write [CAI-SYNC-CONSUMER]
"""streams: cupy leaves its final write pending (external) and pycuda reads at once; every element
must have its final value [CAI-SYNC-RACE-FREE].

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


values = make_values('|b1', [2], 0)

from caiconform.adapters.registry import get
from caiconform.spec.layout import Layout
obj = get('cupy').produce(values, Layout.from_dict({'shape': [2], 'strides': None, 'offset': 0, 'pad': 0, 'kind': 'C', 'portable': True}), '|b1', 'external')

print(obj.__cuda_array_interface__)

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

print("interface:", obj.__cuda_array_interface__)
import numpy as np
result = np.asarray(result)
print("read:", result)
print("expected:", values)
same = result.shape == values.shape and result.tobytes() == values.tobytes()
print("bitwise equal:", same)
