"""Planted mutants of `caiconform.report.standalone` (the package's entry point) that the suite
let live (issue 41, item 3): what `why_none` refuses before any template is tried, and how
`script_for_group` hands a cell's sides to its family's template.

A fake family module stands in for the templates, so each test sees exactly what
`script_for_group` passed on.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from caiconform.report import standalone
from caiconform.report.standalone import (
    FAMILIES,
    NO_CULPRIT,
    script_for_group,
    why_none,
)

HARNESS = "caiconform's own defect, not the library's"


def _group(cell: str = "roundtrip/numpy/cupy", params=None, **extra) -> dict:
    group = {
        "library": "cupy",
        "role": "consumer",
        "rule": "CAI-CONSUMER-READS-DESCRIBED",
        "reproducer": {"cell": cell, "params": {"n": 1} if params is None else params},
    }
    group.update(extra)
    return group


@pytest.fixture
def calls(monkeypatch) -> list[tuple]:
    """Every family's template replaced by one recording its arguments (and raising what
    `params["raise"]` names)."""
    seen: list[tuple] = []

    def script(group, params, producer, consumer):
        seen.append((params, producer, consumer))
        if "raise" in params:
            raise params["raise"]("params of another shape")
        return "print('OK: x')\n"

    fake = SimpleNamespace(script=script)
    monkeypatch.setattr(standalone, "_families", lambda: dict.fromkeys(FAMILIES, fake))
    return seen


def test_the_families_listed_are_the_families_with_templates():
    assert set(standalone._families()) == set(FAMILIES)


@pytest.mark.parametrize(
    "reproducer",
    [
        {},
        {"cell": "roundtrip/numpy", "params": {}},
        {"cell": "roundtrip/numpy/cupy/x", "params": {}},
        {"cell": ["roundtrip", "numpy", "cupy"], "params": {}},
        {"cell": "roundtrip/numpy/cupy", "params": None},
        {"cell": "roundtrip/numpy/cupy", "params": [1]},
    ],
)
def test_a_group_without_a_whole_example_gets_no_script(reproducer, calls):
    group = {**_group(), "reproducer": reproducer}
    assert why_none(group) == "the group carries no example (reproducer cell and params)"
    assert script_for_group(group) is None and calls == []


def test_a_family_without_a_template_is_named(calls):
    group = _group("nope/numpy/cupy")
    assert why_none(group) == "no template for family 'nope'"
    assert script_for_group(group) is None and calls == []


def test_only_the_harness_s_own_example_is_its_defect(calls):
    """PyCUDA's 0-d producer group is the adapter's upload; the same rule on any other shape
    is PyCUDA's own."""
    pycuda = {"library": "pycuda", "role": "producer", "rule": "CAI-PRODUCER-DESCRIBES-DATA"}
    zero_d = _group("schema/pycuda/-", {"layout": {"shape": []}}, **pycuda)
    assert why_none(zero_d) == HARNESS
    assert why_none(_group("schema/pycuda/-", {"shape": []}, **pycuda)) == HARNESS
    assert why_none(_group("schema/pycuda/-", {"layout": {"shape": [2]}}, **pycuda)) is None
    assert (
        why_none(
            _group("schema/pycuda/-", {"layout": {"shape": [2]}}, **{**pycuda, "role": "consumer"})
        )
        is None
    )
    jax = {"library": "jax", "role": "producer", "rule": "CAI-DLPACK-AGREE"}
    assert why_none(_group("agreement/jax/cupy", {"shape": [2]}, **jax)) == HARNESS
    assert script_for_group(zero_d) is None and calls == []


def test_a_group_of_no_single_library_gets_no_script(calls):
    group = _group(library=None)
    assert why_none(group) == NO_CULPRIT
    assert script_for_group(group) is None and calls == []


def test_the_template_gets_the_cell_s_sides_with_none_for_a_dash(calls):
    assert why_none(_group()) is None
    assert script_for_group(_group()) == "print('OK: x')\n"
    assert script_for_group(_group("schema/numpy/-")) is not None
    assert script_for_group(_group("adversarial/-/cupy")) is not None
    assert calls == [
        ({"n": 1}, "numpy", "cupy"),
        ({"n": 1}, "numpy", None),
        ({"n": 1}, None, "cupy"),
    ]


@pytest.mark.parametrize("error", [KeyError, TypeError, ValueError])
def test_params_of_another_shape_than_the_family_s_give_no_script(calls, error):
    assert script_for_group(_group(params={"raise": error})) is None
    assert len(calls) == 1


def test_a_template_s_other_errors_are_not_hidden(calls):
    with pytest.raises(RuntimeError):
        script_for_group(_group(params={"raise": RuntimeError}))
