"""The public hypothesis strategies: arguments checked up front, draws within their bounds."""

from __future__ import annotations

from math import prod

import pytest
from hypothesis import find, given
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from caiconform import strategies as cst
from caiconform import validate
from caiconform.spec.layout import LAYOUT_KINDS, Layout
from caiconform.spec.rules import RULES, Level
from caiconform.spec.scenarios import STREAM_SCENARIOS
from caiconform.spec.typestr import parse_typestr


@pytest.mark.parametrize(
    "factory",
    [
        lambda: cst.typestrs(kinds=""),
        lambda: cst.typestrs(kinds="fz"),
        lambda: cst.typestrs(byteorder="="),
        lambda: cst.typestrs(byteorder=""),
        lambda: cst.typestrs(kinds="f", itemsizes=[3]),
        lambda: cst.typestrs(itemsizes=[0]),
        lambda: cst.typestrs(max_flexible_size=0),
        lambda: cst.shapes(min_dims=-1),
        lambda: cst.shapes(min_dims=3, max_dims=2),
        lambda: cst.shapes(max_dims=33),
        lambda: cst.shapes(max_side=0),
        lambda: cst.shapes(max_side=2.5),
        lambda: cst.shapes(allow_zero=1),
        lambda: cst.layouts(kinds=[]),
        lambda: cst.layouts(kinds=["diagonal"]),
        lambda: cst.layouts(kinds=["odd"]),
        lambda: cst.layouts(kinds=["odd"], portable_only=False, itemsize=1),
        lambda: cst.layouts(itemsize=0),
        lambda: cst.layouts(shape=(2, -1)),
        lambda: cst.layouts(shape=[2, 3]),
        lambda: cst.layouts(portable_only="yes"),
        lambda: cst.interface_dicts(version=4),
        lambda: cst.interface_dicts(valid="no"),
        lambda: cst.interface_dicts(shape=(2, 3)),
        lambda: cst.mutants(typestr="<f4"),
        lambda: cst.mutants(rules=["CAI-NOT-A-RULE"]),
        lambda: cst.mutants(version=3, rules=["CAI-V0-NO-MASK"]),
        lambda: cst.mutants(version="3"),
        lambda: cst.stream_scenarios(scenarios=[]),
        lambda: cst.stream_scenarios(scenarios=["sometimes"]),
    ],
)
def test_bad_arguments_raise_invalid_argument_when_built(factory):
    with pytest.raises(InvalidArgument):
        factory()


@given(cst.typestrs(kinds="iu", byteorder="<>", itemsizes=[2, 8]))
def test_typestrs_respect_kinds_orders_and_sizes(s):
    ts = parse_typestr(s)
    assert ts.kind in "iu" and ts.byteorder in "<>" and ts.itemsize in (2, 8)


@given(cst.typestrs(kinds="bSV", byteorder="<"))
def test_order_free_kinds_are_spelled_with_a_bar(s):
    assert s.startswith("|")


@given(cst.typestrs(kinds="mM"))
def test_datetime_typestrs_carry_valid_units(s):
    assert parse_typestr(s).itemsize == 8


@given(cst.shapes(min_dims=1, max_dims=3, max_side=5, allow_zero=False))
def test_shapes_respect_bounds(shape):
    assert 1 <= len(shape) <= 3 and all(1 <= n <= 5 for n in shape)


def test_shapes_include_zero_d_and_zero_size_and_shrink_to_them():
    assert find(cst.shapes(), lambda s: True) == ()
    assert find(cst.shapes(), lambda s: len(s) >= 2) == (0, 0)
    assert find(cst.shapes(allow_zero=False), lambda s: len(s) == 1) == (1,)


@pytest.mark.parametrize("kind", LAYOUT_KINDS)
@given(data=st.data())
def test_each_layout_kind_fits_and_flags_portability_like_the_validator(kind, data):
    portable_only = kind != "odd"
    layout = data.draw(cst.layouts(kinds=[kind], itemsize=4, portable_only=portable_only))
    assert isinstance(layout, Layout) and layout.kind == kind
    assert layout.allocation_bytes(4) >= 1  # raises if the offset cannot hold the layout
    d = {
        "shape": layout.shape,
        "strides": layout.strides,
        "typestr": "<f4",
        "data": (0 if prod(layout.shape) == 0 else 4096 + layout.offset, False),
        "version": 3,
    }
    report = validate(d)
    assert report.ok
    assert ("CAI-PORT-STRIDES-ITEMSIZE" in report.rules) == (not layout.portable)


@given(cst.layouts(shape=st.just((3, 4)), itemsize=st.sampled_from([2, 8])))
def test_layouts_take_shape_and_itemsize_strategies(layout):
    assert layout.shape == (3, 4) and layout.kind != "odd"


@given(cst.interface_dicts(version=1))
def test_interface_dicts_have_the_version_asked_for(d):
    assert d["version"] == 1 and "stream" not in d


@given(cst.interface_dicts(valid=False, version=3))
def test_invalid_interface_dicts_are_mutants(mutant):
    d, rule = mutant
    assert isinstance(d, dict) and RULES[rule].versions and 3 in RULES[rule].versions
    assert rule in validate(d).rules


@given(cst.mutants(rules=["CAI-STREAM-ZERO-FORBIDDEN", "CAI-V0-NO-MASK"]))
def test_mutants_restrict_to_the_rules_asked_for(mutant):
    assert mutant.rule in ("CAI-STREAM-ZERO-FORBIDDEN", "CAI-V0-NO-MASK")
    assert mutant.interface["version"] == (3 if mutant.rule == "CAI-STREAM-ZERO-FORBIDDEN" else 0)


def test_mutations_cover_every_dict_visible_must_and_should_rule_but_the_attribute_ones():
    serious = {
        r.id
        for r in RULES.values()
        if r.id.startswith("CAI-") and r.dict_visible and r.level in (Level.MUST, Level.SHOULD)
    }
    attribute_rules = {"CAI-ATTR-DICT", "CAI-ATTR-RAISES-ATTRIBUTEERROR"}
    assert set(cst.MUTATIONS) == serious - attribute_rules
    for rule, mutation in cst.MUTATIONS.items():
        assert set(mutation.versions) <= set(RULES[rule].versions), rule


@given(cst.stream_scenarios(scenarios=["none", "pending"]))
def test_stream_scenarios_restrict(name):
    assert name in ("none", "pending")


@given(cst.stream_scenarios())
def test_stream_scenarios_are_the_adapters(name):
    assert name in STREAM_SCENARIOS


def test_cai_export_exposes_its_dict():
    d = {"shape": (1,)}
    assert cst.CAIExport(d).__cuda_array_interface__ is d
