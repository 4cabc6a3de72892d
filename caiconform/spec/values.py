"""Example values: element bit patterns rebuilt from a seed (`make_values`, and `values_source`
for a reproducer), and the bitwise, NaN-aware comparison of what a consumer read with what was
written (`compare_values`, `fields_dropped`). Values travel between the parent and a worker as a
seed, never as data.

They live in `caiconform.spec`, beside the element types they are made of (`spec.dtypes`), and
below the adapters, because both the check families and the adapters' self-check
(`adapters.selfcheck`) make and compare values with them: what "the same data" means is one
definition for every layer. Pure numpy, no GPU and no hypothesis; the strategies of seeds and
plain arrays are the families' (`checks._values`).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import numpy as np

from caiconform.spec.dtypes import numpy_dtype, padding_mask


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


def values_source(
    typestr: str,
    shape: list[int] | tuple[int, ...],
    seed: int,
    strides: list[int] | tuple[int, ...] | None = None,
) -> str:
    """Source lines that rebuild `make_values(typestr, shape, seed, strides)` in a script."""
    strides_arg = "" if strides is None else f", {list(strides)!r}"
    return (
        "import numpy as np\n\nfrom caiconform.spec.dtypes import numpy_dtype\n\n\n"
        + _make_values_source()
        + f"\n\nvalues = make_values({typestr!r}, {list(shape)!r}, {seed!r}{strides_arg})\n"
    )


@functools.cache
def _make_values_source() -> str:
    """`make_values`'s source, read once per process: every non-pass example's reproducer
    embeds it, and `inspect.getsource` tokenizes the file each time, a large share of the run
    parent's GIL time with the other source lookups."""
    return inspect.getsource(make_values)


def _native(a: np.ndarray) -> np.ndarray:
    if a.dtype.byteorder not in ("=", "|") and not a.dtype.isnative:
        return a.astype(a.dtype.newbyteorder("="))
    return a


def _same_element(expected: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """Element-wise: bit patterns equal, or both NaN (a NaN's payload is not data)."""
    # ascontiguousarray makes a 0-d array 1-d: the bytes are compared so, the result reshaped
    a = np.ascontiguousarray(expected)
    b = np.ascontiguousarray(seen)
    ab = a.view(np.uint8).reshape(a.shape + (a.dtype.itemsize,))
    bb = b.view(np.uint8).reshape(b.shape + (b.dtype.itemsize,))
    same = (ab == bb).all(axis=-1)
    if a.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            same |= np.isnan(a) & np.isnan(b)
    elif a.dtype.kind == "c":
        with np.errstate(invalid="ignore"):
            real = (a.real == b.real) | (np.isnan(a.real) & np.isnan(b.real))
            imag = (a.imag == b.imag) | (np.isnan(a.imag) & np.isnan(b.imag))
            same |= real & imag
    return same.reshape(np.shape(expected))


def compare_values(seen: Any, expected: np.ndarray) -> str | None:
    """None when `seen` holds exactly `expected`; else one line saying what differs.

    Compares shape, dtype and then bit patterns, NaN-aware: two NaNs are equal whatever their
    payload, everything else must match bit for bit (so -0.0 != 0.0 here, unlike `==`).
    """
    if not isinstance(seen, np.ndarray):
        return f"a {type(seen).__name__}, not a numpy array"
    if seen.shape != expected.shape:
        return f"shape {seen.shape}, expected {expected.shape}"
    a, b = _native(expected), _native(seen)
    if "V" in (a.dtype.kind, b.dtype.kind) and a.dtype.itemsize == b.dtype.itemsize:
        # raw bytes (an opaque or structured type exported as V<n>): compare the bytes, a
        # structured type's padding left out (padding is not data)
        keep = padding_mask(a.dtype)
        a, b = _as_bytes(a), _as_bytes(b)
        if keep is not None:
            a, b = _unpadded(a, keep), _unpadded(b, keep)
    if a.dtype != b.dtype:
        return f"dtype {seen.dtype.str}, expected {expected.dtype.str}"
    if a.size == 0:
        return None
    same = _same_element(a, b)
    if same.all():
        return None
    # flatnonzero + unravel_index, not argwhere: argwhere reads a 0-d array as 1-d, and its
    # index then fails on the 0-d array itself
    wrong = np.flatnonzero(~same)
    first = tuple(int(i) for i in np.unravel_index(int(wrong[0]), same.shape))
    got, want = repr(b[first]), repr(a[first])
    if got == want:  # same value, other bytes (a bool stored as 2, a NaN payload): show the bytes
        got, want = _element_bytes(b, first), f"{_element_bytes(a, first)} (bytes)"
    return f"{len(wrong)} of {a.size} elements differ; first at {first}: got {got}, expected {want}"


def _as_bytes(array: np.ndarray) -> np.ndarray:
    """`array` viewed as plain `V<itemsize>` items (field names and metadata dropped)."""
    return np.ascontiguousarray(array).view(np.dtype(f"V{array.dtype.itemsize}"))


def _unpadded(array: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The bytes of each item where `keep` is True, as `V<kept>` items."""
    raw = array.view(np.uint8).reshape(*array.shape, array.dtype.itemsize)[..., keep]
    return np.ascontiguousarray(raw).view(np.dtype(f"V{int(keep.sum())}")).reshape(array.shape)


def _element_bytes(array: np.ndarray, index: tuple[int, ...]) -> str:
    """The stored bytes of one element in hex (indexing a scalar would normalise them)."""
    raw = np.ascontiguousarray(array).view(np.uint8).reshape(*array.shape, array.dtype.itemsize)
    return raw[index].tobytes().hex()


def fields_dropped(seen: np.ndarray, expected: np.ndarray) -> bool:
    """True when `expected` has named fields (a structured export, its fields in descr) and
    the consumer's array `seen` has none: the bytes may be right, the element type is lost
    [CAI-PORT-DESCR-FIELDS]."""
    return expected.dtype.names is not None and seen.dtype.names is None
