"""A planted mutant of `caiconform.runner.journal` that the suite let live (issue 41, item 3):
a shrunk reproducer counted as one of its cell's examples, so `--resume` skips a cell whose
journal lost an example line.
"""

from __future__ import annotations

import json
from pathlib import Path

from caiconform.runner.journal import Journal

CELL = "roundtrip/numba/cupy"


def _record(seq: int, outcome: str, **extra) -> dict:
    return {
        "run_id": "r1",
        "seq": seq,
        "check": "roundtrip",
        "producer": "numba",
        "consumer": "cupy",
        "outcome": outcome,
        "rule": "CAI-CONSUMER-READS-DESCRIBED" if outcome == "fail" else None,
        **extra,
    }


def _run(directory: Path, records: list[dict]) -> Journal:
    """A run directory whose cell finished with 2 passes and 1 fail (`counts`) and whose
    results.jsonl holds `records`."""
    directory.mkdir()
    (directory / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    done = {"cell": CELL, "counts": {"pass": 2, "fail": 1}, "time": "2026-11-28T00:00:00Z"}
    (directory / "cells.jsonl").write_text(json.dumps(done) + "\n")
    return Journal(directory, "r1")


def test_a_shrunk_reproducer_is_not_one_of_the_cell_s_examples(tmp_path):
    """The cell's fail was shrunk, and the fail's own line was lost: two examples of three
    are journaled, so the cell runs again on `--resume`."""
    lost = [_record(0, "pass"), _record(1, "pass"), _record(2, "fail", shrunk=True)]
    journal = _run(tmp_path / "lost", lost)
    try:
        got = journal.finished_cells()
    finally:
        journal.close()
    assert got == set(), f"got {got}, expected no finished cell [a lost line, one shrunk]"


def test_a_cell_with_every_example_and_its_shrunk_reproducer_is_finished(tmp_path):
    whole = [
        _record(0, "pass"),
        _record(1, "pass"),
        _record(2, "fail"),
        _record(3, "fail", shrunk=True),
    ]
    journal = _run(tmp_path / "whole", whole)
    try:
        assert journal.finished_cells() == {CELL}
    finally:
        journal.close()
