"""How much harm a finding does: its severity, defined once for every report and verdict.

A rule's level says what the specification demands; a severity says what breaking it was seen
to cost a user. The two differ: torch exporting a v2 dict while its work is still pending
breaks a PORTABILITY rule (the v2 text cannot name a stream), yet a consumer was seen reading
unfinished data without an error, so it `corrupts`; numba exporting stream 0 breaks a MUST rule,
yet the check reads the dict only and no value was misread, so it is `refuses-valid`. Reports
list a library's defects most severe first, and CI fails on the severities of `DEFAULT_FAIL_ON`
(docs/reports.md, docs/ci.md).

From most to least harmful:

- `corrupts`: a wrong value was read or written without an error, or memory was freed under a
  view: only the rules of `CORRUPTING_RULES`, whose `fail` is such an observation.
- `crashes`: the process died, hung, or was left with an unusable CUDA context, on a valid
  input (or one breaking only a SHOULD or PORTABILITY rule: a legal dict).
- `refuses-valid`: a valid input refused at MUST level, or an export or behaviour a
  conforming partner cannot use (an invalid export of a MUST rule with no misread observed, a
  wrong exception type).
- `accepts-invalid`: an invalid dict taken without an error, or a crash, hang or poisoned
  context on a dict whose invalidity the dict itself shows (a float in shape, a null pointer
  for a non-empty array, a bad typestr: `Rule.dict_visible`): the consumer could have refused it.
- `portability`: a refusal the specification allows (a PORTABILITY or MAY rule: big-endian,
  masks, negative strides, ...), or a SHOULD-level refusal.

None: no finding, or information about the input (`about_input`): whatever a consumer did with
a dict breaking a rule the dict cannot show (a host pointer, CAI-DATA-DEVICE-ACCESSIBLE; an
extent past the allocation, CAI-DATA-EXTENT-IN-ALLOCATION; a handle that is no stream,
CAI-STREAM-LIVE) is what that input does, the producer's obligation: reports list it apart and
it never fails the consumer.

Each rule a `fail` is filed under, and whether that fail is an observed wrong value (the check
code in caiconform/checks/ decides):

- corrupts: CAI-CONSUMER-READS-DESCRIBED (the consumer's values differ from those written, or
  the producer's memory no longer holds them after the consumer read it: roundtrip, zero_size,
  streams, mask, aliasing, lifetime, adversarial layouts), CAI-PRODUCER-DESCRIBES-DATA (the
  reference consumer reads other values than the producer wrote; an opaque type exported
  under another kind's typestr, bfloat16 as <f2, whose bytes read as that kind are other
  values), CAI-DATA-READONLY-HONOURED (a write through the consumer's view reached memory
  exported read-only), CAI-MASK-TRUTH (the mask dropped or changed: elements it marked invalid
  returned as valid data), CAI-DESCR-OBJECT-REFUSED (device bytes made into Python objects),
  CAI-SYNC-CONSUMER, CAI-SYNC-PRODUCER-SUFFICIENT, CAI-SYNC-PRODUCER-MULTI-STREAM,
  CAI-SYNC-RACE-FREE and CAI-PORT-V2-PENDING (the sentinel, the value before the producer's
  pending write, was read), CAI-LIFETIME-DATA-HELD (the allocation freed, or its data changed,
  under a live view), CAI-ENTRY-ZERO-COPY-SEES-WRITES, CAI-ENTRY-ZERO-COPY-WRITES-THROUGH and
  CAI-ENTRY-COPY-INDEPENDENT (a write seen, or not, where the entry point's documented copy
  semantics say otherwise), DLPACK-PRODUCER-DESCRIBES-DATA (the elements a producer's own
  capsule describes, read by caiconform, are other values than it wrote),
  DLPACK-STREAM-PRODUCER-SYNC and DLPACK-STREAM-NONE-LEGACY (the sentinel read on the stream
  the consumer named to `__dlpack__`: the producer's pending write not ordered before it),
  DLPACK-STREAM-DL-DEVICE-CPU (a host capsule asked with dl_device kDLCPU holding values from
  before the producer's pending write);
- ranked by level, no wrong value observed: CAI-STREAM-ZERO-FORBIDDEN and
  CAI-NUMBA-PRODUCER-STREAM (the exported dict's stream read, no consumer involved),
  CAI-NUMBA-CONSUMER-SYNC (the import returned while the exported stream's work was pending, or
  the array took another default stream: timing and state, no value read), CAI-DLPACK-AGREE (two
  descriptions compared), CAI-DATA-EXTENT-IN-ALLOCATION and CAI-DATA-DEVICE-ACCESSIBLE (a
  producer's dict against its allocation), CAI-LIFETIME-NO-EFFECT (the dict holds its owner),
  CAI-LIFETIME-RELEASED (memory still live after the last view: a leak), CAI-SYNC-NONE-NO-SYNC
  (a wait nobody asked for), CAI-SYNC-PRODUCER-OPT-OUT (a setting that did not change the dict);
- no check files a `fail` under CAI-STRIDES-NONE-C-CONTIGUOUS (a refusal of a dict without
  strides), CAI-STREAM-LEGACY, CAI-STREAM-PER-THREAD, CAI-STREAM-LIVE (an input's rule),
  CAI-NUMBA-STREAM-LIFETIME, CAI-NUMBA-AS-CUDA-ARRAY-OWNER or CAI-NUMBA-FROM-CAI-OWNER: a fail
  under one would be ranked by its level until a check shows what it observed.
"""

from __future__ import annotations

from collections.abc import Iterable

from caiconform.spec.rules import RULES

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
    "about_input",
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

#: rules whose `fail` is an observed wrong value (read or written) or memory freed under a view
#: (the module docstring says why each is here, and why the others are not)
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
    }
)
#: severity -> the harm it does, in a sentence for a reader (bug reports, docs)
HARM = {
    "corrupts": "wrong values are read or written without an error (a value mismatch, a stale "
    "read or race, memory freed or reused under a view, a misread byte order): the user gets "
    "wrong results and no sign of it",
    "crashes": "the process dies, hangs, or is left with an unusable CUDA context on a valid input",
    "refuses-valid": "a valid input the specification says must work is refused, or the "
    "library exports or behaves in a way a conforming partner cannot use",
    "accepts-invalid": "an invalid dict is taken without an error, or crashes or faults the "
    "consumer although the dict itself shows it invalid: the consumer could have refused it",
    "portability": "a refusal the specification allows, or a departure that loses nothing: "
    "exchanges with other libraries may not work",
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


def about_input(rule: str | None) -> bool:
    """Whether a dict breaking `rule` breaks it where the dict cannot show it (memory or a
    stream the dict names: `Rule.dict_visible` False), so what a consumer does with such a
    dict is information about the input, not the consumer's defect."""
    found = RULES.get(rule or "")
    return found is not None and not found.dict_visible and found.side.value == "producer"


def severity_of(
    outcome: str | None, rule: str | None, level: str | None, *, from_input: bool = False
) -> str | None:
    """The severity of a finding of class `outcome` (a catalogue class: fail, accepted-invalid,
    rejected-valid, crash, hang, poisoned) filed under `rule` at `level`; None for no finding
    and for information about the input (`about_input`).

    `level` is the level of the rule the group is filed under (the record's, else its input's).
    `from_input`: the group is filed under the rule its input was built to break (a crash, hang
    or poison has no rule of its own). An accepted-invalid finding is about its input too."""
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
        if rule in CORRUPTING_RULES:
            return CORRUPTS
        return REFUSES_VALID if level in ("MUST", "SHOULD", None) else PORTABILITY
    if outcome is None:
        return None
    return REFUSES_VALID


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
