"""Properties of the validator over generated inputs: it never raises, it passes every valid
dict, and each single-rule mutant yields exactly that rule's finding."""

from __future__ import annotations

from math import prod
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from caiconform import strategies as cst
from caiconform import validate
from caiconform.spec.findings import Report
from caiconform.spec.rules import RULES, Level
from caiconform.spec.validate import _validate, dict_extent

SERIOUS = (Level.MUST, Level.SHOULD)
KEYS = ["shape", "typestr", "data", "version", "strides", "descr", "mask", "stream"]


def _hostile(behaviour: str, payload: Any) -> Any:
    """An object whose `__cuda_array_interface__` does something unhelpful."""

    class Hostile:
        @property
        def __cuda_array_interface__(self) -> Any:
            if behaviour == "raise":
                raise RuntimeError("hostile")
            if behaviour == "attribute":
                raise AttributeError("hostile")
            if behaviour == "recurse":
                return {
                    "shape": (1,),
                    "typestr": "<f4",
                    "data": (256, False),
                    "version": 3,
                    "mask": self,
                }
            return payload

        def __eq__(self, other: object) -> bool:
            raise RuntimeError("hostile __eq__")

        __hash__ = object.__hash__

        def __index__(self) -> int:
            raise RuntimeError("hostile __index__")

        def __len__(self) -> int:
            raise RuntimeError("hostile __len__")

        @property
        def __class__(self) -> type:
            raise RuntimeError("hostile __class__")

    return Hostile()


_leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True)
    | st.text(max_size=6)
    | st.binary(max_size=4)
    | st.sampled_from(["<f4", "|b1", "=i8", "<M8[ns]", "|V4", "<U2"])
)


def _nested(children: st.SearchStrategy) -> st.SearchStrategy:
    return (
        st.lists(children, max_size=4)
        | st.lists(children, max_size=4).map(tuple)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=3), children, max_size=6)
        | st.builds(_hostile, st.sampled_from(["raise", "attribute", "recurse", "value"]), children)
    )


anything = st.recursive(_leaves, _nested, max_leaves=20)

#: dicts that look like interface dicts, every entry drawn from `anything`
near_dicts = st.dictionaries(st.sampled_from(KEYS), anything, min_size=2, max_size=8)


@st.composite
def at_address_edges(draw, past: int = 0) -> dict:
    """Valid non-empty dicts moved so their bytes end exactly at 2**64, or (negative strides)
    start exactly at address 0; `past` bytes beyond that edge when `past` > 0, where each breaks
    CAI-DATA-POINTER-RANGE alone (the pointer stays nonzero). Shrinks toward the top edge of the
    smallest dict."""
    d = draw(cst.interface_dicts(version=None).filter(lambda d: prod(d["shape"]) > 0))
    lo, hi = dict_extent(d)
    at_zero = -lo - past > 0 and draw(st.booleans())
    ptr = -lo - past if at_zero else 2**64 - hi + past
    return {**d, "data": (ptr, d["data"][1])}


def _check_report(report: Report) -> None:
    assert isinstance(report, Report)
    assert report.version in (0, 1, 2, 3)
    for f in report.findings:
        assert f.rule in RULES and f.message.endswith(f"[{f.rule}]")
    report.to_dict()


@given(anything | near_dicts)
def test_validate_never_raises(value):
    _check_report(validate(value))


@given(near_dicts, st.sampled_from([None, 0, 1, 2, 3]))
def test_validate_never_raises_at_any_version(value, version):
    _check_report(validate(value, version=version))


@given(cst.interface_dicts(version=None) | at_address_edges())
def test_valid_dicts_conform(d):
    for report in (validate(d), _validate(d, None)):  # the fast path, then the full
        assert report.ok
        assert not [f.message for f in report.findings if f.level in SERIOUS]


@given(at_address_edges(past=1) | at_address_edges(past=2**12))
def test_bytes_past_an_address_edge_break_the_pointer_range(d):
    for report in (validate(d), _validate(d, None)):
        serious = {f.rule for f in report.findings if f.level in SERIOUS}
        assert serious == {"CAI-DATA-POINTER-RANGE"}, [f.message for f in report.findings]


@given(cst.interface_dicts(version=None).map(cst.CAIExport))
def test_valid_exports_conform_through_the_attribute(obj):
    assert not [f.message for f in validate(obj).findings if f.level in SERIOUS]


@given(cst.mutants())
def test_each_mutant_breaks_exactly_its_rule(mutant):
    report = validate(mutant.interface)
    serious = {f.rule for f in report.findings if f.level in SERIOUS}
    assert serious == {mutant.rule}, [f.message for f in report.findings]
    assert report.ok == (RULES[mutant.rule].level is not Level.MUST)


@given(
    cst.interface_dicts(version=None)
    | at_address_edges()
    | at_address_edges(past=1)
    | cst.mutants().map(lambda m: m.interface)
    | near_dicts
)
def test_fast_path_agrees_with_the_full_judgement(d):
    fast, full = validate(d), _validate(d, None)
    assert (fast.findings, fast.version) == (full.findings, full.version)


@given(cst.interface_dicts(version=None).map(cst.CAIExport), st.sampled_from([None, 0, 1, 2, 3]))
def test_fast_path_agrees_for_objects_and_explicit_versions(obj, version):
    fast, full = validate(obj, version=version), _validate(obj, version)
    assert (fast.findings, fast.version) == (full.findings, full.version)


_ANY_TYPESTR = cst.typestrs(kinds="tbiufcmMOSUV", byteorder="<>|")


@given(cst.interface_dicts(version=None, typestr=_ANY_TYPESTR))
def test_valid_dicts_of_every_kind_and_byte_order_conform(d):
    assert not [f.message for f in validate(d).findings if f.level in SERIOUS]


@given(cst.mutants(typestr=_ANY_TYPESTR, shape=cst.shapes(max_dims=5, max_side=6)))
def test_mutants_of_every_kind_break_exactly_their_rule(mutant):
    report = validate(mutant.interface)
    assert {f.rule for f in report.findings if f.level in SERIOUS} == {mutant.rule}
