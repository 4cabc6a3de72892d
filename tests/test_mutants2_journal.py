"""Planted mutants of `caiconform.runner.journal` that the suite let live (issue 41, second
round, tests/mutants/verify_journal_runstate.toml): blank lines, where a broken last line is cut,
that `append` flushes to disk, the first `seq`, a cell run again after a resume, a skip record
of another cell, a cells.jsonl line that is not an object, and damage to cells.jsonl.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from caiconform.runner.journal import Journal, JournalError, JsonlFile

CELL = "roundtrip/numba/cupy"


def _record(seq: int, consumer: str = "cupy", outcome: str = "pass", **extra) -> dict:
    return {"run_id": "r1", "seq": seq, "check": "roundtrip", "producer": "numba",
            "consumer": consumer, "outcome": outcome, "rule": None, **extra}  # fmt: skip


def _lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))


def test_blank_lines_in_the_journal_are_skipped(tmp_path: Path):
    _lines(tmp_path / "results.jsonl", [json.dumps(_record(0)), "", "  ", json.dumps(_record(1))])
    journal = Journal(tmp_path, "r1")
    try:
        got = [r["seq"] for r in journal.results.records]
        assert got == [0, 1], f"got {got}, expected both records, the blank lines skipped"
        assert journal.damaged == 0, f"got {journal.damaged} damaged, expected 0"
    finally:
        journal.close()


def test_a_broken_last_line_is_cut_where_it_starts(tmp_path: Path):
    good = [json.dumps(_record(n)) for n in range(3)]
    _lines(tmp_path / "results.jsonl", [*good, '{"run_id": "r1", "se'])
    data = (tmp_path / "results.jsonl").read_bytes()
    JsonlFile(tmp_path / "results.jsonl").close()
    got = (tmp_path / "results.jsonl").read_text()
    expected = "".join(line + "\n" for line in good)
    assert got == expected, f"got {got!r}, expected the three good lines kept [was {data!r}]"


def test_append_flushes_its_line_to_disk(tmp_path: Path, monkeypatch):
    flushed: list[int] = []
    real = getattr(os, "fdatasync", None) or os.fsync

    def counting(fd: int) -> None:
        flushed.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", counting, raising=False)
    monkeypatch.setattr(os, "fsync", counting)
    jsonl = JsonlFile(tmp_path / "x.jsonl")
    try:
        jsonl.append({"n": 1})
        jsonl.append({"n": 2})
        jsonl.sync(1)  # already on disk: no second flush
    finally:
        jsonl.close()
    assert len(flushed) == 2, f"got {len(flushed)} flushes, expected one per append"


def test_records_are_flushed_by_time_a_cell_by_its_end_and_the_rest_on_close(
    tmp_path: Path, monkeypatch
):
    """A result record is the kernel's at once (a killed run keeps it); its flush to the disk
    waits for the first record RECORD_SYNC_S after the last flush, for its cell's end, or for
    the journal's close: never a record left unflushed once the run ends."""
    from caiconform.runner import journal as journal_module

    flushed: list[int] = []
    real = getattr(os, "fdatasync", None) or os.fsync

    def counting(fd: int) -> None:
        flushed.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", counting, raising=False)
    monkeypatch.setattr(os, "fsync", counting)
    clock = [100.0]
    monkeypatch.setattr(journal_module.time, "monotonic", lambda: clock[0])
    journal = Journal(tmp_path / "run", "r1")
    record = {"check": "c", "producer": "p", "consumer": None, "outcome": "pass"}
    try:
        journal.record(record)  # the first: flushed
        journal.record(record)  # within RECORD_SYNC_S of it: left to a later flush
        assert len(flushed) == 1
        assert len((tmp_path / "run" / "results.jsonl").read_text().splitlines()) == 2
        clock[0] += journal_module.RECORD_SYNC_S
        journal.record(record)  # RECORD_SYNC_S later: flushes all three
        assert len(flushed) == 2
        journal.record(record)
        journal.cell_done("c/p/-", counts={"pass": 4})  # the records, then the cell's line
        assert len(flushed) == 4
        journal.record(record)
    finally:
        journal.close()
    assert len(flushed) == 5, f"got {len(flushed)} flushes: close leaves no record unflushed"


def test_a_new_journal_numbers_its_first_record_zero(tmp_path: Path):
    journal = Journal(tmp_path / "run", "r1")
    try:
        first = journal.record({"check": "c", "producer": "p", "consumer": None, "outcome": "pass"})
    finally:
        journal.close()
    assert first["seq"] == 0, f"got seq {first['seq']}, expected 0"


def test_a_resumed_journal_continues_after_its_largest_seq(tmp_path: Path):
    _lines(tmp_path / "results.jsonl", [json.dumps(_record(n)) for n in (4, 2, 7, 5)])
    journal = Journal(tmp_path, "r1")
    try:
        got = journal.record({"check": "c", "producer": "p", "consumer": None, "outcome": "pass"})
    finally:
        journal.close()
    assert got["seq"] == 8, f"got seq {got['seq']}, expected 8 (after the largest, 7)"


def test_a_cell_run_again_after_a_resume_is_judged_by_its_last_entry(tmp_path: Path):
    """Finished once with 2 examples, then run again with 3 of which 1 line was lost."""
    _lines(tmp_path / "results.jsonl", [json.dumps(_record(n)) for n in range(2)])
    entries = [{"cell": CELL, "counts": {"pass": 2}}, {"cell": CELL, "counts": {"pass": 3}}]
    _lines(tmp_path / "cells.jsonl", [json.dumps(e) for e in entries])
    journal = Journal(tmp_path, "r1")
    try:
        got = journal.finished_cells()
    finally:
        journal.close()
    assert got == set(), f"got {got}, expected the cell unfinished (its last entry counts 3)"


def test_another_cell_s_skip_record_does_not_stand_for_this_one(tmp_path: Path):
    """Same check and producer, another consumer: this cell's skip is still written."""
    _lines(tmp_path / "results.jsonl", [json.dumps(_record(0, "torch", "skip"))])
    journal = Journal(tmp_path, "r1")
    try:
        skip = {"check": "roundtrip", "producer": "numba", "consumer": "cupy", "outcome": "skip"}
        journal.skip_cell(CELL, skip, "cupy missing")
        got = [(r["consumer"], r["outcome"]) for r in journal.results.records]
    finally:
        journal.close()
    assert got == [("torch", "skip"), ("cupy", "skip")], f"got {got}, expected cupy's skip written"


@pytest.mark.parametrize("line", ['"roundtrip/numba/cupy"', "3", "null"])
def test_a_cells_line_that_is_not_an_object_is_a_journal_error(tmp_path: Path, line: str):
    _lines(tmp_path / "cells.jsonl", [line, json.dumps({"cell": CELL})])
    with pytest.raises(JournalError, match=r"cells\.jsonl:1: expected a JSON object"):
        Journal(tmp_path, "r1")


def test_a_truncated_cells_line_counts_as_damage(tmp_path: Path):
    _lines(tmp_path / "results.jsonl", [json.dumps(_record(0))])
    (tmp_path / "cells.jsonl").write_text(json.dumps({"cell": CELL}) + '\n{"cell": "roun')
    journal = Journal(tmp_path, "r1")
    try:
        assert journal.damaged == 1, f"got {journal.damaged}, expected the cells line counted"
    finally:
        journal.close()
