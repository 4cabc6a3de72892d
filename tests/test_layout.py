"""Layout arithmetic, held against numpy: numpy builds a view of exactly the bytes a layout
claims and refuses one that would leave its buffer."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from caiconform import strategies as cst
from caiconform.spec.layout import (
    Layout,
    byte_extent,
    c_strides,
    element_count,
    f_strides,
    is_c_contiguous,
)


def numpy_view(layout: Layout, dtype: np.dtype) -> np.ndarray:
    """The array `layout` describes, on a buffer of exactly `allocation_bytes`; numpy raises if
    any element would lie outside it."""
    buffer = bytearray(layout.allocation_bytes(dtype.itemsize))
    return np.ndarray(
        layout.shape,
        dtype,
        buffer,
        offset=layout.offset,
        strides=layout.effective_strides(dtype.itemsize),
    )


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (1, 1, 5), (4, 1, 2)])
@pytest.mark.parametrize("itemsize", [1, 4, 8])
def test_c_and_f_strides_match_numpy(shape, itemsize):
    # (numpy 2 gives empty arrays zero strides; any strides address no byte there)
    dtype = np.dtype(f"V{itemsize}")
    assert c_strides(shape, itemsize) == np.empty(shape, dtype, order="C").strides
    assert f_strides(shape, itemsize) == np.empty(shape, dtype, order="F").strides


@pytest.mark.parametrize(
    "shape, strides, itemsize, extent",
    [
        ((), (), 4, (0, 4)),
        ((3,), None, 4, (0, 12)),
        ((3,), (-4,), 4, (-8, 4)),
        ((2, 3), (0, 8), 8, (0, 24)),
        ((2, 0), (4, 4), 4, (0, 0)),
        ((4,), (3,), 2, (0, 11)),
    ],
)
def test_byte_extent(shape, strides, itemsize, extent):
    assert byte_extent(shape, strides, itemsize) == extent


def test_byte_extent_needs_one_stride_per_dimension():
    with pytest.raises(ValueError):
        byte_extent((2, 3), (4,), 4)


@given(cst.layouts(portable_only=False), st.sampled_from(["<f4", "<f8", "|u1", "<i2", "<c16"]))
def test_every_layout_fits_its_allocation_and_numpy_agrees(layout: Layout, typestr: str):
    dtype = np.dtype(typestr)
    view = numpy_view(layout, dtype)
    lo, hi = layout.extent(dtype.itemsize)
    if element_count(layout.shape):
        low, high = np.lib.array_utils.byte_bounds(view)
        base = np.frombuffer(view.base, np.uint8).ctypes.data if view.base is not None else low
        start = view.ctypes.data
        assert (low - start, high - start) == (lo, hi)
        assert layout.offset + lo >= 0 and start - base == layout.offset
    else:
        assert (lo, hi) == (0, 0)


@given(cst.layouts(kinds=["C", "F"]))
def test_contiguity_helper_agrees_with_numpy(layout: Layout):
    view = numpy_view(layout, np.dtype("<f4"))
    if layout.kind == "C":
        assert is_c_contiguous(layout.shape, layout.strides, 4)
    assert is_c_contiguous(layout.shape, layout.strides, 4) == view.flags.c_contiguous


def test_allocation_refuses_an_offset_too_small_for_negative_strides():
    with pytest.raises(ValueError, match="too small"):
        Layout((3,), (-4,), offset=4).allocation_bytes(4)


def test_allocation_is_at_least_one_byte():
    assert Layout((0, 3)).allocation_bytes(8) == 1


def test_to_dict_round_trips_through_json_shapes():
    layout = Layout((2, 3), (24, -8), offset=16, pad=8, kind="negative")
    d = layout.to_dict()
    assert d["shape"] == [2, 3] and d["strides"] == [24, -8]
    assert Layout.from_dict(d) == layout
    assert Layout.from_dict(Layout((4,)).to_dict()) == Layout((4,))
