"""Pieces every check family shares: example values, the bitwise comparison, `Result` builders,
an object exposing an arbitrary dict, a JSON encoding of interface dicts, reproducer scaffolding.

Families draw their params in the parent process and run `execute` in a worker, so everything a
worker needs to rebuild an example must travel as JSON: values travel as a seed (`make_values`),
layouts as `Layout.to_dict()`, and interface dicts through `encode`/`decode`, which keep tuples
and lists apart (a list where the spec wants a tuple is itself a finding). Nothing here imports a
GPU library.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import textwrap
from typing import Any

import numpy as np

from caiconform.adapters.base import ProducerFailed, SkipExchange
from caiconform.results.outcome import (
    ACCEPTED_INVALID,
    FAIL,
    PASS,
    REJECTED,
    SKIP,
    Result,
)
from caiconform.results.record import EXPECT_REJECTION
from caiconform.spec.dtypes import numpy_dtype, padding_mask
from caiconform.spec.layout import Layout

__all__ = [
    "SEED_MAX",
    "SkipExchange",
    "make_values",
    "values_source",
    "compare_values",
    "describe_exception",
    "passed",
    "failed",
    "rejected",
    "accepted_invalid",
    "skipped",
    "InterfaceObject",
    "RaisingInterface",
    "Opaque",
    "encode",
    "decode",
    "adapter",
    "produce",
    "consume_with",
    "portability_rule",
    "refusal_portability_rule",
    "named_refusal",
    "judge_exchange",
    "fields_dropped",
    "seeds",
    "named_export",
    "plain_arrays",
    "producer_source",
    "consumer_source",
    "repro_script",
    "COMPARE_SOURCE",
]

#: Upper bound of the seeds examples draw: any value numpy's default_rng takes.
SEED_MAX = 2**32 - 1


def make_values(
    typestr: str,
    shape: list[int] | tuple[int, ...],
    seed: int,
    strides: list[int] | tuple[int, ...] | None = None,
) -> np.ndarray:
    """Random element bit patterns for `typestr` and `shape`, the same for the same seed.

    Random bytes rather than random numbers: every bit pattern a dtype can hold is exercised
    (NaN payloads, infinities, subnormals, negative zero), which is what a byte-exact exchange
    must preserve. Booleans are reduced to 0/1, the only patterns a bool may hold. Along axes
    whose byte stride in `strides` is 0 (a broadcast layout: one element in memory) the values
    repeat, as they must to be storable at all.
    """
    dtype = numpy_dtype(typestr)
    shape = tuple(int(n) for n in shape)
    if strides is None:
        source = shape
    else:
        source = tuple(1 if s == 0 else n for n, s in zip(shape, strides, strict=True))
    count = 1
    for extent in source:
        count *= extent
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=count * dtype.itemsize, dtype=np.uint8)
    if dtype.kind == "b":
        raw &= 1
    return np.broadcast_to(raw.view(dtype).reshape(source), shape).copy()


def values_source(
    typestr: str,
    shape: list[int] | tuple[int, ...],
    seed: int,
    strides: list[int] | tuple[int, ...] | None = None,
) -> str:
    """Source lines that rebuild `make_values(typestr, shape, seed, strides)` in a script."""
    strides_arg = "" if strides is None else f", {list(strides)!r}"
    return (
        "import numpy as np\n\nfrom caiconform.spec.dtypes import numpy_dtype\n\n\n"
        + _make_values_source()
        + f"\n\nvalues = make_values({typestr!r}, {list(shape)!r}, {seed!r}{strides_arg})\n"
    )


@functools.cache
def _make_values_source() -> str:
    """`make_values`'s source, read once per process: every non-pass example's reproducer
    embeds it, and `inspect.getsource` tokenizes the file each time (with the other source
    lookups, 15 % of the run parent's GIL time on the H100, 2026-11-25)."""
    return inspect.getsource(make_values)


def _native(a: np.ndarray) -> np.ndarray:
    if a.dtype.byteorder not in ("=", "|") and not a.dtype.isnative:
        return a.astype(a.dtype.newbyteorder("="))
    return a


def _same_element(expected: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """Element-wise: bit patterns equal, or both NaN (a NaN's payload is not data)."""
    # ascontiguousarray makes a 0-d array 1-d: the bytes are compared so, the result reshaped
    a = np.ascontiguousarray(expected)
    b = np.ascontiguousarray(seen)
    ab = a.view(np.uint8).reshape(a.shape + (a.dtype.itemsize,))
    bb = b.view(np.uint8).reshape(b.shape + (b.dtype.itemsize,))
    same = (ab == bb).all(axis=-1)
    if a.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            same |= np.isnan(a) & np.isnan(b)
    elif a.dtype.kind == "c":
        with np.errstate(invalid="ignore"):
            real = (a.real == b.real) | (np.isnan(a.real) & np.isnan(b.real))
            imag = (a.imag == b.imag) | (np.isnan(a.imag) & np.isnan(b.imag))
            same |= real & imag
    return same.reshape(np.shape(expected))


def compare_values(seen: Any, expected: np.ndarray) -> str | None:
    """None when `seen` holds exactly `expected`; else one line saying what differs.

    Compares shape, dtype and then bit patterns, NaN-aware: two NaNs are equal whatever their
    payload, everything else must match bit for bit (so -0.0 != 0.0 here, unlike `==`).
    """
    if not isinstance(seen, np.ndarray):
        return f"a {type(seen).__name__}, not a numpy array"
    if seen.shape != expected.shape:
        return f"shape {seen.shape}, expected {expected.shape}"
    a, b = _native(expected), _native(seen)
    if "V" in (a.dtype.kind, b.dtype.kind) and a.dtype.itemsize == b.dtype.itemsize:
        # raw bytes (an opaque or structured type exported as V<n>): compare the bytes, a
        # structured type's padding left out (padding is not data)
        keep = padding_mask(a.dtype)
        a, b = _as_bytes(a), _as_bytes(b)
        if keep is not None:
            a, b = _unpadded(a, keep), _unpadded(b, keep)
    if a.dtype != b.dtype:
        return f"dtype {seen.dtype.str}, expected {expected.dtype.str}"
    if a.size == 0:
        return None
    same = _same_element(a, b)
    if same.all():
        return None
    # flatnonzero + unravel_index, not argwhere: argwhere reads a 0-d array as 1-d, and its
    # index then fails on the 0-d array itself
    wrong = np.flatnonzero(~same)
    first = tuple(int(i) for i in np.unravel_index(int(wrong[0]), same.shape))
    got, want = repr(b[first]), repr(a[first])
    if got == want:  # same value, other bytes (a bool stored as 2, a NaN payload): show the bytes
        got, want = _element_bytes(b, first), f"{_element_bytes(a, first)} (bytes)"
    return f"{len(wrong)} of {a.size} elements differ; first at {first}: got {got}, expected {want}"


def _as_bytes(array: np.ndarray) -> np.ndarray:
    """`array` viewed as plain `V<itemsize>` items (field names and metadata dropped)."""
    return np.ascontiguousarray(array).view(np.dtype(f"V{array.dtype.itemsize}"))


def _unpadded(array: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The bytes of each item where `keep` is True, as `V<kept>` items."""
    raw = array.view(np.uint8).reshape(*array.shape, array.dtype.itemsize)[..., keep]
    return np.ascontiguousarray(raw).view(np.dtype(f"V{int(keep.sum())}")).reshape(array.shape)


def _element_bytes(array: np.ndarray, index: tuple[int, ...]) -> str:
    """The stored bytes of one element in hex (indexing a scalar would normalise them)."""
    raw = np.ascontiguousarray(array).view(np.uint8).reshape(*array.shape, array.dtype.itemsize)
    return raw[index].tobytes().hex()


def describe_exception(exc: BaseException, limit: int = 200) -> str:
    """`TypeName: message` on one line, cut to `limit` characters."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _message(rule: str | None, seen: Any, expected: Any, context: str) -> str:
    head = f"{context}: " if context else ""
    tail = f" [{rule}]" if rule else ""
    return f"{head}got {seen}, expected {expected}{tail}"


def passed(message: str = "", seen: Any = None) -> Result:
    return Result(PASS, message=message, seen=seen)


def failed(rule: str, seen: Any, expected: Any, context: str = "") -> Result:
    """A finding against `rule`: the message reads `context: got X, expected Y [RULE-ID]`."""
    return Result(FAIL, rule, _message(rule, seen, expected, context), str(seen), str(expected))


def rejected(rule: str | None, exc: BaseException, expected: str, context: str = "") -> Result:
    """A clean Python exception from the consumer; `rule` names what the input was about."""
    seen = describe_exception(exc)
    return Result(REJECTED, rule, _message(rule, seen, expected, context), seen, expected)


def accepted_invalid(rule: str, seen: Any, context: str = "") -> Result:
    """Invalid input taken without complaint; `rule` is the rule the input breaks."""
    return Result(
        ACCEPTED_INVALID,
        rule,
        _message(rule, seen, EXPECT_REJECTION, context),
        str(seen),
        EXPECT_REJECTION,
    )


def skipped(reason: str) -> Result:
    return Result(SKIP, message=reason)


class InterfaceObject:
    """An object whose `__cuda_array_interface__` is exactly the dict it was given.

    Adversarial and version checks hand consumers dicts no library would produce; `keepalive`
    holds whatever owns the memory the dict points into, so the pointer stays valid for as long
    as the consumer may use this object (the spec leaves that to the user).
    """

    def __init__(self, interface: Any, keepalive: Any = None) -> None:
        self._interface = interface
        self.keepalive = keepalive

    @property
    def __cuda_array_interface__(self) -> Any:
        return self._interface

    def __repr__(self) -> str:
        return f"InterfaceObject({self._interface!r})"


class RaisingInterface:
    """An object whose interface attribute raises something other than AttributeError (what a
    broken producer does); stands in for such an object decoded from params."""

    @property
    def __cuda_array_interface__(self) -> dict:
        raise RuntimeError("reading __cuda_array_interface__ failed")


class Opaque:
    """An object exposing nothing, decoded from params (e.g. a mask that is no array)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


def encode(value: Any) -> Any:
    """A JSON-able form of an interface dict that `decode` turns back into an equal value.

    Tuples become `{"$tuple": [...]}`, dicts `{"$dict": [[key, value], ...]}` (keys need not be
    strings in an adversarial dict), bytes `{"$bytes": hex}`; an object exposing the interface
    (a mask) becomes `{"$cai": <its dict>}`, one whose attribute raises `{"$raising": name}`
    and any other object `{"$opaque": its type name}`.
    """
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {"$dict": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, bytes):
        return {"$bytes": value.hex()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    try:
        interface = value.__cuda_array_interface__
    except AttributeError:
        return {"$opaque": type(value).__name__}
    except Exception:  # a producer whose attribute raises: keep that behaviour
        return {"$raising": type(value).__name__}
    return {"$cai": encode(interface)}


def decode(value: Any) -> Any:
    """Inverse of `encode`; `$cai` becomes an `InterfaceObject`."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "$tuple" in value:
        return tuple(decode(v) for v in value["$tuple"])
    if "$dict" in value:
        return {_hashable(decode(k)): decode(v) for k, v in value["$dict"]}
    if "$bytes" in value:
        return bytes.fromhex(value["$bytes"])
    if "$cai" in value:
        return InterfaceObject(decode(value["$cai"]))
    if "$raising" in value:
        return RaisingInterface()
    if "$opaque" in value:
        return Opaque(value["$opaque"])
    raise ValueError(f"not an encoded value: {value!r}")


def _hashable(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key


def adapter(name: str):
    """The registry's adapter instance for `name` (imported here so families stay light)."""
    from caiconform.adapters.registry import get

    return get(name)


def produce(name: str, values: np.ndarray, layout: Layout, typestr: str, scenario: str) -> Any:
    """`adapter(name).produce(...)`; SkipExchange passes through (the runner records a skip),
    any other exception is re-raised saying the producer, not the consumer, failed."""
    try:
        return adapter(name).produce(values, layout, typestr, scenario)
    except SkipExchange:
        raise
    except Exception as exc:
        raise ProducerFailed(
            f"producer {name} could not build the example: {describe_exception(exc)}"
        ) from exc


def consume_with(name: str, obj: Any) -> tuple[Any, BaseException | None]:
    """Run consumer `name` on `obj`: (values, None) or (None, the exception it raised).

    SkipExchange is not caught: it means the consumer cannot take part at all, which the runner
    records as a skip with its reason. Nor is a missing CUDA driver an answer
    (`cuda.device.missing_driver`): it becomes a SkipExchange saying so.
    """
    try:
        return adapter(name).consume(obj), None
    except SkipExchange:
        raise
    except Exception as exc:  # any clean exception is the consumer's answer
        from caiconform.cuda.device import missing_driver

        why = missing_driver(exc)
        if why is not None:  # ... but a consumer that cannot reach a GPU gave none
            raise SkipExchange(f"consumer {name} cannot run here: {why}") from exc
        return None, exc


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
    if named is None and _layout_refused(interface, exc):
        return "CAI-PORT-LAYOUT-SUBSET"
    return named


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


def judge_exchange(
    consumer: str,
    obj: Any,
    expected: np.ndarray,
    violated: str | None,
    context: str,
    read_rule: str = "CAI-CONSUMER-READS-DESCRIBED",
    reject_rule: str | None = None,
) -> Result:
    """Feed `obj` to `consumer` and classify the answer.

    violated: the rule the export breaks (None for a valid export). Invalid input: a clean
    exception is `rejected` with expected EXPECT_REJECTION (the right answer), anything read
    is `accepted-invalid`. Valid input: the values read must equal `expected` (`fail` against
    `read_rule` otherwise); an exception is `rejected` naming `reject_rule` (the feature the
    example is about) unless the refusal names its own reason (`named_refusal`), else the
    portability rule that explains it, else `read_rule`: an interop gap.
    """
    values, exc = consume_with(consumer, obj)
    if violated is not None:
        if exc is not None:
            seen = describe_exception(exc)
            return Result(
                REJECTED,
                violated,
                _message(violated, seen, EXPECT_REJECTION, context),
                seen,
                EXPECT_REJECTION,
            )
        shape = getattr(values, "shape", None)
        return accepted_invalid(violated, f"accepted, read shape {shape}", context)
    if exc is not None:
        try:
            interface = obj.__cuda_array_interface__
        except Exception:  # a producer's failing property is judged where it is read
            interface = None
        rule = named_refusal(interface, exc) or memory_refusal(exc) or reject_rule
        if rule is None:
            rule = refusal_portability_rule(interface, exc)
        return rejected(rule or read_rule, exc, "the values read back", context)
    mismatch = compare_values(np.asarray(values), expected)
    if mismatch is not None:
        return failed(read_rule, mismatch, "the values the dict describes", context)
    if fields_dropped(np.asarray(values), expected):
        return passed(
            f"{context}: read back exactly; warnings: CAI-PORT-DESCR-FIELDS at descr (read as "
            f"{np.asarray(values).dtype.str}, its fields {expected.dtype.names} dropped)",
            seen=["CAI-PORT-DESCR-FIELDS"],
        )
    return passed(f"{context}: read back exactly")


def fields_dropped(seen: np.ndarray, expected: np.ndarray) -> bool:
    """True when `expected` has named fields (a structured export, its fields in descr) and
    the consumer's array `seen` has none: the bytes may be right, the element type is lost
    [CAI-PORT-DESCR-FIELDS]."""
    return expected.dtype.names is not None and seen.dtype.names is None


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


def seeds():
    """Strategy for `make_values` seeds; shrinks towards 0."""
    from hypothesis import strategies as st

    return st.integers(0, SEED_MAX)


def plain_arrays():
    """Strategy for families whose example is one plain array (lifetime, readonly, devices):
    typestr, a nonzero C-contiguous shape (as a list, for JSON) and a seed; shrinks toward
    '|b1' of shape (1,)."""
    from hypothesis import strategies as st

    from caiconform import strategies as cst

    return st.fixed_dictionaries(
        {
            "typestr": cst.typestrs(),
            "shape": cst.shapes(min_dims=1, allow_zero=False).map(list),
            "seed": seeds(),
        }
    )


def layout_source(layout: Layout) -> str:
    return f"Layout.from_dict({layout.to_dict()!r})"


def producer_source(name: str, layout: Layout, typestr: str, scenario: str = "none") -> str:
    """Lines building `obj` from `values` with producer `name`.

    The adapter's own snippet (library calls only) when the example needs nothing it cannot
    say (a plain C-contiguous array, no pending work); otherwise the caiconform adapter call
    that builds exactly the layout and stream scenario of the example.
    """
    from caiconform.adapters._staging import is_plain_c

    if name == "reference":
        return (
            "from caiconform.reference.producer import ReferenceArray\n"
            "from caiconform.spec.layout import Layout\n"
            f"obj = ReferenceArray(values, {layout_source(layout)}, {typestr!r}, "
            f"stream_scenario={scenario!r})\n"
        )
    snippet = adapter(name).repro_produce()
    if snippet and scenario == "none" and is_plain_c(layout, numpy_dtype(typestr).itemsize):
        return snippet
    return (
        "from caiconform.adapters.registry import get\n"
        "from caiconform.spec.layout import Layout\n"
        f"obj = get({name!r}).produce(values, {layout_source(layout)}, {typestr!r}, "
        f"{scenario!r})\n"
    )


def consumer_source(name: str) -> str:
    """Lines reading `obj` with consumer `name` into the host array `result`."""
    snippet = adapter(name).repro_consume()
    if snippet:
        return snippet + "result = getattr(result, 'values', result)\n"
    return f"from caiconform.adapters.registry import get\nresult = get({name!r}).consume(obj)\n"


def repro_script(title: str, *parts: str) -> str:
    """A standalone script: a docstring saying what it shows, then `parts` (each dedented)."""
    doc = textwrap.fill(title, width=96)
    body = "\n".join(textwrap.dedent(part).strip() + "\n" for part in parts if part)
    return f'"""{doc}\n\nRun with: python this_file.py\n"""\n\n{body}'


#: A report-friendly line printing what the consumer read next to what was written.
COMPARE_SOURCE = """
print("interface:", obj.__cuda_array_interface__)
import numpy as np
result = np.asarray(result)
print("read:", result)
print("expected:", values)
same = result.shape == values.shape and result.tobytes() == values.tobytes()
print("bitwise equal:", same)
"""
