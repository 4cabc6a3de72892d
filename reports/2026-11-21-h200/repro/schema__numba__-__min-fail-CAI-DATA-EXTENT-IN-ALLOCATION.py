# caiconform reproducer: check schema, producer numba, consumer None
# the run saw: fail [CAI-DATA-EXTENT-IN-ALLOCATION]: numba |b1 broadcast none: data[0]: got bytes [0x7f0fcda00000, 0x7f0fcda00002) end 1 bytes past allocation [0x7f0fcda00000, 0x7f0fcda00001), expected every byte reached inside one allocation [CAI-DATA-EXTENT-IN-ALLOCATION]
"""schema: the __cuda_array_interface__ numba exports for a |b1 array, layout broadcast, stream
scenario none.

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


values = make_values('|b1', [2], 0, [0])

from caiconform.adapters.registry import get
from caiconform.spec.layout import Layout
obj = get('numba').produce(values, Layout.from_dict({'shape': [2], 'strides': [0], 'offset': 0, 'pad': 0, 'kind': 'broadcast', 'portable': True}), '|b1', 'none')

print(obj.__cuda_array_interface__)

import caiconform
report = caiconform.validate(obj)
for f in report.findings:
    print(f.level, f.message)
print("ok (no MUST finding):", report.ok)
