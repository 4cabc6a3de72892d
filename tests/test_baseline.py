"""Baselines (`caiconform baseline`, `caiconform.results.baseline`): a baseline keeps the run it was
written from green, pins each group's failure mode so that another mode under the same rule
is red, lists an entry whose examples grew tenfold, and reads old baselines without the pin.

Runs are synthetic journals written here, so every count is known.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from caiconform.cli import main
from caiconform.results.baseline import entries_of, write_baseline
from caiconform.results.catalogue import build_catalogue
from caiconform.results.expectations import (
    detail_pattern,
    load_expectations,
    outcome_detail,
    parse_expectations,
    wildcard_match,
)
from caiconform.results.verdict import judge

READS = "CAI-CONSUMER-READS-DESCRIBED"
ZERO_SIZE_REFUSAL = "ValueError: cannot read a zero-size array at 0x7f3a00000000"
SHAPE_ZERO = "IndexError: tuple index out of range"


def rec(seq: int, check: str, shape: list, outcome: str = "pass", seen=None, **extra) -> dict:
    """One result of cleanlib consuming the reference producer's export of `shape`."""
    return {
        "run_id": "r1",
        "seq": seq,
        "check": check,
        "producer": "reference",
        "consumer": "cleanlib",
        "outcome": outcome,
        "rule": READS if outcome != "pass" else None,
        "params": {"layout": {"kind": "C", "shape": shape}, "typestr": "<f4", "n": seq},
        "message": f"reference->cleanlib <f4 C {tuple(shape)}: got {seen}, expected x [{READS}]",
        "seen": seen,
        "expected": "the values read back",
        "shrunk": False,
        **extra,
    }


def clean_run() -> list[dict]:
    """cleanlib reads everything but one zero-size array, which it refuses (a ValueError)."""
    records = [rec(i, "roundtrip", [i + 1, 3]) for i in range(6)]
    records += [rec(10 + i, "roundtrip", []) for i in range(4)]
    records += [rec(20, "roundtrip", [0, 3], "rejected", ZERO_SIZE_REFUSAL)]
    return records


def shape_zero_run() -> list[dict]:
    """cleanlib after a change that reads shape[0]: every 0-d array is an IndexError, under
    the rule and outcome of the baselined zero-size refusal."""
    records = clean_run()
    for r in records:
        if r["params"]["layout"]["shape"] == []:
            r.update(outcome="rejected", rule=READS, seen=SHAPE_ZERO)
    return records


def write_run(directory: Path, records: list[dict]) -> Path:
    """A finished run of `records`: its journal and a completion entry for each cell."""
    from caiconform.results.record import cell_key

    directory.mkdir(parents=True)
    (directory / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    cells = dict.fromkeys(cell_key(r) for r in records)
    (directory / "cells.jsonl").write_text("".join(json.dumps({"cell": c}) + "\n" for c in cells))
    (directory / "env.json").write_text("{}")
    return directory


def baseline_of(records: list[dict], path: Path) -> list:
    groups = build_catalogue(records)["groups"]
    write_baseline(groups, path, date="2000-01-01", source="test", records=records)
    return load_expectations(path)


# --- a baseline keeps the run it was written from green -------------------------------------


def test_a_baseline_passes_the_run_it_was_written_from_when_a_group_spans_two_families(
    tmp_path,
):
    """One group (cleanlib consumer, READS, rejected-valid) seen in roundtrip and zero_size:
    its entry must cover both families' examples (no `check` of one of them)."""
    records = clean_run() + [rec(30 + i, "zero_size", [0]) for i in range(3)]
    records += [rec(40, "zero_size", [0, 0], "rejected", ZERO_SIZE_REFUSAL)]
    (group,) = build_catalogue(records)["groups"]
    assert group["checks"] == ["roundtrip", "zero_size"]
    entries = baseline_of(records, tmp_path / "b.yaml")
    verdict = judge(records, expectations=entries)
    assert verdict.ok, verdict.headline()
    assert verdict.headline() == "OK: the matrix: no failing defect; 0 new since baseline"
    assert [j.status for j in verdict.judged] == ["expected"]


def test_the_baseline_of_a_real_run_keeps_it_green(tmp_path):
    """Every group at or above the default --fail-on of the recorded run in tests/data."""
    from caiconform.report.build import load_runs

    run = load_runs([str(Path(__file__).parent / "data" / "run-h100")])
    groups = build_catalogue(run.records)["groups"]
    write_baseline(groups, tmp_path / "b.yaml", date="d", source="s", records=run.records)
    entries = load_expectations(tmp_path / "b.yaml")
    assert entries and all(e.details for e in entries)
    verdict = judge(run.records, expectations=entries)
    assert not verdict.failing and not verdict.entry_errors, verdict.headline()


# --- the failure mode is pinned ------------------------------------------------------------


def test_a_new_failure_mode_under_a_baselined_rule_is_red(tmp_path, capsys):
    """The acceptance of the downstream test, without a GPU: a baseline written from the clean
    library holds an entry for (cleanlib, consumer, READS, roundtrip, rejected) from one
    zero-size refusal; a consumer that reads shape[0] (an IndexError on every 0-d array) is
    red, naming the new failure mode."""
    clean = write_run(tmp_path / "clean", clean_run())
    baseline = tmp_path / "cai-expectations.yaml"
    assert main(["baseline", str(clean), "-o", str(baseline)]) == 0
    (entry,) = yaml.safe_load(baseline.read_text())["expectations"]
    assert entry["consumer"] == "cleanlib" and entry["check"] == "roundtrip"
    assert entry["detail"] == ["ValueError: cannot read a zero-size array at *"]
    assert entry["examples"] == 1
    assert main(["report", str(clean), "--expectations", str(baseline)]) == 0
    capsys.readouterr()
    planted = write_run(tmp_path / "planted", shape_zero_run())
    assert main(["report", str(planted), "--expectations", str(baseline)]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(
        f"FIX: the matrix: 1 failing defect(s) (refuses-valid: cleanlib consumer {READS} "
    ), first
    assert f"a new failure mode: {SHAPE_ZERO}" in first, first


def test_a_baseline_entry_without_detail_covers_every_mode_as_before():
    """An entry written before baselines pinned the mode matches any detail of its rule and
    outcome: the shape[0] run stays green under it, as it did."""
    entries = parse_expectations(
        {
            "expectations": [
                {"rule": READS, "consumer": "cleanlib", "outcome": "rejected", "reason": "old"}
            ]
        }
    )
    verdict = judge(shape_zero_run(), expectations=entries)
    assert verdict.ok, verdict.headline()


def test_several_modes_of_one_group_are_each_pinned(tmp_path):
    records = clean_run() + [rec(21, "roundtrip", [0], "rejected", "TypeError: no data (0,)")]
    entries = baseline_of(records, tmp_path / "b.yaml")
    assert entries[0].details == (
        "TypeError: no data *",
        "ValueError: cannot read a zero-size array at *",
    )
    assert judge(records, expectations=entries).ok
    assert not judge(shape_zero_run(), expectations=entries).ok


def test_too_many_modes_pin_the_exception_types_and_then_nothing(tmp_path):
    many = [
        rec(50 + i, "roundtrip", [0], "rejected", f"ValueError: refused for reason {chr(97 + i)}")
        for i in range(12)
    ]
    records = clean_run() + many
    entries = baseline_of(records, tmp_path / "b.yaml")
    assert entries[0].details == ("ValueError: *",)
    assert judge(records, expectations=entries).ok
    assert not judge(shape_zero_run(), expectations=entries).ok
    untyped = [
        rec(70 + i, "roundtrip", [0], "rejected", f"refused {chr(97 + i)} ({i} of 9)")
        for i in range(12)
    ]
    (entry,) = entries_of(build_catalogue(untyped)["groups"], "d", untyped)
    assert "detail" not in entry and "failure modes not pinned: 12 details" in entry["reason"]


def test_a_crash_is_pinned_by_its_signal():
    crashes = [
        {**rec(i, "roundtrip", [2]), "outcome": "crash", "rule": None, "seen": None,
         "message": "worker died (SIGSEGV): Fatal Python error: Segmentation fault"}
        for i in range(3)
    ]  # fmt: skip
    (entry,) = entries_of(build_catalogue(crashes)["groups"], "d", crashes)
    assert entry["detail"] == ["worker died (SIGSEGV): Fatal Python error: Segmentation fault"]
    (expectation,) = parse_expectations({"expectations": [entry]})
    abort = {**crashes[0], "message": "worker died (SIGABRT): Fatal Python error: Aborted"}
    assert expectation.matches_finding(crashes[0]) and not expectation.matches_finding(abort)


@given(st.text(max_size=300))
def test_a_detail_pattern_matches_the_detail_it_was_made_from(text):
    detail = " ".join(text.split())
    assert wildcard_match(detail, detail_pattern(detail))


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("shape (1,), expected ()", "shape (2, 3), expected (4,)"),
        ("TypeError: data type '<c4' not understood", "TypeError: data type '>f16' not understood"),
        ("12 of 12 elements differ; first at (0, 0): got np.float32(-6.8e+15), expected "
         "np.float32(1.8e+19)", "2 of 2 elements differ; first at (1,): got 5f, expected 01"),
        ("invalid pointer 0x7f3a00001000", "invalid pointer 0xdead"),
        ("1 of 2 elements differ; first at (1,): got np.False_, expected np.True_",
         "2 of 2 elements differ; first at (0,): got np.True_, expected np.False_"),
        ("1 of 1 elements differ; first at (): got cf, expected 01 (bytes)",
         "3 of 8 elements differ; first at (2,): got 00, expected fe (bytes)"),
    ],
)  # fmt: skip
def test_numbers_addresses_shapes_and_typestrs_are_generalised(one, other):
    assert wildcard_match(other, detail_pattern(one)), detail_pattern(one)


def test_outcome_detail_is_what_was_seen_else_the_message():
    assert outcome_detail({"seen": "IndexError:  x\n y", "message": "m"}) == "IndexError: x y"
    assert outcome_detail({"seen": None, "message": "worker died"}) == "worker died"


# --- growth ---------------------------------------------------------------------------------


def test_an_entry_whose_examples_grew_tenfold_is_listed_not_failed(tmp_path):
    entries = baseline_of(clean_run(), tmp_path / "b.yaml")
    grown = clean_run() + [
        rec(100 + i, "roundtrip", [0, i + 1], "rejected", ZERO_SIZE_REFUSAL) for i in range(9)
    ]
    verdict = judge(grown, expectations=entries)
    assert verdict.ok
    ((entry, count),) = verdict.grown
    assert count == 10 and entry.examples == 1
    assert verdict.headline() == (
        "OK: the matrix: no failing defect; 0 new since baseline; 1 baseline entry(ies) cover "
        f"tenfold their examples ({tmp_path / 'b.yaml'}: entry 1: 10, was 1)"
    )
    nine = judge(grown[:-1], expectations=entries)
    assert nine.grown == [] and "tenfold" not in nine.headline()


# --- caiconform baseline / findings --library of a library that ran clean -------------------


def test_a_library_that_ran_clean_is_said_so_with_exit_0(tmp_path, capsys):
    records = clean_run() + [
        {**rec(60, "schema", [2]), "producer": "tidy", "consumer": None},
    ]
    run = write_run(tmp_path / "run", records)
    out = tmp_path / "b.yaml"
    assert main(["baseline", str(run), "-o", str(out), "--library", "tidy"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "tidy ran clean here: no finding names it"
    assert yaml.safe_load(out.read_text())["expectations"] == []
    assert main(["findings", str(run), "--library", "tidy"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "tidy ran clean here: no finding names it"
    assert main(["findings", str(run), "--library", "tydi"]) == 2
    assert capsys.readouterr().err.strip() == (
        "caiconform: error: --library 'tydi': not in these runs (libraries there: cleanlib, "
        "reference, tidy; findings name: cleanlib)"
    )


def test_the_documented_baseline_entry_is_what_the_writer_writes():
    """docs/expectations.md, "Baselines pin the failure mode": its entry is the one written
    for the clean run's zero-size refusal (the library named mylib there)."""
    text = (Path(__file__).parent.parent / "docs" / "expectations.md").read_text()
    section = text.split("## Baselines pin the failure mode", 1)[1]
    block = section.split("```text\n", 1)[1].split("```", 1)[0]
    (documented,) = yaml.safe_load("expectations:\n" + block)["expectations"]
    records = [{**r, "consumer": "mylib"} for r in clean_run()]
    (written,) = entries_of(build_catalogue(records)["groups"], "d", records)
    assert documented["reason"].startswith("TODO: why this is expected")
    assert {k: v for k, v in documented.items() if k != "reason"} == {
        k: v for k, v in written.items() if k != "reason"
    }


def test_a_library_whose_every_cell_was_skipped_did_not_run(tmp_path, capsys):
    """A library present only as skips (not installed on that machine) never ran: saying it
    'ran clean' would be an OK over nothing; it says it did not run, with the reason, exit 0."""
    skipped = {
        **rec(61, "schema", [2]),
        "producer": "warp",
        "consumer": None,
        "outcome": "skip",
        "message": "warp unavailable: warp not importable",
    }
    run = write_run(tmp_path / "run", clean_run() + [skipped])
    assert main(["findings", str(run), "--library", "warp"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "warp did not run here: every cell of it was skipped (warp unavailable: warp not "
        "importable)"
    )
