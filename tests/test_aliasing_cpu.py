"""The aliasing family and the consumer entry points (caiconform.adapters.entries) without a GPU.

A synthetic library stands in for a GPU one: its "memory" is a numpy array, its producer writes
go straight into it, and each of its entry points either aliases that array or copies it. A
"copying" entry point that aliases and a "zero-copy" one that copies must each be flagged with
the right rule; records of a run must carry the entry point."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from caiconform.adapters import entries
from caiconform.adapters.base import SkipExchange
from caiconform.adapters.entries import COPY, MAY_COPY, ZERO_COPY, Entry
from caiconform.checks import _entries, aliasing
from caiconform.results.outcome import FAIL, PASS, REJECTED, SKIP
from caiconform.results.record import coverage_of_params
from caiconform.results.severity import CORRUPTS, severity_of
from caiconform.runner.config import RunConfig
from caiconform.runner.driver import run_matrix
from caiconform.spec.rules import RULES

LIB = "synthetic-lib"
#: entry name -> (documented semantics, what the synthetic library really does)
BEHAVIOUR = {
    "lib.copy-that-aliases": (COPY, "alias"),
    "lib.view-that-copies": (ZERO_COPY, "copy"),
    "lib.copy": (COPY, "copy"),
    "lib.view": (ZERO_COPY, "alias"),
    "lib.maybe": (MAY_COPY, "copy"),
    "lib.torn": (ZERO_COPY, "torn"),
    "lib.misreads": (ZERO_COPY, "misread"),
    "lib.refuses": (ZERO_COPY, "refuse"),
    "lib.immutable": (MAY_COPY, "immutable"),
    "lib.kernel": (ZERO_COPY, "kernel"),
}


class FakeExport:
    """The producer's object: its memory is a host array standing in for device memory."""

    def __init__(self, values: np.ndarray) -> None:
        self.memory = values.copy()


def _take(consumer: str, entry: str, obj: FakeExport) -> _entries.Taken:
    what = BEHAVIOUR[entry][1]
    if what == "refuse":
        raise TypeError("this entry point takes no CAI object")
    memory = obj.memory if what in ("alias", "kernel") else obj.memory.copy()
    if what == "misread":
        memory = memory[::-1].copy()

    def write(new: np.ndarray) -> None:
        if what == "torn":
            memory.reshape(-1)[: memory.size // 2] = new.reshape(-1)[: memory.size // 2]
        else:
            memory[...] = new

    if what == "torn":
        obj.memory = memory  # the write lands half in the producer's memory

    def read() -> np.ndarray:
        if what == "kernel":
            raise AssertionError("a kernel argument is never read back")
        return memory.copy()

    return _entries.Taken(memory, read, None if what == "immutable" else write)


@pytest.fixture
def synthetic(monkeypatch: pytest.MonkeyPatch) -> None:
    declared = tuple(
        Entry(
            name,
            semantics,
            "synthetic docs",
            f"{name} is {semantics}",
            holds_result=what != "kernel",
            writable=what != "immutable",
        )
        for name, (semantics, what) in BEHAVIOUR.items()
    )
    monkeypatch.setitem(entries.ENTRIES, LIB, declared)
    monkeypatch.setattr(aliasing, "_export", lambda values, typestr: FakeExport(values))
    monkeypatch.setattr(
        aliasing, "_write_producer", lambda obj, new: obj.memory.__setitem__(..., new)
    )
    monkeypatch.setattr(aliasing, "_read_producer", lambda obj: obj.memory.copy())
    monkeypatch.setattr(aliasing, "_take", _take)


def run(entry: str, direction: str, typestr: str = "<f4", shape=(4, 4)):
    params = {"entry": entry, "direction": direction, "typestr": typestr, "shape": list(shape)}
    return aliasing.execute(params, None, LIB)


@pytest.mark.parametrize("direction", aliasing.DIRECTIONS)
def test_a_copying_entry_point_that_aliases_breaks_copy_independent(synthetic, direction):
    result = run("lib.copy-that-aliases", direction)
    assert (result.outcome, result.rule) == (FAIL, "CAI-ENTRY-COPY-INDEPENDENT")
    assert "lib.copy-that-aliases" in result.message
    assert result.message.endswith("[CAI-ENTRY-COPY-INDEPENDENT]")
    assert severity_of(result.outcome, result.rule, "MUST") == CORRUPTS


@pytest.mark.parametrize(
    ("direction", "rule"),
    [
        ("producer-writes", "CAI-ENTRY-ZERO-COPY-SEES-WRITES"),
        ("consumer-writes", "CAI-ENTRY-ZERO-COPY-WRITES-THROUGH"),
    ],
)
def test_a_zero_copy_entry_point_that_copies_is_named_by_direction(synthetic, direction, rule):
    result = run("lib.view-that-copies", direction)
    assert (result.outcome, result.rule) == (FAIL, rule)
    assert "returned a copy" in result.message and "lib.view-that-copies" in result.message
    assert severity_of(result.outcome, result.rule, "MUST") == CORRUPTS


@pytest.mark.parametrize("entry", ["lib.copy", "lib.view"])
@pytest.mark.parametrize("direction", aliasing.DIRECTIONS)
@pytest.mark.parametrize("typestr", aliasing.TYPESTRS)
def test_entry_points_that_keep_their_word_pass(synthetic, entry, direction, typestr):
    result = run(entry, direction, typestr)
    assert result.outcome == PASS, result.message
    assert "as documented" in result.message


def test_a_may_copy_entry_point_passes_with_the_portability_warning(synthetic):
    result = run("lib.maybe", "producer-writes")
    assert result.outcome == PASS
    assert result.seen == ["CAI-PORT-ENTRY-MAY-COPY"]
    assert "is a copy" in result.message


def test_a_write_landing_half_is_a_finding_whatever_was_documented(synthetic):
    result = run("lib.torn", "consumer-writes")
    assert (result.outcome, result.rule) == (FAIL, "CAI-ENTRY-ZERO-COPY-WRITES-THROUGH")
    assert "neither the old nor the written values" in result.message


def test_a_result_that_misreads_the_export_fails_reading(synthetic):
    result = run("lib.misreads", "producer-writes")
    assert (result.outcome, result.rule) == (FAIL, "CAI-CONSUMER-READS-DESCRIBED")


def test_a_refusing_entry_point_is_rejected_not_failed(synthetic):
    # not the library's CAI import (its default entry point): a portability note
    result = run("lib.refuses", "producer-writes")
    assert (result.outcome, result.rule) == (REJECTED, "CAI-PORT-ENTRY-REFUSED")
    assert "TypeError" in result.message
    assert severity_of("rejected-valid", result.rule, "PORTABILITY") == "portability"


def test_a_refusing_cai_import_is_an_interop_gap(synthetic, monkeypatch):
    declared = entries.ENTRIES[LIB]
    refusing = next(e for e in declared if e.name == "lib.refuses")
    monkeypatch.setitem(entries.ENTRIES, LIB, (refusing, *(e for e in declared if e != refusing)))
    result = run("lib.refuses", "producer-writes")
    assert (result.outcome, result.rule) == (REJECTED, "CAI-CONSUMER-READS-DESCRIBED")


def test_immutable_results_and_kernel_arguments_skip_the_direction_they_cannot_show(synthetic):
    assert run("lib.immutable", "consumer-writes").outcome == SKIP
    assert run("lib.immutable", "producer-writes").outcome == PASS
    assert run("lib.kernel", "producer-writes").outcome == SKIP
    # a kernel argument's write is checked: it reaches the producer's memory
    assert run("lib.kernel", "consumer-writes").outcome == PASS


def test_a_consumer_without_entry_points_skips_with_the_reason() -> None:
    assert repr(aliasing.examples(None, "reference")) == "just({'entry': None})"
    result = aliasing.execute({"entry": None}, None, "reference")
    assert result.outcome == SKIP and "no consumer entry points" in result.message
    assert aliasing.floor(None, "reference") == []


# -- the entry-point table ----------------------------------------------------------------
def test_every_declared_entry_point_states_its_source_and_quote() -> None:
    for adapter, declared in entries.ENTRIES.items():
        assert declared, adapter
        assert len({e.name for e in declared}) == len(declared), adapter
        for entry in declared:
            assert entry.source and entry.quote, (adapter, entry.name)


def test_entry_points_cover_what_the_issue_lists() -> None:
    names = {a: [e.name for e in d] for a, d in entries.ENTRIES.items()}
    assert names["cupy"] == [
        "cupy.asarray",
        "cupy.array(copy=True)",
        "dst[...] = obj",
        "ufunc argument",
    ]
    assert names["torch"] == ["torch.as_tensor", "torch.tensor", "dst[...] = obj"]
    assert names["numba"] == ["cuda.as_cuda_array"]
    assert names["numba-from-cai"] == ["cuda.from_cuda_array_interface"]
    assert names["numba-kernel"] == ["kernel argument"]
    assert names["jax"] == ["jnp.asarray", "jax.device_put"]
    assert names["warp"] == ["wp.array(copy=True)", "wp.array(copy=False)"]
    assert names["cuda.core"] == ["StridedMemoryView"]


def test_the_default_entry_point_is_the_one_consume_uses() -> None:
    assert entries.default_entry("cupy") == "cupy.asarray"
    assert entries.default_entry("torch") == "torch.as_tensor"
    assert entries.default_entry("reference") is None
    assert entries.default_entry(None) is None
    assert entries.entry_of("cupy", {"entry": "ufunc argument"}) == "ufunc argument"
    assert entries.entry_of("cupy", {"typestr": "<f4"}) == "cupy.asarray"
    with pytest.raises(KeyError, match="known: cupy.asarray"):
        entries.find("cupy", "cupy.nope")
    with pytest.raises(ValueError, match="semantics"):
        Entry("x", "sometimes", "s", "q")


def test_the_family_cites_catalogue_rules() -> None:
    for rule in (
        aliasing.ZERO_COPY_SEES,
        aliasing.ZERO_COPY_WRITES,
        aliasing.COPY_INDEPENDENT,
        aliasing.MAY_COPY_RULE,
        aliasing.REFUSED_RULE,
    ):
        assert rule in RULES
    assert RULES[aliasing.MAY_COPY_RULE].level.value == "PORTABILITY"
    assert RULES[aliasing.REFUSED_RULE].level.value == "PORTABILITY"


def test_take_skips_what_it_has_no_call_for() -> None:
    with pytest.raises(SkipExchange, match="no calls known for pycuda"):
        _entries.take("pycuda", "kernel argument", object())


# -- draws and floor ------------------------------------------------------------------------
def test_cupy_cells_draw_every_entry_point_and_direction_and_stay_small() -> None:
    seen = set()

    @settings(max_examples=200, database=None, suppress_health_check=list(HealthCheck))
    @given(aliasing.examples(None, "cupy"))
    def draw(params: dict) -> None:
        assert params["entry"] in [e.name for e in entries.ENTRIES["cupy"]]
        json.dumps(params)
        seen.add(json.dumps(params, sort_keys=True))

    draw()
    space = 4 * len(aliasing.DIRECTIONS) * len(aliasing.TYPESTRS) * len(aliasing.SHAPES)
    assert len(seen) <= space
    floor = aliasing.floor(None, "cupy")
    assert {(f.params["entry"], f.params["direction"]) for f in floor} == {
        (e.name, d) for e in entries.ENTRIES["cupy"] for d in aliasing.DIRECTIONS
    }
    assert all(f.coverage["entry"] == f.params["entry"] for f in floor)


@pytest.mark.parametrize(
    ("consumer", "never"), [("jax", "consumer-writes"), ("numba-kernel", "producer-writes")]
)
def test_draws_leave_out_what_an_entry_cannot_show(consumer: str, never: str) -> None:
    drawn = []

    @settings(max_examples=60, database=None, suppress_health_check=list(HealthCheck))
    @given(aliasing.examples(None, consumer))
    def draw(params: dict) -> None:
        drawn.append(params["direction"])

    draw()
    assert drawn and never not in drawn
    # the floor still runs it once per entry, to say why it skips
    assert never in {f.params["direction"] for f in aliasing.floor(None, consumer)}


def test_written_values_change_every_element_exactly() -> None:
    for typestr in aliasing.TYPESTRS:
        for shape in aliasing.SHAPES:
            values = aliasing.exported_values(typestr, shape)
            new = aliasing.written_values(values)
            assert values.dtype == new.dtype == np.dtype(typestr)
            assert (new != values).all()
            assert np.array_equal(new.astype(np.int64) - values.astype(np.int64), 100 + 0 * new)


# -- records carry the entry point --------------------------------------------------------
def test_coverage_labels_carry_a_drawn_entry_point() -> None:
    assert coverage_of_params({"entry": "torch.tensor", "typestr": "<f4"})["entry"] == (
        "torch.tensor"
    )
    assert "entry" not in coverage_of_params({"typestr": "<f4"})


def test_records_carry_the_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `pid` declares one entry point (read by the run's parent, which writes the records)
    monkeypatch.setitem(entries.ENTRIES, "pid", (Entry("pid.take", ZERO_COPY, "s", "q"),))
    config = RunConfig(
        out=tmp_path / "run",
        checks=["tests.synthetic.entry_checks"],
        libraries=["good", "pid", "wrong"],
        max_examples=4,
        seed=3,
        workers=2,
        timeout_s=10.0,
        gpus=0,
        adapter_source="tests.synthetic.adapters",
    )
    run_matrix(config)
    lines = (config.out / "results.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    by_consumer = {c: [r for r in records if r["consumer"] == c] for c in ("good", "pid", "wrong")}
    assert all(by_consumer.values())
    for r in by_consumer["good"]:
        assert r["entry"] == r["params"]["entry"] == r["coverage"]["entry"]
    assert {r["entry"] for r in by_consumer["pid"]} == {"pid.take"}
    assert {r["entry"] for r in by_consumer["wrong"]} == {None}
