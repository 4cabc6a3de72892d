"""`caiconform findings`: a run's catalogue groups as bug reports for the libraries at fault."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

from caiconform.report.issues import select_groups
from caiconform.results.record import cell_key
from caiconform.results.wording import issue_filename
from caiconform.spec.rules import RULES, level_text

CMD = [sys.executable, "-m", "caiconform.cli", "findings"]
SCRIPT = "import cupy\nprint('accepted')\n"
#: the levels the rules of the synthetic run have (the rule table decides, not this file)
#: the levels as reports show them: CAI-SYNC-CONSUMER's sentence says "should", the reading rule
#: is caiconform's reading of the strides sentence ("MUST, derived")
MASK = level_text("CAI-SYNC-CONSUMER", quote=False)
READS = level_text("CAI-CONSUMER-READS-DESCRIBED", quote=False)


def _record(seq, check, producer, consumer, outcome, rule, **extra):
    return {
        "run_id": "r1",
        "seq": seq,
        "check": check,
        "producer": producer,
        "consumer": consumer,
        "outcome": outcome,
        "rule": rule,
        "params": extra.pop("params", {"n": seq}),
        "message": extra.pop("message", f"{outcome} [{rule}]"),
        "expected": "x",
        "repro": extra.pop("repro", None),
        "shrunk": False,
        **extra,
    }


def _write_journal(run: Path, records: list[dict]) -> None:
    """results.jsonl of `records`, and cells.jsonl saying each of their cells finished."""
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    cells = dict.fromkeys(cell_key(r) for r in records)
    (run / "cells.jsonl").write_text("".join(json.dumps({"cell": c}) + "\n" for c in cells))


def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    (run / "repro").mkdir(parents=True)
    (run / "repro" / "mask.py").write_text(SCRIPT)
    records = [
        _record(
            1,
            "streams",
            None,
            "cupy",
            "fail",
            "CAI-SYNC-CONSUMER",
            message="cupy read masked elements as valid [CAI-SYNC-CONSUMER]",
            repro="repro/mask.py",
        ),
        _record(2, "roundtrip", "reference", "numba", "fail", "CAI-CONSUMER-READS-DESCRIBED"),
        _record(3, "roundtrip", "reference", "torch", "rejected", "CAI-PORT-BYTEORDER"),
        _record(4, "roundtrip", "reference", "torch", "pass", None),
    ]
    _write_journal(run, records)
    env = {
        "python": {"version": "3.12.3"},
        "gpu": {"devices": [{"name": "NVIDIA H100"}], "driver_version": "580.159.04"},
        "libraries": {"cupy-cuda13x": "14.2.0", "numpy": "2.5.2", "torch": "2.11.0"},
    }
    (run / "env.json").write_text(json.dumps(env))
    return run


def _findings(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CMD, *args], capture_output=True, text=True)


def test_an_issue_holds_the_rule_what_happened_the_culprit_versions_and_the_script(
    tmp_path, monkeypatch, capsys
):
    """Without a standalone reproducer (the generator writes none) the issue inlines the run's
    own reproducer script."""
    from caiconform.cli import main

    fake = types.ModuleType("caiconform.report.standalone")
    fake.script_for_group = lambda group: None
    monkeypatch.setitem(sys.modules, "caiconform.report.standalone", fake)
    run = _run_dir(tmp_path)
    assert main(["findings", str(run), "--library", "cupy"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"## cupy (consumer) breaks CAI-SYNC-CONSUMER ({MASK})")
    # the severity and why: the harm, apart from the rule's level
    assert "**Severity**: `corrupts`: wrong values are read or written without an error" in text
    assert (
        f"> {RULES['CAI-SYNC-CONSUMER'].text}" in text and "`cuda_array_interface_v3.rst`" in text
    )
    assert "cupy read masked elements as valid" in text
    assert "**Why cupy**:" in text
    assert "Python 3.12.3, NVIDIA H100, driver 580.159.04" in text
    assert "cupy-cuda13x 14.2.0" in text and "torch" not in text.split("**Environment**")[1]
    assert "```python\n" + SCRIPT.rstrip() + "\n```" in text
    assert "numba" not in text and "CAI-PORT-BYTEORDER" not in text


def test_level_list_and_out(tmp_path):
    run = _run_dir(tmp_path)
    listed = _findings(str(run), "--list")
    rows = [line.split("\t") for line in listed.stdout.splitlines()]
    # the severity comes first; per library, most severe first
    assert [(r[0], r[1], r[3], r[4]) for r in rows] == [
        ("corrupts", "cupy", "CAI-SYNC-CONSUMER", MASK),
        ("corrupts", "numba", "CAI-CONSUMER-READS-DESCRIBED", READS),
        ("portability", "torch", "CAI-PORT-BYTEORDER", "PORTABILITY"),
    ]
    must = _findings(str(run), "--list", "--level", "MUST")
    assert "CAI-PORT-BYTEORDER" not in must.stdout
    levels = [RULES[r].level.value for r in ("CAI-SYNC-CONSUMER", "CAI-CONSUMER-READS-DESCRIBED")]
    assert must.stdout.count("\n") == levels.count("MUST")
    out = tmp_path / "issues"
    written = _findings(str(run), "--out", str(out))
    assert written.returncode == 0 and "wrote 3 finding(s)" in written.stdout
    names = sorted(p.name for p in out.iterdir())
    assert "index.md" in names and "cupy-consumer-CAI-SYNC-CONSUMER-fail.md" in names
    index = (out / "index.md").read_text()
    assert "(cupy-consumer-CAI-SYNC-CONSUMER-fail.md)" in index


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    run = _run_dir(tmp_path)
    unknown = _findings(str(run), "--library", "jax")
    assert unknown.returncode == 2 and len(unknown.stderr.strip().splitlines()) == 1
    assert "findings name: cupy, numba, torch" in unknown.stderr
    missing = _findings(str(tmp_path / "nope"))
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    nothing = _findings(str(run), "--library", "torch", "--level", "MUST")
    assert nothing.returncode == 0 and nothing.stdout.strip() == "no findings match"


def test_selection_and_file_names():
    groups = [
        {"library": "cupy", "level": "MUST", "role": "consumer", "rule": "R", "outcome": "fail"},
        {"library": None, "level": None, "role": None, "rule": None, "input_rule": None},
        {"library": "jax", "level": None, "rule": None, "input_rule": "CAI-STREAM-LIVE"},
    ]
    assert select_groups(groups, level="MUST") == [groups[0], groups[2]]  # input's level
    assert select_groups(groups, library="cupy") == [groups[0]]
    assert len(select_groups(groups)) == 3
    assert issue_filename(groups[1]) == "ambiguous---input-none--.md"
    assert issue_filename({**groups[0], "rule": "a/b c"}) == "cupy-consumer-a_b_c-fail.md"


def test_severity_filter_and_order_most_severe_first(tmp_path):
    run = _run_dir(tmp_path)
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    records += [
        _record(5, "adversarial", None, "cupy", "accepted-invalid", "CAI-VERSION-KNOWN"),
        _record(6, "roundtrip", "reference", "cupy", "crash", None),
    ]
    _write_journal(run, records)
    cupy = _findings(str(run), "--list", "--library", "cupy")
    assert [line.split("\t")[0] for line in cupy.stdout.splitlines()] == [
        "corrupts",
        "crashes",
        "accepts-invalid",
    ]
    severe = _findings(str(run), "--list", "--severity", "corrupts,crashes")
    assert [tuple(line.split("\t")[:2]) for line in severe.stdout.splitlines()] == [
        ("corrupts", "cupy"),
        ("crashes", "cupy"),
        ("corrupts", "numba"),
    ]
    crash = _findings(str(run), "--library", "cupy", "--severity", "crashes")
    assert crash.stdout.startswith(
        "## cupy (consumer) crashes the process [CAI-CONSUMER-READS-DESCRIBED, MUST"
    )
    assert "**Severity**: `crashes`: the process dies, hangs, or is left with an unusable" in (
        crash.stdout
    )
    bad = _findings(str(run), "--severity", "severe")
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        "caiconform: error: --severity: unknown severity 'severe' (choose from corrupts, "
        "crashes, refuses-valid, departs, accepts-invalid, portability, or 'all' / 'none')"
    )


def test_baseline_writes_the_failing_groups_of_a_library_and_refuses_bad_input(tmp_path):
    """`caiconform baseline` reads runs through the same helper as `findings`
    (`commands._groups`): one entry per group at or above --fail-on, narrowed by --library; an
    unknown library or an unreadable run is one line and exit 2."""
    run = _run_dir(tmp_path)
    base = [sys.executable, "-m", "caiconform.cli", "baseline", str(run)]
    out = tmp_path / "cai-expectations.yaml"
    done = subprocess.run(
        [*base, "-o", str(out), "--library", "cupy"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "CAI-SYNC-CONSUMER" in text and "CAI-CONSUMER-READS-DESCRIBED" not in text
    assert "CAI-PORT-BYTEORDER" not in text  # portability is below the default --fail-on
    unknown = subprocess.run(
        [*base, "-o", str(out), "--library", "jax"], capture_output=True, text=True
    )
    assert unknown.returncode == 2 and len(unknown.stderr.strip().splitlines()) == 1
    assert "findings name: cupy, numba, torch" in unknown.stderr
    missing = subprocess.run(
        [
            sys.executable,
            "-m",
            "caiconform.cli",
            "baseline",
            str(tmp_path / "nope"),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
