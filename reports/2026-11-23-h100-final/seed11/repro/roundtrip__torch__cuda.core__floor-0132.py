# caiconform reproducer: check roundtrip, producer torch, consumer cuda.core
# the run saw: rejected [CAI-PORT-OVERLAP]: torch->cuda.core |b1 broadcast (3, 4): got BufferError: only CUDA Array Interface v3 or above is supported, expected the values read back [CAI-PORT-OVERLAP]
"""roundtrip: a |b1 array, layout broadcast (3, 4) strides (0, 1), produced by torch and read by
cuda.core, should read back bit for bit.

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


values = make_values('|b1', [3, 4], 0, [0, 1])

from caiconform.adapters.registry import get
from caiconform.spec.layout import Layout
obj = get('torch').produce(values, Layout.from_dict({'shape': [3, 4], 'strides': [0, 1], 'offset': 0, 'pad': 0, 'kind': 'broadcast', 'portable': True}), '|b1', 'none')

from caiconform.adapters.cuda_core_adapter import CudaCoreAdapter
result = CudaCoreAdapter().consume(obj)  # StridedMemoryView + Buffer.copy_to
result = getattr(result, 'values', result)

print("interface:", obj.__cuda_array_interface__)
import numpy as np
result = np.asarray(result)
print("read:", result)
print("expected:", values)
same = result.shape == values.shape and result.tobytes() == values.tobytes()
print("bitwise equal:", same)
