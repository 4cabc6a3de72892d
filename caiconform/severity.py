"""How much harm a finding does: its severity, defined once for every report and verdict.

A rule's level says what the specification demands; a severity says what breaking it costs a
user. The two differ: torch exporting a v2 dict while its work is still pending breaks a
PORTABILITY rule (the v2 text cannot name a stream), yet a consumer reads unfinished data
without an error, so it `corrupts`. Reports list a library's defects most severe first, and
CI fails on the severities of `DEFAULT_FAIL_ON` (docs/reports.md, docs/ci.md).

From most to least harmful:

- `corrupts`: wrong values read or written without an error: values that differ, stale reads
  and races, lifetime (memory freed or reused under a view), writes through read-only data,
  a misread byte order, a dropped mask, an export describing other memory than the object's.
- `crashes`: the process died, hung, or was left with an unusable CUDA context.
- `refuses-valid`: a valid input refused at MUST level, or an export or behaviour a
  conforming partner cannot use (an invalid export of a MUST rule, a wrong exception type).
- `accepts-invalid`: an invalid dict taken without an error.
- `portability`: a refusal the specification allows (a PORTABILITY or MAY rule: big-endian,
  masks, negative strides, ...), or a SHOULD-level departure that loses nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "SEVERITIES",
    "CORRUPTS",
    "CRASHES",
    "REFUSES_VALID",
    "ACCEPTS_INVALID",
    "PORTABILITY",
    "DEFAULT_FAIL_ON",
    "HARM",
    "CORRUPTING_RULES",
    "severity_of",
    "rank",
    "parse_severities",
]

CORRUPTS = "corrupts"
CRASHES = "crashes"
REFUSES_VALID = "refuses-valid"
ACCEPTS_INVALID = "accepts-invalid"
PORTABILITY = "portability"
#: every severity, most harmful first
SEVERITIES = (CORRUPTS, CRASHES, REFUSES_VALID, ACCEPTS_INVALID, PORTABILITY)
#: what fails a CI run unless the user says otherwise: a defect that loses data, kills the
#: process or refuses what the spec says must work. An invalid dict accepted (garbage in,
#: undefined out: the producer broke the rule first) and a refusal the spec allows are
#: reported, not failed.
DEFAULT_FAIL_ON = frozenset({CORRUPTS, CRASHES, REFUSES_VALID})

#: rules whose `fail` means wrong values without an error (or an export that makes a
#: conforming consumer read them): what is read, when it is read, and how long it lives
CORRUPTING_RULES = frozenset(
    {
        "CAI-PRODUCER-DESCRIBES-DATA",
        "CAI-CONSUMER-READS-DESCRIBED",
        "CAI-DATA-READONLY-HONOURED",
        "CAI-DATA-EXTENT-IN-ALLOCATION",
        "CAI-STRIDES-NONE-C-CONTIGUOUS",
        "CAI-MASK-TRUTH",
        "CAI-STREAM-ZERO-FORBIDDEN",
        "CAI-STREAM-LEGACY",
        "CAI-STREAM-PER-THREAD",
        "CAI-STREAM-LIVE",
        "CAI-PORT-V2-PENDING",
        "CAI-DLPACK-AGREE",
        "CAI-DESCR-OBJECT-REFUSED",
        "CAI-NUMBA-CONSUMER-SYNC",
        "CAI-NUMBA-PRODUCER-STREAM",
        "CAI-NUMBA-STREAM-LIFETIME",
        "CAI-NUMBA-AS-CUDA-ARRAY-OWNER",
        "CAI-NUMBA-FROM-CAI-OWNER",
        "CAI-ENTRY-ZERO-COPY-SEES-WRITES",
        "CAI-ENTRY-ZERO-COPY-WRITES-THROUGH",
        "CAI-ENTRY-COPY-INDEPENDENT",
    }
)
#: rule-ID prefixes that are all about races or lifetimes
_CORRUPTING_PREFIXES = ("CAI-SYNC-", "CAI-LIFETIME-")
#: severity -> the harm it does, in a sentence for a reader (bug reports, docs)
HARM = {
    "corrupts": "wrong values are read or written without an error (a value mismatch, a stale "
    "read or race, memory freed or reused under a view, a misread byte order): the user gets "
    "wrong results and no sign of it",
    "crashes": "the process dies, hangs, or is left with an unusable CUDA context",
    "refuses-valid": "a valid input the specification says must work is refused, or the "
    "library exports or behaves in a way a conforming partner cannot use",
    "accepts-invalid": "an invalid dict is taken without an error: what happens next is "
    "undefined (the producer broke the rule first)",
    "portability": "a refusal the specification allows, or a departure that loses nothing: "
    "exchanges with other libraries may not work",
}

_LOST = ("crash", "hang", "poisoned")
#: rule levels whose refusal the specification allows
_ALLOWED_REFUSAL = ("PORTABILITY", "MAY")
_RANK = {s: i for i, s in enumerate(SEVERITIES)}
#: MAY rules a refusal is filed under when the consumer could not do without an optional key
#: (`checks._support.OPTIONAL_KEY_RULES`): a dict without `stream` is valid at every version,
#: so refusing it refuses valid input whatever the rule's own level
_OPTIONAL_ABSENT = frozenset({"CAI-SYNC-NONE-NO-SYNC"})


def _corrupting(rule: str | None) -> bool:
    return bool(rule) and (rule in CORRUPTING_RULES or rule.startswith(_CORRUPTING_PREFIXES))


def severity_of(outcome: str | None, rule: str | None, level: str | None) -> str | None:
    """The severity of a finding of class `outcome` (a catalogue class: fail, accepted-invalid,
    rejected-valid, crash, hang, poisoned) filed under `rule` at `level`; None for no finding.

    `level` is the level of the rule the group is filed under (the record's, else its input's):
    a refusal of what a PORTABILITY or MAY rule covers is allowed, a SHOULD-level fail that is
    not about values is a departure that loses nothing."""
    if outcome in _LOST:
        return CRASHES
    if outcome == "accepted-invalid":
        return ACCEPTS_INVALID
    if outcome == "rejected-valid":
        if rule in _OPTIONAL_ABSENT:
            return REFUSES_VALID
        return PORTABILITY if level in (*_ALLOWED_REFUSAL, "SHOULD") else REFUSES_VALID
    if outcome == "fail":
        if _corrupting(rule):
            return CORRUPTS
        return REFUSES_VALID if level in ("MUST", "SHOULD", None) else PORTABILITY
    if outcome is None:
        return None
    return REFUSES_VALID


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
