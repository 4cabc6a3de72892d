"""The typestr and descr grammars, held against numpy where numpy has an opinion."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from caiconform import strategies as cst
from caiconform.spec.typestr import (
    KINDS,
    TypeStr,
    alignment,
    descr_error,
    descr_itemsize,
    native_byteorder,
    parse_typestr,
    typestr_error,
)

VALID = {
    "<f4": TypeStr("<", "f", 4),
    ">f8": TypeStr(">", "f", 8),
    "|b1": TypeStr("|", "b", 1),
    "|i1": TypeStr("|", "i", 1),
    "<u8": TypeStr("<", "u", 8),
    "<f2": TypeStr("<", "f", 2),
    "<f16": TypeStr("<", "f", 16),
    "<c8": TypeStr("<", "c", 8),
    "<c32": TypeStr("<", "c", 32),
    "<m8[ns]": TypeStr("<", "m", 8, "ns"),
    "<M8[D]": TypeStr("<", "M", 8, "D"),
    "<m8[25s]": TypeStr("<", "m", 8, "25s"),
    "<M8": TypeStr("<", "M", 8),
    "|O": TypeStr("|", "O", 8),
    "|O8": TypeStr("|", "O", 8),
    "|S5": TypeStr("|", "S", 5),
    "<U3": TypeStr("<", "U", 12),
    "|V12": TypeStr("|", "V", 12),
    "|t3": TypeStr("|", "t", 1),
    "|t12": TypeStr("|", "t", 2),
}

INVALID = {
    "": "byte-order character",
    "<": "byte-order character",
    "f4": "byte order 'f'",
    "=f4": "'=' is numpy dtype syntax",
    "<x4": "kind 'x'",
    "<f3": "not valid for kind 'f'",
    "<i16": "not valid for kind 'i'",
    "<b2": "not valid for kind 'b'",
    "<c4": "not valid for kind 'c'",
    "<M4": "not valid for kind 'M'",
    "<f": "needs an item size",
    "|S0": "positive size",
    "|V0": "positive size",
    "<i4[ns]": "only kinds m and M",
    "<M8[xs]": "datetime unit 'xs'",
    "<M8[ns": "unterminated",
    "<M8[0s]": "multiple must be positive",
    "<f4 ": "not a decimal number",
    "<f\u0664": "not a decimal number",
    "<f" + "4" * 70: "longer than",
}


@pytest.mark.parametrize("s, expected", VALID.items())
def test_valid_typestrs_parse(s: str, expected: TypeStr):
    assert parse_typestr(s) == expected
    assert typestr_error(s) is None


@pytest.mark.parametrize("s, reason", INVALID.items())
def test_invalid_typestrs_say_why(s: str, reason: str):
    with pytest.raises(ValueError, match=reason.replace("[", r"\[")):
        parse_typestr(s)
    assert reason in typestr_error(s)


@pytest.mark.parametrize("value", [b"<f4", 4, None, ["<f4"]])
def test_non_str_is_refused(value):
    with pytest.raises(ValueError, match="is a str"):
        parse_typestr(value)


@pytest.mark.parametrize("s", [s for s in VALID if not s.startswith("|t")])
def test_itemsize_agrees_with_numpy(s: str):
    assert parse_typestr(s).itemsize == np.dtype(s).itemsize


@given(cst.typestrs(kinds="biufcmMOSUV", byteorder="<>|"))
def test_every_drawn_typestr_parses_and_numpy_agrees(s: str):
    parsed = parse_typestr(s)
    dtype = np.dtype(s)
    assert parsed.itemsize == dtype.itemsize
    assert parsed.kind == dtype.char if parsed.kind in "OSUV" else parsed.kind == dtype.kind


@pytest.mark.parametrize(
    "s, native",
    [
        ("<f4", True),
        (">f4", False),
        ("|f4", False),
        ("|i1", True),
        (">i1", True),
        ("|b1", True),
        ("|S8", True),
        (">U2", False),
        ("|O", True),
        (">m8[s]", False),
    ],
)
def test_native_byteorder_is_the_devices_little_endian(s: str, native: bool):
    assert native_byteorder(parse_typestr(s)) is native


@pytest.mark.parametrize(
    "s, align", [("<f8", 8), ("<c16", 8), ("<U2", 4), ("|S3", 1), ("|O", 8), ("|V16", 1)]
)
def test_alignment_matches_numpy(s: str, align: int):
    assert alignment(parse_typestr(s)) == align == np.dtype(s).alignment


def test_parser_does_not_import_numpy():
    code = (
        "import sys; from caiconform.spec.typestr import parse_typestr; parse_typestr('<f4');"
        "sys.exit('numpy' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_every_kind_has_a_valid_example():
    assert {parse_typestr(s).kind for s in VALID} == set(KINDS)


# --- descr ---------------------------------------------------------------------------------

DESCRS = [
    [("", "<f4")],
    [("x", "<f4"), ("y", "<i8")],
    [("", "|V4"), ("pos", "<f8", (3,))],
    [(("Full title", "t"), "<i2")],
    [("outer", [("a", "<i4"), ("b", "|u1", (2, 2))])],
    [("empty", "<f8", (0,))],
]


@pytest.mark.parametrize("descr", DESCRS, ids=range(len(DESCRS)))
def test_descr_itemsize_agrees_with_numpy(descr):
    assert descr_error(descr) is None
    # numpy names padding fields itself; give them names to build the same layout
    named = [(f[0] or f"f{i}", *f[1:]) for i, f in enumerate(descr)]
    assert descr_itemsize(descr) == np.dtype(named).itemsize


@pytest.mark.parametrize(
    "descr, reason",
    [
        ("<f4", "is a list"),
        ((("", "<f4"),), "is a list"),
        ([], "at least one field"),
        ([["", "<f4"]], r"is a \(name, format"),
        ([("", "<f4", (1,), 0)], r"is a \(name, format"),
        ([(1, "<f4")], "field name is a str"),
        ([(("t",), "<f4")], "field name is a str"),
        ([("a", "<f4"), ("a", "<f4")], "repeats"),
        ([("", "<f3")], r"descr\[0\]: format '<f3'"),
        ([("", 4)], "typestr or a nested descr"),
        ([("", "<f4", [2])], "shape is a tuple"),
        ([("", "<f4", (-1,))], "non-negative"),
        ([("o", [("i", [])])], r"descr\[0\]\[1\]\[0\]\[1\]: a descr has at least one field"),
    ],
)
def test_invalid_descr_says_where(descr, reason):
    assert descr_error(descr) is not None
    with pytest.raises(ValueError, match=reason):
        descr_itemsize(descr)


def test_deeply_nested_descr_is_refused_not_a_recursion_error():
    descr: list = [("", "<f4")]
    for _ in range(100):
        descr = [("n", descr)]
    assert "nested deeper" in descr_error(descr)


@given(
    st.recursive(
        st.none() | st.integers() | st.text(max_size=3),
        lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner),
    )
)
def test_descr_error_never_raises(value):
    result = descr_error(value)
    assert result is None or isinstance(result, str)
