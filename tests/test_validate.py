"""The validator, rule by rule: for every dict-visible rule, exports that pass it and exports
that break it. `test_every_dict_visible_rule_has_cases` keeps this table complete as rules are
added to the catalogue."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np
import pytest

from caiconform import validate
from caiconform.spec.findings import Finding, Report, finding
from caiconform.spec.rules import RULES, Level
from caiconform.spec.validate import _validate, dict_extent

PTR = 0x7F00_0000_0000
DROP: Any = object()


def v(version: int = 3, /, **changes: Any) -> dict:
    """A conforming 2x3 float32 dict of `version`, with `changes` (DROP removes an entry)."""
    d: dict[Any, Any] = {
        "shape": (2, 3),
        "strides": (12, 4),
        "typestr": "<f4",
        "data": (PTR, False),
        "version": version,
    }
    for key, value in changes.items():
        if value is DROP:
            d.pop(key, None)
        else:
            d[key] = value
    return d


class Exported:
    """An object exposing whatever it is given as its interface."""

    def __init__(self, interface: Any) -> None:
        self.__cuda_array_interface__ = interface


class Raising:
    """An object whose attribute raises `exc` when read."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    @property
    def __cuda_array_interface__(self) -> dict:
        raise self.exc


class Fail:
    """A failing case: `target` breaks the rule; `also` lists the other MUST/SHOULD rules it
    breaks on purpose (empty for nearly all: one problem, one finding)."""

    def __init__(self, target: Any, also: tuple[str, ...] = ()) -> None:
        self.target, self.also = target, also


Shape = namedtuple("Shape", "rows cols")
MASK = Exported({"shape": (3,), "typestr": "|b1", "data": (PTR, False), "version": 3})

CASES: dict[str, tuple[list[Any], list[Fail]]] = {
    "CAI-ATTR-DICT": (
        [Exported(v()), v()],
        [Fail(Exported([1, 2])), Fail(Exported(None)), Fail(object()), Fail(3)],
    ),
    "CAI-ATTR-RAISES-ATTRIBUTEERROR": (
        [object(), Raising(AttributeError("cannot export"))],
        [
            Fail(Raising(RuntimeError("device lost")), also=("CAI-ATTR-DICT",)),
            Fail(Raising(NotImplementedError()), also=("CAI-ATTR-DICT",)),
            Fail(Raising(SystemExit(0)), also=("CAI-ATTR-DICT",)),
        ],
    ),
    "CAI-KEYS-UNKNOWN": (
        [v(descr=[("", "<f4")], mask=None, stream=None)],
        [Fail(v(owner=object())), Fail({**v(), 1: 2}), Fail(v(Strides=(12, 4)))],
    ),
    "CAI-SHAPE-REQUIRED": ([v()], [Fail(v(shape=DROP, strides=DROP))]),
    "CAI-SHAPE-TUPLE": (
        [v(shape=Shape(2, 3))],
        [Fail(v(shape=[2, 3])), Fail(v(shape=6)), Fail(v(shape=None)), Fail(v(shape="2,3"))],
    ),
    "CAI-SHAPE-INT": (
        [v(shape=(True.__class__.__mro__[1](2), 3))],
        [Fail(v(shape=(2.0, 3))), Fail(v(shape=(True, 3))), Fail(v(shape=(np.int64(2), 3)))],
    ),
    "CAI-SHAPE-NONNEGATIVE": (
        [v(shape=(0, 3), data=(0, False))],
        [Fail(v(shape=(-1, 3))), Fail(v(shape=(2, -(2**70))))],
    ),
    "CAI-TYPESTR-REQUIRED": ([v()], [Fail(v(typestr=DROP))]),
    "CAI-TYPESTR-STR": ([v()], [Fail(v(typestr=b"<f4")), Fail(v(typestr=np.dtype("<f4")))]),
    "CAI-TYPESTR-GRAMMAR": (
        [v(typestr="<i4"), v(typestr="|u1", strides=(3, 1))],
        [Fail(v(typestr="=f4")), Fail(v(typestr="float32")), Fail(v(typestr="<f3"))],
    ),
    "CAI-DATA-REQUIRED": ([v()], [Fail(v(data=DROP))]),
    "CAI-DATA-TUPLE": (
        [v()],
        [
            Fail(v(data=[PTR, False])),
            Fail(v(data=(PTR,))),
            Fail(v(data=(PTR, False, 0))),
            Fail(v(data=PTR)),
        ],
    ),
    "CAI-DATA-POINTER-INT": (
        [v()],
        [
            Fail(v(data=(float(PTR), False))),
            Fail(v(data=(np.uint64(PTR), False))),
            Fail(v(data=(None, False))),
        ],
    ),
    "CAI-DATA-POINTER-RANGE": (
        # 24 bytes: the last ends exactly at 2**64; with strides (-12, 4) the first is byte 0
        [
            v(data=(2**64 - 256, False)),
            v(data=(2**64 - 24, False)),
            v(strides=(-12, 4), data=(12, False)),
        ],
        [
            Fail(v(data=(-PTR, False))),
            Fail(v(data=(2**64, False))),
            Fail(v(data=(2**64 - 20, False))),
            Fail(v(strides=(-12, 4), data=(8, False))),
        ],
    ),
    "CAI-DATA-READONLY-BOOL": (
        [v(data=(PTR, True))],
        [Fail(v(data=(PTR, 0))), Fail(v(data=(PTR, np.bool_(False)))), Fail(v(data=(PTR, None)))],
    ),
    "CAI-DATA-ZERO-SIZE-NULL": (
        [v(shape=(0, 3), data=(0, False)), v(1, shape=(0, 3), data=(PTR, False))],
        [Fail(v(shape=(0, 3), data=(PTR, False))), Fail(v(2, shape=(3, 0), data=(16, False)))],
    ),
    "CAI-DATA-NONZERO-SIZE-NONNULL": (
        [v(shape=(0, 3), data=(0, False))],
        [Fail(v(data=(0, False))), Fail(v(0, shape=(), strides=(), data=(0, False)))],
    ),
    "CAI-VERSION-REQUIRED": ([v()], [Fail(v(version=DROP))]),
    "CAI-VERSION-INT": (
        [v(0), v(1), v(2)],
        [Fail(v(version="3")), Fail(v(version=3.0)), Fail(v(version=True))],
    ),
    "CAI-VERSION-KNOWN": ([v(0), v(3)], [Fail(v(version=4)), Fail(v(version=-1))]),
    "CAI-STRIDES-TYPE": (
        [v(strides=None), v(strides=DROP)],
        [Fail(v(strides=[12, 4])), Fail(v(strides="C")), Fail(v(strides=12))],
    ),
    "CAI-STRIDES-INT": ([v()], [Fail(v(strides=(12.0, 4))), Fail(v(strides=(12, False)))]),
    "CAI-STRIDES-NDIM": (
        [v(shape=(), strides=())],
        [Fail(v(strides=(4,))), Fail(v(strides=(24, 12, 4)))],
    ),
    "CAI-DESCR-GRAMMAR": (
        [v(descr=[("", "<f4")]), v(descr=[(("Title", "x"), "<f4")])],
        [Fail(v(descr="<f4")), Fail(v(descr=[("", "<f3")])), Fail(v(descr=[]))],
    ),
    "CAI-DESCR-CONSISTENT": (
        [
            v(typestr="|V8", strides=(24, 8), descr=[("x", "<f4"), ("y", "<i4")]),
            v(typestr="|u1", strides=(3, 1), descr=[("", ">u1")]),
        ],
        [
            Fail(v(descr=[("", "<i4")])),
            Fail(v(descr=[("a", "<f4"), ("b", "<f4")])),
            Fail(v(descr=[("", ">f4")])),
        ],
    ),
    "CAI-MASK-TYPE": (
        [v(mask=None), v(mask=MASK)],
        [
            Fail(v(mask=5)),
            Fail(v(mask={"shape": (2, 3)})),
            Fail(v(mask=object())),
            Fail(v(mask=Raising(RuntimeError()))),
            Fail(v(mask=Exported([1]))),
        ],
    ),
    "CAI-MASK-SHAPE": (
        [v(mask=MASK), v(1, mask=Exported({"shape": (2, 1)}))],
        [
            Fail(v(mask=Exported({"shape": (2,)}))),
            Fail(v(mask=Exported({"shape": (1, 2, 3)}))),
            Fail(v(mask=Exported({"shape": "2x3"}))),
        ],
    ),
    "CAI-STREAM-TYPE": (
        [v(stream=None), v(stream=1), v(stream=2)],
        [Fail(v(stream="1")), Fail(v(stream=1.0)), Fail(v(stream=True))],
    ),
    "CAI-STREAM-ZERO-FORBIDDEN": ([v(stream=1)], [Fail(v(stream=0))]),
    "CAI-STREAM-HANDLE": (
        [v(stream=0x55D0_0000_1000), v(stream=2**64 - 1)],
        [Fail(v(stream=-1)), Fail(v(stream=2**64))],
    ),
    "CAI-V0-NO-MASK": ([v(1, mask=None), v(0)], [Fail(v(0, mask=None))]),
    "CAI-V2-NO-SYNC": ([v(3), v(3, stream=None)], [Fail(v(2)), Fail(v(0))]),
    "CAI-V2-STREAM-UNDEFINED": (
        [v(3, stream=1)],
        [Fail(v(2, stream=1)), Fail(v(1, stream=None)), Fail(v(0, stream=2))],
    ),
    "CAI-PORT-STRIDES-ITEMSIZE": (
        [v(), v(shape=(1, 3), strides=(5, 4))],
        [Fail(v(strides=(12, 3))), Fail(v(strides=(13, 4)))],
    ),
    "CAI-PORT-BYTEORDER": (
        [v(), v(typestr="|u1", strides=(3, 1)), v(typestr=">u1", strides=(3, 1))],
        [Fail(v(typestr=">f4")), Fail(v(typestr="|f4"))],
    ),
    "CAI-PORT-OVERLAP": (
        [v(shape=(1, 3), strides=(0, 4))],
        [Fail(v(strides=(0, 4))), Fail(v(strides=(12, 0)))],
    ),
    "CAI-PORT-NEGATIVE-STRIDES": (
        [v(shape=(1, 3), strides=(-12, 4))],
        [Fail(v(strides=(-12, 4))), Fail(v(strides=(12, -4)))],
    ),
    "CAI-PORT-EXTENT-OVERFLOW": (
        [v(shape=(2**20, 2**20), strides=None)],
        [
            Fail(v(shape=(2**31, 2**30), strides=None)),
            # 2**66 bytes reach past the address space too
            Fail(v(shape=(2**32, 2**32), strides=None), also=("CAI-DATA-POINTER-RANGE",)),
            Fail(v(shape=(2, 3), strides=(2**63, 4))),
            Fail(v(shape=(0, 2**64), strides=None, data=(0, False))),
            Fail(v(shape=(1, 3), strides=(2**63, 4))),
        ],
    ),
    "CAI-PORT-READONLY": ([v()], [Fail(v(data=(PTR, True)))]),
    "CAI-PORT-MASK": ([v(mask=None)], [Fail(v(mask=MASK))]),
    "CAI-PORT-MASK-SHAPE-EXACT": (
        [v(mask=Exported({"shape": (2, 3)}))],
        [Fail(v(mask=MASK)), Fail(v(mask=Exported({"shape": (2, 1)})))],
    ),
    "CAI-PORT-TYPESTR-KIND": (
        [v(typestr=t) for t in ("|b1", "<i4", "<u2", "<f8", "<c8")],
        [
            *(Fail(v(typestr=t)) for t in ("|S4", "<M8[ns]", "|O")),
            *(Fail(v(typestr=t)) for t in ("<f16", "<c32")),
        ],
    ),
    "CAI-PORT-ALIGNMENT": (
        [v(), v(shape=(0,), strides=None, data=(0, False))],
        [Fail(v(data=(PTR + 2, False))), Fail(v(typestr="<c16", data=(PTR + 4, False)))],
    ),
    "CAI-PORT-STRIDES-OMITTED-V01": (
        [v(2, strides=DROP), v(1)],
        [Fail(v(1, strides=DROP)), Fail(v(0, strides=None))],
    ),
}


def _cases(kind: str) -> list[tuple[str, Any]]:
    index = 0 if kind == "pass" else 1
    return [(rule, case) for rule, cases in CASES.items() for case in cases[index]]


def _id(case: tuple[str, Any]) -> str:
    return case[0]


def test_every_dict_visible_rule_has_cases():
    visible = {r.id for r in RULES.values() if r.dict_visible and r.id.startswith("CAI-")}
    assert set(CASES) == visible, (
        f"rules without cases: {sorted(visible - set(CASES))}; "
        f"cases for rules that are not dict-visible: {sorted(set(CASES) - visible)}"
    )
    for rule, (passing, failing) in CASES.items():
        assert passing and failing, f"{rule} needs a passing and a failing case"


@pytest.mark.parametrize("case", _cases("fail"), ids=_id)
def test_failing_case_reports_the_rule_and_nothing_else(case):
    rule, fail = case
    report = validate(fail.target)
    assert rule in report.rules, [f.message for f in report.findings]
    level = RULES[rule].level
    if level in (Level.MUST, Level.SHOULD):
        serious = {f.rule for f in report.findings if f.level in (Level.MUST, Level.SHOULD)}
        assert serious == {rule, *fail.also}, [f.message for f in report.findings]
    assert report.ok == (
        level is not Level.MUST and not any(RULES[r].level is Level.MUST for r in fail.also)
    )


@pytest.mark.parametrize("case", _cases("pass"), ids=_id)
def test_passing_case_does_not_report_the_rule(case):
    rule, target = case
    for report in (validate(target), _validate(target, None)):  # the fast path, then the full
        assert rule not in report.rules, [f.message for f in report.findings]


def test_findings_agree_between_fast_and_full_paths_on_every_case():
    for rule, (passing, failing) in CASES.items():
        for target in [*passing, *(f.target for f in failing)]:
            fast, full = validate(target), _validate(target, None)
            assert (fast.findings, fast.version) == (full.findings, full.version), rule
            assert validate(target).version == _validate(target, None).version, rule


# --- the report and its messages ----------------------------------------------------------


def test_message_names_path_seen_expected_and_rule():
    (f,) = validate(v(shape=(2.5, 3))).findings
    assert f == Finding(
        "CAI-SHAPE-INT",
        Level.MUST,
        "shape[0]",
        "2.5",
        "an int",
        "shape[0]: got 2.5, expected an int [CAI-SHAPE-INT]",
        "cai-v3#python-interface-specification",
    )


def test_whole_object_findings_name_the_attribute():
    (f,) = validate(object()).findings
    assert f.path == "" and f.message.startswith("__cuda_array_interface__: got no ")


def test_report_levels_and_dict():
    report = validate(v(data=(PTR, True), stream=0, extra=1))
    assert not report.ok
    assert [f.rule for f in report.errors] == ["CAI-STREAM-ZERO-FORBIDDEN"]
    assert {f.rule for f in report.warnings} == {"CAI-PORT-READONLY", "CAI-KEYS-UNKNOWN"}
    d = report.to_dict()
    assert d["ok"] is False and d["version"] == 3 and d["target"] == "dict"
    assert {x["rule"] for x in d["findings"]} == report.rules
    assert all(
        set(x) == {"rule", "level", "level_text", "path", "seen", "expected", "message", "section"}
        for x in d["findings"]
    )


def test_report_ok_with_only_warnings():
    report = Report("x", 3, [finding("CAI-KEYS-UNKNOWN", "k", "entry 'k'", "known keys")])
    assert report.ok and report.warnings and not report.errors


def test_finding_refuses_unknown_rule_ids():
    with pytest.raises(KeyError):
        finding("CAI-NOT-A-RULE", "", "x", "y")


def test_target_is_named_by_type_without_calling_repr():
    class NoRepr:
        __cuda_array_interface__ = v()

        def __repr__(self) -> str:
            raise AssertionError("repr must not be called")

    assert validate(NoRepr()).target.endswith("NoRepr")


# --- versions -------------------------------------------------------------------------------


def test_version_none_judges_by_the_dicts_own_version():
    assert validate(v(1)).version == 1
    assert validate(v(version="x")).version == 3
    assert validate(v(version=9)).version == 3


def test_explicit_version_overrides_the_dicts():
    d = v(3, stream=1)
    assert validate(d).ok and not validate(d).findings
    report = validate(d, version=2)
    assert report.version == 2 and "CAI-V2-STREAM-UNDEFINED" in report.rules
    assert (
        "CAI-DATA-ZERO-SIZE-NULL"
        not in validate(v(3, shape=(0,), strides=None, data=(PTR, False)), version=1).rules
    )


@pytest.mark.parametrize("bad", [4, -1, "3", 3.0, True])
def test_bad_version_argument_is_a_caller_error(bad):
    with pytest.raises(ValueError, match="version must be"):
        validate(v(), version=bad)


# --- hostile inputs ---------------------------------------------------------------------------


def test_dict_subclass_overrides_never_run():
    class Hostile(dict):
        def __getitem__(self, key):
            raise RuntimeError("boom")

        def get(self, key, default=None):
            raise RuntimeError("boom")

        def __iter__(self):
            raise RuntimeError("boom")

    assert validate(Hostile(v())).ok
    assert validate(Exported(Hostile(v()))).ok


def test_int_subclass_is_read_through_ints_own_slot():
    class Sneaky(int):
        def __index__(self):
            raise RuntimeError("boom")

        def __lt__(self, other):
            raise RuntimeError("boom")

    report = validate(v(shape=(Sneaky(2), 3), data=(Sneaky(PTR), False), stream=Sneaky(7)))
    assert report.ok and not report.errors


def test_key_whose_comparison_raises_becomes_a_finding():
    class Clash:
        def __hash__(self) -> int:
            return hash("shape")

        def __eq__(self, other) -> bool:
            raise RuntimeError("boom")

    d = v(shape=DROP, strides=DROP)
    d[Clash()] = 1
    report = validate(d)
    assert not report.ok
    assert any(
        f.rule == "CAI-ATTR-DICT" and "raised RuntimeError" in f.seen for f in report.findings
    )


def test_huge_and_self_referencing_values_are_shown_briefly():
    loop: list = []
    loop.append(loop)
    report = validate(v(shape=loop, typestr="x" * 10_000, data=(10**5000, False)))
    assert {"CAI-SHAPE-INT", "CAI-TYPESTR-GRAMMAR", "CAI-DATA-POINTER-RANGE"} <= report.rules
    assert all(len(f.message) < 300 for f in report.findings)


def test_many_bad_elements_give_a_bounded_number_of_findings():
    report = validate(v(shape=tuple([1.5] * 1000), strides=None))
    assert [(f.rule, f.path) for f in report.errors] == [
        ("CAI-SHAPE-INT", f"shape[{i}]") for i in range(8)
    ]


# --- dict_extent -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "d, extent",
    [
        (v(), (0, 24)),
        (v(strides=None), (0, 24)),
        (v(strides=(-12, 4)), (-12, 12)),
        (v(shape=(0, 3), data=(0, False)), (0, 0)),
        ({"shape": [4], "strides": [8], "typestr": "<f8"}, (0, 32)),
    ],
)
def test_dict_extent(d, extent):
    assert dict_extent(d) == extent


@pytest.mark.parametrize(
    "d",
    [
        v(typestr=4),
        v(typestr="<f3"),
        v(shape=(2.0, 3)),
        v(shape=(-2, 3)),
        v(strides=(4,)),
        v(strides="C"),
    ],
)
def test_dict_extent_refuses_what_has_no_extent(d):
    with pytest.raises(ValueError):
        dict_extent(d)
