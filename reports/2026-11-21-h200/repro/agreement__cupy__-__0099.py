# caiconform reproducer: check agreement, producer cupy, consumer None
# the run saw: fail [CAI-DLPACK-AGREE]: cupy <f4 negative (3,): got DLPack strides[0] (18446744073709551612,), expected the CAI's (-4,) [CAI-DLPACK-AGREE]
"""agreement: cupy's __cuda_array_interface__ and its DLPack capsule should describe the same
pointer, shape, strides and dtype [CAI-DLPACK-AGREE].

Run with: python this_file.py
"""

import numpy as np


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
    dtype = np.dtype(typestr)
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


values = make_values('<f4', [3], 4628, [-4])

from caiconform.adapters.registry import get
from caiconform.spec.layout import Layout
obj = get('cupy').produce(values, Layout.from_dict({'shape': [3], 'strides': [-4], 'offset': 8, 'pad': 0, 'kind': 'negative', 'portable': True}), '<f4', 'none')

from cuda.core.utils import StridedMemoryView

print('CAI:', obj.__cuda_array_interface__)
view = StridedMemoryView.from_dlpack(obj, stream_ptr=-1)
print('DLPack: ptr', hex(view.ptr), 'shape', view.shape, 'strides (elements)', view.strides, 'dtype', view.dtype, 'readonly', view.readonly)
