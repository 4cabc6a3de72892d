"""Planted mutants of `caiconform.report.runstate` that the suite let live (issue 41, item 3):
a run with cells.jsonl but no plan never judged INCOMPLETE, and a tested run merged with an
untested one read as NOTHING TESTED.
"""

from __future__ import annotations

import json
from pathlib import Path

from caiconform.report.runstate import RunState, first_line, state_of, status_of


def _record(seq: int, consumer: str, outcome: str = "pass", **extra) -> dict:
    return {
        "run_id": "r1",
        "seq": seq,
        "check": "roundtrip",
        "producer": "reference",
        "consumer": consumer,
        "outcome": outcome,
        "rule": None,
        **extra,
    }


def test_a_run_with_cells_but_no_plan_is_incomplete_when_a_cell_never_finished(tmp_path):
    """No run.json plan: cells.jsonl says the run was the runner's, so a cell with records
    and no completion entry (killed mid-cell) is unfinished."""
    run = tmp_path / "run"
    run.mkdir()
    records = [_record(0, "cupy"), _record(1, "torch")]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    done = {"cell": "roundtrip/reference/cupy", "counts": {"pass": 1}}
    (run / "cells.jsonl").write_text(json.dumps(done) + "\n")
    assert not (run / "run.json").exists()
    state = state_of(run)
    assert [u.cell for u in state.unfinished] == ["roundtrip/reference/torch"], (
        f"got {state.unfinished}, expected the torch cell unfinished [cells.jsonl, no plan]"
    )
    assert status_of([state]) == "incomplete"
    line = first_line([state]) or ""
    assert line.startswith("INCOMPLETE: 1 of 2 cells unfinished"), f"got {line!r}"


def test_a_journal_alone_owes_no_cell(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    records = [_record(0, "cupy"), _record(1, "torch")]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert status_of([state_of(run)]) == "complete"


def test_a_tested_run_merged_with_an_untested_one_is_not_nothing_tested():
    tested = RunState(Path("tested"), cells=2, ran=2)
    untested = RunState(Path("untested"), cells=1, ran=0, skip_reasons=[("no cupy", 1)])
    for states in ([tested, untested], [untested, tested]):
        got = status_of(states)
        assert got == "complete", f"got {got!r}, expected 'complete' [one of two runs tested]"
        assert first_line(states) is None
    assert status_of([untested, RunState(Path("also"), cells=1)]) == "nothing-tested"
