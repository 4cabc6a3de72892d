"""Planted mutants of `caiconform.report.verify` that the suite let live (issue 41, item 3):
which of several BUG/OK lines a standalone script printed counts (its last), and which of two
verifications of one group stands (the newer; on a tie, this one).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from caiconform.report import verify


@pytest.fixture(autouse=True)
def _gpu(monkeypatch):
    """A machine taken to have a GPU: a script's verdict stands as it is."""
    monkeypatch.setattr(verify, "no_gpu", lambda: None)


@pytest.mark.parametrize(
    ("returncode", "stdout", "standalone", "line"),
    [
        (
            1,
            "OK: first\nnoise\nOK: second\n  BUG: last, indented\n",
            "reproduces",
            "BUG: last, indented",
        ),
        (0, "BUG: first\nBUG: second\nOK: last\ntrailing words\n", "does not", "OK: last"),
        (0, "OK: first\nBUG: last\n", "no verdict", "BUG: last"),
        (1, "BUG: first\nOK: last\n", "no verdict", "OK: last"),
    ],
)
def test_the_last_of_several_verdict_lines_counts(returncode, stdout, standalone, line):
    record = verify.classify(returncode, stdout, "")
    got = (record["standalone"], record["line"])
    assert got == (standalone, line), f"got {got}, expected {(standalone, line)} [{stdout!r}]"


def test_a_real_script_s_last_line_counts(tmp_path: Path):
    script = tmp_path / "s.py"
    script.write_text("print('OK: not yet')\nprint('BUG: now')\nraise SystemExit(1)\n")
    record = verify.run_script(script, 30)
    assert (record["standalone"], record["line"]) == ("reproduces", "BUG: now")


def test_of_two_verifications_the_newer_stands_and_a_tie_is_this_one():
    older = {"standalone": "reproduces", "at": "2026-11-27T12:00:00Z"}
    newer = {"standalone": "does not", "at": "2026-11-28T12:00:00Z"}
    assert verify.newer_entry(older, newer) is newer
    assert verify.newer_entry(newer, older) is newer
    same_second = {"standalone": "no verdict", "at": newer["at"]}
    assert verify.newer_entry(newer, same_second) is same_second
    assert verify.newer_entry({"standalone": "reproduces"}, newer) is newer
    assert verify.newer_entry(newer, {"standalone": "reproduces"}) is newer
