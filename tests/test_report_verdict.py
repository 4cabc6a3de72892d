"""What a person reads first: the verdict at the top of `caiconform report` and `caiconform run`,
matrix.md as a bounded summary page with one page per library, the skips grouped by reason and
never cut, and the exit status at `--fail-on` with `--expectations` (issue 24, items 1, 3, 6).

Runs are synthetic journals written here (and, for `caiconform run`, the synthetic adapters of
tests/synthetic), so every count is known.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from caiconform.cli import main
from caiconform.report.build import write_report

ROOT = Path(__file__).resolve().parent.parent


def rec(seq: int, check: str, producer, consumer, outcome: str, rule=None, **extra) -> dict:
    return {
        "run_id": extra.pop("run_id", "r1"),
        "seq": seq,
        "check": check,
        "producer": producer,
        "consumer": consumer,
        "outcome": outcome,
        "rule": rule,
        "params": extra.pop("params", {"n": seq}),
        "message": extra.pop("message", f"{outcome} [{rule}]"),
        "expected": extra.pop("expected", "x"),
        **extra,
    }


def write_run(directory: Path, records: list[dict]) -> Path:
    directory.mkdir(parents=True)
    (directory / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (directory / "env.json").write_text("{}")
    return directory


def small_run(directory: Path) -> Path:
    """numba exports stream 0 (refuses-valid, 3 examples: the check reads the dict, no value was
    misread), cupy takes an invalid version (accepts-invalid), torch refuses negative strides
    (portability); passes around them."""
    records = [rec(i, "schema", "numba", None, "pass") for i in range(4)]
    records += [
        rec(10 + i, "schema", "numba", None, "fail", "CAI-STREAM-ZERO-FORBIDDEN") for i in range(3)
    ]
    records += [
        rec(20, "adversarial", None, "cupy", "accepted-invalid", "CAI-VERSION-KNOWN"),
        rec(21, "adversarial", None, "cupy", "pass"),
        rec(30, "roundtrip", "reference", "torch", "rejected", "CAI-PORT-NEGATIVE-STRIDES"),
        rec(31, "roundtrip", "reference", "torch", "pass"),
        rec(40, "streams", "reference", "jax", "skip", message="jax: no CAI consumer path"),
    ]
    return write_run(directory, records)


# --- the headline and the summary page ------------------------------------------------------


def test_the_first_lines_say_what_to_do(tmp_path):
    run = small_run(tmp_path / "run")
    written = write_report([run])
    lines = (run / "matrix.md").read_text().splitlines()
    assert lines[0].startswith("# caiconform report: r1")
    assert lines[2] == (
        "**FIX: the matrix: 1 failing defect(s) (refuses-valid: numba producer "
        "CAI-STREAM-ZERO-FORBIDDEN (MUST, fail, 3 example(s))); 2 below --fail-on "
        "(1 accepts-invalid, 1 portability)**"
    )
    text = "\n".join(lines)
    # one notion of group, said once
    assert (
        "3 defect(s), one per bug, in 3 group(s) (one library, role, rule and outcome each); "
        "by severity: 1 refuses-valid, " in text
    )
    assert "1 accepts-invalid, 1 portability; 1 failing at --fail-on " in text
    assert "finding group" not in text and "non-conformance" not in text
    # per library, most severe first, linking its page
    numba = text.index("### numba")
    assert text.index("### cupy") < numba < text.index("### torch")
    assert (
        "- **refuses-valid** producer CAI-STREAM-ZERO-FORBIDDEN (MUST, fail, 3 example(s)) — "
        "[details](libraries/numba.md#g" in text
    )
    assert "- not failing (below --fail-on): 1 accepts-invalid — [libraries/cupy.md]" in text
    assert not written.ok
    assert written.verdict["status"] == ["below", "new", "below"]


def test_ok_when_nothing_reaches_the_threshold(tmp_path):
    run = small_run(tmp_path / "run")
    written = write_report([run], fail_on=frozenset({"crashes"}))
    assert written.ok
    headline = (run / "matrix.md").read_text().splitlines()[2]
    assert headline.startswith("**OK: the matrix: no failing defect; 3 below --fail-on")


def test_each_library_has_a_page_with_its_record_then_its_groups_most_severe_first(tmp_path):
    run = small_run(tmp_path / "run")
    write_report([run])
    pages = sorted(p.name for p in (run / "libraries").iterdir())
    # every library an example ran with (jax only skipped): its record as Markdown, JSON, HTML
    libraries = ("cupy", "numba", "reference", "torch")
    assert pages == sorted(
        f"{name}{suffix}" for name in libraries for suffix in (".html", ".json", ".md")
    )
    numba = (run / "libraries" / "numba.md").read_text()
    assert numba.startswith("# numba: conformance record")
    assert "## Each defect, most severe first (1)" in numba
    for field in ("**status**: failing", "**message**", "**contrast**", "**why numba**"):
        assert field in numba
    assert "CAI-STREAM-ZERO-FORBIDDEN` (MUST, producer side" in numba
    # a library no longer in the run loses its pages when the report is written again
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    kept = [r for r in records if r["producer"] != "numba"]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    write_report([run])
    assert not list((run / "libraries").glob("numba.*"))


def test_index_html_opens_with_the_verdict_without_script(tmp_path):
    run = small_run(tmp_path / "run")
    write_report([run])
    page = (run / "index.html").read_text()
    body = page[page.index("<body>") : page.index("<script")]
    assert body.index('id="headline"') < body.index('id="summary"')
    assert "FIX: the matrix: 1 failing defect(s)" in body
    verdict = body[body.index('<section id="verdict">') :]
    order = [verdict.index(f'data-library="{name}"') for name in ("cupy", "numba", "torch")]
    assert order == sorted(order)
    assert '<span class="sev refuses-valid">refuses-valid</span>' in verdict
    assert 'href="libraries/numba.md"' in verdict


def test_matrix_md_stays_a_summary_page_on_a_big_run(tmp_path):
    from caiconform.spec.rules import RULES

    rules = sorted(r for r, rule in RULES.items() if rule.level.value == "MUST")[:40]
    records, seq = [], 0
    for lib in range(30):
        consumer = f"lib{lib:02d}"
        for rule in rules:
            for outcome in ("accepted-invalid", "fail"):
                records.append(rec(seq, "adversarial", None, consumer, outcome, rule))
                seq += 1
        records.append(rec(seq, "adversarial", None, consumer, "pass"))
        seq += 1
    for i in range(600):  # more skip reasons than any page should list, and > the old 200 cap
        records.append(
            rec(seq, "streams", "reference", f"lib{i % 30:02d}", "skip", message=f"reason {i:03d}")
        )
        seq += 1
    run = write_run(tmp_path / "run", records)
    written = write_report([run])
    groups = written.matrix["catalogue"]["groups"]
    assert len(groups) >= 30 * 40
    text = (run / "matrix.md").read_text()
    assert len(text.splitlines()) <= 500, len(text.splitlines())
    assert "… and " in text and "more at or above --fail-on" in text
    # every library's page lists every defect of that library; what it did with a dict breaking
    # a rule the dict cannot show is about the input, listed apart in a few lines
    for lib in range(30):
        page = (run / "libraries" / f"lib{lib:02d}.md").read_text()
        own = [g for g in groups if g["library"] == f"lib{lib:02d}" and not g["about_input"]]
        assert page.count("\n### <a id=") == len(own) and len(own) < 80
    about = text[text.index("## About the inputs") :].split("\n## ", 1)[0]
    assert (
        "- given a dict that breaks CAI-DATA-DEVICE-ACCESSIBLE (MUST), the consumer accepted "
        "it: lib00 (1), lib01 (1)" in about
    )
    # the skips: grouped by reason, none cut; the summary says how many it does not list
    reasons = written.matrix["skip_reasons"]
    assert len(reasons) == 600 and sum(r["count"] for r in reasons) == 600
    assert "for 600 reason(s)" in text
    assert "… and 575 more reason(s) (575 results), listed in [details/skips.md]" in text
    skips = (run / "details" / "skips.md").read_text()
    assert all(f"## reason {i:03d}\n" in skips for i in range(600))


def test_skips_are_grouped_by_reason_with_their_cells(tmp_path):
    records = [
        rec(i, "streams", "reference", consumer, "skip", message="needs a GPU")
        for i, consumer in enumerate(["a", "b", "b", "c"])
    ]
    records.append(rec(9, "schema", "d", None, "skip", message="d unavailable", index=None))
    records.append(rec(10, "schema", "e", None, "pass"))
    run = write_run(tmp_path / "run", records)
    written = write_report([run])
    assert written.matrix["skip_reasons"] == [
        {
            "reason": "needs a GPU",
            "count": 4,
            "cells": ["streams/reference/a", "streams/reference/b", "streams/reference/c"],
        },
        {"reason": "d unavailable", "count": 1, "cells": ["schema/d/-"]},
    ]
    text = (run / "matrix.md").read_text()
    # examples and cells apart: the cell that could not run journals one skip record
    assert "skip 5 (4 example(s), 1 cell(s) skipped whole)" in text
    assert "| needs a GPU | 4 | 3, e.g. streams/reference/a |" in text
    assert "| d unavailable | 1 | schema/d/- |" in text
    skips = (run / "details" / "skips.md").read_text()
    assert "`streams/reference/b` (2)" in skips


# --- exit status ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "status", "first"),
    [
        ([], 1, "FIX: the matrix: 1 failing defect(s)"),
        (["--fail-on", "none"], 0, "OK: the matrix: no failing defect; 3 below --fail-on"),
        (["--fail-on", "all"], 1, "FIX: the matrix: 3 failing defect(s)"),
        (["--fail-on", "accepts-invalid"], 1, "FIX: the matrix: 1 failing defect(s) (accepts"),
        (["--fail-on", "corrupts,crashes"], 0, "OK: the matrix: no failing defect"),
        (["--fail-on", "refuses-valid"], 1, "FIX: the matrix: 1 failing defect(s) (refuses-valid"),
    ],
)
def test_report_exit_status_follows_fail_on(tmp_path, capsys, options, status, first):
    run = small_run(tmp_path / "run")
    assert main(["report", str(run), *options]) == status
    assert capsys.readouterr().out.startswith(first)


def test_report_bad_fail_on_is_a_usage_error(tmp_path, capsys):
    run = small_run(tmp_path / "run")
    assert main(["report", str(run), "--fail-on", "corrupts,bad"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        "caiconform: error: --fail-on: unknown severity 'bad' (choose from corrupts, crashes, "
        "refuses-valid, departs, accepts-invalid, portability, or 'all' / 'none')"
    )
    assert not (run / "matrix.md").exists()


def test_report_baseline_turns_red_to_green_and_a_fixed_defect_to_update(tmp_path, capsys):
    run = small_run(tmp_path / "run")
    baseline = tmp_path / "baseline.yaml"
    baseline.write_text(
        "expectations:\n  - rule: CAI-STREAM-ZERO-FORBIDDEN\n    producer: numba\n"
        "    reason: numba exports the legacy default stream\n"
    )
    assert main(["report", str(run), "--expectations", str(baseline)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK: the matrix: no failing defect; 0 new since baseline")
    # the defect is fixed: the entry no longer holds
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    fixed = [r for r in records if r["outcome"] != "fail"]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in fixed))
    assert main(["report", str(run), "--expectations", str(baseline)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("UPDATE THE BASELINE: the matrix: 1 expectation(s) no longer hold")


# --- caiconform run ------------------------------------------------------------------------


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "caiconform.cli", "run", "--checks", "tests.synthetic.checks"]
    command += ["--adapter-source", "tests.synthetic.adapters", "--gpus", "0", "--seed", "3"]
    command += ["--max-examples", "40", "--no-shrink", "--no-confirm", *args]
    return subprocess.run(
        command,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_run_exit_status_is_the_verdict(tmp_path):
    red = _run(tmp_path, "--libraries", "good,wrong", "--out", str(tmp_path / "red"))
    assert red.returncode == 1, red.stderr
    last = red.stdout.strip().splitlines()[-1]
    assert last.startswith(
        "FIX: the matrix: 1 failing defect(s) (refuses-valid: wrong producer "
        "CAI-DATA-EXTENT-IN-ALLOCATION (MUST, derived, fail, "
    )
    baseline = tmp_path / "baseline.yaml"
    baseline.write_text(
        "expectations:\n  - rule: CAI-DATA-EXTENT-IN-ALLOCATION\n    producer: wrong\n"
        "    reason: reads past its allocation\n"
    )
    green = _run(
        tmp_path,
        *("--libraries", "good,wrong", "--expectations", str(baseline)),
        *("--out", str(tmp_path / "green")),
    )
    assert green.returncode == 0, green.stderr
    assert green.stdout.strip().splitlines()[-1] == (
        "OK: the matrix: no failing defect; 0 new since baseline"
    )
    below = _run(
        tmp_path, "--libraries", "wrong", "--fail-on", "crashes", "--out", str(tmp_path / "b")
    )
    assert below.returncode == 0, below.stderr
    assert "1 below --fail-on (1 refuses-valid)" in below.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--fail-on", "severe"], "--fail-on: unknown severity 'severe'"),
        (["--expectations", "missing.yaml"], "missing.yaml"),
    ],
)
def test_run_bad_fail_on_or_expectations_is_exit_2_before_running(tmp_path, options, message):
    done = _run(tmp_path, "--libraries", "good", "--out", str(tmp_path / "r"), *options)
    assert done.returncode == 2
    err = done.stderr.strip().splitlines()
    assert len(err) == 1 and message in err[0] and err[0].startswith("caiconform: error: ")
    assert not (tmp_path / "r").exists()


# --- the verdict's judgement of a group: covered in part, own, peer, ambiguous ---------------


def test_a_group_an_entry_covers_only_in_part_is_new():
    """numba's stream-0 group has three examples; an entry narrowed by params covers one: the
    two others are new, so the group fails (FIX), never OK."""
    from caiconform.results.expectations import parse_expectations
    from caiconform.results.verdict import judge

    records = [
        rec(10 + i, "schema", "numba", None, "fail", "CAI-STREAM-ZERO-FORBIDDEN") for i in range(3)
    ]
    (entry,) = parse_expectations(
        {
            "expectations": [
                {
                    "rule": "CAI-STREAM-ZERO-FORBIDDEN",
                    "producer": "numba",
                    "params": {"n": 10},
                    "reason": "only the first example",
                }
            ]
        }
    )
    verdict = judge(records, expectations=[entry])
    (judged,) = verdict.judged
    assert judged.status == "new" and len(judged.uncovered) == 2
    assert judged.reasons == ["only the first example"]
    assert verdict.headline().startswith("FIX: the matrix: 1 failing defect(s)")
    assert not verdict.ok
    whole = judge(records, expectations=[parse_expectations({"expectations": [
        {"rule": "CAI-STREAM-ZERO-FORBIDDEN", "producer": "numba", "reason": "all three"}
    ]})[0]])  # fmt: skip
    assert whole.ok and [j.status for j in whole.judged] == ["expected"]


def _pair_records() -> list[dict]:
    """mylib's own producer defect; torch's consumer defect (a peer's); a crash between mylib
    and jax that neither side is pinned for (ambiguous, on mylib's pair); a race between cupy
    and numba, a rule binding both sides (no single culprit, mylib on neither side: a peer's)."""
    return [
        rec(1, "roundtrip", "mylib", "reference", "fail", "CAI-PRODUCER-DESCRIBES-DATA"),
        rec(2, "roundtrip", "mylib", "reference", "pass"),
        rec(3, "adversarial", None, "torch", "accepted-invalid", "CAI-SHAPE-TUPLE"),
        rec(4, "roundtrip", "mylib", "jax", "crash", None, message="worker died (SIGSEGV)"),
        rec(5, "streams", "cupy", "numba", "fail", "CAI-SYNC-RACE-FREE"),
    ]


def test_a_library_s_verdict_fails_its_own_and_ambiguous_groups_and_lists_its_peers():
    from caiconform.results.verdict import judge

    verdict = judge(_pair_records(), library="mylib")
    sides = {tuple(j.group["cells"]): (j.group["library"], j.side) for j in verdict.judged}
    assert sides == {
        ("roundtrip/mylib/reference",): ("mylib", "own"),
        ("adversarial/-/torch",): ("torch", "peer"),
        ("roundtrip/mylib/jax",): (None, "ambiguous"),
        ("streams/cupy/numba",): (None, "peer"),
    }
    failing = [(j.side, j.group["cells"]) for j in verdict.failing]
    assert failing == [
        ("own", ["roundtrip/mylib/reference"]),
        ("ambiguous", ["roundtrip/mylib/jax"]),
    ]
    assert verdict.headline().startswith("FIX: mylib: 2 failing defect(s)")
    assert verdict.headline().endswith("; 2 defect(s) of other libraries seen, not failing")


def test_peer_defects_alone_leave_a_library_ok():
    from caiconform.results.verdict import judge

    records = [r for r in _pair_records() if "mylib" not in (r["producer"], r["consumer"])]
    records.append(rec(6, "roundtrip", "mylib", "reference", "pass"))
    verdict = judge(records, library="mylib")
    assert {j.side for j in verdict.judged} == {"peer"}
    assert verdict.ok and verdict.failing == []
    assert verdict.headline() == (
        "OK: mylib: no failing defect; 2 defect(s) of other libraries seen, not failing"
    )


def test_an_ambiguous_group_is_expected_once_baselined_and_the_whole_matrix_judges_all_own():
    from caiconform.results.expectations import parse_expectations
    from caiconform.results.verdict import judge

    entries = parse_expectations(
        {"expectations": [{"rule": "*", "producer": "mylib", "consumer": "jax",
                           "outcome": "crash", "reason": "segfault (mylib#3)"}]}
    )  # fmt: skip
    verdict = judge(_pair_records(), library="mylib", expectations=entries)
    (ambiguous,) = verdict.of("ambiguous")
    assert ambiguous.status == "expected" and ambiguous.reasons == ["segfault (mylib#3)"]
    assert [j.side for j in verdict.failing] == ["own"]
    matrix = judge(_pair_records())
    assert {j.side for j in matrix.judged} == {"own"}
    assert [j.status for j in matrix.judged if not j.failing] == ["below"]  # accepts-invalid


def test_a_harness_defect_is_listed_apart_and_fails_no_one(tmp_path):
    """A group filed against caiconform's own code (culprit `filing.HARNESS`, from the adapter
    self-check) is charged to no library: no library page, never failing the matrix or a
    library, listed first in matrix.md and index.html [issue 33: the harness cannot be the
    culprit unnoticed]."""
    harness = {"library": "caiconform", "role": "producer", "why": "a harness defect, not pycuda's"}
    records = [
        rec(
            i,
            "roundtrip",
            "pycuda",
            "reference",
            "fail",
            "CAI-PRODUCER-DESCRIBES-DATA",
            culprit=harness,
        )
        for i in range(3)
    ] + [rec(9, "roundtrip", "pycuda", "reference", "pass")]
    run = write_run(tmp_path / "run", records)
    written = write_report([run])
    assert written.ok
    assert written.verdict["status"] == ["harness"]
    text = (run / "matrix.md").read_text()
    headline = text.splitlines()[2]
    assert headline.startswith("**OK: the matrix: no failing defect")
    assert "1 defect(s) of caiconform's own harness, charged to no library" in headline
    assert "## caiconform's own defects (harness, charged to no library)" in text
    assert "a harness defect, not pycuda's" in text
    assert not (run / "libraries" / "caiconform.md").exists()
    assert "caiconform's own defects" in (run / "index.html").read_text()


def test_the_verdict_leads_with_a_defect_that_reproduces_standalone(tmp_path):
    """With verify.json (`findings --verify`) beside the journal, the first line names a
    failing group whose standalone script reproduced it, and matrix.md marks each verified
    group: reproduces, or UNCONFIRMED [issue 33: lead with groups that reproduce]."""
    from caiconform.report.verify import SCHEMA, standalone_key
    from caiconform.rundir import RunDir

    records = [
        rec(i, "roundtrip", "reference", "cupy", "fail", "CAI-CONSUMER-READS-DESCRIBED")
        for i in range(2)
    ] + [rec(5 + i, "schema", "numba", None, "fail", "CAI-STREAM-ZERO-FORBIDDEN") for i in range(3)]
    run = write_run(tmp_path / "run", records)
    before = write_report([run])
    groups = before.matrix["catalogue"]["groups"]
    cupy = next(g for g in groups if g["library"] == "cupy")
    numba = next(g for g in groups if g["library"] == "numba")
    assert before.verdict["headline"].startswith("FIX: the matrix: 2 failing defect(s) (corrupts")
    entries = {
        standalone_key(cupy): {"standalone": "does not", "detail": "OK: read right"},
        standalone_key(numba): {"standalone": "reproduces", "line": "BUG: stream 0"},
    }
    RunDir(run).verify.write_text(json.dumps({"schema": SCHEMA, "groups": entries}))
    after = write_report([run])
    headline = after.verdict["headline"]
    assert headline.startswith("FIX: the matrix: 2 failing defect(s) (refuses-valid: numba")
    assert "(MUST, fail, 3 example(s)) [reproduces standalone] and 1 more" in headline
    text = (run / "matrix.md").read_text()
    assert "CAI-CONSUMER-READS-DESCRIBED (MUST, derived, fail, 2 example(s)) · UNCONFIRMED" in text
