"""How much harm a finding does: its severity, defined once for every report and verdict.

A severity is the harm observed, **bounded by the sentence broken** (docs/severity.md holds the
policy as one table; `HARM_TABLE` and `BOUND_TABLE` below are that table, and a test keeps the
two equal). Two readings of each finding, then the less severe of the two:

1. *harm*: what the example was seen to cost a user (`harm_of`): wrong values read or written
   through the culprit's own call (`corrupts`), the process dead, hung or its context unusable
   on valid input (`crashes`), a valid input refused or an export a conforming partner cannot
   use (`refuses-valid`), invalid input taken or dying on input the dict shows invalid
   (`accepts-invalid`), a refusal the text allows (`portability`). Wrong values that only
   caiconform saw (a write the check made itself through a read-only view, a v2 export read by
   caiconform's own reader, which has no stream to wait on: `CHECK_OBSERVED`) are no
   corruption by the library; a required refusal raised as another exception type
   (ValueError for BufferError: `EXCEPTION_TYPE_RULES`) loses nothing but an `except` clause.
2. *bound*: what the sentence the culprit broke lets a finding claim (`bound_of`): a MUST the
   text states, or a derived MUST whose sentence states a duty for that side, bounds nothing;
   a SHOULD, or a derived rule whose sentence states no duty for the side (`Rule.duty` False:
   it only defines a field, lists adopters, describes one library), bounds at `departs` (listed,
   never failed by default); a MAY or PORTABILITY rule (behaviour its own text calls legal)
   bounds at `portability`. The sentence the culprit broke is the record's rule when it binds
   the culprit's side; a rule of the other side (a consumer dying on input that breaks a
   producer's rule) bounds by what the culprit had to honour in that family
   (`filing.honoured_rule`: read what the dict describes).

Severities, most harmful first: `corrupts`, `crashes`, `refuses-valid` (these fail CI by
default: `DEFAULT_FAIL_ON`), `departs` (harm seen against a SHOULD or a sentence with no duty),
`accepts-invalid`, `portability`.

None: no finding, or information about the input (`about_input`): whatever a consumer did with
a dict breaking a rule the dict cannot show (a host pointer, CAI-DATA-DEVICE-ACCESSIBLE; an
extent past the allocation, CAI-DATA-EXTENT-IN-ALLOCATION; a handle that is no stream,
CAI-STREAM-LIVE) is what that input does: reports list it apart and it never fails the
consumer. Which rule an input is filed under is decided by what the dict holds, not by the rule
its mutation targeted (`filing.input_rule`).

`CORRUPTING_RULES` are the rules whose `fail` is an observed wrong value or memory freed under a
view (the check code in caiconform/checks/ decides): reading a dict or capsule other than as
described (CAI-CONSUMER-READS-DESCRIBED), a description other than the data
(CAI-PRODUCER-DESCRIBES-DATA, DLPACK-PRODUCER-DESCRIBES-DATA: a misdescription that makes a
conforming consumer read wrong values is the producer's corruption), the sentinel read before a
producer's pending write (the CAI-SYNC rules, the DLPack stream rules), memory freed under a
view, a mask dropped, objects built from device bytes, documented copy semantics not kept
(the CAI-ENTRY rules; from_dlpack's copy=True aliasing the producer's memory, copy=False a
copy: DLPACK-FROM-COPY-TRUE, DLPACK-FROM-COPY-FALSE). The
other rules' fails (an exported dict's field, a leak, a wait nobody asked for) are ranked
`refuses-valid` before their bound.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from caiconform.results.filing import honoured_rule, reading_rule
from caiconform.spec.rules import RULES

__all__ = [
    "SEVERITIES",
    "CORRUPTS",
    "CRASHES",
    "REFUSES_VALID",
    "DEPARTS",
    "ACCEPTS_INVALID",
    "PORTABILITY",
    "DEFAULT_FAIL_ON",
    "HARM",
    "HARM_TABLE",
    "BOUND_TABLE",
    "CORRUPTING_RULES",
    "CHECK_OBSERVED",
    "EXCEPTION_TYPE_RULES",
    "about_input",
    "harm_of",
    "bound_of",
    "bound_for",
    "bounded",
    "severity_of",
    "wrong_exception",
    "rank",
    "parse_severities",
]

CORRUPTS = "corrupts"
CRASHES = "crashes"
REFUSES_VALID = "refuses-valid"
DEPARTS = "departs"
ACCEPTS_INVALID = "accepts-invalid"
PORTABILITY = "portability"
#: every severity, most harmful first
SEVERITIES = (CORRUPTS, CRASHES, REFUSES_VALID, DEPARTS, ACCEPTS_INVALID, PORTABILITY)
#: what fails a CI run unless the user says otherwise: a defect that loses data, kills the
#: process or refuses what the spec says must work. A SHOULD or a sentence with no duty
#: departed from, an invalid dict accepted (garbage in, undefined out: the producer broke the
#: rule first) and a refusal the spec allows are reported, not failed.
DEFAULT_FAIL_ON = frozenset({CORRUPTS, CRASHES, REFUSES_VALID})

#: rules whose `fail` is an observed wrong value (read or written) or memory freed under a view
CORRUPTING_RULES = frozenset(
    {
        "CAI-CONSUMER-READS-DESCRIBED",
        "CAI-PRODUCER-DESCRIBES-DATA",
        "CAI-DATA-READONLY-HONOURED",
        "CAI-MASK-TRUTH",
        "CAI-DESCR-OBJECT-REFUSED",
        "CAI-SYNC-CONSUMER",
        "CAI-SYNC-PRODUCER-SUFFICIENT",
        "CAI-SYNC-PRODUCER-MULTI-STREAM",
        "CAI-SYNC-RACE-FREE",
        "CAI-PORT-V2-PENDING",
        "CAI-LIFETIME-DATA-HELD",
        "CAI-ENTRY-ZERO-COPY-SEES-WRITES",
        "CAI-ENTRY-ZERO-COPY-WRITES-THROUGH",
        "CAI-ENTRY-COPY-INDEPENDENT",
        "DLPACK-PRODUCER-DESCRIBES-DATA",
        "DLPACK-STREAM-PRODUCER-SYNC",
        "DLPACK-STREAM-NONE-LEGACY",
        "DLPACK-STREAM-DL-DEVICE-CPU",
        "DLPACK-FROM-COPY-TRUE",
        "DLPACK-FROM-COPY-FALSE",
    }
)
#: corrupting rules whose wrong value only caiconform saw: no corruption by the library's own
#: call (rule -> why, shown with the finding)
CHECK_OBSERVED = {
    "CAI-DATA-READONLY-HONOURED": "the write that reached read-only memory is the check's own, "
    "made through the consumer's writable view",
    "CAI-PORT-V2-PENDING": "the unfinished values were read by caiconform's reader, which a "
    "version-2 export gives no stream to wait on",
}
#: rules that name the exception type of a refusal the text requires: a refusal of another
#: type refuses all the same, so only an `except` clause written for that type misses it
#: (docs/severity.md, "Harm", says why ValueError for BufferError is no more than that)
EXCEPTION_TYPE_RULES = frozenset(
    {
        "DLPACK-DL-DEVICE-BUFFERERROR",
        "DLPACK-COPY-FALSE-CPU-BUFFERERROR",
        "DLPACK-EXPORT-BUFFERERROR",
    }
)
#: severity -> the harm it does, in a sentence for a reader (bug reports, docs)
HARM = {
    "corrupts": "wrong values are read or written without an error (a value mismatch, a stale "
    "read or race, memory freed or reused under a view, a misread byte order) through the "
    "library's own call: the user gets wrong results and no sign of it",
    "crashes": "the process dies, hangs, or is left with an unusable CUDA context on a valid input",
    "refuses-valid": "a valid input the specification says must work is refused, or the "
    "library exports or behaves in a way a conforming partner cannot use",
    "departs": "a SHOULD of the text, or caiconform's reading of a sentence that states no duty "
    "for this side, was not followed; the harm observed is named: listed, not failed by default",
    "accepts-invalid": "an invalid dict is taken without an error, or crashes or faults the "
    "consumer although the dict itself shows it invalid: the consumer could have refused it",
    "portability": "a refusal the specification allows, or a departure that loses nothing: "
    "exchanges with other libraries may not work",
}

#: the policy's first half: what was observed -> the harm (docs/severity.md, "Harm")
HARM_TABLE = {
    "wrong values through the culprit's own call": CORRUPTS,
    "wrong values seen only by caiconform (CHECK_OBSERVED)": REFUSES_VALID,
    "crash, hang or poisoned context on valid input": CRASHES,
    "crash, hang or poisoned context on input the dict shows invalid (MUST)": ACCEPTS_INVALID,
    "crash, hang or poisoned context on a field the dict cannot show valid": None,
    "valid input refused": REFUSES_VALID,
    "input without an optional key refused": REFUSES_VALID,
    "refusal the input's SHOULD, MAY or PORTABILITY rule allows": PORTABILITY,
    "required refusal of another exception type (EXCEPTION_TYPE_RULES)": PORTABILITY,
    "invalid input accepted": ACCEPTS_INVALID,
    "other fail of a MUST or SHOULD rule (no wrong value observed)": REFUSES_VALID,
    "other fail of a MAY or PORTABILITY rule": PORTABILITY,
}
#: the policy's second half: the sentence the culprit broke -> the most a finding may claim
#: (None: unbounded) (docs/severity.md, "Bound")
BOUND_TABLE = {
    "MUST, stated": None,
    "MUST, derived, the sentence states a duty for this side": None,
    "MUST, derived, the sentence states no duty for this side": DEPARTS,
    "SHOULD": DEPARTS,
    "MAY": PORTABILITY,
    "PORTABILITY (behaviour its own text calls legal)": PORTABILITY,
}

_LOST = ("crash", "hang", "poisoned")
#: rule levels whose refusal the specification allows
_ALLOWED_REFUSAL = ("PORTABILITY", "MAY")
_RANK = {s: i for i, s in enumerate(SEVERITIES)}
#: MAY rules a refusal is filed under when the consumer could not do without an optional key
#: (`checks._results.OPTIONAL_KEY_RULES`): a dict without `stream` is valid at every version,
#: so refusing it refuses valid input whatever the rule's own level
_OPTIONAL_ABSENT = frozenset({"CAI-SYNC-NONE-NO-SYNC"})
#: "SHOULD" with the refusals the specification allows: a refusal at these levels is portability
_SOFT_REFUSAL = (*_ALLOWED_REFUSAL, "SHOULD")
_EXCEPTION = re.compile(r"^\s*[A-Za-z_][\w.]*(Error|Exception|Warning)\b")


def about_input(rule: str | None) -> bool:
    """Whether a dict breaking `rule` breaks it where the dict cannot show it (memory or a
    stream the dict names: `Rule.dict_visible` False), so what a consumer does with such a
    dict is information about the input, not the consumer's defect."""
    found = RULES.get(rule or "")
    return found is not None and not found.dict_visible and found.side.value == "producer"


def wrong_exception(seen: object, expected: object) -> bool:
    """Whether a record's `seen` is an exception where `expected` names another exception type:
    a required refusal made, of another type."""
    return (
        isinstance(seen, str)
        and isinstance(expected, str)
        and bool(_EXCEPTION.match(seen))
        and bool(_EXCEPTION.match(expected))
        and seen.split(":", 1)[0].strip() != expected.split(":", 1)[0].strip()
    )


def harm_of(
    outcome: str | None,
    rule: str | None,
    level: str | None,
    *,
    from_input: bool = False,
    exception_type_only: bool = False,
) -> str | None:
    """The harm observed in a finding of class `outcome` (fail, accepted-invalid,
    rejected-valid, crash, hang, poisoned) filed under `rule` at `level` (`HARM_TABLE`); None
    for no finding and for information about the input.

    `from_input`: the group is filed under the rule its input breaks (a crash has no rule of
    its own). `exception_type_only`: the record's fail is a refusal of another exception type
    than the rule names (`wrong_exception`)."""
    invalid_input = from_input or outcome == "accepted-invalid"
    if invalid_input and about_input(rule):
        return None
    if outcome in _LOST:
        # a dict the consumer could have refused from its own fields (a MUST rule it shows)
        if from_input and level == "MUST" and _dict_visible(rule):
            return ACCEPTS_INVALID
        return CRASHES
    if outcome == "accepted-invalid":
        return ACCEPTS_INVALID
    if outcome == "rejected-valid":
        if rule in _OPTIONAL_ABSENT:
            return REFUSES_VALID
        return PORTABILITY if level in _SOFT_REFUSAL else REFUSES_VALID
    if outcome == "fail":
        if rule in EXCEPTION_TYPE_RULES and exception_type_only:
            return PORTABILITY
        if rule in CORRUPTING_RULES and rule not in CHECK_OBSERVED:
            return CORRUPTS
        return REFUSES_VALID if level in ("MUST", "SHOULD", None) else PORTABILITY
    if outcome is None:
        return None
    return REFUSES_VALID


def bound_of(
    rule: str | None, role: str | None = None, check: str | None = None
) -> tuple[str | None, str]:
    """(the most severe severity a finding under `rule` may claim, None for no bound; why) for
    a culprit in `role` found by family `check` (`BOUND_TABLE`). A rule that binds the other
    side, and the optional-key MAY rules, bound by the rule the culprit had to honour in that
    family (`filing.honoured_rule`)."""
    found = RULES.get(rule or "")
    if found is None:
        return None, "no rule of the catalogue: unbounded"
    side = found.side.value
    other_side = role in ("producer", "consumer") and side in ("producer", "consumer")
    if rule in _OPTIONAL_ABSENT or (other_side and side != role):
        honoured = honoured_rule(check, role or side)
        if honoured and honoured != rule and honoured in RULES:
            return bound_of(honoured, role, check)
    level = found.level.value
    if level in _ALLOWED_REFUSAL:
        return PORTABILITY, f"{rule} is {level}: the behaviour is legal by its own text"
    if level == "SHOULD":
        return DEPARTS, f"{rule} is SHOULD: a recommendation, not failed by default"
    if found.derived and not found.duty:
        return DEPARTS, (
            f"{rule} is caiconform's reading of a sentence that states no duty for the "
            f"{side}: '{found.quote}'"
        )
    return None, f"{rule} is {level}{', derived' if found.derived else ''}: unbounded"


def bound_for(
    outcome: str | None, rule: str | None, role: str | None, check: str | None
) -> tuple[str | None, str]:
    """`bound_of` for a finding of class `outcome`: a crash, hang or poisoned context on valid
    input breaks the duty to read (a producer: to export) what is described, whatever rule the
    record was filed under."""
    if role not in ("producer", "consumer") and outcome not in ("fail", None):
        # what a consumer did with input that breaks a producer's rule is the consumer's
        found = RULES.get(rule or "")
        role = "consumer" if found is not None and found.side.value == "producer" else None
    if outcome in _LOST and role is not None:
        return bound_of(reading_rule(check, role), role, check)
    return bound_of(rule, role, check)


def severity_of(
    outcome: str | None,
    rule: str | None,
    level: str | None,
    *,
    from_input: bool = False,
    role: str | None = None,
    check: str | None = None,
    exception_type_only: bool = False,
) -> str | None:
    """The severity of a finding: its harm (`harm_of`) bounded by the sentence the culprit in
    `role` broke (`bound_of`), the less severe of the two; None for no finding and for
    information about the input. `level` is the level of the rule the group is filed under."""
    harm = harm_of(
        outcome, rule, level, from_input=from_input, exception_type_only=exception_type_only
    )
    return bounded(harm, bound_for(outcome, rule, role, check)[0])


def bounded(harm: str | None, bound: str | None) -> str | None:
    """The less severe of `harm` and `bound` (None: no harm, or no bound)."""
    if harm is None or bound is None:
        return harm
    return harm if rank(harm) >= rank(bound) else bound


def _dict_visible(rule: str | None) -> bool:
    found = RULES.get(rule or "")
    return found is not None and found.dict_visible


def rank(severity: str | None) -> int:
    """Sort key: 0 for the most harmful severity; unknown or None last."""
    return _RANK.get(severity or "", len(SEVERITIES))


def parse_severities(text: str | Iterable[str], option: str = "--fail-on") -> frozenset[str]:
    """`"corrupts,crashes"` (or an iterable of names) as a set of severities; `"none"` is the
    empty set, `"all"` every severity. ValueError with one line naming `option` and the bad
    name otherwise."""
    names = [p.strip() for p in text.split(",")] if isinstance(text, str) else list(text)
    names = [n for n in names if n]
    if names == ["none"]:
        return frozenset()
    if names == ["all"]:
        return frozenset(SEVERITIES)
    unknown = [n for n in names if n not in _RANK]
    if unknown or not names:
        bad = unknown[0] if unknown else ""
        raise ValueError(
            f"{option}: unknown severity {bad!r} (choose from {', '.join(SEVERITIES)}, "
            "or 'all' / 'none')"
        )
    return frozenset(names)
