"""The README's main job, `caiconform run`, on whatever machine runs the tests.

Without a GPU it must still run what needs none (the schema family over the `synthetic`
pseudo-producer) and say plainly which cells it skipped and why.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from caiconform.cuda.device import gpu_available


def test_main_job_runs_what_needs_no_gpu_and_names_what_it_skipped(tmp_path):
    out = tmp_path / "run"
    args = ["run", "--libraries", "synthetic,reference", "--checks", "schema,roundtrip"]
    args += ["--max-examples", "5", "--out", str(out)]
    run = subprocess.run(
        [sys.executable, "-m", "caiconform.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    synthetic = [r for r in records if r["producer"] == "synthetic"]
    assert synthetic, "the schema family must judge the synthetic dicts on any machine"
    assert {r["check"] for r in synthetic} == {"schema"}, "synthetic pairs with no other family"
    assert all(r["outcome"] == "pass" for r in synthetic), [r["message"] for r in synthetic]
    lines = run.stdout.splitlines()
    assert lines[0].startswith(f"Run directory: {out} "), lines[0]
    has_gpu, why = gpu_available()
    if not has_gpu:
        assert "Skipped" in run.stdout
        assert "reference unavailable" in run.stdout
        assert "no NVIDIA driver" in run.stdout or why.split(":")[0] in run.stdout
        # the plan and the verdict each open with what the machine could not test
        assert lines[1].startswith("no GPU: 1 cell to run, "), lines[1]
        assert lines[-2].startswith("no GPU: 1 of "), lines[-2]
        assert lines[-1].startswith("OK: "), lines[-1]


# -- what a run says, and when (issue 34) -----------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
SYNTHETIC = ["--checks", "tests.synthetic.checks", "--adapter-source", "tests.synthetic.adapters"]


@pytest.fixture
def synthetic(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))


def test_a_run_where_nothing_can_run_says_nothing_tested_and_exits_4(synthetic, tmp_path, capsys):
    from caiconform.cli import main

    out = tmp_path / "run"
    args = ["run", *SYNTHETIC, "--libraries", "missing", "--gpus", "0", "--out", str(out)]
    assert main(args) == 4
    lines = capsys.readouterr().out.splitlines()
    assert (
        lines[1] == "NOTHING TESTED: 1 cell skipped, none can run here (reasons listed at the end)"
    )
    assert lines[-2].startswith("NOTHING TESTED: 1 cell skipped, none ran")
    assert lines[-2].endswith(
        ": missing unavailable: missing not importable: ModuleNotFoundError (1 cell)"
    )
    # no OK line over a run that tested nothing: the state's own words
    assert lines[-1] == "NOTHING TESTED: no verdict: no example ran"
    assert not any(line.startswith("OK:") for line in lines)


def test_resume_names_the_options_it_ignores(synthetic, tmp_path, capsys):
    from caiconform.cli import main

    out = tmp_path / "run"
    base = ["run", *SYNTHETIC, "--libraries", "good", "--gpus", "0", "--out", str(out)]
    assert main([*base, "--max-examples", "3", "--no-shrink"]) == 0
    capsys.readouterr()
    resume = ["run", "--resume", "--out", str(out), "--max-examples", "50", "--seed", "3"]
    assert main(resume) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == (
        "--resume continues the run with its own settings: ignored --max-examples, --seed"
    )
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len([r for r in records if not r.get("shrunk")]) <= 3 + 3  # the run's 3, not 50


def test_without_a_terminal_a_run_says_where_it_is_at_once_and_then_every_few_seconds(
    monkeypatch, tmp_path
):
    import io
    import time
    from types import SimpleNamespace

    from rich.console import Console

    from caiconform.commands import run as run_command

    monkeypatch.setattr(run_command, "HEARTBEAT_S", 0.2)
    text = io.StringIO()
    console = Console(file=text, width=200)
    assert not console.is_terminal
    config = SimpleNamespace(out=tmp_path / "run", max_examples=10, resume=False, gpus=0)
    with run_command._Display(console, config):
        assert text.getvalue().startswith(f"Run directory: {tmp_path / 'run'} ")
        time.sleep(1.3)
    beats = [line for line in text.getvalue().splitlines() if line.startswith("... ")]
    assert beats and beats[0].startswith("... starting: probing libraries"), text.getvalue()


@pytest.mark.parametrize(
    ("to_run", "skipped", "gpus", "line"),
    [
        (1, 0, None, "1 cell to run, 0 skipped here"),
        (2, 3, 0, "no GPU: 2 cells to run, 3 skipped here (listed at the end)"),
        (0, 3, 0, "NOTHING TESTED: 3 cells skipped, none can run here (reasons listed at the end)"),
    ],
)
def test_the_plan_line(to_run, skipped, gpus, line, monkeypatch):
    from types import SimpleNamespace

    from caiconform.commands import run as run_command

    monkeypatch.setattr("caiconform.env.visible_gpus", lambda: ["0"])
    config = SimpleNamespace(resume=False, gpus=gpus)
    assert run_command._plan_line(config, to_run, skipped) == line
