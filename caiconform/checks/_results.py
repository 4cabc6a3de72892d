"""The `Result`s the check families build (`passed`, `failed`, `rejected`, `accepted_invalid`,
`skipped`: messages of the form `context: got X, expected Y [RULE-ID]`) and the rule a consumer's
refusal of a valid export falls under: the reason it names itself (`named_refusal`: an optional
key, an older version, a PORTABILITY finding whose words it holds, its layout), the memory it
names (`memory_refusal`), else the dict's first PORTABILITY finding (`portability_rule`); how a
producer exports an element type numpy has no code for (`named_export`).

A `rejected` whose `expected` is `results.record.EXPECT_REJECTION` is a consumer refusing
invalid input (the right answer); any other `rejected` is valid input refused.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

import numpy as np

from caiconform.results.outcome import (
    ACCEPTED_INVALID,
    FAIL,
    PASS,
    REJECTED,
    SKIP,
    Result,
)
from caiconform.results.record import EXPECT_REJECTION


def describe_exception(exc: BaseException, limit: int = 200) -> str:
    """`TypeName: message` on one line, cut to `limit` characters."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def finding_message(rule: str | None, seen: Any, expected: Any, context: str) -> str:
    """`context: got X, expected Y [RULE-ID]`, the message of every finding."""
    head = f"{context}: " if context else ""
    tail = f" [{rule}]" if rule else ""
    return f"{head}got {seen}, expected {expected}{tail}"


def passed(message: str = "", seen: Any = None) -> Result:
    return Result(PASS, message=message, seen=seen)


def failed(rule: str, seen: Any, expected: Any, context: str = "") -> Result:
    """A finding against `rule`: the message reads `context: got X, expected Y [RULE-ID]`."""
    return Result(
        FAIL, rule, finding_message(rule, seen, expected, context), str(seen), str(expected)
    )


def rejected(rule: str | None, exc: BaseException, expected: str, context: str = "") -> Result:
    """A clean Python exception from the consumer; `rule` names what the input was about."""
    seen = describe_exception(exc)
    return Result(REJECTED, rule, finding_message(rule, seen, expected, context), seen, expected)


def accepted_invalid(rule: str, seen: Any, context: str = "") -> Result:
    """Invalid input taken without complaint; `rule` is the rule the input breaks."""
    return Result(
        ACCEPTED_INVALID,
        rule,
        finding_message(rule, seen, EXPECT_REJECTION, context),
        str(seen),
        EXPECT_REJECTION,
    )


def skipped(reason: str) -> Result:
    return Result(SKIP, message=reason)


#: words in a refusal's message that point at one PORTABILITY rule (lower case)
REFUSAL_WORDS = {
    "CAI-PORT-TYPESTR-KIND": ("dtype", "type"),
    "CAI-PORT-TYPESTR-OPAQUE": ("dtype", "type", "void"),
    "CAI-PORT-BYTEORDER": ("byte order", "byteorder", "endian", "swapped"),
    "CAI-PORT-NEGATIVE-STRIDES": ("negative",),
    "CAI-PORT-OVERLAP": ("overlap", "broadcast"),
    "CAI-PORT-STRIDES-ITEMSIZE": ("multiple", "itemsize", "divisible"),
    "CAI-PORT-ALIGNMENT": ("align",),
    "CAI-PORT-READONLY": ("read-only", "readonly", "read only", "writable", "writeable"),
    "CAI-PORT-MASK": ("mask",),
    "CAI-PORT-MASK-SHAPE-EXACT": ("mask",),
}


def _portability_rules(interface: Any) -> list[str]:
    from caiconform import validate
    from caiconform.spec.rules import Level

    return [f.rule for f in validate(interface).findings if f.level is Level.PORTABILITY]


#: the rules a refusal names by naming the element type itself ("complex256", "float128")
_TYPE_RULES = ("CAI-PORT-TYPESTR-KIND", "CAI-PORT-TYPESTR-OPAQUE")


def _named_in(rules: list[str], exc: BaseException, typestr: Any = None) -> str | None:
    said = str(exc).lower()
    names: tuple[str, ...] = ()
    if isinstance(typestr, str) and len(typestr) > 1:  # its typestr, or its numpy name
        names = (typestr.lower(),)
        with contextlib.suppress(TypeError):
            names += (np.dtype(typestr).name.lower(),)
    for rule in rules:
        words = REFUSAL_WORDS.get(rule, ())
        if rule in _TYPE_RULES:
            words = (*words, *names)
        if any(word in said for word in words):
            return rule
    return None


def portability_rule(interface: Any) -> str | None:
    """The first PORTABILITY finding the validator makes on `interface`: the known reason a
    consumer may refuse a legal export (`named_refusal` first picks the one a refusal names)."""
    rules = _portability_rules(interface)
    return rules[0] if rules else None


def named_refusal(interface: Any, exc: BaseException) -> str | None:
    """The rule a consumer's refusal of the valid export `interface` names by itself, or None:
    a KeyError on an optional key the export leaves out (`OPTIONAL_KEY_RULES`), an older
    version refused for being one [CAI-PORT-OLDER-VERSION], a PORTABILITY finding of the
    dict whose words the message holds, or a layout the consumer names as one it cannot take
    [CAI-PORT-LAYOUT-SUBSET]. It outranks the rule a family's example is about
    (a zero-size example refused for its float128 type is a type refusal, not a zero-size
    one)."""
    if not isinstance(interface, dict):
        return None
    key = missing_optional_key(interface, exc)
    if key is not None:
        return OPTIONAL_KEY_RULES[key]
    if interface.get("version") in (0, 1, 2) and _OLDER_VERSION.search(str(exc)):
        return "CAI-PORT-OLDER-VERSION"
    named = _named_in(_portability_rules(interface), exc, interface.get("typestr"))
    if named is None and _odd_strides(interface):
        # strides no multiple of the item size in a dimension of length 0 or 1: the validator
        # leaves them out (they reach no element), but a refusal naming them refuses exactly
        # what CAI-PORT-STRIDES-ITEMSIZE allows it to (cuda.core's StridedMemoryView)
        named = _named_in(["CAI-PORT-STRIDES-ITEMSIZE"], exc)
    if named is None and _layout_refused(interface, exc):
        return "CAI-PORT-LAYOUT-SUBSET"
    return named


def _odd_strides(interface: dict) -> bool:
    """Whether any of `interface`'s strides, in any dimension, is no multiple of its item size."""
    try:
        itemsize = np.dtype(interface["typestr"]).itemsize
        strides = interface.get("strides")
        return bool(strides) and any(int(s) % itemsize for s in strides)
    except (KeyError, TypeError, ValueError):
        return False


#: how a refusal names the interface version it wants: "version", or "v3" as cuda.core 1.2 says
#: ("only CUDA Array Interface v3 or above is supported")
_OLDER_VERSION = re.compile(r"version|\bv[0-3]\b", re.IGNORECASE)

#: words (lower case) by which a refusal names the dimensions or the contiguity it takes
NDIM_WORDS = ("1-d", "1d", "one-dimensional", "ndim", "dimension")

CONTIGUITY_WORDS = ("contiguous", "compact")


def _layout_refused(interface: dict, exc: BaseException) -> bool:
    """Whether `exc` refuses `interface` for what its layout is: it names dimensions and the
    export has more or fewer than one, or names contiguity and the export is not C-contiguous
    [CAI-PORT-LAYOUT-SUBSET]. The words alone are not enough: a 1-D C-contiguous export
    refused as "not contiguous" was misread, not refused for its layout."""
    from caiconform.spec.layout import is_c_contiguous

    said = str(exc).lower()
    try:
        shape = tuple(int(n) for n in interface["shape"])
        itemsize = np.dtype(interface["typestr"]).itemsize
        strides = interface.get("strides")
        strides = None if strides is None else tuple(int(n) for n in strides)
        contiguous = is_c_contiguous(shape, strides, itemsize)
    except (KeyError, TypeError, ValueError):
        return False
    if len(shape) != 1 and any(word in said for word in NDIM_WORDS):
        return True
    return not contiguous and any(word in said for word in CONTIGUITY_WORDS)


#: optional keys a consumer must do without, and the rule it breaks when it cannot: a KeyError
#: naming one the export left out is the consumer's bug, whatever else the dict holds
OPTIONAL_KEY_RULES = {
    "strides": "CAI-STRIDES-NONE-C-CONTIGUOUS",
    "stream": "CAI-SYNC-NONE-NO-SYNC",
}


def missing_optional_key(interface: Any, exc: BaseException) -> str | None:
    """The optional key `exc` (a KeyError) names when `interface` leaves it out, else None."""
    if not isinstance(exc, KeyError) or not isinstance(interface, dict) or len(exc.args) != 1:
        return None
    key = exc.args[0]
    return key if key in OPTIONAL_KEY_RULES and key not in interface else None


#: words (lower case) by which a refusal names the kind of memory it was given
MEMORY_WORDS = (
    "managed",
    "unified",
    "host memory",
    "host pointer",
    "pinned",
    "mapped",
    "memory type",
    "memory pool",
    "mempool",
    "virtual memory",
    "not device memory",
    "not a device pointer",
)


def memory_refusal(exc: BaseException) -> str | None:
    """CAI-CONSUMER-ANY-MEMORY-KIND when a valid export of memory other than cuMemAlloc's
    (the example's kind, `caiconform.cuda.memkinds.current_kind`) is refused by a message
    naming the memory (`MEMORY_WORDS`): the text asks only that the data be device-accessible.
    None otherwise: a refusal naming nothing is no proof the kind was the reason (its group's
    condition, "memory is managed", says when it is)."""
    from caiconform.cuda.memkinds import current_kind

    if current_kind() == "device":
        return None
    said = str(exc).lower()
    return "CAI-CONSUMER-ANY-MEMORY-KIND" if any(w in said for w in MEMORY_WORDS) else None


def refusal_portability_rule(interface: Any, exc: BaseException) -> str | None:
    """The rule that explains a consumer refusing the valid export `interface` with `exc`:
    a KeyError on an optional key the export leaves out breaks the rule that key's absence
    has (`OPTIONAL_KEY_RULES`: no strides reads as C-contiguous); an older version refused for
    being one [CAI-PORT-OLDER-VERSION]; else the validator's first PORTABILITY finding on the
    dict (a legal feature real consumers commonly refuse), else None."""
    if not isinstance(interface, dict):
        return None
    return named_refusal(interface, exc) or portability_rule(interface)


def named_export(obj: Any, typestr: str, context: str) -> tuple[Result | None, list]:
    """Judge how a producer exports an element type numpy has no typestr code for
    (`caiconform.spec.dtypes`): (a Result ending the example, or None; extra findings).

    Refusing to export is a PORTABILITY gap when it raises AttributeError
    [CAI-PORT-OPAQUE-EXPORT] and a failure when it raises anything else, which breaks hasattr()
    [CAI-ATTR-RAISES-ATTRIBUTEERROR]. An export as raw bytes of the right size carries the
    CAI-PORT-TYPESTR-OPAQUE warning (the element type is lost); an export under another kind's
    typestr of the same size (bfloat16 as <f2) describes other elements than the array holds
    [CAI-PRODUCER-DESCRIBES-DATA].
    """
    from caiconform.spec.dtypes import OPAQUE, storage_typestr
    from caiconform.spec.findings import finding

    if typestr not in OPAQUE:
        return None, []
    want = storage_typestr(typestr)
    try:
        interface = obj.__cuda_array_interface__
    except AttributeError as exc:
        return (
            rejected("CAI-PORT-OPAQUE-EXPORT", exc, f"an export as raw bytes ({want})", context),
            [],
        )
    except Exception as exc:  # noqa: BLE001 - the exception type is what is judged
        return (
            failed(
                "CAI-ATTR-RAISES-ATTRIBUTEERROR",
                f"{describe_exception(exc)} when reading the attribute of a {typestr} array",
                f"AttributeError, or an export as raw bytes ({want})",
                context,
            ),
            [],
        )
    got = interface.get("typestr") if isinstance(interface, dict) else None
    if not isinstance(got, str) or len(got) < 3:
        return None, []  # the validator reports a missing or malformed typestr
    if got[1] == "V" and got[2:] == want[2:]:
        seen = f"{typestr} exported as {got}"
        return None, [finding("CAI-PORT-TYPESTR-OPAQUE", "typestr", seen, "a typestr naming it")]
    if got[2:] == want[2:]:
        return (
            failed(
                "CAI-PRODUCER-DESCRIBES-DATA",
                f"{typestr} exported as {got}: other elements than the array holds",
                f"raw bytes ({want})",
                context,
            ),
            [],
        )
    return None, []
