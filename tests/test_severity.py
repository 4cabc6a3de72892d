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
    DEPARTS,
    PORTABILITY,
    REFUSES_VALID,
    SEVERITIES,
    parse_severities,
    rank,
    severity_of,
)


@pytest.mark.parametrize(
    ("outcome", "rule", "level", "harm", "expected"),
    [
        # wrong values through the library's own call, under a MUST with a duty: unbounded
        ("fail", "CAI-CONSUMER-READS-DESCRIBED", "MUST", CORRUPTS, CORRUPTS),
        ("fail", "CAI-SYNC-CONSUMER", "MUST", CORRUPTS, CORRUPTS),
        ("fail", "DLPACK-PRODUCER-DESCRIBES-DATA", "MUST", CORRUPTS, CORRUPTS),
        # wrong values, but the sentence is a SHOULD: listed, not failed by default
        ("fail", "CAI-LIFETIME-DATA-HELD", "SHOULD", CORRUPTS, DEPARTS),
        ("fail", "CAI-MASK-TRUTH", "SHOULD", CORRUPTS, DEPARTS),
        # the write is the check's own, and the text only defines the flag
        ("fail", "CAI-DATA-READONLY-HONOURED", "MUST", REFUSES_VALID, DEPARTS),
        # a v2 export cannot name a stream: caiconform's reader saw the stale values
        ("fail", "CAI-PORT-V2-PENDING", "PORTABILITY", PORTABILITY, PORTABILITY),
        # an invalid export whose check reads the dict only: no value was misread
        ("fail", "CAI-STREAM-ZERO-FORBIDDEN", "MUST", REFUSES_VALID, REFUSES_VALID),
        ("fail", "CAI-NUMBA-PRODUCER-STREAM", "MUST", REFUSES_VALID, REFUSES_VALID),
        ("fail", "CAI-DATA-EXTENT-IN-ALLOCATION", "MUST", REFUSES_VALID, REFUSES_VALID),
        ("fail", "CAI-DLPACK-AGREE", "SHOULD", REFUSES_VALID, DEPARTS),
        # a leak, a wait nobody asked for: no value read wrong
        ("fail", "CAI-LIFETIME-RELEASED", "SHOULD", REFUSES_VALID, DEPARTS),
        ("fail", "CAI-SYNC-NONE-NO-SYNC", "MAY", PORTABILITY, PORTABILITY),
        # the process lost, whatever the record's rule: bounded by the duty to read
        ("crash", "CAI-STREAM-LIVE", "MUST", CRASHES, CRASHES),
        ("hang", None, None, CRASHES, CRASHES),
        ("poisoned", "CAI-PORT-STRIDES-ITEMSIZE", "PORTABILITY", CRASHES, CRASHES),
        # refusals: MUST-level valid input, or an optional key the consumer cannot do without
        ("rejected-valid", "CAI-CONSUMER-READS-DESCRIBED", "MUST", REFUSES_VALID, REFUSES_VALID),
        ("rejected-valid", "CAI-SYNC-NONE-NO-SYNC", "MAY", REFUSES_VALID, REFUSES_VALID),
        ("rejected-valid", "CAI-PORT-BYTEORDER", "PORTABILITY", PORTABILITY, PORTABILITY),
        ("rejected-valid", "CAI-KEYS-UNKNOWN", "SHOULD", PORTABILITY, PORTABILITY),
        # an export a conforming partner cannot use, that reads no wrong value
        ("fail", "CAI-ATTR-RAISES-ATTRIBUTEERROR", "SHOULD", REFUSES_VALID, DEPARTS),
        # the text describes what Numba does; it states no duty
        ("fail", "CAI-MASK-NUMBA-NOTIMPLEMENTED", "MUST", REFUSES_VALID, DEPARTS),
        ("fail", "CAI-PORT-ALIGNMENT", "PORTABILITY", PORTABILITY, PORTABILITY),
        ("accepted-invalid", "CAI-VERSION-KNOWN", "MUST", ACCEPTS_INVALID, ACCEPTS_INVALID),
        (None, None, None, None, None),
    ],
)
def test_severity_is_the_harm_bounded_by_the_sentence(outcome, rule, level, harm, expected):
    side = severity.RULES[rule].side.value if rule in severity.RULES else None
    role = side if side in ("producer", "consumer") else "consumer"
    assert severity.harm_of(outcome, rule, level) == harm
    assert severity_of(outcome, rule, level, role=role, check="roundtrip") == expected


def test_a_required_refusal_of_another_exception_type_is_portability() -> None:
    """torch, CuPy and JAX raising ValueError, not BufferError, for a CPU export without a
    copy: the refusal the text requires is made; only the type differs (the text said
    ValueError until array-api#831). A missing refusal is still refuses-valid."""
    rule = "DLPACK-COPY-FALSE-CPU-BUFFERERROR"
    assert severity.wrong_exception("ValueError: cannot move", "BufferError")
    assert not severity.wrong_exception("BufferError: no", "BufferError")
    assert not severity.wrong_exception("a capsule", "BufferError")
    assert severity_of("fail", rule, "MUST", role="producer", exception_type_only=True) == (
        PORTABILITY
    )
    assert severity_of("fail", rule, "MUST", role="producer") == REFUSES_VALID


def test_a_rule_of_the_other_side_bounds_by_what_the_culprit_had_to_honour() -> None:
    """A consumer refusing a valid dict filed under a producer's derived MUST (a zero-size
    null pointer) refuses valid input; bounded by the consumer's reading rule, not by the
    producer's rule."""
    bound, why = severity.bound_of("CAI-DATA-ZERO-SIZE-NULL", "consumer", "zero_size")
    assert bound is None and "CAI-CONSUMER-READS-DESCRIBED" in why
    bound, why = severity.bound_of("CAI-DATA-READONLY-HONOURED", "consumer", "readonly")
    assert bound == DEPARTS and "states no duty" in why
    bound, _ = severity.bound_of("CAI-PORT-V2-PENDING", "producer", "streams")
    assert bound == PORTABILITY


def test_the_policy_table_in_the_docs_is_the_code() -> None:
    """docs/severity.md's two tables are `HARM_TABLE` and `BOUND_TABLE`, row for row."""
    from pathlib import Path

    text = (Path(__file__).parents[1] / "docs" / "severity.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| ([^|]+?) \| ([^|]+?) \|$", text, re.MULTILINE)
    table = {k: v for k, v in rows if not set(k) <= {"-"}}
    for key, value in severity.HARM_TABLE.items():
        assert table.get(key) == (value or "none: about the input"), key
    for key, value in severity.BOUND_TABLE.items():
        assert table.get(key) == (value or "unbounded"), key
    documented = {k for k in table if k not in ("observation", "the sentence broken")}
    assert documented == set(severity.HARM_TABLE) | set(severity.BOUND_TABLE)


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
    """Each corrupting rule is named in the module docstring or under a kind it names; the
    dict-only rules are not corrupting; the wrong values only caiconform saw are no
    corruption."""
    for rule in ("CAI-STREAM-ZERO-FORBIDDEN", "CAI-NUMBA-PRODUCER-STREAM", "CAI-DLPACK-AGREE"):
        assert rule not in severity.CORRUPTING_RULES
    for rule in severity.CHECK_OBSERVED:
        assert rule in severity.CORRUPTING_RULES
        assert severity.harm_of("fail", rule, "MUST") != CORRUPTS


def test_severities_rank_most_harmful_first_and_the_default_threshold() -> None:
    """The order is the harm: wrong values without an error outrank a lost process, which
    outranks a refused valid input, then a departure from a SHOULD, an accepted invalid input,
    an allowed refusal (the module's "Severities, most harmful first" list); what fails a run by default outranks all the
    rest; unknown and None sort last."""
    most_harmful_first = [CORRUPTS, CRASHES, REFUSES_VALID, DEPARTS, ACCEPTS_INVALID, PORTABILITY]
    assert sorted(reversed(most_harmful_first), key=rank) == most_harmful_first
    assert list(SEVERITIES) == most_harmful_first
    documented = re.findall(r"`([a-z-]+)`", (severity.__doc__ or "").split("Severities,", 1)[1])
    assert documented[: len(most_harmful_first)] == most_harmful_first
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
    host pointer is no library's defect: none on its page, listed apart, never failing."""
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
    assert "1 defect(s), one per bug, in 1 group(s)" in summary
    # pycuda's page is its conformance record alone: no finding, no defect of its own
    pycuda = (run / "libraries" / "pycuda.md").read_text()
    assert "## Findings whose culprit it is (0)" in pycuda and "Each defect" not in pycuda
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
