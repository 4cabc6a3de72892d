"""Which rule a finding is filed under, when its record names none.

A record's own rule is the rule its check found broken. A crash, hang or poisoned context has
none (the runner assigned the outcome; the check never reported), nor does a refusal the check
could not tie to a rule. Such a finding is filed under the rule its input was built to break
(an adversarial mutant's, a live mutation's), else under the rule the failing side had to
honour in that family: a consumer that aborts on a valid array failed to read what the dict
describes. Reports group by the filed rule, severities are read from it, and expectation
entries match it, so a crash is never filed as "None".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from caiconform.spec.families import LIVE
from caiconform.spec.protocols import of_family
from caiconform.spec.rules import RULES

__all__ = [
    "HARNESS",
    "input_rule",
    "unprovable_field",
    "honoured_rule",
    "reading_rule",
    "implied_rule",
    "filed_rule",
    "candidate_rules",
]

#: the culprit of a finding whose cause is caiconform's own code (an adapter that made other
#: memory than its library would, `adapters.selfcheck`): a harness defect, filed against
#: caiconform, never charged to a library
HARNESS = "caiconform"


#: the stream values a dict can show valid: None and the two default streams (0 is its own,
#: dict-visible rule; any other integer names a handle only the producer's process can vouch for)
_PROVABLE_STREAMS = (None, 1, 2)
#: the rule an integer stream that is no provable handle breaks (the dict cannot show it)
STREAM_LIVE = "CAI-STREAM-LIVE"


def unprovable_field(params: Mapping[str, Any]) -> str | None:
    """The rule a synthetic input dict (an adversarial mutant: `params["interface"]`, encoded
    by `checks._encoding`) breaks where the dict cannot show it, whatever rule its mutation
    targeted: an integer `stream` other than 0, 1 and 2 names no stream of the consumer's
    process (the mutants' handles are drawn numbers, never a live stream, at every version:
    a v0-v2 consumer that synchronizes on one dies on what the input holds), so the input is
    not valid and whatever a consumer does with it is about the input (CAI-STREAM-LIVE). The
    mutants' data pointers are moved into real allocations unless the pointer is the mutation,
    whose rule the dict shows. None when every such field can be shown valid."""
    interface = params.get("interface")
    if not isinstance(interface, dict) or "$dict" not in interface:
        return None
    for entry in interface["$dict"]:
        if not isinstance(entry, (list, tuple)) or len(entry) != 2 or entry[0] != "stream":
            continue
        value = entry[1]
        if type(value) is int and value not in _PROVABLE_STREAMS and 0 < value < 2**64:
            return STREAM_LIVE
    return None


def input_rule(record: Mapping[str, Any]) -> str | None:
    """For a record without a rule: the rule its input breaks. What the input holds decides
    first (`unprovable_field`: a stream handle no dict can show live), then the rule it was
    built to break (an adversarial mutant's `rule`, a live mutation's); else None."""
    if record.get("rule"):
        return None
    params = record.get("params") or {}
    unprovable = unprovable_field(params)
    if unprovable is not None and record.get("outcome") in _LOST:
        return unprovable
    if isinstance(params.get("rule"), str) and params["rule"] in RULES:
        return params["rule"]
    mutation = params.get("mutation")
    if isinstance(mutation, str) and record.get("check") == "adversarial":
        return LIVE.get(mutation)
    return None


_LOST = ("crash", "hang", "poisoned")

#: family -> (the consumer's rule, the producer's rule) a finding on valid input without a rule
#: of its own is filed under: what the side that failed had to honour in that family
_HONOURED = {
    "streams": ("CAI-SYNC-CONSUMER", "CAI-SYNC-PRODUCER-SUFFICIENT"),
    "readonly": ("CAI-DATA-READONLY-HONOURED", "CAI-PRODUCER-DESCRIBES-DATA"),
    "mask": ("CAI-MASK-TRUTH", "CAI-PRODUCER-DESCRIBES-DATA"),
    "lifetime": ("CAI-LIFETIME-DATA-HELD", "CAI-LIFETIME-NO-EFFECT"),
}


def _reads(check: str) -> tuple[str, str]:
    """(consumer's, producer's) reading rule of family `check`: its protocol's (`Protocol.reads`;
    a family comparing protocols reads as its first, the CAI)."""
    return of_family(check)[0].reads


def honoured_rule(check: str | None, role: str | None) -> str | None:
    """The rule a side had to honour in family `check`: what the `streams` family asks of a
    consumer is to synchronize, elsewhere to read (or, for a producer, to export) what the
    dict, in a DLPack family the capsule, describes. None for a role of neither side."""
    if role not in ("producer", "consumer"):
        return None
    family = str(check)
    consumer_rule, producer_rule = _HONOURED.get(family, _reads(family))
    return producer_rule if role == "producer" else consumer_rule


def reading_rule(check: str | None, role: str | None) -> str | None:
    """The rule a side breaks by dying on valid input in family `check`: reading (a producer:
    exporting) what the dict, in a DLPack family the capsule, describes."""
    if role not in ("producer", "consumer"):
        return None
    reads = _reads(str(check))
    return reads[1] if role == "producer" else reads[0]


def implied_rule(record: Mapping[str, Any], role: str | None) -> str | None:
    """The rule a finding without a rule of its own and without an input rule is filed under:
    a crash, hang, poison or refusal on valid input breaks the rule the failing side had to
    honour in that family (`_HONOURED`; elsewhere reading, or exporting, what the dict or, in
    a DLPack family, the capsule describes). None for a record that has a rule or an input rule."""
    if record.get("rule") or input_rule(record):
        return None
    check = str(record.get("check"))
    consumer_rule, producer_rule = _HONOURED.get(check, _reads(check))
    return producer_rule if role == "producer" else consumer_rule


def filed_rule(record: Mapping[str, Any], role: str | None) -> tuple[str | None, str | None]:
    """(rule, how) a record's finding is filed under: its own rule ("record"), the rule its
    input was built to break ("input"), else the rule the failing side had to honour
    ("implied")."""
    if record.get("rule"):
        return record["rule"], "record"
    found = input_rule(record)
    if found:
        return found, "input"
    return implied_rule(record, role), "implied"


def candidate_rules(record: Mapping[str, Any]) -> tuple[str, ...]:
    """The rules a record's finding may be filed under when its culprit's role is not known
    (an expectation entry matching records): its own or input rule, else the implied rule of
    either side."""
    rule, how = filed_rule(record, None)
    if how != "implied":
        return (rule,) if rule else ()
    return tuple(dict.fromkeys(r for r in (rule, implied_rule(record, "producer")) if r))
