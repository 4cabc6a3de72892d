# caiconform reproducer: check streams, producer jax, consumer numba-kernel
# the run saw: rejected [CAI-PORT-READONLY]: jax->numba-kernel pending (v2, exported stream None) |b1 (2,): got BufferError: only CUDA Array Interface v3 or above is supported, expected the values after the pending work [CAI-PORT-READONLY]
"""streams: jax leaves its final write pending (pending) and numba-kernel reads at once; every
element must have its final value [CAI-SYNC-RACE-FREE].

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
obj = get('jax').produce(values, Layout.from_dict({'shape': [2], 'strides': None, 'offset': 0, 'pad': 0, 'kind': 'C', 'portable': True}), '|b1', 'pending')

print(obj.__cuda_array_interface__)

from numba import cuda
@cuda.jit
def copy1(src, dst):
    i = cuda.grid(1)
    if i < src.shape[0]:
        dst[i] = src[i]
dst = cuda.device_array(obj.__cuda_array_interface__['shape'], obj.__cuda_array_interface__['typestr'])
copy1[(dst.size + 127) // 128, 128](obj, dst)
result = dst.copy_to_host()
result = getattr(result, 'values', result)

print("interface:", obj.__cuda_array_interface__)
import numpy as np
result = np.asarray(result)
print("read:", result)
print("expected:", values)
same = result.shape == values.shape and result.tobytes() == values.tobytes()
print("bitwise equal:", same)
