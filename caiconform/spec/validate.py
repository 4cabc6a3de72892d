"""The validator: judge one `__cuda_array_interface__` export against the rule catalogue.

`validate` is pure Python and never touches a device: it judges everything a dict alone can
show (the catalogue's `dict_visible` rules), so the reference consumer can run it on every
exchange before it asks the driver about the pointer. It never raises on any input: whatever a
producer returns, and whatever its attribute does when read (any exception, SystemExit and
GeneratorExit included), becomes findings; only the user's Ctrl-C stops it.

One problem, one finding. When an entry is wrong, the checks that need its value are skipped
instead of failing in turn: a shape of floats is one CAI-SHAPE-INT finding, not also a strides
and a zero-size finding. A list where a tuple belongs is reported once and its contents are still
judged, since they carry independent information.
"""

from __future__ import annotations

from math import prod
from typing import Any

from caiconform.spec.findings import Finding, Report, finding
from caiconform.spec.layout import byte_extent
from caiconform.spec.typestr import (
    COMMON_KINDS,
    EXTENDED_SIZES,
    TypeStr,
    _parse_cached,
    alignment,
    descr_error,
    descr_itemsize,
    native_byteorder,
)

__all__ = ["validate", "dict_extent", "KNOWN_VERSIONS", "CURRENT_VERSION", "keys_for_version"]

KNOWN_VERSIONS = (0, 1, 2, 3)
CURRENT_VERSION = 3
ATTR = "__cuda_array_interface__"

_BASE_KEYS = ("shape", "typestr", "data", "version", "strides", "descr")
_KEYS = {
    0: frozenset(_BASE_KEYS),
    1: frozenset((*_BASE_KEYS, "mask")),
    2: frozenset((*_BASE_KEYS, "mask")),
    3: frozenset((*_BASE_KEYS, "mask", "stream")),
}
_ALL_KEYS = _KEYS[3]
_MISSING: Any = object()
_ADDRESS_END = 1 << 64  # pointers and stream handles are below 2**64
_INDEX_MAX = (1 << 63) - 1  # consumers index with signed 64-bit integers
_INDEX_MIN = -_INDEX_MAX
# per entry: a shape of a million floats is one problem, shown a few times
_MAX_ELEMENT_FINDINGS = 8


def keys_for_version(version: int) -> frozenset[str]:
    """The entries a dict of this CAI version may hold."""
    return _KEYS[version]


def validate(target: Any, *, version: int | None = None) -> Report:
    """Judge `target` (an object exposing `__cuda_array_interface__`, or the dict itself).

    `version=None` judges against the dict's own `version` entry (3 when it is unreadable or
    unknown); an explicit `version` judges as that version. Returns a `Report`; raises only
    ValueError for a `version` argument outside 0-3 (a caller's mistake, not the producer's).
    """
    if type(target) is dict:
        try:
            report = _clean(target, version, "dict")
        except BaseException as exc:  # a hostile key or value: judged in full below
            if not producers_failure(exc):
                raise
            report = None
        if report is not None:
            return report
    if version is not None and (type(version) is not int or version not in _KEYS):
        raise ValueError(f"version must be one of 0, 1, 2, 3 or None, got {version!r}")
    return _validate(target, version, fast=type(target) is not dict)


def _validate(target: Any, version: int | None, *, fast: bool = False) -> Report:
    """The full judgement; with `fast`, the dict read from an object first tries the fast
    path (`validate` tries it itself for a dict target)."""
    findings: list[Finding] = []
    judged = CURRENT_VERSION if version is None else version
    try:
        d = _interface_dict(target, findings)
        if d is not None:
            report = _clean_or_none(d, version, target) if fast and type(d) is dict else None
            if report is not None:
                return report
            judged = _judged_version(d, version)
            _check_dict(d, judged, findings)
    except BaseException as exc:  # last resort: a hostile object got past the guards
        if not producers_failure(exc):
            raise
        findings.append(
            finding(
                "CAI-ATTR-DICT",
                "",
                f"a dict whose reading raised {_type_name(exc)}",
                "a plain dict of plain values",
            )
        )
    return Report(_describe(target), judged, findings)


def dict_extent(d: dict) -> tuple[int, int]:
    """Bytes a valid interface dict reaches, relative to its data pointer: (lo, hi).

    `hi` is one past the last byte; `lo` is negative with negative strides; (0, 0) for a
    zero-size array. ValueError when shape, strides or typestr cannot give an extent (run
    `validate` first to learn why).
    """
    shape = d.get("shape")
    strides = d.get("strides")
    typestr = d.get("typestr")
    if type(typestr) is not str:
        raise ValueError("typestr is not a str")
    parsed = _parse_cached(typestr)
    if type(parsed) is str:
        raise ValueError(f"typestr {typestr!r}: {parsed}")
    if not isinstance(shape, (tuple, list)) or not all(
        _int(n) is not None and n >= 0 for n in shape
    ):
        raise ValueError("shape is not a sequence of int >= 0")
    if strides is not None and (
        not isinstance(strides, (tuple, list))
        or len(strides) != len(shape)
        or not all(_int(s) is not None for s in strides)
    ):
        raise ValueError("strides is neither None nor one int per dimension")
    return byte_extent(tuple(shape), None if strides is None else tuple(strides), parsed.itemsize)


# --- the fast path ------------------------------------------------------------------------

_CLEAN_TYPESTRS: dict[str, tuple[int, int] | None] = {}


def _clean_typestr(s: str) -> tuple[int, int] | None:
    """(itemsize, alignment) of a typestr that draws no finding at all, else None. Memoised in
    `_CLEAN_TYPESTRS`, a plain dict the fast path reads directly."""
    ts = _parse_cached(s)
    info = None
    if (
        type(ts) is not str
        and ts.kind in COMMON_KINDS
        and EXTENDED_SIZES.get(ts.kind) != ts.itemsize
        and native_byteorder(ts)
    ):
        info = (ts.itemsize, alignment(ts))
    if len(_CLEAN_TYPESTRS) < 4096:
        _CLEAN_TYPESTRS[s] = info
    return info


def _no_sync(v: int) -> Finding:
    return finding(
        "CAI-V2-NO-SYNC",
        "version",
        f"version {v}",
        "version 3 for stream synchronization (none is promised before it)",
    )


_STRIDES_OMITTED = finding(
    "CAI-PORT-STRIDES-OMITTED-V01",
    "strides",
    "no strides",
    "explicit strides (C-contiguity of None strides is stated from v2)",
)


def _clean_or_none(d: dict, version: int | None, target: Any) -> Report | None:
    """The report on a well-formed dict read from `target` (no findings for v3, information
    for v0-v2), or None when the full judgement is needed. Never raises."""
    try:
        return _clean(d, version, _describe(target))
    except BaseException as exc:  # a hostile key or value: the full judgement says what it is
        if not producers_failure(exc):
            raise
        return None


def _clean(d: dict, version: int | None, target: str) -> Report | None:
    """The report on a well-formed dict (`target` names what it came from), checked inline and
    bailing out (None) at the first doubt. Every well-formed exchange takes this path, so it is
    written for the interpreter: no calls, required entries read by subscript (a missing one
    raises KeyError, which the caller turns into "take the full path"). `_check_dict` is the
    reference; tests hold the two to agreeing."""
    declared = d["version"]
    if type(declared) is not int or declared < 0 or declared > 3:
        return None
    if version is not None and (type(version) is not int or version != declared):
        return None
    if not _KEYS[declared].issuperset(d):
        return None
    typestr = d["typestr"]
    info = _CLEAN_TYPESTRS.get(typestr, _MISSING) if type(typestr) is str else None
    if info is _MISSING:
        info = _clean_typestr(typestr)
    if info is None:
        return None
    itemsize, align = info
    data = d["data"]
    if type(data) is not tuple or len(data) != 2 or data[1] is not False:
        return None
    ptr = data[0]
    if type(ptr) is not int:
        return None
    shape = d["shape"]
    strides = d.get("strides")
    if type(shape) is not tuple:
        return None
    count = 1
    if strides is None:
        for n in shape:
            if type(n) is not int or n < 0:
                return None
            count *= n
        hi = count * itemsize
    else:
        # one pass over shape and strides (no zip: creating one costs more than this loop)
        if type(strides) is not tuple or len(strides) != len(shape):
            return None
        hi = itemsize
        for i, n in enumerate(shape):
            s = strides[i]
            if type(n) is not int or n < 0 or type(s) is not int:
                return None
            count *= n
            if n > 1:
                if s <= 0 or s % itemsize:
                    return None
                hi += (n - 1) * s
            elif s > _INDEX_MAX or s < _INDEX_MIN:
                return None
    if count == 0:
        # zero-size: the pointer is 0, no side overflows, strides are left to the full path
        if ptr != 0 or strides is not None or max(shape) > _INDEX_MAX:
            return None
    elif ptr <= 0 or ptr + hi > _ADDRESS_END or ptr % align or hi > _INDEX_MAX:
        return None
    if "mask" in d and d["mask"] is not None:
        return None
    stream = d.get("stream")
    if stream is not None and (type(stream) is not int or stream <= 0 or stream >= _ADDRESS_END):
        return None
    if "descr" in d:
        descr = d["descr"]
        if type(descr) is not list or len(descr) != 1:
            return None
        field = descr[0]
        if type(field) is not tuple or len(field) != 2 or field[0] != "" or field[1] != typestr:
            return None
    if declared == 3:
        return Report(target, 3, [])
    return Report(target, declared, [*_KNOWN_FINDINGS[declared, strides is None]])


def _known_findings(version: int, strides_omitted: bool) -> tuple[Finding, ...]:
    """The information findings every well-formed dict of `version` draws (findings are
    immutable, so one instance serves every report)."""
    found = []
    if version < 2 and strides_omitted:
        found.append(_STRIDES_OMITTED)
    if version < 3:
        found.append(_no_sync(version))
    return tuple(found)


_KNOWN_FINDINGS = {
    (v, omitted): _known_findings(v, omitted) for v in KNOWN_VERSIONS for omitted in (False, True)
}


# --- reading the attribute -----------------------------------------------------------------


def _interface_dict(target: Any, out: list[Finding]) -> dict | None:
    """The dict to judge, or None after recording why there is none."""
    if type(target) is dict:
        return target
    if not issubclass(type(target), dict):
        try:
            target = getattr(target, ATTR)
        except AttributeError:
            out.append(finding("CAI-ATTR-DICT", "", f"no {ATTR} (AttributeError)", "a dict"))
            return None
        except BaseException as exc:  # sys.exit() in a property is no export either
            if not producers_failure(exc):
                raise
            name = _type_name(exc)
            out.append(
                finding(
                    "CAI-ATTR-RAISES-ATTRIBUTEERROR",
                    "",
                    f"{name} raised",
                    "AttributeError when the object cannot export",
                )
            )
            out.append(finding("CAI-ATTR-DICT", "", f"{name} raised instead of a dict", "a dict"))
            return None
        if type(target) is dict:
            return target
        if not issubclass(type(target), dict):
            out.append(finding("CAI-ATTR-DICT", "", _show(target), "a dict"))
            return None
    # A dict subclass: judge a plain copy of its stored items, so no override runs later.
    return dict(dict.items(target))


def _judged_version(d: dict, version: int | None) -> int:
    if version is not None:
        return version
    declared = _int(d.get("version"))
    return declared if declared in _KEYS else CURRENT_VERSION


# --- the dict ------------------------------------------------------------------------------


def _check_dict(d: dict, v: int, out: list[Finding]) -> None:
    shape = _check_shape(d, out)
    ts, typestr = _check_typestr(d, out)
    ptr = _check_data(d, out)
    _check_version(d, out)
    strides_ok, strides = _check_strides(d, shape, v, out)
    if "descr" in d:
        _check_descr(d["descr"], ts, typestr, out)
    if shape is not None:
        _check_layout(shape, strides if strides_ok else _MISSING, ts, ptr, v, out)
    if "mask" in d:
        _check_mask(d["mask"], shape, v, out)
    if "stream" in d:
        _check_stream(d["stream"], v, out)
    elif v < 3:
        out.append(_no_sync(v))
    _check_keys(d, out)


def _check_keys(d: dict, out: list[Finding]) -> None:
    for key in d:
        t = type(key)
        if (t is str or issubclass(t, str)) and str.__str__(key) in _ALL_KEYS:
            continue
        out.append(
            finding(
                "CAI-KEYS-UNKNOWN",
                _show(key),
                f"entry {_show(key)}",
                "only shape, typestr, data, version, strides, descr, mask, stream",
            )
        )


def _check_shape(d: dict, out: list[Finding]) -> tuple[int, ...] | None:
    """The shape as a tuple of int, or None when it is missing or unusable."""
    shape = d.get("shape", _MISSING)
    if type(shape) is tuple:
        for n in shape:
            if type(n) is not int or n < 0:
                break
        else:
            return shape
    if shape is _MISSING:
        out.append(finding("CAI-SHAPE-REQUIRED", "shape", "no 'shape' entry", "a tuple of int"))
        return None
    items = _sequence(shape, "CAI-SHAPE-TUPLE", "shape", out)
    if items is None:
        return None
    result: list[int] = []
    bad = 0
    for i, n in enumerate(items):
        value = _int(n)
        if value is not None and value >= 0:
            result.append(value)
            continue
        bad += 1
        if bad <= _MAX_ELEMENT_FINDINGS:
            if value is None:
                out.append(finding("CAI-SHAPE-INT", f"shape[{i}]", _show(n), "an int"))
            else:
                out.append(
                    finding("CAI-SHAPE-NONNEGATIVE", f"shape[{i}]", _show(value), "an int >= 0")
                )
    return None if bad else tuple(result)


def _check_typestr(d: dict, out: list[Finding]) -> tuple[TypeStr | None, str | None]:
    raw = d.get("typestr", _MISSING)
    if type(raw) is str:
        s = raw
    elif raw is _MISSING:
        out.append(finding("CAI-TYPESTR-REQUIRED", "typestr", "no 'typestr' entry", "a typestr"))
        return None, None
    elif issubclass(type(raw), str):
        s = str.__str__(raw)
    else:
        out.append(finding("CAI-TYPESTR-STR", "typestr", _show(raw), "a str"))
        return None, None
    ts = _parse_cached(s)
    if type(ts) is str:
        out.append(finding("CAI-TYPESTR-GRAMMAR", "typestr", _show(s), f"a typestr ({ts})"))
        return None, None
    if ts.kind not in COMMON_KINDS:
        out.append(
            finding(
                "CAI-PORT-TYPESTR-KIND",
                "typestr",
                f"kind {ts.kind!r} in {s!r}",
                f"one of {', '.join(COMMON_KINDS)}",
            )
        )
    elif EXTENDED_SIZES.get(ts.kind) == ts.itemsize:
        out.append(
            finding(
                "CAI-PORT-TYPESTR-KIND",
                "typestr",
                f"extended precision {s!r} ({ts.itemsize} bytes)",
                f"a {ts.kind} size GPU consumers hold (not {ts.itemsize} bytes)",
            )
        )
    if not native_byteorder(ts):
        out.append(
            finding(
                "CAI-PORT-BYTEORDER",
                "typestr",
                f"byte order {ts.byteorder!r} in {s!r}",
                "'<' (CUDA devices are little-endian)",
            )
        )
    return ts, s


def _check_data(d: dict, out: list[Finding]) -> int | None:
    """The data pointer when it is a usable address, else None."""
    data = d.get("data", _MISSING)
    if type(data) is tuple and len(data) == 2:
        ptr, readonly = data
    elif data is _MISSING:
        out.append(finding("CAI-DATA-REQUIRED", "data", "no 'data' entry", "(pointer, read-only)"))
        return None
    else:
        items = _sequence(data, "CAI-DATA-TUPLE", "data", out)
        if items is None:
            return None
        if len(items) != 2:
            if type(data) is not list:  # a list was reported already; one finding per problem
                out.append(
                    finding(
                        "CAI-DATA-TUPLE",
                        "data",
                        f"a tuple of {len(items)} elements",
                        "a 2-tuple (pointer, read-only)",
                    )
                )
            return None
        ptr, readonly = items
    if type(readonly) is not bool:
        out.append(finding("CAI-DATA-READONLY-BOOL", "data[1]", _show(readonly), "a bool"))
    elif readonly:
        out.append(
            finding(
                "CAI-PORT-READONLY",
                "data[1]",
                "True",
                "False (several consumers refuse read-only data or write to it)",
            )
        )
    value = _int(ptr)
    if value is None:
        out.append(finding("CAI-DATA-POINTER-INT", "data[0]", _show(ptr), "an int"))
        return None
    if value < 0 or value >= _ADDRESS_END:
        out.append(
            finding("CAI-DATA-POINTER-RANGE", "data[0]", _show(value), "0 <= pointer < 2**64")
        )
        return None
    return value


def _check_version(d: dict, out: list[Finding]) -> None:
    raw = d.get("version", _MISSING)
    if type(raw) is int and 0 <= raw <= 3:
        return
    if raw is _MISSING:
        out.append(finding("CAI-VERSION-REQUIRED", "version", "no 'version' entry", "an int"))
        return
    value = _int(raw)
    if value is None:
        out.append(finding("CAI-VERSION-INT", "version", _show(raw), "an int"))
    elif value not in _KEYS:
        out.append(finding("CAI-VERSION-KNOWN", "version", _show(value), "0, 1, 2 or 3"))


def _check_strides(
    d: dict, shape: tuple[int, ...] | None, v: int, out: list[Finding]
) -> tuple[bool, tuple[int, ...] | None]:
    """(usable, strides): usable is False when strides is present but cannot be used."""
    raw = d.get("strides")
    if raw is None:
        if v < 2:
            out.append(_STRIDES_OMITTED)
        return True, None
    if type(raw) is tuple:
        for s in raw:
            if type(s) is not int:
                break
        else:
            if shape is None or len(raw) == len(shape):
                return True, raw
    items = _sequence(raw, "CAI-STRIDES-TYPE", "strides", out)
    if items is None:
        return False, None
    result: list[int] = []
    bad = 0
    for i, s in enumerate(items):
        value = _int(s)
        if value is None:
            bad += 1
            if bad <= _MAX_ELEMENT_FINDINGS:
                out.append(finding("CAI-STRIDES-INT", f"strides[{i}]", _show(s), "an int"))
        else:
            result.append(value)
    if bad:
        return False, None
    if shape is not None and len(result) != len(shape):
        out.append(
            finding(
                "CAI-STRIDES-NDIM",
                "strides",
                f"{len(result)} strides",
                f"{len(shape)}, one per dimension of shape {_show(shape)}",
            )
        )
        return False, None
    return True, tuple(result)


def _check_layout(
    shape: tuple[int, ...],
    strides: Any,
    ts: TypeStr | None,
    ptr: int | None,
    v: int,
    out: list[Finding],
) -> None:
    """Pointer against size, and what consumers make of the strides (portability)."""
    count = prod(shape)
    overflow = count > _INDEX_MAX or any(n > _INDEX_MAX for n in shape)
    if ptr is not None:
        if count == 0 and ptr != 0 and v >= 2:
            out.append(
                finding(
                    "CAI-DATA-ZERO-SIZE-NULL",
                    "data[0]",
                    f"{ptr:#x} for shape {_show(shape)}",
                    "0 for a zero-size array",
                )
            )
        elif count and ptr == 0:
            out.append(
                finding(
                    "CAI-DATA-NONZERO-SIZE-NONNULL",
                    "data[0]",
                    f"0 for shape {_show(shape)}",
                    "a nonzero pointer",
                )
            )
    if ts is not None and strides is not _MISSING and count:
        itemsize = ts.itemsize
        if strides is not None:
            _check_strides_portability(shape, strides, itemsize, out)
            overflow = overflow or any(abs(s) > _INDEX_MAX for s in strides)
        lo, hi = byte_extent(shape, strides, itemsize)
        overflow = overflow or hi - lo > _INDEX_MAX
        if ptr and (ptr + lo < 0 or ptr + hi > _ADDRESS_END):
            out.append(
                finding(
                    "CAI-DATA-POINTER-RANGE",
                    "data[0]",
                    f"{_address(ptr)}, whose bytes reach {_address(ptr + lo)} to "
                    f"{_address(ptr + hi)}",
                    "every byte the shape, strides and typestr reach below 2**64 (and >= 0)",
                )
            )
        if ptr and ptr % alignment(ts):
            out.append(
                finding(
                    "CAI-PORT-ALIGNMENT",
                    "data[0]",
                    f"{ptr:#x}",
                    f"a multiple of {alignment(ts)} for {ts.kind}{ts.itemsize} items",
                )
            )
    if overflow:
        out.append(
            finding(
                "CAI-PORT-EXTENT-OVERFLOW",
                "shape",
                f"shape {_show(shape)}",
                "element count and byte extent below 2**63",
            )
        )


def _check_strides_portability(
    shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int, out: list[Finding]
) -> None:
    odd = zero = negative = -1
    for i, (n, s) in enumerate(zip(shape, strides, strict=True)):
        if n > 1:
            if s % itemsize and odd < 0:
                odd = i
            if s == 0 and zero < 0:
                zero = i
            elif s < 0 and negative < 0:
                negative = i
    if odd >= 0:
        out.append(
            finding(
                "CAI-PORT-STRIDES-ITEMSIZE",
                f"strides[{odd}]",
                _show(strides[odd]),
                f"a multiple of the item size {itemsize}",
            )
        )
    if zero >= 0:
        out.append(
            finding(
                "CAI-PORT-OVERLAP",
                f"strides[{zero}]",
                f"0 over {shape[zero]} elements",
                "a nonzero stride (distinct elements)",
            )
        )
    if negative >= 0:
        out.append(
            finding(
                "CAI-PORT-NEGATIVE-STRIDES",
                f"strides[{negative}]",
                _show(strides[negative]),
                "a positive stride",
            )
        )


def _check_descr(descr: Any, ts: TypeStr | None, typestr: str | None, out: list[Finding]) -> None:
    if (
        type(descr) is list
        and len(descr) == 1
        and type(field := descr[0]) is tuple
        and len(field) == 2
        and type(field[0]) is str
        and type(field[1]) is str
        and field[0] == ""
        and field[1] == typestr
    ):
        return  # the default descr, [('', typestr)]
    error = descr_error(descr)
    if error is not None:
        out.append(finding("CAI-DESCR-GRAMMAR", "descr", _show(descr), f"a descr ({error})"))
        return
    if ts is None:
        return
    size = descr_itemsize(descr)
    if size != ts.itemsize:
        out.append(
            finding(
                "CAI-DESCR-CONSISTENT",
                "descr",
                f"{size} bytes per item",
                f"{ts.itemsize}, the item size of typestr {typestr!r}",
            )
        )
        return
    field = descr[0]
    if len(descr) == 1 and len(field) == 2 and field[0] == "" and type(field[1]) is str:
        fmt = _parse_cached(field[1])
        if ts.kind != "V" and not _same_item(fmt, ts):
            out.append(
                finding(
                    "CAI-DESCR-CONSISTENT",
                    "descr[0][1]",
                    repr(field[1]),
                    f"the format of typestr {typestr!r}",
                )
            )


def _same_item(a: TypeStr, b: TypeStr) -> bool:
    """Same item, byte order compared only where it matters."""
    if (a.kind, a.itemsize, a.unit) != (b.kind, b.itemsize, b.unit):
        return False
    return a.byteorder == b.byteorder or (native_byteorder(a) and native_byteorder(b))


def _check_mask(mask: Any, shape: tuple[int, ...] | None, v: int, out: list[Finding]) -> None:
    if v == 0:
        out.append(finding("CAI-V0-NO-MASK", "mask", "a 'mask' entry", "no mask in version 0"))
        return
    if mask is None:
        return
    out.append(
        finding(
            "CAI-PORT-MASK",
            "mask",
            f"a mask ({_type_name(mask)})",
            "None (most consumers do not support masked arrays)",
        )
    )
    if type(mask) is dict or issubclass(type(mask), dict):
        out.append(
            finding(
                "CAI-MASK-TYPE",
                "mask",
                "a dict",
                f"None or an object exposing {ATTR} (not the dict itself)",
            )
        )
        return
    try:
        inner = getattr(mask, ATTR)
    except BaseException as exc:  # sys.exit() in a property is the producer's failure
        if not producers_failure(exc):
            raise
        out.append(
            finding(
                "CAI-MASK-TYPE",
                "mask",
                f"{_type_name(mask)} whose {ATTR} raised {_type_name(exc)}",
                f"None or an object exposing {ATTR}",
            )
        )
        return
    if not issubclass(type(inner), dict):
        out.append(
            finding(
                "CAI-MASK-TYPE",
                "mask",
                f"{_type_name(mask)} whose {ATTR} is {_show(inner)}",
                f"None or an object exposing {ATTR} (a dict)",
            )
        )
        return
    if shape is None:
        return
    mask_shape = _plain_shape(dict.get(inner, "shape"))
    if mask_shape is None:
        out.append(
            finding(
                "CAI-MASK-SHAPE",
                "mask.shape",
                _show(dict.get(inner, "shape")),
                "a tuple of int >= 0",
            )
        )
    elif not _broadcastable(mask_shape, shape):
        out.append(
            finding(
                "CAI-MASK-SHAPE",
                "mask.shape",
                _show(mask_shape),
                f"a shape broadcastable to {_show(shape)}",
            )
        )
    elif mask_shape != shape:
        out.append(
            finding(
                "CAI-PORT-MASK-SHAPE-EXACT",
                "mask.shape",
                _show(mask_shape),
                f"the array's own shape {_show(shape)}",
            )
        )


def _broadcastable(src: tuple[int, ...], dst: tuple[int, ...]) -> bool:
    """numpy's rule for broadcasting `src` to `dst`: no more dims, each trailing dim equal or 1."""
    if len(src) > len(dst):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(src), reversed(dst), strict=False))


def _check_stream(stream: Any, v: int, out: list[Finding]) -> None:
    if v < 3:
        out.append(
            finding(
                "CAI-V2-STREAM-UNDEFINED",
                "stream",
                f"a 'stream' entry in version {v}",
                "no stream before version 3 (set version 3 to export one)",
            )
        )
        return
    if stream is None:
        return
    value = _int(stream)
    if value is None:
        out.append(finding("CAI-STREAM-TYPE", "stream", _show(stream), "None or an int"))
    elif value == 0:
        out.append(finding("CAI-STREAM-ZERO-FORBIDDEN", "stream", "0", "None, 1, 2 or a handle"))
    elif value < 0 or value >= _ADDRESS_END:
        out.append(
            finding(
                "CAI-STREAM-HANDLE",
                "stream",
                _show(value),
                "1, 2 or a cudaStream_t handle 0 < stream < 2**64",
            )
        )


# --- small helpers -------------------------------------------------------------------------


def _int(x: Any) -> int | None:
    """`x` as a plain int when it is a Python int (bool is not), else None. int subclasses are
    read through int's own slot, so an override cannot run."""
    t = type(x)
    if t is int:
        return x
    if t is not bool and issubclass(t, int):
        return int.__index__(x)
    return None


def _sequence(x: Any, rule: str, path: str, out: list[Finding]) -> list | tuple | None:
    """The items of a tuple entry. A list is reported (CAI-*-TUPLE) and its items still
    returned; anything else is reported and gives None. Subclasses are read through the base
    type's own slicing, so an override cannot run."""
    t = type(x)
    if t is tuple:
        return x
    if issubclass(t, tuple):
        return tuple.__getitem__(x, slice(None))
    if issubclass(t, list):
        out.append(finding(rule, path, f"a list {_show(x)}", "a tuple"))
        return list.__getitem__(x, slice(None))
    out.append(finding(rule, path, _show(x), "a tuple"))
    return None


def _plain_shape(x: Any) -> tuple[int, ...] | None:
    if not issubclass(type(x), (tuple, list)):
        return None
    items = (
        tuple.__getitem__(x, slice(None))
        if issubclass(type(x), tuple)
        else list(list.__getitem__(x, slice(None)))
    )
    values = [_int(n) for n in items]
    if any(n is None or n < 0 for n in values):
        return None
    return tuple(values)


def _address(x: int) -> str:
    """An address, or a byte an extent reaches, in hex; one past 128 bits by its size (a finding
    quotes no number thousands of digits long)."""
    if -(1 << 128) < x < 1 << 128:
        return f"{x:#x}"
    return f"{'a negative' if x < 0 else 'an'} int of {x.bit_length()} bits"


def producers_failure(exc: BaseException) -> bool:
    """Whether `exc`, raised while the producer's object was read, is the producer's failure
    (a finding): every exception is, GeneratorExit, SystemExit and KeyboardInterrupt included,
    except a KeyboardInterrupt that a signal raised (the user's Ctrl-C still stops the caller).
    The producer's own KeyboardInterrupt comes from a `raise` statement, the innermost frame
    of its traceback stopped at RAISE_VARARGS; a signal's arrives at any other instruction
    (a call, a jump back)."""
    if not isinstance(exc, KeyboardInterrupt):
        return True
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    from opcode import opmap

    code = tb.tb_frame.f_code.co_code
    return 0 <= tb.tb_lasti < len(code) and code[tb.tb_lasti] == opmap["RAISE_VARARGS"]


def _type_name(x: Any) -> str:
    return type(x).__name__


def _describe(target: Any) -> str:
    """What was judged, by type only: a hostile object's repr is never called."""
    t = type(target)
    if t is dict:
        return "dict"
    try:
        return f"{t.__module__}.{t.__qualname__}"
    except Exception:
        return "an object"


def _show(x: Any, depth: int = 0) -> str:
    """A short, safe rendering of a seen value: plain values by repr, others by type name."""
    t = type(x)
    if x is None or t is bool or t is float:
        return repr(x)
    if t is int:
        return repr(x) if x.bit_length() <= 128 else f"an int of {x.bit_length()} bits"
    if t is str:
        text = repr(x)
        return text if len(text) <= 40 else text[:36] + "...'"
    if (t is tuple or t is list) and depth < 2:
        inner = ", ".join(_show(e, depth + 1) for e in x[:6])
        if len(x) > 6:
            inner += ", ..."
        elif t is tuple and len(x) == 1:
            inner += ","
        return f"({inner})" if t is tuple else f"[{inner}]"
    return f"a {t.__name__}"
