"""`spec.dtypes.descr_dtype`: the one reading of a descr's named fields that the reference
consumer and the RMM adapter share."""

from __future__ import annotations

import numpy as np
import pytest

from caiconform.spec.dtypes import descr_dtype


def test_a_descr_naming_fields_gives_their_dtype_object_fields_included():
    assert descr_dtype([("a", "<f4"), ("", "|V4")]) == np.dtype([("a", "<f4"), ("f1", "V4")])
    assert descr_dtype([("value", "<f4"), ("object", "|O8")]).hasobject


@pytest.mark.parametrize(
    "descr",
    [None, "<f4", [("", "|V8")], [("", "<f4"), ("", "<i4")], [("a", "<q9")], [("a",)]],
)
def test_no_named_field_or_no_numpy_dtype_gives_none(descr):
    assert descr_dtype(descr) is None
