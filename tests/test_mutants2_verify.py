"""Planted mutants of `caiconform.report.verify` that the suite let live (issue 41, second round,
tests/mutants/verify_journal_runstate.toml): a timed-out script's OK line, the end (not the
head) of a failing script's standard error, a missing library refused before its script runs
(the top-level name, not its submodule), an empty script, where a group not run here ranks,
and how the script of an entry refused before running is described.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from caiconform.report import verify
from caiconform.results import verification

GROUP = {
    "library": "cupy",
    "role": "consumer",
    "rule": "CAI-CONSUMER-READS-DESCRIBED",
    "outcome": "fail",
    "severity": "corrupts",
    "count": 1,
    "reproducer": {"cell": "roundtrip/reference/cupy"},
}
ABSENT = "caiconform_test_no_such_library"


@pytest.fixture(autouse=True)
def _gpu(monkeypatch):
    """A machine taken to have a GPU: a script's verdict stands as it is."""
    monkeypatch.setattr(verify, "no_gpu", lambda: None)


def test_a_timed_out_script_whose_last_line_is_ok_gave_no_verdict():
    record = verify.classify(0, "OK: every value read\n", "", timed_out=True)
    got = (record["standalone"], record["result"])
    assert got == ("no verdict", "timeout"), f"got {got}, expected a timeout without verdict"


def test_a_failing_script_s_record_keeps_the_end_of_its_standard_error():
    stderr = "".join(f"setup line {n}\n" for n in range(12)) + "ValueError: the last words\n"
    record = verify.classify(1, "", stderr)
    assert record["detail"].endswith("stderr ends: ValueError: the last words"), (
        f"got {record['detail']!r}, expected the detail to quote the last stderr line"
    )
    tail = record["stderr_tail"].splitlines()
    assert len(tail) == 8 and tail[-1] == "ValueError: the last words", (
        f"got {tail}, expected the last 8 lines of stderr"
    )


def test_a_missing_library_after_a_long_stderr_is_not_run_here():
    stderr = "".join(f"warning {n}\n" for n in range(20))
    stderr += (
        f"Traceback (most recent call last):\nModuleNotFoundError: No module named '{ABSENT}'\n"
    )
    record = verify.classify(1, "", stderr)
    got = (record["standalone"], record["detail"])
    assert got == ("not run here", f"not run here (library missing: {ABSENT})"), (
        f"got {got}, expected the ModuleNotFoundError at stderr's end to say library missing"
    )


def test_missing_modules_probes_the_libraries_not_caiconform():
    got = verify.missing_modules(["json", ABSENT, "caiconform.spec"])
    assert got == {ABSENT}, f"got {got}, expected only {ABSENT!r} missing"


def test_a_script_importing_a_missing_library_is_refused_before_it_runs(tmp_path: Path):
    script = f"import {ABSENT}\nimport {ABSENT}.sub\nprint('BUG: x')\nraise SystemExit(1)\n"
    data = verify.verify_groups([dict(GROUP)], tmp_path, lambda g: script, timeout_s=10)
    (entry,) = data["groups"].values()
    got = (entry["standalone"], entry["result"], entry["detail"])
    assert got == (
        "not run here",
        "library missing",
        f"not run here (library missing: {ABSENT})",
    ), f"got {got}, expected the top-level library named missing"
    assert "exit" not in entry, f"expected the script never run, got exit {entry.get('exit')}"


def test_an_empty_script_is_no_script_and_never_runs(tmp_path: Path):
    data = verify.verify_groups([dict(GROUP)], tmp_path, lambda g: "", timeout_s=10)
    (entry,) = data["groups"].values()
    got = (entry["standalone"], entry["result"], entry["script"])
    assert got == ("none", "no script", None), f"got {got}, expected no script written"
    assert "exit" not in entry, f"expected nothing run, got exit {entry.get('exit')}"


def test_a_group_not_run_here_ranks_with_the_unverified_ones():
    ranks = {
        status: verification.lead_rank({"standalone": {"standalone": status}})
        for status in verification.STATUSES
    }
    ranks["unverified"] = verification.lead_rank({"standalone": None})
    expected = {
        "reproduces": 0,
        "not run here": 1,
        "unverified": 1,
        "does not": 2,
        "no verdict": 2,
        "none": 3,
    }
    assert ranks == expected, f"got {ranks}, expected {expected}"


def test_a_script_refused_before_running_is_described_as_not_run(tmp_path: Path):
    (tmp_path / "standalone").mkdir()
    (tmp_path / "standalone" / "s.py").write_text("print('BUG: x')\n")
    refused = {"standalone": "none", "script": "standalone/s.py", "seconds": 0.0}
    text, origin = verify.standalone_script({"standalone": refused}, tmp_path)
    assert text == "print('BUG: x')\n"
    assert origin == "`standalone/s.py`, the script written, not run", f"got {origin!r}"
    ran = {**refused, "exit": 1}
    _, origin = verify.standalone_script({"standalone": ran}, tmp_path)
    assert origin == "`standalone/s.py`, the script that was run", f"got {origin!r}"
