"""Planted mutants of `caiconform.report.runstate` that the suite let live (issue 41, second
round, tests/mutants/verify_journal_runstate.toml): which shards a merge misses, when a run is
ONE SHARD or "no GPU", what the INCOMPLETE and NOTHING TESTED lines say, the exit status with
`allow_incomplete`, and what `state_of` reads from a run directory (a planned skipped cell, a
gpu entry that does not say `available`, a cell skipped and run, cells.jsonl lines without
counts). Each is judged on RunStates built here or on a small run directory, no run spawned.
"""

from __future__ import annotations

import json
from pathlib import Path

from caiconform.report.runstate import (
    EXIT_INCOMPLETE,
    EXIT_NOTHING_TESTED,
    RunState,
    Unfinished,
    exit_status,
    first_line,
    headline_in_state,
    missing_shards,
    state_of,
    status_of,
)


def _shard(index: int, count: int, **fields) -> RunState:
    return RunState(Path(f"shard{index}"), cells=2, ran=2, shard=(index, count), **fields)


def _unfinished(n: int) -> list[Unfinished]:
    return [Unfinished(f"fam/p{i}/-", 1) for i in range(n)]


def _write_run(run: Path, records: list[dict], cells: list[dict] | None, meta: dict) -> Path:
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"run_id": "r", **meta}))
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    if cells is not None:
        (run / "cells.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cells))
    return run


def _record(seq: int, producer: str, outcome: str = "pass", **extra) -> dict:
    return {"run_id": "r", "seq": seq, "check": "fam", "producer": producer, "consumer": None,
            "rule": None, "outcome": outcome, **extra}  # fmt: skip


def test_a_merge_without_its_last_shard_misses_it_and_a_lone_shard_misses_none():
    got = missing_shards([_shard(1, 3), _shard(2, 3)])
    assert got == ["3/3"], f"got {got}, expected the last shard 3/3 missing"
    assert missing_shards([_shard(2, 3)]) == [], "a lone shard judges its own cells only"


def test_shards_of_one_count_and_settings_merge_complete():
    states = [_shard(1, 2), _shard(2, 2)]
    assert status_of(states) == "complete", f"got {status_of(states)!r}, expected complete"
    assert first_line(states) is None


def test_a_whole_matrix_run_as_shard_1_of_1_is_not_one_shard():
    got = status_of([_shard(1, 1)])
    assert got == "complete", f"got {got!r}, expected 'complete' for --shard 1/1"
    assert status_of([_shard(1, 2)]) == "one-shard"


def test_no_gpu_needs_every_run_without_one_and_a_cell_skipped():
    without = RunState(Path("a"), cells=2, ran=1, no_gpu="no NVIDIA driver")
    withgpu = RunState(Path("b"), cells=2, ran=2)
    got = status_of([without, withgpu])
    assert got == "complete", f"got {got!r}, expected 'complete' [one of two runs had a GPU]"
    all_ran = RunState(Path("c"), cells=2, ran=2, no_gpu="no NVIDIA driver")
    got = status_of([all_ran])
    assert got == "complete", f"got {got!r}, expected 'complete' [every cell ran]"
    assert status_of([without]) == "no-gpu"


def test_the_incomplete_line_names_three_cells_then_counts_the_rest():
    three = first_line([RunState(Path("r"), cells=5, ran=2, unfinished=_unfinished(3))]) or ""
    assert "more" not in three, f"got {three!r}, expected no 'and N more' for three cells"
    four = first_line([RunState(Path("r"), cells=5, ran=1, unfinished=_unfinished(4))]) or ""
    assert "fam/p2/- stopped after 1 example; and 1 more)" in four, f"got {four!r}"


def test_a_merge_of_whole_shards_missing_one_says_which_to_run():
    line = first_line([_shard(1, 3), _shard(3, 3)])
    expected = (
        "INCOMPLETE: shard(s) 2/3 not among the runs merged; run them with caiconform run "
        "--shard 2/3 (the same options), then merge again"
    )
    assert line == expected, f"got {line!r}, expected {expected!r}"


def test_the_incomplete_line_counts_missing_examples_only_when_some_are():
    some = RunState(Path("r"), cells=2, ran=1, unfinished=_unfinished(1), missing=7)
    assert "about 7 examples missing" in (first_line([some]) or "")
    none = RunState(Path("r"), cells=2, ran=1, unfinished=_unfinished(1))
    line = first_line([none]) or ""
    assert "examples missing" not in line, f"got {line!r}, expected no count of 0 examples"


def test_the_incomplete_line_resumes_only_the_incomplete_runs():
    whole = RunState(Path("whole"), cells=2, ran=2)
    killed = RunState(Path("killed"), cells=2, ran=1, unfinished=_unfinished(1))
    line = first_line([whole, killed]) or ""
    assert line.endswith("continue with: caiconform run --resume --out killed"), (
        f"got {line!r}, expected only the killed run resumed"
    )


def test_nothing_tested_quotes_the_two_commonest_skip_reasons():
    reasons = [("no cupy", 3), ("no torch", 2), ("no jax", 1)]
    line = first_line([RunState(Path("r"), cells=6, skip_reasons=reasons)]) or ""
    assert "no cupy (3 cells); no torch (2 cells)" in line, f"got {line!r}"
    assert "no jax" not in line, f"got {line!r}, expected the third reason left out"


def test_a_skip_reason_of_exactly_120_characters_is_quoted_whole():
    reason = "x" * 120
    line = first_line([RunState(Path("r"), cells=1, skip_reasons=[(reason, 1)])]) or ""
    assert f"{reason} (1 cell)" in line, f"got {line!r}, expected the reason uncut"
    longer = first_line([RunState(Path("r"), cells=1, skip_reasons=[(reason + "y", 1)])]) or ""
    assert "x" * 117 + "... (1 cell)" in longer, f"got {longer!r}, expected the reason cut"


def test_exit_status_of_each_state():
    assert exit_status("incomplete") == EXIT_INCOMPLETE
    assert exit_status("incomplete", allow_incomplete=True) is None
    assert exit_status("nothing-tested") == EXIT_NOTHING_TESTED
    assert exit_status("nothing-tested", allow_incomplete=True) == EXIT_NOTHING_TESTED
    assert exit_status("complete") is None


def test_the_ok_headline_over_nothing_tested_is_no_verdict():
    got = headline_in_state("OK: no failing defect", "nothing-tested")
    assert got == "NOTHING TESTED: no verdict: no example ran", f"got {got!r}"


def test_a_planned_skipped_cell_with_its_skip_record_misses_no_example(tmp_path: Path):
    """Killed after the skip record, before its cells.jsonl line: unfinished, nothing missing."""
    plan = {"cells": ["fam/a/-"], "skipped": ["fam/s/-"]}
    records = [_record(0, "a"), _record(1, "s", "skip", message="no s here")]
    run = _write_run(
        tmp_path / "run", records, [{"cell": "fam/a/-", "counts": {"pass": 1}}], {"plan": plan}
    )
    state = state_of(run)
    assert [u.cell for u in state.unfinished] == ["fam/s/-"], f"got {state.unfinished}"
    assert state.missing == 0, f"got {state.missing} missing, expected 0 [skip record journaled]"


def test_a_gpu_entry_that_does_not_say_available_is_not_no_gpu(tmp_path: Path):
    run = _write_run(tmp_path / "run", [_record(0, "a", "skip", message="no a")], [], {})
    (run / "env.json").write_text(json.dumps({"gpu": {"devices": [{"name": "NVIDIA H200"}]}}))
    got = state_of(run).no_gpu
    assert got is None, f"got {got!r}, expected no 'no GPU' when env.json does not say so"


def test_a_cell_skipped_then_run_gives_no_skip_reason(tmp_path: Path):
    records = [_record(0, "a", "skip", message="no a then"), _record(1, "a")]
    run = _write_run(tmp_path / "run", records, None, {})
    got = state_of(run).skip_reasons
    assert got == [], f"got {got}, expected no skip reason for a cell that ran"


def test_cells_lines_without_counts_are_read_without_error(tmp_path: Path):
    """Finished cells whose cells.jsonl line says nothing of counts (written by another tool):
    no estimate of examples is drawn from them, and a planned cell left unfinished is named."""
    plan = {"cells": ["fam/a/-", "fam/b/-"], "skipped": []}
    run = _write_run(tmp_path / "run", [_record(0, "a")], [{"cell": "fam/a/-"}], {"plan": plan})
    state = state_of(run)
    assert [u.cell for u in state.unfinished] == ["fam/b/-"], f"got {state.unfinished}"
    assert state.missing == 0, f"got {state.missing}, expected no estimate without counts"
