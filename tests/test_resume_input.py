"""Resume and report on damaged journals (issue 26, item 5): a skip record written before a
kill is not written again, a repeated line counts once, a broken line in the middle or a record
of the wrong types is one clear line for `report` and `run --resume` alike, never a traceback.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from caiconform.errors import UsageError
from caiconform.report.load import ReportInputError, load_run
from caiconform.runner.config import RunConfig
from caiconform.runner.driver import run_matrix
from caiconform.runner.journal import Journal, JournalError

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


# --- an incomplete run is never OK (issue 34) -----------------------------------------------


def _with_gpu(out: Path, available: bool) -> None:
    env = json.loads((out / "env.json").read_text())
    env["gpu"] = {"available": available, "reason": "" if available else "no NVIDIA driver"}
    (out / "env.json").write_text(json.dumps(env))


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """One whole synthetic run (a cell that runs, one skipped), copied by each test."""
    out = tmp_path_factory.mktemp("finished") / "run"
    run_matrix(_config(out))
    return out


def _copy(run: Path, tmp_path: Path, *, gpu: bool = True) -> Path:
    import shutil

    out = tmp_path / "run"
    shutil.copytree(run, out)
    _with_gpu(out, gpu)
    return out


def _kill_mid_cell(out: Path) -> None:
    """As a run killed in the middle of cell synthetic/good/-: its first example journaled, no
    completion entry."""
    cells = [c for c in _lines(out / "cells.jsonl") if c["cell"] != "synthetic/good/-"]
    (out / "cells.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cells))
    records = _lines(out / "results.jsonl")
    good = [r for r in records if r["producer"] == "good"]
    kept = [r for r in records if r not in good[1:]]
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))


def _good_records(out: Path) -> list[str]:
    return [
        line
        for line in (out / "results.jsonl").read_text().splitlines()
        if json.loads(line)["producer"] == "good" and not json.loads(line).get("shrunk")
    ]


def test_resume_of_a_finished_run_whose_journal_lost_its_last_line_runs_exactly_that(
    finished_run, tmp_path
):
    from caiconform.report.runstate import state_of

    out = _copy(finished_run, tmp_path)
    lines = (out / "results.jsonl").read_text().splitlines()
    last = json.loads(lines[-1])
    assert last["producer"] == "good" and last["index"] is not None, last
    # killed while the last line was written: half of it on disk
    (out / "results.jsonl").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:20])
    state = state_of(out)
    assert [u.cell for u in state.unfinished] == ["synthetic/good/-"], state
    assert state.missing == 1
    result = run_matrix(_config(out, resume=True))
    assert "dropped 1 truncated journal line(s)" in result.notes
    again = [json.loads(line) for line in _good_records(out)]
    assert len(again) == len(lines) - 1  # the skip of `missing` is not `good`'s
    assert sorted(r["index"] for r in again) == sorted(
        json.loads(line)["index"] for line in lines if json.loads(line)["producer"] == "good"
    )
    assert again[-1]["params"] == last["params"]
    assert state_of(out).unfinished == []


def test_a_run_killed_mid_cell_is_incomplete_and_names_the_cell(finished_run, tmp_path):
    from caiconform.report.runstate import first_line, state_of

    out = _copy(finished_run, tmp_path)
    _kill_mid_cell(out)
    state = state_of(out)
    line = first_line([state])
    assert line is not None and line.startswith("INCOMPLETE: 1 of 2 cells unfinished")
    assert (
        "synthetic/good/- stopped after 1 example;" in line
        or "synthetic/good/- stopped after 1 example)" in line
    )
    assert f"continue with: caiconform run --resume --out {out}" in line


def test_a_planned_cell_that_never_started_is_incomplete(finished_run, tmp_path):
    from caiconform.report.runstate import first_line, state_of

    out = _copy(finished_run, tmp_path)
    meta = json.loads((out / "run.json").read_text())
    assert meta["plan"] == {"cells": ["synthetic/good/-"], "skipped": ["synthetic/missing/-"]}
    records = [r for r in _lines(out / "results.jsonl") if r["producer"] != "good"]
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    cells = [c for c in _lines(out / "cells.jsonl") if c["cell"] != "synthetic/good/-"]
    (out / "cells.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cells))
    line = first_line([state_of(out)])
    assert line is not None and "synthetic/good/- not started" in line, line
    assert "about 3 examples missing" in line


def test_a_whole_run_on_a_gpu_machine_has_no_first_line(finished_run, tmp_path):
    from caiconform.report.runstate import first_line, state_of, status_of

    out = _copy(finished_run, tmp_path)
    state = state_of(out)
    assert (state.cells, state.ran, state.unfinished) == (2, 1, [])
    assert status_of([state]) == "complete" and first_line([state]) is None


def test_a_run_without_a_gpu_that_skipped_cells_says_so_first(finished_run, tmp_path):
    from caiconform.report.runstate import first_line, state_of

    out = _copy(finished_run, tmp_path, gpu=False)
    assert first_line([state_of(out)]) == (
        "no GPU: 1 of 2 cells ran; the others were skipped (reasons listed)"
    )


# --- what report, findings, baseline and the plugin say of such runs -------------------------


def test_report_of_a_killed_run_says_incomplete_first_and_exits_3(finished_run, tmp_path, capsys):
    from caiconform.cli import main

    out = _copy(finished_run, tmp_path)
    _kill_mid_cell(out)
    assert main(["report", str(out)]) == 3
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("INCOMPLETE: 1 of 2 cells unfinished (synthetic/good/- stopped after")
    assert first.endswith(f"continue with: caiconform run --resume --out {out}")
    markdown = (out / "matrix.md").read_text()
    # the state's line first, and the verdict's own line is no OK over half a run
    assert markdown.index("**INCOMPLETE: 1 of 2 cells") < markdown.index(
        "**INCOMPLETE: the matrix: no failing defect in the cells that ran (not an OK)"
    )
    assert "**OK: " not in markdown
    page = (out / "index.html").read_text()
    assert page.index('id="run-state"') < page.index('id="headline"')
    assert main(["report", str(out), "--allow-incomplete"]) == 0
    assert capsys.readouterr().out.startswith("INCOMPLETE: ")


def test_findings_and_baseline_of_a_killed_run_say_incomplete_first(finished_run, tmp_path, capsys):
    from caiconform.cli import main

    out = _copy(finished_run, tmp_path)
    _kill_mid_cell(out)
    assert main(["findings", str(out), "--list"]) == 3
    assert capsys.readouterr().err.startswith("INCOMPLETE: ")
    assert main(["findings", str(out), "--list", "--allow-incomplete"]) == 0
    assert capsys.readouterr().err.startswith("INCOMPLETE: ")
    baseline = tmp_path / "base.yaml"
    assert main(["baseline", str(out), "-o", str(baseline)]) == 3
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("INCOMPLETE: ") and "not written" in err[1]
    assert not baseline.exists()
    assert main(["baseline", str(out), "-o", str(baseline), "--allow-incomplete"]) == 0
    assert baseline.exists()


def test_report_of_a_run_that_tested_nothing_says_so_and_exits_4(tmp_path, capsys):
    from caiconform.cli import main

    out = tmp_path / "run"
    config = _config(out)
    config.libraries = ["missing"]
    run_matrix(config)
    assert main(["report", str(out)]) == 4
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("NOTHING TESTED: ")
    assert "missing unavailable: missing not importable" in first
    assert "**NOTHING TESTED: " in (out / "matrix.md").read_text().split("**OK")[0]


def test_report_on_a_machine_without_a_gpu_says_so_first_and_exits_0(
    finished_run, tmp_path, capsys
):
    from caiconform.cli import main

    out = _copy(finished_run, tmp_path, gpu=False)
    assert main(["report", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "no GPU: 1 of 2 cells ran; the others were skipped (reasons listed)"
    assert lines[1].startswith("OK: ")


def test_report_prints_an_expectation_note_once(finished_run, tmp_path, capsys):
    from caiconform.cli import main

    out = _copy(finished_run, tmp_path)
    expectations = tmp_path / "e.yaml"
    expectations.write_text(
        "expectations:\n  - {producer: gpu-only, rule: '*', reason: not run here, strict: false}\n"
    )
    assert main(["report", str(out), "--expectations", str(expectations)]) == 0
    printed = capsys.readouterr().out
    assert printed.count("entry 1 (*, gpu-only -> *)") == 1, printed


def test_the_plugins_summary_opens_with_incomplete(finished_run, tmp_path):
    from types import SimpleNamespace

    from caiconform.pytest_plugin.summary import summary_lines
    from caiconform.report.runstate import first_line, state_of

    out = _copy(finished_run, tmp_path)
    _kill_mid_cell(out)
    target = SimpleNamespace(name="mylib", producer="m:p", consumer=None)
    campaign = SimpleNamespace(
        options=SimpleNamespace(target=target, fail_on=frozenset()),
        incomplete=first_line([state_of(out)]),
        records=[],
        gpu=(False, "no GPU"),
        skipped_items=[],
        skipped_cells=[],
        warnings={},
        entry_errors=[],
        entry_notes=[],
        baseline_written=None,
        report_path=None,
        keep=False,
    )
    assert summary_lines(campaign)[0].startswith("INCOMPLETE: 1 of 2 cells unfinished")
