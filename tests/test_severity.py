"""Severity: the harm a finding does, apart from its rule's level (caiconform.severity), and
how the catalogue files and orders groups by it."""

from __future__ import annotations

import re

import pytest

from caiconform import severity
from caiconform.report.catalogue import build_catalogue
from caiconform.severity import (
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
        # a PORTABILITY rule by level, data read before the producer's work ends by harm
        ("fail", "CAI-PORT-V2-PENDING", "PORTABILITY", CORRUPTS),
        ("fail", "CAI-STREAM-ZERO-FORBIDDEN", "MUST", CORRUPTS),
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
    one_poison = [
        _rec("adversarial", None, "cuda.cccl", "poisoned", params={"rule": "CAI-SHAPE-INT"})
    ]
    groups = build_catalogue(many_invalid + one_poison + one_misread)["groups"]
    assert [g["severity"] for g in groups] == [CORRUPTS, CRASHES, ACCEPTS_INVALID]
    assert groups[1]["input_rule"] == "CAI-SHAPE-INT" and groups[1]["level"] == "MUST"
