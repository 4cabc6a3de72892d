"""The coverage floor (checks._floor), the dtype names beyond numpy's typestrs (spec.dtypes),
how producers' exports of those types are judged, and how the runner runs a floor."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import caiconform
from caiconform.checks import _encoding, _exchange, _floor, _results
from caiconform.results.outcome import FAIL, PASS, REJECTED
from caiconform.results.record import EXPECT_REJECTION, coverage_of_params
from caiconform.runner.config import RunConfig
from caiconform.runner.driver import run_matrix
from caiconform.spec import dtypes
from caiconform.spec.families import LIVE
from caiconform.spec.layout import LAYOUT_KINDS
from caiconform.spec.values import compare_values, make_values

SOURCE = "tests.synthetic.adapters"
FLOOR_FAMILY = "tests.synthetic.floor_checks"


# -- dtype names ----------------------------------------------------------------------------
def test_named_types_map_to_raw_bytes_of_their_size():
    assert dtypes.numpy_dtype("bfloat16").itemsize == 2
    assert dtypes.numpy_dtype("float8_e5m2").itemsize == 1
    assert dtypes.storage_typestr("bfloat16") == "<V2"
    assert dtypes.storage_typestr("<f4") == "<f4"
    structured = dtypes.numpy_dtype("structured")
    assert structured.names and dtypes.storage_typestr("structured") == f"|V{structured.itemsize}"
    assert dtypes.descr_of("structured") == dtypes.STRUCTURED_DESCR
    assert dtypes.dtype_name(dtypes.numpy_dtype("float8_e4m3fn")) == "float8_e4m3fn"
    assert dtypes.dtype_name(np.dtype("V2")) is None


@pytest.mark.parametrize(
    ("typestr", "cls", "order"),
    [
        ("|b1", "bool", "|"),
        ("<i4", "int", "<"),
        (">u2", "uint", ">"),
        ("<f2", "float16", "<"),
        (">f8", "float64", ">"),
        ("<c16", "complex", "<"),
        ("<M8[ns]", "datetime", "<"),
        ("bfloat16", "bfloat16", "<"),
        ("float8_e5m2", "float8_e5m2", "|"),
        ("structured", "structured", "|"),
    ],
)
def test_dtype_class_and_byte_order(typestr, cls, order):
    assert dtypes.dtype_class(typestr) == cls
    assert dtypes.byte_order(typestr) == order


def test_conforming_exports_of_named_types_are_valid():
    from caiconform.reference.producer import interface_dict
    from caiconform.spec.layout import Layout

    for name in ("bfloat16", "float8_e4m3fn", "structured"):
        d = interface_dict(
            1 << 20,
            Layout((3,)),
            dtypes.storage_typestr(name),
            descr=dtypes.descr_of(name),
        )
        report = caiconform.validate(d)
        assert report.ok, (name, [f.message for f in report.errors])


# -- the floor's plan -----------------------------------------------------------------------
def test_data_floor_crosses_every_layout_dtype_class_and_byte_order():
    floor = _floor.data_floor()
    combos = {(e.coverage["layout"], e.params["typestr"]) for e in floor}
    assert len(combos) == len(floor), "duplicate floor examples"
    for kind in _floor.FLOOR_LAYOUTS:
        for typestr in _floor.FLOOR_TYPESTRS:
            itemsize = dtypes.numpy_dtype(typestr).itemsize
            assert ((kind, typestr) in combos) == (kind != "odd" or itemsize > 1), (kind, typestr)
    classes = {e.coverage["dtype"] for e in floor}
    assert classes >= {
        "bool",
        "int",
        "uint",
        "float16",
        "float32",
        "float64",
        "bfloat16",
        "float8_e4m3fn",
        "float8_e5m2",
        "complex",
        "datetime",
        "structured",
    }
    orders = {e.coverage["order"] for e in floor}
    assert orders == {"<", ">", "|"}
    # every layout kind the strategies draw has a floor layout
    assert set(LAYOUT_KINDS) <= {e.params["layout"]["kind"] for e in floor}


def test_floor_layouts_are_valid_exports():
    from caiconform.reference.producer import interface_dict
    from caiconform.spec.layout import Layout

    for example in _floor.data_floor():
        layout = Layout.from_dict(example.params["layout"])
        itemsize = dtypes.numpy_dtype(example.params["typestr"]).itemsize
        base = 1 << 20
        d = interface_dict(
            base + layout.offset, layout, "|u1" if itemsize == 1 else f"<V{itemsize}"
        )
        report = caiconform.validate(d)
        assert report.ok, (example.coverage, [f.message for f in report.errors])
        assert layout.allocation_bytes(itemsize) > 0


def test_the_sliced_8_layouts_are_the_contiguous_strides_counted_in_bits():
    """Every 8th item: byte strides equal to a C (F) layout's strides in bits, which no drawn
    step (1-3 items) makes, and which are neither C- nor F-contiguous in bytes."""
    from caiconform.spec.layout import c_strides, f_strides, is_c_contiguous

    for typestr in _floor.READ_TYPESTRS:
        n = dtypes.numpy_dtype(typestr).itemsize
        c = _floor.floor_layout("sliced-8", n)
        f = _floor.floor_layout("F-sliced-8", n)
        assert c.strides == c_strides(c.shape, 8 * n) and f.strides == f_strides(f.shape, 8 * n)
        for layout in (c, f):
            assert not is_c_contiguous(layout.shape, layout.strides, n)
            assert layout.strides not in (c_strides(layout.shape, n), f_strides(layout.shape, n))
            assert layout.kind in LAYOUT_KINDS


def _layout_by_bit_width(shape: tuple, strides: tuple, itemsize: int) -> str:
    """numba-cuda 0.30.4's `typing/typeof.py` `_typeof_cuda_array_interface_cached`, as it
    reads a CAI's strides: against the item's bit width where its size in bytes is meant."""
    from caiconform.spec.layout import c_strides, f_strides

    bits = 8 * itemsize
    if tuple(strides) == c_strides(shape, bits):
        return "C"
    if tuple(strides) == f_strides(shape, bits):
        return "F"
    return "A"


class _BitWidthConsumer:
    """A host-memory consumer that reads a C or F layout as contiguous, as a kernel typed with
    that layout does, and decides the layout as `_layout_by_bit_width` does."""

    def consume(self, obj):
        import ctypes

        d = obj.__cuda_array_interface__
        dtype, shape = np.dtype(d["typestr"]), tuple(d["shape"])
        strides = d.get("strides") or None
        layout = "C" if strides is None else _layout_by_bit_width(shape, strides, dtype.itemsize)
        if layout != "A":
            strides = None if layout == "C" else np.empty(shape, dtype, order="F").strides
        # the test's memory lies _HEADROOM bytes either side of the data pointer
        raw = (ctypes.c_char * (2 * _HEADROOM)).from_address(d["data"][0] - _HEADROOM)
        return np.ndarray(shape, dtype, buffer=raw, offset=_HEADROOM, strides=strides).copy()


_HEADROOM = 1 << 11


def test_only_the_sliced_8_floor_layouts_catch_a_consumer_that_reads_strides_in_bits(
    monkeypatch: pytest.MonkeyPatch,
):
    """The floor's every other layout passes a consumer that takes bits for bytes; the two
    sliced-8 layouts make it read the wrong items, a fail of CAI-CONSUMER-READS-DESCRIBED."""
    import ctypes

    from caiconform.spec.layout import Layout

    monkeypatch.setattr(_exchange, "adapter", lambda name: _BitWidthConsumer())
    outcomes: dict[str, set] = {}
    for example in _floor.data_floor() + _floor.read_floor():
        typestr = example.params["typestr"]
        if typestr not in _floor.READ_TYPESTRS:
            continue
        layout = Layout.from_dict(example.params["layout"])
        dtype = np.dtype(typestr)
        values = make_values(typestr, layout.shape, 5, layout.strides)
        memory = ctypes.create_string_buffer(2 * _HEADROOM)  # element 0 lies halfway
        lo, hi = layout.extent(dtype.itemsize)
        assert _HEADROOM + lo >= 0 and _HEADROOM + hi <= len(memory)
        base = ctypes.addressof(memory) + _HEADROOM
        view = np.ndarray(
            layout.shape, dtype, buffer=memory, offset=_HEADROOM, strides=layout.strides
        )
        view[...] = values
        obj = _encoding.InterfaceObject(
            {
                "shape": layout.shape,
                "typestr": dtype.str,
                "data": (base, False),
                "strides": layout.strides,
                "version": 3,
            }
        )
        result = _exchange.judge_exchange("bits", obj, values, None, example.coverage["layout"])
        outcomes.setdefault(example.coverage["layout"], set()).add((result.outcome, result.rule))
    caught = {kind for kind, seen in outcomes.items() if seen != {(PASS, None)}}
    assert caught == {"sliced-8", "F-sliced-8"}, outcomes
    for kind in caught:
        assert outcomes[kind] == {(FAIL, "CAI-CONSUMER-READS-DESCRIBED")}, outcomes[kind]


def test_the_consumer_read_families_floors_have_the_sliced_8_views():
    """roundtrip and dlpack_roundtrip (which judge what a consumer reads) run them for any
    pair; the producer-side data families (schema, agreement) do not."""
    from caiconform.checks import agreement, dlpack_roundtrip, roundtrip, schema

    def kinds(module):
        return {e.coverage.get("layout") for e in module.floor("cupy", "numba")}

    for module in (roundtrip, dlpack_roundtrip):
        assert set(_floor.READ_LAYOUTS) <= kinds(module), module.__name__
    for module in (schema, agreement):
        assert not set(_floor.READ_LAYOUTS) & kinds(module), module.__name__
    read = [e for e in roundtrip.floor("cupy", "numba") if e.coverage["layout"] == "sliced-8"]
    assert sorted(e.params["typestr"] for e in read) == sorted(_floor.READ_TYPESTRS)


def _drawn_keys(module, producer, consumer):
    keys = []

    @settings(max_examples=1, database=None, suppress_health_check=list(HealthCheck))
    @given(module.examples(producer, consumer))
    def draw(params):
        keys.append(set(params))

    draw()
    return keys[0]


@pytest.mark.parametrize(
    "family",
    [
        "roundtrip",
        "schema",
        "zero_size",
        "streams",
        "lifetime",
        "readonly",
        "devices",
        "mask",
        "versions",
        "agreement",
    ],
)
def test_every_family_floor_has_the_params_of_a_drawn_example(family):
    import importlib

    module = importlib.import_module(f"caiconform.checks.{family}")
    for producer in ("reference", "cupy"):
        floor = module.floor(producer, "torch")
        assert floor, family
        keys = _drawn_keys(module, producer, "torch")
        for example in floor:
            assert set(example.params) == keys, (family, example)
            assert example.coverage.get("dtype"), example
        assert len({json.dumps(e.params, sort_keys=True) for e in floor}) == len(floor)


def test_coverage_labels_of_drawn_params():
    layout = {"shape": [2, 3], "strides": [12, 4], "kind": "C"}
    assert coverage_of_params({"typestr": ">f4", "layout": layout}) == {
        "dtype": "float32",
        "order": ">",
        "layout": "C-strides",
        "scenario": "none",
        "memory": "device",
    }
    assert coverage_of_params({"typestr": "<f4", "shape": [2], "memory": "vmm"})["memory"] == "vmm"
    assert (
        coverage_of_params({"typestr": "|b1", "shape": [], "stream_scenario": "pending"})["layout"]
        == "0d"
    )
    assert coverage_of_params({"typestr": "<i2", "shape": [0, 2]})["layout"] == "zero-size"


# -- judging exports of named types ---------------------------------------------------------
class _Exports:
    def __init__(self, d=None, exc=None):
        self.d, self.exc = d, exc

    @property
    def __cuda_array_interface__(self):
        if self.exc is not None:
            raise self.exc
        return self.d


def _dict(typestr):
    return {"shape": (2,), "typestr": typestr, "data": (1 << 20, False), "version": 3}


def test_a_producer_refusing_bfloat16_with_attributeerror_is_a_portability_gap():
    result, extra = _results.named_export(
        _Exports(exc=AttributeError("no BF16")), "bfloat16", "ctx"
    )
    assert result.outcome == REJECTED and result.rule == "CAI-PORT-OPAQUE-EXPORT"
    assert result.expected != EXPECT_REJECTION and not extra


def test_a_producer_raising_keyerror_for_float8_breaks_hasattr():
    result, _ = _results.named_export(_Exports(exc=KeyError("float8")), "float8_e4m3fn", "ctx")
    assert result.outcome == FAIL and result.rule == "CAI-ATTR-RAISES-ATTRIBUTEERROR"
    assert "KeyError" in result.message and "[CAI-ATTR-RAISES-ATTRIBUTEERROR]" in result.message


def test_raw_bytes_export_warns_that_the_type_is_lost():
    result, extra = _results.named_export(_Exports(_dict("<V2")), "bfloat16", "ctx")
    assert result is None and [f.rule for f in extra] == ["CAI-PORT-TYPESTR-OPAQUE"]


def test_bfloat16_exported_as_float16_describes_other_elements():
    result, _ = _results.named_export(_Exports(_dict("<f2")), "bfloat16", "ctx")
    assert result.outcome == FAIL and result.rule == "CAI-PRODUCER-DESCRIBES-DATA"


def test_ordinary_typestrs_are_not_judged_here():
    assert _results.named_export(_Exports(exc=KeyError("x")), "<f4", "ctx") == (None, [])


def test_values_of_named_types_compare_as_bytes():
    for name in ("bfloat16", "float8_e5m2", "structured"):
        values = make_values(name, (3, 2), 7)
        raw = values.view(np.dtype(f"V{values.dtype.itemsize}"))
        assert compare_values(raw, values) is None
        other = raw.copy()
        other.view(np.uint8)[0] ^= 1
        assert compare_values(other, values) is not None


# -- the runner runs the floor first, with a crash cap --------------------------------------
def test_runner_runs_the_floor_first_and_caps_crashes_per_layout(tmp_path):
    config = RunConfig(
        out=tmp_path / "run",
        checks=[FLOOR_FAMILY],
        libraries=["good", "abort"],
        max_examples=5,
        seed=7,
        workers=2,
        timeout_s=5.0,
        gpus=0,
        shrink_budget_s=5.0,
        adapter_source=SOURCE,
    )
    run_matrix(config)
    records = [json.loads(line) for line in (config.out / "results.jsonl").read_text().splitlines()]
    by_cell = {p: [r for r in records if r["producer"] == p] for p in ("good", "abort")}
    good_floor = [r for r in by_cell["good"] if r["floor"]]
    assert [r["params"]["n"] for r in good_floor] == [
        *(1, 600, 601, 602, 603, 604),
        *(700, 701, 702, 710, 711, 712),
    ]
    assert {r["outcome"] for r in good_floor} == {PASS}
    assert all(
        r["coverage"].get("layout") in ("ok", "x") or r["coverage"]["mutation"] in ("R1", "R2")
        for r in good_floor
    )
    # the floor comes before the drawn examples, which carry coverage labels of their own
    first_drawn = min(r["seq"] for r in by_cell["good"] if not r["floor"])
    assert max(r["seq"] for r in good_floor) < first_drawn
    assert all("coverage" in r for r in by_cell["good"])

    abort_floor = [r for r in by_cell["abort"] if r["floor"]]
    outcomes = Counter(r["outcome"] for r in abort_floor)
    # two crashes per layout kind, and per mutation where there is no layout: the mutants of
    # one rule crashing do not hide those of another (both seeds then meet every rule)
    assert outcomes == {"pass": 1, "crash": 2 + 2 + 2, "skip": 3 + 1 + 1}, outcomes
    skipped = Counter(
        r["message"].split(" already ended")[0] for r in abort_floor if r["outcome"] == "skip"
    )
    assert skipped == {
        "not run: layout 'x'": 3,
        "not run: mutation 'R1'": 1,
        "not run: mutation 'R2'": 1,
    }
    # a class met only in the floor keeps the floor example as its reproducer: no shrinking
    assert not [r for r in by_cell["abort"] if r["shrunk"]]
    assert all(r["repro"] for r in abort_floor if r["outcome"] == "crash")

    cells = [json.loads(line) for line in (config.out / "cells.jsonl").read_text().splitlines()]
    assert {c["cell"]: c.get("floor_planned") for c in cells} == {
        "synthetic-floor/good/-": 12,
        "synthetic-floor/abort/-": 12,
    }


# -- one culprit per race -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("control", "rule"),
    [
        ("final", "CAI-SYNC-CONSUMER"),
        ("sentinel", "CAI-SYNC-PRODUCER-SUFFICIENT"),
        ("raises", "CAI-SYNC-RACE-FREE"),
    ],
)
def test_a_race_between_two_libraries_is_pinned_by_the_reference_control(
    monkeypatch, control, rule
):
    from caiconform.checks import streams
    from caiconform.reference.producer import sentinel_of

    values = make_values("<f4", (8,), 3)
    monkeypatch.setattr(streams, "_produce", lambda producer, params, v: object())
    monkeypatch.setattr(streams, "_finish", lambda: None)
    monkeypatch.setattr(streams, "_free_garbage", lambda: None)

    def reference_read(name, obj):
        assert name == "reference"
        if control == "raises":
            return None, RuntimeError("cannot read")
        return (values.copy() if control == "final" else sentinel_of(values)), None

    monkeypatch.setattr(_exchange, "consume_with", reference_read)
    result = streams._attribute_race(
        {"stream_scenario": "nonblocking"}, "cupy", "torch", values, 8, "cupy->torch"
    )
    assert result.outcome == FAIL and result.rule == rule
    assert f"[{rule}]" in result.message
    if rule == "CAI-SYNC-CONSUMER":
        assert "torch did not synchronize" in result.message


def test_adversarial_floor_has_every_mutant_rule_and_live_mutation_once(adversarial_floor):
    from caiconform import strategies as cst
    from caiconform.checks import adversarial

    floor = adversarial.floor(None, "cupy")
    mutants = [e.params for e in floor if e.params["kind"] == "mutant"]
    live = [e.params["mutation"] for e in floor if e.params["kind"] == "live"]
    assert sorted({p["rule"] for p in mutants}) == sorted(cst.MUTATIONS)
    assert len(mutants) > len(cst.MUTATIONS)  # drawn variants beside the minimal mutant
    assert sorted(live) == sorted(LIVE)
    for params in mutants:  # each mutant breaks exactly the rule it names
        report = caiconform.validate(_encoding.decode(params["interface"]))
        assert params["rule"] in {f.rule for f in report.findings}, params
    assert [e.params for e in adversarial.floor(None, "torch")] == [e.params for e in floor]
    # every rule that can break a zero-size array has a zero-size 1-d mutant: consumers skip
    # checks on arrays with nothing to read, and draws alone met that in one seed of two
    empty = {
        p["rule"] for p in mutants if _encoding.decode(p["interface"]).get("shape") in ((0,), [0])
    }
    any_size = {rule for rule, how in cst.MUTATIONS.items() if how.size == "any"}
    # the shape rules edit the shape itself
    edited = {"CAI-SHAPE-REQUIRED", "CAI-SHAPE-TUPLE", "CAI-SHAPE-INT", "CAI-SHAPE-NONNEGATIVE"}
    assert any_size - edited <= empty, sorted(any_size - edited - empty)


def test_structured_padding_is_not_data():
    values = make_values("structured", (4,), 5)
    seen = values.copy()
    raw = seen.view(np.uint8).reshape(4, -1)
    raw[:, 7] ^= 0xFF  # the padding byte of STRUCTURED_DESCR
    assert compare_values(seen, values) is None
    raw[:, 0] ^= 1  # field "a"
    assert "4 of 4 elements differ" in compare_values(seen, values)


def _floor_mutants(rule: str) -> list[dict]:
    from caiconform.checks import adversarial

    return [
        _encoding.decode(e.params["interface"])
        for e in adversarial.floor(None, "cupy")
        if e.params["kind"] == "mutant" and e.params["rule"] == rule
    ]


@pytest.mark.parametrize(
    ("rule", "seen"),
    [
        # the variants one seed of two drew on the H100 (2026-11-23), each accepted by a consumer
        ("CAI-STREAM-TYPE", lambda d: d.get("stream") is True),  # CuPy took a bool stream
        ("CAI-SHAPE-INT", lambda d: d["shape"] == (True,)),  # jax took a bool extent
        ("CAI-STRIDES-TYPE", lambda d: d.get("strides") == []),  # torch, a list on a 0-d array
        ("CAI-TYPESTR-GRAMMAR", lambda d: d["typestr"] == "f4"),  # cuda.core, no byte order
        # CuPy's context poisoned by a null pointer with broadcast strides
        ("CAI-DATA-NONZERO-SIZE-NONNULL", lambda d: d.get("strides") == (0, 1)),
        ("CAI-DATA-NONZERO-SIZE-NONNULL", lambda d: d.get("strides") == (0,)),  # all strides 0
    ],
)
def test_adversarial_floor_has_every_variant_of_a_mutation(adversarial_floor, rule, seen):
    mutants = _floor_mutants(rule)
    assert any(seen(d) for d in mutants), mutants


def test_adversarial_floor_every_listed_bad_value_on_both_bases(adversarial_floor):
    from caiconform import strategies as cst

    streams = [d.get("stream") for d in _floor_mutants("CAI-STREAM-TYPE")]
    for value in (1.0, "1", True, b"\x01"):
        # on the minimal array and on the zero-size 1-d one
        assert sum(type(s) is type(value) and s == value for s in streams) >= 2, streams
    typestrs = {d["typestr"] for d in _floor_mutants("CAI-TYPESTR-GRAMMAR")}
    assert set(cst._BAD_TYPESTRS) <= typestrs


def test_pin_variant_picks_each_variant_and_counts_them():
    from hypothesis import find

    from caiconform import strategies as cst

    seen = []
    index, count = 0, 1
    while index < count:
        with cst.pin_variant(index) as pin:
            mutant = find(cst.mutants(rules=["CAI-STREAM-TYPE"]), lambda _: True)
        count = pin.count
        seen.append(mutant.interface["stream"])
        index += 1
    assert count == 4
    assert [type(s) for s in seen] == [float, str, bool, bytes]
    # outside the context, draws are not pinned
    assert cst._PIN.get() is None


def test_pin_variant_pins_the_layout_kind():
    from hypothesis import find
    from hypothesis import strategies as st

    from caiconform import strategies as cst

    with cst.pin_variant(0, layout="negative"):
        mutant = find(
            cst.mutants(rules=["CAI-DATA-NONZERO-SIZE-NONNULL"], shape=st.just((2, 3))),
            lambda _: True,
        )
    assert mutant.interface["data"][0] == 0
    assert min(mutant.interface["strides"]) < 0


def test_the_shipped_adversarial_floor_is_current_and_is_the_floor(_adversarial_floor_data):
    """The floor kept with the package (`adversarial.SHIPPED_FLOOR`, read at a run's start
    instead of built: issue 43) was written by the code here, and is the floor this code
    builds (`_adversarial_floor_data`: built here once per run) wherever hypothesis is the
    version that wrote it; elsewhere it still has every mutant rule and live mutation."""
    import json

    from hypothesis import __version__

    from caiconform import strategies as cst
    from caiconform.checks import adversarial
    from caiconform.spec.families import LIVE

    rows = adversarial.shipped_floor()
    assert rows is not None, (
        "caiconform/checks/adversarial_floor.json is stale: the floor's sources changed; "
        "write it again with `python -m caiconform.checks.adversarial`"
    )
    kept = json.loads(adversarial.SHIPPED_FLOOR.read_text())
    if kept["hypothesis"] == __version__:
        assert rows == _adversarial_floor_data
    assert {p["rule"] for _, p in rows if p["kind"] == "mutant"} == set(cst.MUTATIONS)
    assert {p["mutation"] for _, p in rows if p["kind"] == "live"} == set(LIVE)


def test_a_stale_shipped_floor_is_not_read(tmp_path, monkeypatch):
    from caiconform.checks import adversarial

    stale = tmp_path / "floor.json"
    stale.write_text('{"key": "another", "hypothesis": "0", "rows": [[{}, {}]]}')
    monkeypatch.setattr(adversarial, "SHIPPED_FLOOR", stale)
    assert adversarial.shipped_floor() is None
    monkeypatch.setattr(adversarial, "floor_key", lambda: "another")
    assert adversarial.shipped_floor() == [[{}, {}]]
