"""Planted single-point mutants of `caiconform.results` that the suite let live (issue 41,
item 3): each test here pins the behaviour one of them changed.
"""

from __future__ import annotations

from typing import Any

from caiconform.results.baseline import MAX_DETAILS, entries_of
from caiconform.results.catalogue import build_catalogue, culprit_of
from caiconform.results.severity import REFUSES_VALID, severity_of
from caiconform.results.verdict import judge
from caiconform.spec.rules import RULES

#: a MUST rule that binds the producer
PRODUCER_RULE = "CAI-STREAM-ZERO-FORBIDDEN"


def rec(seq: int, check: str, producer, consumer, outcome: str, rule=None, **extra) -> dict:
    return {
        "run_id": "r1",
        "seq": seq,
        "check": check,
        "producer": producer,
        "consumer": consumer,
        "outcome": outcome,
        "rule": rule,
        "params": {"n": seq},
        "message": extra.pop("message", f"{outcome} [{rule}]"),
        "expected": "x",
        **extra,
    }


def test_the_producer_rule_binds_the_producer():
    assert RULES[PRODUCER_RULE].side.value == "producer"
    assert RULES[PRODUCER_RULE].level.value == "MUST"


def test_a_group_of_only_shrunk_records_is_new_without_a_baseline():
    """A finding whose journal kept only its shrunk reproducer is still a finding: without
    expectations nothing covers it, so the verdict is red (not `expected`, CI green)."""
    records = [rec(1, "schema", "numba", None, "fail", PRODUCER_RULE, shrunk=True)]
    verdict = judge(records)
    statuses = [(j.status, j.side) for j in verdict.judged]
    assert statuses == [("new", "own")], f"got {statuses}, expected one new own group"
    assert not verdict.ok, f"got an ok verdict: {verdict.headline()}"
    assert verdict.headline().startswith("FIX: the matrix: 1 failing defect(s)")


def test_a_fail_under_a_rule_not_in_the_catalogue_refuses_valid():
    """A fail filed under a rule caiconform does not know has no level and no bound: it is
    ranked as a refusal of valid input, never demoted to portability."""
    assert "CAI-NOT-A-RULE" not in RULES
    got = severity_of("fail", "CAI-NOT-A-RULE", None, role="consumer", check="roundtrip")
    assert got == REFUSES_VALID, f"got {got}, expected {REFUSES_VALID} [unknown rule, fail]"


def test_a_crash_carrying_a_rule_is_not_blamed_on_that_rule_s_side():
    """A crash is the death of a shared worker: the rule the record carries does not say
    which side died. Opposite the reference it is the third-party side; between two
    third-party libraries, with no other evidence, nobody."""
    opposite = rec(1, "roundtrip", "reference", "cupy", "crash", PRODUCER_RULE)
    got = culprit_of(opposite)
    assert (got["library"], got["role"]) == ("cupy", "consumer"), f"got {got}"
    between = rec(2, "roundtrip", "numba", "cupy", "crash", PRODUCER_RULE)
    got = culprit_of(between)
    assert got["library"] is None, f"got {got}, expected no culprit for a crash between two"
    # the same rule on a fail does bind its side
    fail = rec(3, "roundtrip", "numba", "cupy", "fail", PRODUCER_RULE)
    assert culprit_of(fail)["library"] == "numba"


def _ambiguous_group(records: list[dict]) -> dict[str, Any]:
    groups = [g for g in build_catalogue(records)["groups"] if g.get("library") is None]
    assert len(groups) == 1, f"got {groups}, expected one group without a culprit"
    return groups[0]


def test_an_unattributed_group_of_several_producers_is_written_for_any_producer():
    records = [
        rec(1, "roundtrip", "numba", "cupy", "crash", message="SIGSEGV"),
        rec(2, "roundtrip", "torch", "cupy", "crash", message="SIGSEGV"),
    ]
    group = _ambiguous_group(records)
    assert sorted(group["cells"]) == ["roundtrip/numba/cupy", "roundtrip/torch/cupy"]
    group = {**group, "rule": group.get("rule") or "CAI-X"}
    [entry] = entries_of([group], "2026-01-01")
    got = (entry.get("producer"), entry.get("consumer"))
    assert got == ("*", "cupy"), f"got {got}, expected ('*', 'cupy') [two producers]"


def test_an_unattributed_group_of_one_pair_is_written_for_that_pair():
    records = [rec(1, "roundtrip", "numba", "cupy", "crash", message="SIGSEGV")]
    group = {**_ambiguous_group(records), "rule": "CAI-X"}
    [entry] = entries_of([group], "2026-01-01")
    assert (entry.get("producer"), entry.get("consumer")) == ("numba", "cupy")


def test_a_group_of_exactly_the_maximum_of_failure_modes_pins_each():
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota"]
    records = [
        rec(i, "schema", "numba", None, "fail", PRODUCER_RULE, seen=f"ValueError: {word}")
        for i, word in enumerate(words[:MAX_DETAILS])
    ]
    [group] = build_catalogue(records)["groups"]
    [entry] = entries_of([group], "2026-01-01", records)
    expected = sorted(f"ValueError: {word}" for word in words[:MAX_DETAILS])
    assert entry.get("detail") == expected, f"got {entry.get('detail')}, expected {expected}"
    # one more mode and they are pinned by exception type
    records.append(rec(99, "schema", "numba", None, "fail", PRODUCER_RULE, seen="ValueError: x"))
    [group] = build_catalogue(records)["groups"]
    [entry] = entries_of([group], "2026-01-01", records)
    assert entry.get("detail") == ["ValueError: *"]
