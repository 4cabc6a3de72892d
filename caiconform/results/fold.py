"""One finding per bug: finding groups of one culprit with one failure signature, folded.

A group is (library, role, rule, outcome class); one bug often breaks several rules, or shows
under two protocols: CuPy's refusal of a zero-size array with a null pointer is filed under
CAI-DATA-ZERO-SIZE-NULL by the zero_size family and under CAI-CONSUMER-READS-DESCRIBED by the
roundtrip family, with the same `RuntimeError: UnownedMemory requires explicit device ID for a
null pointer.`; torch aborts on a negative stride over the CAI and over DLPack alike. A
maintainer fixes each once, so a report files it once.

The *signature* of a group (`signature`, set by the catalogue from the group's commonest
failure mode) is the generalised exception and message of a refusal, a crash or an exception
the check saw (`expectations.detail_pattern`), or, for a misdescription a producer's own
export makes (its capsule's strides other than its data, its two protocols disagreeing), the
layout it misdescribes. Groups with the same culprit (library and role) and signature, and alike
in whether their input was valid (a crash on a dict the dict shows invalid is `accepts-invalid`,
never one more rule of a crash on valid input), fold into one *finding*: its lead is the most severe group (then the most examples), which carries
`folded` (every other member: rule, outcome, severity, count) and the finding's severity; each
other member carries `folded_into`, the lead's `group_id`. A group of no single library, or
with no signature (a value misread, a stale read: each its own behaviour), is a finding alone.

Severity of a finding: the most severe of its members (the lead's). A refusal another member
files under a rule that allows it stays at its own member's severity: the same message often
comes from a cause the two inputs share (CuPy's null-pointer refusal of an adversarial
zero-size mutant with an unknown key), so the allowed reading cannot be told to cover it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from caiconform.results.severity import ACCEPTS_INVALID, rank

__all__ = ["MISDESCRIBES", "group_id", "signature", "fold", "findings"]

#: producer rules whose fail is the producer's export describing other memory than its data:
#: one misdescription shows under each of them (the capsule's strides, its values, the CAI and
#: the capsule disagreeing)
MISDESCRIBES = frozenset(
    {
        "DLPACK-PRODUCER-DESCRIBES-DATA",
        "DLPACK-STRIDES-ELEMENTS",
        "CAI-DLPACK-AGREE",
        "CAI-PRODUCER-DESCRIBES-DATA",
    }
)
_EXCEPTION_OUTCOMES = frozenset({"rejected-valid", "crash", "hang", "poisoned"})


def group_id(group: Mapping[str, Any]) -> str:
    """A group's identity as text: `library/role/rule/outcome` (a rule of its input written
    `input:RULE`); what triage entries, baselines and `folded_into` name."""
    rule = group.get("rule") or (
        f"input:{group['input_rule']}" if group.get("input_rule") else None
    )
    return f"{group.get('library')}/{group.get('role')}/{rule}/{group.get('outcome')}"


def signature(
    outcome: str | None, rule: str | None, pattern: str, minimal: Mapping[str, Any]
) -> str | None:
    """The failure signature of a group of class `outcome` filed under `rule`, whose commonest
    mode is `pattern` (`expectations.detail_pattern` of what the check saw) and whose reproducer
    is `minimal`; None when the group is a behaviour of its own."""
    if rule in MISDESCRIBES and outcome == "fail":
        params = minimal.get("params") or {}
        layout = params.get("layout") if isinstance(params.get("layout"), dict) else {}
        kind = layout.get("kind") if layout else None
        return f"misdescribes a {kind} layout" if kind else None
    if outcome in _EXCEPTION_OUTCOMES:
        return pattern or None
    if outcome == "fail" and _is_exception(pattern):
        return pattern
    return None


def _is_exception(pattern: str) -> bool:
    head = pattern.split(":", 1)[0].strip()
    return bool(head) and " " not in head and head.endswith(("Error", "Exception"))


def fold(groups: Sequence[dict[str, Any]]) -> None:
    """Fold `groups` in place (each may carry `signature`): leads get `folded` and the
    finding's severity, members `folded_into`; every group gets `finding` (its lead's id)."""
    by_key: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for group in groups:
        group.pop("folded", None)
        group.pop("folded_into", None)
        group["finding"] = group_id(group)
        sig = group.get("signature")
        if group.get("library") and sig and not group.get("about_input"):
            # a death on input the dict shows invalid is no death on valid input, whatever the
            # signal said: a signal's message names no cause, so validity keeps them apart
            invalid = ACCEPTS_INVALID in (group.get("harm"), group.get("severity"))
            by_key[(group["library"], group.get("role"), sig, invalid)].append(group)
    for members in by_key.values():
        if len(members) < 2:
            continue
        ordered = sorted(members, key=lambda g: (rank(g.get("severity")), -int(g["count"] or 0)))
        lead = ordered[0]
        lead["folded"] = [
            {
                "group": group_id(g),
                "rule": g.get("rule"),
                "input_rule": g.get("input_rule"),
                "outcome": g.get("outcome"),
                "severity": g.get("severity"),
                "count": g.get("count"),
                "checks": g.get("checks"),
            }
            for g in ordered[1:]
        ]
        for g in ordered[1:]:
            g["folded_into"] = group_id(lead)
            g["finding"] = group_id(lead)


def findings(groups: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The groups that are findings of their own: every group not folded into another."""
    return [g for g in groups if not g.get("folded_into")]
