"""Expectation files: parsing (YAML and TOML), strictness, matching, applying to a journal."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from caiconform.cli import main
from caiconform.report.build import apply_to_run, load_runs
from caiconform.results.expectations import (
    ExpectationError,
    apply_expectations,
    env_versions,
    load_expectations,
    lookup_version,
    parse_expectations,
)

DATA = Path(__file__).parent / "data"
RUN_A = DATA / "run-h100"
RUN_B = DATA / "run-h200"


def _entries(*entries: dict) -> list:
    return parse_expectations({"expectations": list(entries)}, "test.yaml")


def _record(outcome="fail", rule="CAI-DATA-ZERO-SIZE-NULL", producer="torch", consumer=None, **kw):
    return {
        "run_id": "r",
        "seq": kw.pop("seq", 0),
        "check": kw.pop("check", "zero_size"),
        "producer": producer,
        "consumer": consumer,
        "rule": rule,
        "outcome": outcome,
        "params": kw.pop("params", {}),
        **kw,
    }


def _no_versions(record):
    return lambda name: None


# --- parsing ----------------------------------------------------------------------------------


def test_yaml_and_toml_files_parse_to_the_same_entries(tmp_path):
    yaml_file = tmp_path / "x.yaml"
    yaml_file.write_text(
        textwrap.dedent(
            """
            version: 1
            expectations:
              - rule: CAI-PORT-NEGATIVE-STRIDES
                producer: "*"
                consumer: torch
                params: {layout.kind: negative}
                outcome: rejected
                reason: torch refuses negative strides
                when: "torch<2.12"
            """
        )
    )
    toml_file = tmp_path / "x.toml"
    toml_file.write_text(
        textwrap.dedent(
            """
            version = 1
            [[expectations]]
            rule = "CAI-PORT-NEGATIVE-STRIDES"
            producer = "*"
            consumer = "torch"
            params = { "layout.kind" = "negative" }
            outcome = "rejected"
            reason = "torch refuses negative strides"
            when = "torch<2.12"
            """
        )
    )
    (a,) = load_expectations(yaml_file)
    (b,) = load_expectations(toml_file)
    assert a.to_dict() | {"source": ""} == b.to_dict() | {"source": ""}
    assert a.outcomes == ("rejected",)
    assert a.params == {"layout.kind": "negative"}
    assert a.strict


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"reason": "x"}, "entry 2: field 'rule': missing"),
        ({"rule": "CAI-DATA-ZERO-SIZE-NULL"}, "field 'reason': missing"),
        ({"rule": "CAI-NOT-A-RULE", "reason": "x"}, "unknown rule ID 'CAI-NOT-A-RULE'"),
        ({"rule": "CAI-NOPE-*", "reason": "x"}, "pattern 'CAI-NOPE-*' matches no rule"),
        ({"rule": "CAI-DATA-ZERO-SIZE-NULL", "reason": " "}, "field 'reason': must be a non-empty"),
        (
            {"rule": "CAI-DATA-ZERO-SIZE-NULL", "reason": "x", "consumr": "torch"},
            "(CAI-DATA-ZERO-SIZE-NULL): field 'consumr': unknown field",
        ),
        (
            {"rule": "CAI-DATA-ZERO-SIZE-NULL", "reason": "x", "outcome": "pass"},
            "field 'outcome': 'pass' is not a finding outcome",
        ),
        (
            {"rule": "CAI-DATA-ZERO-SIZE-NULL", "reason": "x", "when": "torch<<2"},
            "field 'when': 'torch<<2' is not a version condition",
        ),
        (
            {"rule": "CAI-DATA-ZERO-SIZE-NULL", "reason": "x", "when": "torch"},
            "field 'when': 'torch': give a library name and version specifiers only",
        ),
        (
            {"rule": "CAI-DATA-ZERO-SIZE-NULL", "reason": "x", "strict": "yes"},
            "field 'strict': must be true or false",
        ),
        (
            {"rule": "CAI-DATA-ZERO-SIZE-NULL", "reason": "x", "params": ["layout.kind"]},
            "field 'params': must map dotted parameter paths",
        ),
    ],
)
def test_malformed_entries_name_the_entry_and_field(entry, message):
    with pytest.raises(ExpectationError) as info:
        _entries({"rule": "CAI-SHAPE-TUPLE", "reason": "fine"}, entry)
    text = str(info.value)
    assert text.startswith("test.yaml: entry 2")
    assert message in text
    assert "\n" not in text


@pytest.mark.parametrize(
    ("content", "suffix", "message"),
    [
        ("", ".yaml", "got an empty file"),
        ("- rule: x\n", ".yaml", "expected a mapping with an 'expectations' list, got list"),
        ("expectations: {}\n", ".yaml", "'expectations' must be a list, got dict"),
        ("expectation: []\n", ".yaml", "unknown top-level key 'expectation'"),
        ("version: 2\nexpectations: []\n", ".yaml", "version 2 is not supported"),
        ("expectations: [\n", ".yaml", "not valid YAML (line"),
        ("expectations = [", ".toml", "not valid TOML"),
        ("{}", ".json", "end in .yaml, .yml or .toml"),
        ("expectations: " + "[" * 100_000, ".yaml", "nested too deeply"),
        ("a = " + "[" * 100_000, ".toml", "nested too deeply"),
    ],
)
def test_malformed_files_give_one_line(tmp_path, content, suffix, message):
    path = tmp_path / f"e{suffix}"
    path.write_text(content)
    with pytest.raises(ExpectationError) as info:
        load_expectations(path)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file_is_named(tmp_path):
    with pytest.raises(ExpectationError, match="no such expectation file"):
        load_expectations(tmp_path / "none.yaml")


# --- matching ---------------------------------------------------------------------------------


def test_param_patterns_glob_strings_and_json_and_any_of():
    (entry,) = _entries(
        {
            "rule": "CAI-DATA-ZERO-SIZE-NULL",
            "reason": "r",
            "params": {
                "layout.kind": ["C", "F"],
                "layout.shape": "[0, *]",
                "typestr": "<f*",
                "layout.shape.1": 3,
            },
        }
    )
    params = {"layout": {"kind": "F", "shape": [0, 3]}, "typestr": "<f8"}
    assert entry.in_scope(_record(params=params))
    for changed in (
        {"layout": {"kind": "negative", "shape": [0, 3]}, "typestr": "<f8"},
        {"layout": {"kind": "F", "shape": [1, 3]}, "typestr": "<f8"},
        {"layout": {"kind": "F", "shape": [0, 3]}, "typestr": "<i8"},
        {"layout": {"kind": "F", "shape": [0, 4]}, "typestr": "<f8"},
        {"typestr": "<f8"},
    ):
        assert not entry.in_scope(_record(params=changed)), changed


def test_bool_params_are_not_numbers():
    (entry,) = _entries({"rule": "*", "reason": "r", "params": {"layout.portable": False}})
    assert entry.in_scope(_record(params={"layout": {"portable": False}}))
    assert not entry.in_scope(_record(params={"layout": {"portable": 0}}))


def test_rule_star_covers_a_crash_without_rule():
    (entry,) = _entries({"rule": "*", "reason": "segfaults", "outcome": "crash"})
    application = apply_expectations([entry], [_record("crash", rule=None)], _no_versions)
    assert [v.status for v in application.records] == ["xfail"]
    assert application.ok


# --- applying ---------------------------------------------------------------------------------


def test_a_covered_failure_is_xfail_and_an_uncovered_one_fails():
    (entry,) = _entries({"rule": "CAI-DATA-ZERO-SIZE-NULL", "producer": "torch", "reason": "r"})
    records = [
        _record(seq=0),
        _record(seq=1, producer="cupy"),
        _record("pass", rule=None, seq=2),
    ]
    application = apply_expectations([entry], records, _no_versions)
    assert [v.status for v in application.records] == ["xfail", "fail", "pass"]
    assert application.records[0].entry is entry
    assert application.entries[0].status == "xfail"
    assert application.entries[0].in_scope == 2
    assert not application.ok
    assert len(application.unexpected) == 1


def test_an_expected_failure_that_passes_is_an_error():
    (entry,) = _entries({"rule": "CAI-DATA-ZERO-SIZE-NULL", "producer": "torch", "reason": "r"})
    application = apply_expectations([entry], [_record("pass", rule=None)], _no_versions)
    (status,) = application.entries
    assert status.status == "xpass" and status.is_error
    assert "did not happen" in status.describe() and status.describe().startswith("error:")
    assert not application.ok


def test_an_entry_whose_scope_holds_only_skips_is_not_judged():
    (entry,) = _entries({"rule": "CAI-DATA-ZERO-SIZE-NULL", "producer": "torch", "reason": "r"})
    skips = [_record("skip", rule=None, seq=n) for n in range(3)]
    application = apply_expectations([entry], skips, _no_versions)
    (status,) = application.entries
    assert (status.status, status.in_scope, status.is_error) == ("unjudged", 3, False)
    assert status.describe() == (f"note: {entry.label}: not judged: only skipped results in scope")
    assert application.ok
    # one result that ran is enough to judge it
    application = apply_expectations([entry], [*skips, _record("pass", rule=None)], _no_versions)
    assert application.entries[0].status == "xpass"


def test_the_documented_example_on_a_machine_without_the_libraries_is_not_an_error(tmp_path):
    path = tmp_path / "example.yaml"
    path.write_text(_blocks("yaml")[0])
    entries = load_expectations(path)
    skips = [
        _record("skip", rule=None, seq=n, producer=p, consumer=c, check=check)
        for n, (p, c, check) in enumerate(
            (e.producer.replace("*", "x"), e.consumer.replace("*", "x"), e.check.replace("*", "x"))
            for e in entries
        )
    ]
    application = apply_expectations(entries, skips, _no_versions)
    statuses = {s.entry.index: s.status for s in application.entries}
    assert statuses == {1: "inactive", 2: "unjudged", 3: "unjudged"}  # 1: torch unknown
    assert application.ok


def test_an_entry_matching_nothing_is_an_error_unless_not_strict():
    entries = _entries(
        {"rule": "CAI-DATA-ZERO-SIZE-NULL", "producer": "tourch", "reason": "typo"},
        {"rule": "CAI-DATA-ZERO-SIZE-NULL", "producer": "jax", "reason": "r", "strict": False},
    )
    application = apply_expectations(entries, [_record("pass", rule=None)], _no_versions)
    assert [s.status for s in application.entries] == ["unmatched", "unmatched"]
    assert [s.is_error for s in application.entries] == [True, False]
    assert not application.ok


def test_a_failure_with_another_rule_is_not_covered():
    (entry,) = _entries({"rule": "CAI-DATA-ZERO-SIZE-NULL", "reason": "r"})
    application = apply_expectations([entry], [_record(rule="CAI-SHAPE-TUPLE")], _no_versions)
    assert application.records[0].status == "fail"
    assert application.entries[0].status == "xpass"


def test_shrunk_records_are_not_counted_twice():
    (entry,) = _entries({"rule": "CAI-SHAPE-TUPLE", "reason": "r"})
    records = [_record(rule="CAI-DATA-ZERO-SIZE-NULL", seq=s, shrunk=s == 1) for s in (0, 1)]
    assert len(apply_expectations([entry], records, _no_versions).unexpected) == 1


def test_when_condition_uses_the_versions_of_each_run():
    (entry,) = _entries(
        {"rule": "CAI-DATA-ZERO-SIZE-NULL", "reason": "fixed in 2.12", "when": "torch<2.12"}
    )
    versions = {"old": {"torch": "2.11.0"}, "new": {"torch": "2.12.1"}}

    def version_of(record):
        return lambda name: versions[record["run_id"]].get(name)

    old = _record(run_id="old")
    application = apply_expectations([entry], [old | {"run_id": "old"}], version_of)
    assert application.records[0].status == "xfail"
    application = apply_expectations([entry], [old | {"run_id": "new"}], version_of)
    assert application.records[0].status == "fail"
    assert application.entries[0].status == "inactive"
    assert "torch is 2.12.1" in application.entries[0].note
    assert not application.entries[0].is_error


def test_env_versions_reads_distributions_and_prefixes():
    env = json.loads((RUN_A / "env.json").read_text())
    versions = env_versions(env)
    assert versions["numba-cuda"] == "0.30.4"
    assert "pycuda" not in versions  # recorded as absent (null)
    assert lookup_version(versions, "cupy") == lookup_version(versions, "cupy_cuda13x") == "14.2.0"
    assert lookup_version(versions, "numba") == "0.68.0"  # an exact name wins over numba-cuda
    assert lookup_version(versions, "warp") is None


def test_applying_to_a_merged_run_judges_each_run_by_its_env(tmp_path):
    path = tmp_path / "e.yaml"
    path.write_text(
        textwrap.dedent(
            """
            expectations:
              - rule: CAI-PORT-NEGATIVE-STRIDES
                consumer: torch
                params: {layout.kind: negative}
                reason: torch refuses negative strides
                when: "torch<2.12"
            """
        )
    )
    application = apply_to_run(load_expectations(path), load_runs([RUN_A, RUN_B]))
    statuses = {
        (v.record["run_id"].split("-")[1], v.status)
        for v in application.records
        if v.record["rule"] == "CAI-PORT-NEGATIVE-STRIDES"
    }
    # torch 2.11 on the H100 run: expected; torch 2.12 on the H200 run: a real failure
    assert statuses == {("h100", "xfail"), ("h200", "fail")}


# --- through the report command ---------------------------------------------------------------

FULL = """
expectations:
  - rule: CAI-DATA-ZERO-SIZE-NULL
    producer: torch
    check: schema
    reason: torch exports its allocation pointer for empty tensors
    link: https://example.org/issue/1
  - rule: CAI-PORT-NEGATIVE-STRIDES
    consumer: torch
    reason: torch refuses negative strides
  - rule: CAI-SYNC-CONSUMER
    producer: torch
    consumer: cupy
    reason: cupy does not wait on the exported stream
  - rule: "*"
    producer: cupy
    consumer: numba
    outcome: crash
    reason: segfault on negative strides
  - rule: "*"
    producer: jax
    outcome: hang
    reason: jax blocks on its own stream
"""


def test_report_exit_0_when_the_run_matches_its_expectations(tmp_path, capsys):
    path = tmp_path / "e.yaml"
    path.write_text(FULL)
    assert main(["report", str(RUN_A), "--out", str(tmp_path), "--expectations", str(path)]) == 0
    out = capsys.readouterr().out
    assert "5 expected finding(s), 0 unexpected, 0 entry error(s)" in out
    matrix = json.loads((tmp_path / "matrix.json").read_text())
    assert matrix["summary"]["unexpected_groups"] == 0
    zero = next(f for f in matrix["findings"] if f["rule"] == "CAI-DATA-ZERO-SIZE-NULL")
    assert zero["expectation"]["link"] == "https://example.org/issue/1"


def test_report_exit_1_on_unexpected_findings_and_stale_entries(tmp_path, capsys):
    path = tmp_path / "e.yaml"
    path.write_text(
        "expectations:\n  - rule: CAI-SHAPE-TUPLE\n    producer: torch\n    reason: stale\n"
        "  - rule: CAI-SHAPE-TUPLE\n    producer: warp\n    reason: not run here\n"
    )
    assert main(["report", str(RUN_A), "--out", str(tmp_path), "--expectations", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FIX: the matrix: 4 failing defect(s)")
    assert "error: " in out and "matches no result" in out
    # an entry about a library that did not run here is a note, not an error
    assert "note: " in out and "nothing in its scope ran here" in out
    assert "0 expected finding(s), 5 unexpected, 1 entry error(s)" in out
    markdown = (tmp_path / "matrix.md").read_text()
    assert markdown.splitlines()[2].startswith("**FIX: the matrix: 4 failing defect(s)")
    assert "; 1 expectation entry error(s)." in markdown
    # below the threshold, only the stale entry fails: the baseline is to be updated
    argv = ["report", str(RUN_A), "--out", str(tmp_path), "--expectations", str(path)]
    assert main([*argv, "--fail-on", "none"]) == 1
    assert capsys.readouterr().out.startswith("UPDATE THE BASELINE: the matrix: 1 expectation")


def test_report_malformed_expectations_exit_2(tmp_path, capsys):
    path = tmp_path / "e.yaml"
    path.write_text("expectations:\n  - rule: CAI-SHAPE-TUPLE\n")
    assert main(["report", str(RUN_A), "--out", str(tmp_path), "--expectations", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err
        == f"caiconform: error: {path}: entry 1 (CAI-SHAPE-TUPLE): field 'reason': missing (every entry needs a rule and a reason)"
    )


# --- the documented examples ------------------------------------------------------------------

DOCS = Path(__file__).parent.parent / "docs" / "expectations.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOCS.read_text(), re.S)


@pytest.mark.parametrize("language", ["yaml", "toml"])
def test_documented_example_files_parse(tmp_path, language):
    (block,) = _blocks(language)
    path = tmp_path / f"example.{language}"
    path.write_text(block)
    entries = load_expectations(path)
    assert entries[0].rule == "CAI-PORT-NEGATIVE-STRIDES"
    assert entries[0].params == {"layout.kind": "negative"}
    assert entries[0].when == "torch<2.12"


def test_documented_example_applies_to_a_run(tmp_path):
    path = tmp_path / "example.yaml"
    path.write_text(_blocks("yaml")[0])
    application = apply_to_run(load_expectations(path), load_runs([RUN_A]))
    negative = [v for v in application.records if v.record["rule"] == "CAI-PORT-NEGATIVE-STRIDES"]
    assert [v.status for v in negative] == ["xfail"]  # torch 2.11 in run-h100's env.json
    statuses = {s.entry.index: s.status for s in application.entries}
    assert statuses == {1: "xfail", 2: "unmatched", 3: "xfail"}
    assert not application.entries[2].is_error  # strict: false


def test_documented_error_message_is_the_real_one():
    text = DOCS.read_text()
    with pytest.raises(ExpectationError) as info:
        parse_expectations(
            {
                "expectations": [
                    {"rule": "CAI-SHAPE-TUPLE", "reason": "x"},
                    {"rule": "CAI-DATA-ZERO-SIZE-NULL", "reason": "x", "when": "torch<<2"},
                ]
            },
            "tests/cai-expectations.yaml",
        )
    documented = re.search(
        r"\(`(tests/cai-expectations\.yaml: entry 2 .*?) \(\.\.\.\)`\)", text, re.S
    )
    assert documented is not None
    assert str(info.value).startswith(" ".join(documented.group(1).split()))


def test_a_correct_rejection_is_a_pass_not_a_finding():
    from caiconform.results.record import EXPECT_REJECTION

    (entry,) = _entries({"rule": "CAI-STREAM-ZERO-FORBIDDEN", "reason": "r"})
    right = _record("rejected", rule="CAI-STREAM-ZERO-FORBIDDEN", expected=EXPECT_REJECTION)
    application = apply_expectations([entry], [right], _no_versions)
    assert application.records[0].status == "pass"
    # the entry expected a finding that did not happen: the consumer refuses correctly
    assert application.entries[0].status == "xpass"


def test_an_entry_matches_a_finding_without_a_rule_by_the_rule_it_is_filed_under() -> None:
    """A crash has no rule of its own: an entry covers it by the rule reports file it under —
    its input's (an adversarial mutant's), else the one its failing side had to honour."""
    mutant_crash = {
        "producer": None,
        "consumer": "cupy",
        "check": "adversarial",
        "outcome": "crash",
        "rule": None,
        "params": {"rule": "CAI-STREAM-LIVE"},
    }
    valid_crash = {
        "producer": "reference",
        "consumer": "torch",
        "check": "roundtrip",
        "outcome": "crash",
        "rule": None,
        "params": {"typestr": "<f4"},
    }
    (live,) = _entries({"rule": "CAI-STREAM-LIVE", "reason": "known segfault", "consumer": "cupy"})
    (reads,) = _entries({"rule": "CAI-CONSUMER-READS-DESCRIBED", "reason": "aborts on negative"})
    assert live.matches_finding(mutant_crash) and not live.matches_finding(valid_crash)
    assert reads.matches_finding(valid_crash) and not reads.matches_finding(mutant_crash)


def test_report_exit_2_on_an_entry_matching_nothing_after_writing_the_report(tmp_path, capsys):
    """An entry whose libraries and checks ran but that matches no result is a typo or a
    stale entry: bad input, exit 2 with one line naming file and entry; the report is kept."""
    path = tmp_path / "e.yaml"
    path.write_text(
        "expectations:\n  - rule: CAI-SHAPE-TUPLE\n    producer: torch\n    reason: typo\n"
        "    params:\n      typestr: '<f99'\n"
    )
    argv = ["report", str(RUN_A), "--out", str(tmp_path), "--expectations", str(path)]
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"caiconform: error: {path}: entry 1 (CAI-SHAPE-TUPLE, torch -> *)")
    assert line.endswith("matches no result (stale entry, or a library/check not in this run)")
    assert (tmp_path / "matrix.md").is_file() and (tmp_path / "index.html").is_file()


def test_a_misspelt_check_is_an_error_naming_the_check_it_resembles(tmp_path, capsys):
    """`check: schmea` is a typo, not an entry about a check that did not run: one line and
    exit 2 (docs/expectations.md), never a note with exit 0."""
    entry = {"rule": "CAI-DATA-ZERO-SIZE-NULL", "producer": "torch", "reason": "r"}
    with pytest.raises(ExpectationError) as caught:
        _entries({**entry, "check": "schmea"})
    assert str(caught.value).startswith(
        "test.yaml: entry 1 (CAI-DATA-ZERO-SIZE-NULL): field 'check': unknown check 'schmea': "
        "did you mean 'schema'? (known: schema, zero_size, roundtrip,"
    ), caught.value
    path = tmp_path / "e.yaml"
    path.write_text(
        "expectations:\n  - rule: CAI-DATA-ZERO-SIZE-NULL\n    producer: torch\n"
        "    check: schmea\n    reason: typo\n"
    )
    assert main(["report", str(RUN_A), "--out", str(tmp_path), "--expectations", str(path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"caiconform: error: {path}: entry 1 (CAI-DATA-ZERO-SIZE-NULL): field")


def test_an_entry_naming_no_known_check_that_matched_nothing_is_an_error(tmp_path, capsys):
    """A check name unlike any caiconform knows and carried by no result: an error (exit 2);
    an entry about a known check that did not run here (no GPU) stays a note."""
    path = tmp_path / "e.yaml"
    body = "expectations:\n  - rule: CAI-SYNC-CONSUMER\n    reason: r\n    check: {}\n"
    path.write_text(body.format("my_own_family"))
    argv = ["report", str(RUN_A), "--out", str(tmp_path), "--expectations", str(path)]
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.endswith("matches no result (stale entry, or a library/check not in this run)")
    path.write_text(body.format("lifetime"))
    assert main(argv) != 2  # red for the run's own defects, not for the entry
    captured = capsys.readouterr()
    assert "error" not in captured.err
    out = captured.out
    assert "(CAI-SYNC-CONSUMER, * -> *): matches no result" in out
    assert "(nothing in its scope ran here)" in out


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("detail", 3, "field 'detail': must be a pattern or a list of patterns"),
        ("detail", ["ok", ""], "field 'detail': must be a pattern or a list of patterns"),
        ("examples", 0, "field 'examples': must be a whole number of at least 1, got 0"),
        ("examples", True, "field 'examples': must be a whole number of at least 1, got True"),
    ],
)
def test_malformed_detail_or_examples_name_the_field(field, value, message):
    with pytest.raises(ExpectationError, match=re.escape(message)):
        _entries({"rule": "CAI-DATA-ZERO-SIZE-NULL", "reason": "r", field: value})


def test_an_entry_with_detail_covers_only_findings_of_that_mode():
    (entry,) = _entries(
        {"rule": "CAI-DATA-ZERO-SIZE-NULL", "reason": "r", "detail": ["ValueError: *"]}
    )
    assert entry.matches_finding(_record(seen="ValueError: zero-size (0, 3)"))
    assert not entry.matches_finding(_record(seen="IndexError: tuple index out of range"))
    assert entry.to_dict()["detail"] == ["ValueError: *"]
