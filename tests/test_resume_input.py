"""Resume and report on damaged journals (issue 26, item 5): a skip record written before a
kill is not written again, a repeated line counts once, a broken line in the middle or a record
of the wrong types is one clear line for `report` and `run --resume` alike, never a traceback.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from caiconform.report.load import ReportInputError, load_run
from caiconform.runner.driver import RunConfig, run_matrix
from caiconform.runner.journal import Journal, JournalError
from caiconform.runner.plan import UsageError

ROOT = Path(__file__).resolve().parent.parent
SYNTHETIC = "tests.synthetic.checks"
SOURCE = "tests.synthetic.adapters"


@pytest.fixture(autouse=True)
def _importable_synthetic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


def _config(out: Path, *, resume: bool = False) -> RunConfig:
    return RunConfig(
        out=out,
        checks=[SYNTHETIC],
        libraries=["good", "missing"],
        max_examples=3,
        seed=7,
        workers=1,
        timeout_s=5.0,
        gpus=0,
        shrink=False,
        confirm=False,
        adapter_source=SOURCE,
        resume=resume,
    )


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_run_killed_between_a_skip_record_and_its_cell_writes_the_skip_once(tmp_path):
    out = tmp_path / "run"
    run_matrix(_config(out))
    skipped = "synthetic/missing/-"
    cells = (out / "cells.jsonl").read_text().splitlines()
    kept = [line for line in cells if json.loads(line)["cell"] != skipped]
    assert len(kept) == len(cells) - 1
    # killed after the skip record was journaled, before its cell line
    (out / "cells.jsonl").write_text("".join(line + "\n" for line in kept))
    run_matrix(_config(out, resume=True))
    skips = [r for r in _lines(out / "results.jsonl") if r["producer"] == "missing"]
    assert [r["outcome"] for r in skips] == ["skip"]
    assert [c["cell"] for c in _lines(out / "cells.jsonl")].count(skipped) == 1


def _record(number: int, **fields) -> dict:
    return {"run_id": "r1", "seq": number, "check": "c", "producer": "p", "consumer": None,
            "rule": None, "outcome": "pass", "params": {}, **fields}  # fmt: skip


def _write(path: Path, lines: list[str]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "results.jsonl").write_text("".join(line + "\n" for line in lines))


def test_the_report_counts_a_repeated_line_once(tmp_path):
    line = json.dumps(_record(0, outcome="skip"))
    _write(tmp_path, [line, line, json.dumps(_record(1))])
    run = load_run(tmp_path)
    assert [(r["seq"], r["outcome"]) for r in run.records] == [(0, "skip"), (1, "pass")]
    assert any("1 repeated line(s) (same run_id and seq) counted once" in w for w in run.warnings)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("producer", [1], "producer is an array, expected a string or null"),
        ("seq", "abc", "seq is a string, expected an integer"),
        ("seq", True, "seq is a boolean, expected an integer"),
        ("run_id", 5, "run_id is an integer, expected a string"),
        ("outcome", ["pass"], 'outcome ["pass"] is not one of pass'),
    ],
)
def test_a_record_of_the_wrong_types_is_one_line_for_report_and_resume(
    tmp_path, field, value, message
):
    _write(tmp_path, [json.dumps(_record(0)), json.dumps(_record(1, **{field: value}))])
    with pytest.raises(ReportInputError, match=re.escape(f"results.jsonl:2: {message}")):
        load_run(tmp_path)
    with pytest.raises(JournalError, match=re.escape(f"results.jsonl:2: {message}")):
        Journal(tmp_path, "r1")


def test_resume_refuses_a_garbage_line_in_the_middle_as_the_report_does(tmp_path):
    out = tmp_path / "run"
    run_matrix(_config(out))
    lines = (out / "results.jsonl").read_text().splitlines()
    _write(out, [lines[0], "garbage", *lines[1:]])
    with pytest.raises(ReportInputError, match=r"results.jsonl:2: not valid JSON"):
        load_run(out)
    with pytest.raises(UsageError, match=r"cannot resume: .*results.jsonl:2: not valid JSON"):
        run_matrix(_config(out, resume=True))


def test_a_broken_last_line_is_cut_off_so_later_appends_stay_readable(tmp_path):
    _write(tmp_path, [json.dumps(_record(0)), '{"run_id": "r1", "seq": 1, "che'])
    journal = Journal(tmp_path, "r1")
    assert journal.damaged == 1
    journal.record({"check": "c", "producer": "p", "consumer": None, "outcome": "pass"})
    journal.close()
    assert [r["seq"] for r in load_run(tmp_path).records] == [0, 1]
