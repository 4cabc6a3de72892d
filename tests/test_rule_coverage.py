"""Rule coverage (`caiconform.spec.rule_coverage`, `caiconform rules --coverage`): every MUST and
SHOULD rule is exercised by a check or has a reason it cannot be; reasons do not go stale."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from caiconform.spec import rule_coverage as cov
from caiconform.spec.rules import RULES, Level

ROOT = Path(__file__).resolve().parents[1]
MAIN = "import sys; from caiconform.cli import main; sys.exit(main())"


def test_every_must_and_should_rule_is_exercised_or_reasoned():
    assert cov.must_should_gaps() == []


def test_reasons_are_for_catalogue_rules_without_a_check_and_each_is_a_sentence():
    checked = cov.exercisers()
    assert set(cov.UNCHECKED) <= set(RULES)
    stale = sorted(set(cov.UNCHECKED) & set(checked))
    assert not stale, f"now checked, delete the reason: {stale}"
    for rule, why in cov.UNCHECKED.items():
        assert why[0].isupper() and why.endswith("."), rule


def test_the_issue_s_unchecked_rules_now_have_a_check_or_a_reason():
    checked = cov.exercisers()
    for rule in (
        "CAI-NUMBA-PRODUCER-STREAM",
        "CAI-NUMBA-CONSUMER-SYNC",
        "CAI-SYNC-NONE-NO-SYNC",
        "CAI-NUMBA-SYNC-OVERRIDE",
        "EMM-INITIALIZE-BEFORE-USE",
    ):
        assert rule in checked or rule in cov.UNCHECKED, rule
    assert "emm-check:paths" in checked["EMM-INITIALIZE-BEFORE-USE"]
    assert "emm-check:paths" in checked["EMM-NUMBA-NO-DIRECT-ALLOC"]


def test_user_side_rules_are_reasoned_not_checked():
    users = [r.id for r in RULES.values() if r.side.value == "user"]
    assert users and all(r in cov.UNCHECKED for r in users)


def _journal(tmp_path: Path, records: list[dict]) -> Path:
    with gzip.open(tmp_path / "results.jsonl.gz", "wt") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")
    return tmp_path


def test_counts_come_from_the_journal(tmp_path):
    run = _journal(
        tmp_path,
        [
            {"check": "streams", "rule": None, "outcome": "pass", "params": {}},
            {"check": "streams", "rule": "CAI-SYNC-CONSUMER", "outcome": "fail", "params": {}},
            {"check": "streams", "rule": None, "outcome": "skip", "params": {}},
            {
                "check": "adversarial",
                "rule": "CAI-DATA-POINTER-INT",
                "outcome": "accepted-invalid",
                "params": {"kind": "mutant", "rule": "CAI-DATA-POINTER-INT"},
            },
            {
                "check": "adversarial",
                "rule": None,
                "outcome": "rejected",
                "params": {"kind": "live", "mutation": "host-pointer"},
            },
        ],
    )
    examples, findings = cov.count_examples(run)
    assert examples["CAI-SYNC-CONSUMER"] == 2 and findings["CAI-SYNC-CONSUMER"] == 1
    assert examples["CAI-DATA-POINTER-INT"] == 1 and findings["CAI-DATA-POINTER-INT"] == 1
    assert examples["CAI-DATA-DEVICE-ACCESSIBLE"] == 1
    assert "CAI-SHAPE-INT" not in examples  # adversarial examples count for their own rule only


def test_cli_json_and_markdown(tmp_path):
    run = _journal(tmp_path, [{"check": "schema", "rule": None, "outcome": "pass", "params": {}}])
    out = subprocess.run(
        [sys.executable, "-c", MAIN, "rules", "--coverage", str(run), "--json", "--level", "MUST"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert {r["level"] for r in rows} == {"MUST"}
    attr = next(r for r in rows if r["id"] == "CAI-ATTR-DICT")
    assert attr["status"] == "exercised" and attr["examples"] == 1
    md = cov.to_markdown(cov.coverage())
    assert md.count("\n| `") == len(RULES)
    for level in (Level.MUST, Level.SHOULD):
        assert f"| {level.value} |" in md and "| 0 |\n" in md


def test_docs_table_lists_every_rule_and_no_missing_must_or_should():
    doc = (ROOT / "docs" / "coverage.md").read_text()
    for rule in RULES:
        assert f"`{rule}`" in doc, rule
    assert "MISSING" not in doc


def test_a_missing_directory_is_a_usage_error(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", MAIN, "rules", "--coverage", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
