# caiconform reproducer: check lifetime, producer None, consumer jax
# the run saw: rejected [CAI-CONSUMER-READS-DESCRIBED]: reference->jax <f16 (4,): got JaxRuntimeError: INVALID_ARGUMENT: Unknown NumPy dtype dtype('float128') char g kind f itemsize 16, expected a view [CAI-CONSUMER-READS-DESCRIBED]
"""lifetime: jax holds a view of a reference array; the producer is dropped and collected (memory
must stay), then the view (memory must be freed).

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


values = make_values('<f16', [4], 0)

import gc

from caiconform.checks._views import hold
from caiconform.reference.producer import ReferenceArray
from caiconform.reference.tracking import AllocationLog, TrackingMemoryManager
from caiconform.spec.layout import Layout

log = AllocationLog()
obj = ReferenceArray(values, Layout((4,)), '<f16', manager=TrackingMemoryManager(log))
base = obj.allocation.ptr
view = hold('jax', obj)
del obj
gc.collect()
print('live while the view is held:', log.is_live(base))
del view
gc.collect()
print('live after the view is dropped:', log.is_live(base))
