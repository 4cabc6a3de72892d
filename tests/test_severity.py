"""Severity: the harm a finding does, apart from its rule's level (caiconform.results.severity), and
how the catalogue files and orders groups by it."""

from __future__ import annotations

import re

import pytest

from caiconform.results import severity
from caiconform.results.catalogue import build_catalogue
from caiconform.results.severity import (
    ACCEPTS_INVALID,
    CORRUPTS,
    CRASHES,
    DEFAULT_FAIL_ON,
    PORTABILITY,
    REFUSES_VALID,
    SEVERITIES,
    parse_severities,
    rank,
    severity_of,
)


@pytest.mark.parametrize(
    ("outcome", "rule", "level", "expected"),
    [
        # wrong values without an error
        ("fail", "CAI-CONSUMER-READS-DESCRIBED", "MUST", CORRUPTS),
        ("fail", "CAI-SYNC-CONSUMER", "MUST", CORRUPTS),
        ("fail", "CAI-LIFETIME-DATA-HELD", "SHOULD", CORRUPTS),
        ("fail", "CAI-DATA-READONLY-HONOURED", "MUST", CORRUPTS),
        ("fail", "CAI-MASK-TRUTH", "SHOULD", CORRUPTS),
        # a PORTABILITY rule by level, data read before the producer's work ends by harm
        ("fail", "CAI-PORT-V2-PENDING", "PORTABILITY", CORRUPTS),
        # an invalid export whose check reads the dict only: no value was misread
        ("fail", "CAI-STREAM-ZERO-FORBIDDEN", "MUST", REFUSES_VALID),
        ("fail", "CAI-NUMBA-PRODUCER-STREAM", "MUST", REFUSES_VALID),
        ("fail", "CAI-DATA-EXTENT-IN-ALLOCATION", "MUST", REFUSES_VALID),
        ("fail", "CAI-DLPACK-AGREE", "SHOULD", REFUSES_VALID),
        # a leak, a wait nobody asked for: no value read wrong
        ("fail", "CAI-LIFETIME-RELEASED", "SHOULD", REFUSES_VALID),
        ("fail", "CAI-SYNC-NONE-NO-SYNC", "MAY", PORTABILITY),
        # the process lost, whatever the input
        ("crash", "CAI-STREAM-LIVE", "MUST", CRASHES),
        ("hang", None, None, CRASHES),
        ("poisoned", "CAI-PORT-STRIDES-ITEMSIZE", "PORTABILITY", CRASHES),
        # refusals: MUST-level valid input, or an optional key the consumer cannot do without
        ("rejected-valid", "CAI-CONSUMER-READS-DESCRIBED", "MUST", REFUSES_VALID),
        ("rejected-valid", "CAI-SYNC-NONE-NO-SYNC", "MAY", REFUSES_VALID),
        ("rejected-valid", "CAI-PORT-BYTEORDER", "PORTABILITY", PORTABILITY),
        ("rejected-valid", "CAI-KEYS-UNKNOWN", "SHOULD", PORTABILITY),
        # an export a conforming partner cannot use, that reads no wrong value
        ("fail", "CAI-ATTR-RAISES-ATTRIBUTEERROR", "SHOULD", REFUSES_VALID),
        ("fail", "CAI-MASK-NUMBA-NOTIMPLEMENTED", "MUST", REFUSES_VALID),
        ("fail", "CAI-PORT-ALIGNMENT", "PORTABILITY", PORTABILITY),
        ("accepted-invalid", "CAI-VERSION-KNOWN", "MUST", ACCEPTS_INVALID),
        (None, None, None, None),
    ],
)
def test_severity_is_the_harm_not_the_level(outcome, rule, level, expected) -> None:
    assert severity_of(outcome, rule, level) == expected


@pytest.mark.parametrize(
    ("outcome", "rule", "level", "expected"),
    [
        # the dict shows its invalidity: the consumer could have refused it
        ("crash", "CAI-SHAPE-INT", "MUST", ACCEPTS_INVALID),
        ("poisoned", "CAI-DATA-NONZERO-SIZE-NONNULL", "MUST", ACCEPTS_INVALID),
        ("hang", "CAI-TYPESTR-GRAMMAR", "MUST", ACCEPTS_INVALID),
        # a legal dict (a SHOULD or PORTABILITY mutant): a crash on it is the consumer's crash
        ("crash", "CAI-KEYS-UNKNOWN", "SHOULD", CRASHES),
        ("poisoned", "CAI-PORT-STRIDES-ITEMSIZE", "PORTABILITY", CRASHES),
        # what the dict cannot show: information about the input, no severity
        ("poisoned", "CAI-DATA-DEVICE-ACCESSIBLE", "MUST", None),
        ("crash", "CAI-DATA-EXTENT-IN-ALLOCATION", "MUST", None),
        ("hang", "CAI-STREAM-LIVE", "MUST", None),
    ],
)
def test_a_group_caused_by_its_input_is_ranked_by_what_the_dict_shows(
    outcome, rule, level, expected
) -> None:
    assert severity_of(outcome, rule, level, from_input=True) == expected
    # accepted without an error: the same split, one step down
    accepted = severity_of("accepted-invalid", rule, level)
    assert accepted == (None if severity.about_input(rule) else ACCEPTS_INVALID)


def test_corrupting_rules_are_those_whose_fail_is_an_observed_wrong_value() -> None:
    """Each corrupting rule is named in the module docstring with what its check observed; the
    dict-only rules the old list carried are not corrupting."""
    doc = severity.__doc__ or ""
    corrupts_part = doc.split("- corrupts:", 1)[1].split("- ranked by level", 1)[0]
    for rule in severity.CORRUPTING_RULES:
        assert rule in corrupts_part, f"{rule}: say in the docstring what its check observed"
    for rule in ("CAI-STREAM-ZERO-FORBIDDEN", "CAI-NUMBA-PRODUCER-STREAM", "CAI-DLPACK-AGREE"):
        assert rule not in severity.CORRUPTING_RULES


def test_severities_rank_most_harmful_first_and_the_default_threshold() -> None:
    """The order is the harm: wrong values without an error outrank a lost process, which
    outranks a refused valid input, then an accepted invalid one, then an allowed refusal (the
    module's "From most to least harmful" list); what fails a run by default outranks all the
    rest; unknown and None sort last."""
    most_harmful_first = [CORRUPTS, CRASHES, REFUSES_VALID, ACCEPTS_INVALID, PORTABILITY]
    assert sorted(reversed(most_harmful_first), key=rank) == most_harmful_first
    assert list(SEVERITIES) == most_harmful_first
    documented = re.findall(r"^- `([a-z-]+)`:", severity.__doc__ or "", re.MULTILINE)
    assert documented == most_harmful_first
    assert {CORRUPTS, CRASHES, REFUSES_VALID} == DEFAULT_FAIL_ON
    failing = max(rank(s) for s in DEFAULT_FAIL_ON)
    assert all(rank(s) > failing for s in set(SEVERITIES) - DEFAULT_FAIL_ON)
    assert rank(None) == rank("fatal") == len(SEVERITIES) > rank(PORTABILITY)


def test_parse_severities() -> None:
    assert parse_severities("corrupts, crashes") == {CORRUPTS, CRASHES}
    assert parse_severities("none") == frozenset()
    assert parse_severities("all") == set(SEVERITIES)
    with pytest.raises(ValueError, match=r"--cai-fail-on: unknown severity 'fatal'"):
        parse_severities("corrupts,fatal", "--cai-fail-on")
    with pytest.raises(ValueError, match="unknown severity ''"):
        parse_severities("")


def _rec(check, producer, consumer, outcome, rule=None, **extra):
    return {
        "run_id": "r1",
        "check": check,
        "producer": producer,
        "consumer": consumer,
        "outcome": outcome,
        "rule": rule,
        "params": extra.pop("params", {"typestr": "<f4", "seed": 0}),
        "message": extra.pop("message", "m"),
        **extra,
    }


def test_a_crash_on_valid_input_is_filed_under_the_rule_the_consumer_failed() -> None:
    """torch aborting on a valid negative-stride array: no rule of its own, no input rule; it
    is filed under the reading rule, MUST, crashes — never "None"."""
    records = [
        _rec("roundtrip", "reference", "torch", "crash", message="worker died (SIGABRT)"),
        _rec("streams", "reference", "torch", "crash", message="worker died (SIGABRT)"),
    ]
    groups = {g["rule"]: g for g in build_catalogue(records)["groups"]}
    assert set(groups) == {"CAI-CONSUMER-READS-DESCRIBED", "CAI-SYNC-CONSUMER"}
    for group in groups.values():
        assert group["library"] == "torch" and group["role"] == "consumer"
        assert group["level"] == "MUST" and group["severity"] == CRASHES
        assert group["rule_implied"] is True


def test_groups_list_the_most_severe_first_within_a_library() -> None:
    many_invalid = [
        _rec(
            "adversarial",
            None,
            "cuda.cccl",
            "accepted-invalid",
            "CAI-VERSION-KNOWN",
            expected="a clean rejection (an exception)",
        )
        for _ in range(50)
    ]
    one_misread = [
        _rec("roundtrip", "reference", "cuda.cccl", "fail", "CAI-CONSUMER-READS-DESCRIBED")
    ]
    one_poison = [_rec("roundtrip", "reference", "cuda.cccl", "poisoned")]
    poison_on_invalid = [
        _rec("adversarial", None, "cuda.cccl", "poisoned", params={"rule": "CAI-SHAPE-INT"})
    ]
    groups = build_catalogue(many_invalid + one_poison + poison_on_invalid + one_misread)["groups"]
    assert [g["severity"] for g in groups] == [
        CORRUPTS,
        CRASHES,
        ACCEPTS_INVALID,
        ACCEPTS_INVALID,
    ]
    assert (
        groups[1]["rule"] == "CAI-CONSUMER-READS-DESCRIBED" and groups[1]["outcome"] == "poisoned"
    )
    assert groups[2]["input_rule"] == "CAI-SHAPE-INT" and groups[2]["level"] == "MUST"
    assert groups[3]["rule"] == "CAI-VERSION-KNOWN" and groups[3]["count"] == 50


def test_groups_caused_by_their_input_read_alike_and_memory_faults_are_about_the_input() -> None:
    """Whatever the consumer did with an invalid dict, its group reads "given a dict that
    breaks X, the consumer ...", the level marked derived where it is; a fault on memory the
    dict claims but cannot show (a host pointer) is information about the input: severity
    None, listed apart, never failing the consumer nor counted among its defects."""
    from caiconform.results.verdict import group_line, judge

    records = [
        _rec("adversarial", None, "pycuda", "crash", params={"rule": "CAI-DATA-DEVICE-ACCESSIBLE"}),
        _rec("adversarial", None, "pycuda", "poisoned", params={"rule": "CAI-SHAPE-INT"}),
        _rec("adversarial", None, "pycuda", "accepted-invalid", "CAI-VERSION-KNOWN"),
        _rec("adversarial", None, "pycuda", "accepted-invalid", "CAI-DATA-EXTENT-IN-ALLOCATION"),
    ]
    catalogue = build_catalogue(records)
    lines = {group_line(g) for g in catalogue["groups"]}
    assert lines == {
        "about the input: given a dict that breaks CAI-DATA-DEVICE-ACCESSIBLE (MUST), the "
        "consumer pycuda crashed (1 example(s))",
        "about the input: given a dict that breaks CAI-DATA-EXTENT-IN-ALLOCATION (MUST, "
        "derived), the consumer pycuda accepted it (1 example(s))",
        "accepts-invalid: given a dict that breaks CAI-SHAPE-INT (MUST, derived), the consumer "
        "pycuda poisoned its CUDA context (1 example(s))",
        "accepts-invalid: given a dict that breaks CAI-VERSION-KNOWN (MUST, derived), the "
        "consumer pycuda accepted it (1 example(s))",
    }
    assert catalogue["summary"]["about_input_groups"] == 2
    assert catalogue["summary"]["by_library"] == {"pycuda": 2}
    verdict = judge(records, library="pycuda", fail_on={ACCEPTS_INVALID}, catalogue=catalogue)
    status = {g.group.get("rule") or g.group["input_rule"]: g.status for g in verdict.judged}
    assert status == {
        "CAI-DATA-DEVICE-ACCESSIBLE": "input",
        "CAI-DATA-EXTENT-IN-ALLOCATION": "input",
        "CAI-SHAPE-INT": "new",
        "CAI-VERSION-KNOWN": "new",
    }
    assert len(verdict.failing) == 2 and "2 failing defect(s)" in verdict.headline()
    everything = judge(records, library="pycuda", fail_on=set(SEVERITIES), catalogue=catalogue)
    assert len(everything.failing) == 2


def test_every_report_marks_derived_levels_and_lists_groups_about_the_input_apart(tmp_path):
    """matrix.md, a library page, index.html and an issue text all show a derived rule's level
    as derived (the reading quoted where the rule is cited), through one helper; a crash on a
    host pointer is no library's defect: no page of its own, listed apart, never failing."""
    import json

    from caiconform.report.build import write_report
    from caiconform.report.issues import render_issue

    run = tmp_path / "run"
    run.mkdir()
    records = [
        _rec("roundtrip", "reference", "cupy", "fail", "CAI-CONSUMER-READS-DESCRIBED"),
        _rec("roundtrip", "reference", "cupy", "pass"),
        _rec("adversarial", None, "pycuda", "crash", params={"rule": "CAI-DATA-DEVICE-ACCESSIBLE"}),
    ]
    lines = [json.dumps({**r, "seq": i}) + "\n" for i, r in enumerate(records)]
    (run / "results.jsonl").write_text("".join(lines))
    (run / "env.json").write_text("{}")
    written = write_report([run])
    groups = written.matrix["catalogue"]["groups"]
    assert [g["about_input"] for g in groups] == [False, True]
    assert written.verdict["status"] == ["new", "input"]
    summary = (run / "matrix.md").read_text()
    assert (
        "**corrupts** consumer CAI-CONSUMER-READS-DESCRIBED (MUST, derived, fail, 1 example(s))"
        in summary
    )
    assert (
        "- given a dict that breaks CAI-DATA-DEVICE-ACCESSIBLE (MUST), the consumer crashed: "
        "pycuda (1)" in summary
    )
    assert "1 defect group(s)" in summary
    assert not (run / "libraries" / "pycuda.md").exists()
    reading = "MUST, derived: caiconform's reading of 'If strides is not given, or it is None"
    assert reading in (run / "libraries" / "cupy.md").read_text()
    page = (run / "index.html").read_text()
    assert "consumer CAI-CONSUMER-READS-DESCRIBED (MUST, derived, fail, 1 example(s))" in page
    assert "the consumer crashed: pycuda (1)" in page
    issue = render_issue(groups[0], {}, {})
    assert reading in issue and "The specification's sentence: \"If strides is not given" in issue
    about = render_issue(groups[1], {}, {})
    assert about.startswith(
        "## given a dict that breaks CAI-DATA-DEVICE-ACCESSIBLE (MUST), the consumer pycuda crashed"
    )
    assert "**About the input**" in about and "**Severity**" not in about
