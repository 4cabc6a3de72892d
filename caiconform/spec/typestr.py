"""The numpy array-interface ``typestr`` and ``descr`` grammars, in pure Python.

The CAI says typestr "has the same definition as typestr in the numpy array interface": a
byte-order character, a kind code and an item size. This parser accepts what that definition
allows and numpy can read, and says why it refuses the rest. It never imports numpy, because the
validator runs on every exchange and the CLI must start fast.

Decisions where the array-interface text and numpy differ (each checked against numpy 2.x):

* Byte order is one of ``<`` (little-endian), ``>`` (big-endian) and ``|`` (not relevant).
  ``=`` (native) is numpy's *dtype* spelling, never part of an array-interface typestr (numpy
  itself exports ``<`` or ``>``); it is refused, since the producer's "native" need not be the
  consumer's.
* The number after ``U`` counts UCS-4 characters, as in numpy's own exports (``'<U3'`` is 12
  bytes), so its item size is 4 times the number.
* The number after ``t`` (bit field) counts bits, as the array-interface text says; numpy cannot
  read bit fields at all. Its item size is the bytes those bits need.
* ``O`` may omit its size (numpy exports ``'|O'``); the size of an object pointer is 8.
* ``m``/``M`` may carry a unit in brackets, with an optional multiple: ``'<M8[ns]'``,
  ``'<m8[25s]'``; without one the unit is generic. No other kind takes a unit.
* Sizes: ``b`` 1; ``i``/``u`` 1, 2, 4, 8; ``f`` 2, 4, 8, 16; ``c`` 8, 16, 32; ``m``/``M``/``O`` 8;
  ``S``/``U``/``V``/``t`` any positive number. Zero-sized flexible types (``'|S0'``, which numpy
  reads as "size to be decided") describe no element and are refused.

Every CUDA device is little-endian, so "native" byte order here means the device's: ``<``, or
``|`` where byte order cannot matter (see `native_byteorder`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, NamedTuple

__all__ = [
    "TypeStr",
    "parse_typestr",
    "typestr_error",
    "native_byteorder",
    "alignment",
    "descr_itemsize",
    "descr_error",
    "KINDS",
    "BYTEORDERS",
    "DATETIME_UNITS",
    "FIXED_SIZES",
    "COMMON_KINDS",
    "EXTENDED_SIZES",
]

BYTEORDERS = "<>|"
KINDS = "tbiufcmMOSUV"
#: Kinds GPU consumers commonly accept; the others draw CAI-PORT-TYPESTR-KIND.
COMMON_KINDS = "biufc"
#: Extended-precision sizes of common kinds (numpy's long double: `<f16`, `<c32`) that GPU
#: consumers refuse as they refuse rare kinds (CuPy: "Unsupported dtype float128"); they draw
#: CAI-PORT-TYPESTR-KIND too.
EXTENDED_SIZES = {"f": 16, "c": 32}
#: Valid item sizes of the fixed-size kinds (S, U, V and t take any positive number).
FIXED_SIZES: dict[str, tuple[int, ...]] = {
    "b": (1,),
    "i": (1, 2, 4, 8),
    "u": (1, 2, 4, 8),
    "f": (2, 4, 8, 16),
    "c": (8, 16, 32),
    "m": (8,),
    "M": (8,),
    "O": (8,),
}
DATETIME_UNITS = ("Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as", "generic")
_MAX_LEN = 64
_MAX_DESCR_DEPTH = 32


class TypeStr(NamedTuple):
    """A parsed typestr. `itemsize` is in bytes; `unit` is the m/M unit ('' when absent)."""

    byteorder: str
    kind: str
    itemsize: int
    unit: str = ""


def _parse(s: str) -> TypeStr:
    if len(s) > _MAX_LEN:
        raise ValueError(f"typestr longer than {_MAX_LEN} characters")
    if len(s) < 2:
        raise ValueError("a typestr is a byte-order character, a kind code and an item size")
    order, kind, rest = s[0], s[1], s[2:]
    if order == "=":
        raise ValueError(
            "byte order '=' is numpy dtype syntax, not array-interface; use '<' or '>'"
        )
    if order not in BYTEORDERS:
        raise ValueError(f"byte order {order!r} is not one of '<', '>', '|'")
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} is not one of {' '.join(KINDS)}")
    digits, bracket, unit = rest.partition("[")
    if bracket:
        if kind not in "mM":
            raise ValueError(f"only kinds m and M take a [unit]; kind {kind!r} does not")
        if not unit.endswith("]"):
            raise ValueError("unterminated [unit]")
        unit = _check_unit(unit[:-1])
    if not digits:
        if kind != "O":
            raise ValueError(f"kind {kind!r} needs an item size")
        return TypeStr(order, kind, 8, unit)
    if not (digits.isascii() and digits.isdigit()):
        raise ValueError(f"item size {digits!r} is not a decimal number")
    size = int(digits)
    if kind in FIXED_SIZES:
        if size not in FIXED_SIZES[kind]:
            allowed = ", ".join(map(str, FIXED_SIZES[kind]))
            raise ValueError(f"item size {size} is not valid for kind {kind!r} (valid: {allowed})")
        return TypeStr(order, kind, size, unit)
    if size == 0:
        raise ValueError(f"kind {kind!r} needs a positive size, got 0")
    if kind == "U":
        return TypeStr(order, kind, 4 * size, unit)
    if kind == "t":
        return TypeStr(order, kind, (size + 7) // 8, unit)
    return TypeStr(order, kind, size, unit)


def _check_unit(unit: str) -> str:
    """'25s' -> '25s' if the multiple is positive and the unit is a numpy datetime unit."""
    i = 0
    while i < len(unit) and unit[i].isascii() and unit[i].isdigit():
        i += 1
    count, name = unit[:i], unit[i:]
    if name not in DATETIME_UNITS:
        raise ValueError(f"datetime unit {name!r} is not one of {', '.join(DATETIME_UNITS)}")
    if count and int(count) == 0:
        raise ValueError("a datetime unit multiple must be positive")
    return unit


@lru_cache(maxsize=1024)
def _parse_cached(s: str) -> TypeStr | str:
    """The parse of `s`, or the reason it fails (cached too: a bad producer repeats itself)."""
    try:
        return _parse(s)
    except ValueError as exc:
        return str(exc)


def parse_typestr(s: str) -> TypeStr:
    """Parse an array-interface typestr; ValueError says why `s` is not one."""
    if type(s) is not str:
        raise ValueError(f"a typestr is a str, got {type(s).__name__}")
    result = _parse_cached(s)
    if type(result) is str:
        raise ValueError(result)
    return result


def typestr_error(s: str) -> str | None:
    """None when `s` (a str) is a valid typestr, else the reason. Cheaper than catching."""
    result = _parse_cached(s)
    return result if type(result) is str else None


def native_byteorder(ts: TypeStr) -> bool:
    """True when a CUDA device (always little-endian) reads `ts` without swapping bytes.

    '<' is native. '|' is native where byte order cannot matter: one-byte items and the kinds
    without multi-byte numbers (b, S, V, O, t). A multi-byte number marked '|' is ambiguous
    (numpy reads it as the host's order), so it is not native.
    """
    return ts.byteorder == "<" or ts.itemsize == 1 or ts.kind in "bSVOt"


def alignment(ts: TypeStr) -> int:
    """The natural alignment of one item in bytes: the item size for numbers, a component's
    size for complex numbers, 4 for UCS-4 strings, 8 for object pointers, 1 for bytes/void."""
    if ts.kind in "biufmM":
        return ts.itemsize
    if ts.kind == "c":
        return ts.itemsize // 2
    if ts.kind == "U":
        return 4
    if ts.kind == "O":
        return 8
    return 1


def descr_itemsize(descr: Any) -> int:
    """Total item size in bytes of an array-interface ``descr``; ValueError says what is wrong.

    A descr is a list of fields ``(name, format)`` or ``(name, format, shape)``: `name` a str
    (``''`` for padding) or a ``(title, name)`` pair of str, `format` a typestr or a nested descr
    list, `shape` a tuple of non-negative ints repeating the field. Named fields are unique.
    """
    return _descr_itemsize(descr, "descr", 0)


def descr_error(descr: Any) -> str | None:
    """None when `descr` is valid, else the reason (with the path of the bad part)."""
    try:
        _descr_itemsize(descr, "descr", 0)
    except ValueError as exc:
        return str(exc)
    return None


def _descr_itemsize(descr: Any, path: str, depth: int) -> int:
    if depth > _MAX_DESCR_DEPTH:
        raise ValueError(f"{path}: nested deeper than {_MAX_DESCR_DEPTH} levels")
    if type(descr) is not list:
        raise ValueError(f"{path}: a descr is a list of field tuples, got {type(descr).__name__}")
    if not descr:
        raise ValueError(f"{path}: a descr has at least one field")
    total = 0
    names: set[str] = set()
    for i, fld in enumerate(descr):
        where = f"{path}[{i}]"
        if not issubclass(type(fld), tuple) or len(fld) not in (2, 3):
            raise ValueError(f"{where}: a field is a (name, format[, shape]) tuple")
        name = _field_name(fld[0], where)
        if name:
            if name in names:
                raise ValueError(f"{where}: field name {name!r} repeats")
            names.add(name)
        fmt = fld[1]
        if type(fmt) is str:
            parsed = _parse_cached(fmt)
            if type(parsed) is str:
                raise ValueError(f"{where}: format {fmt!r}: {parsed}")
            size = parsed.itemsize
        elif type(fmt) is list:
            size = _descr_itemsize(fmt, f"{where}[1]", depth + 1)
        else:
            raise ValueError(f"{where}: a format is a typestr or a nested descr list")
        if len(fld) == 3:
            size *= _field_count(fld[2], where)
        total += size
    return total


def _field_name(name: Any, where: str) -> str:
    if type(name) is str:
        return name
    if type(name) is tuple and len(name) == 2 and type(name[0]) is str and type(name[1]) is str:
        return name[1]
    raise ValueError(f"{where}: a field name is a str or a (title, name) tuple of str")


def _field_count(shape: Any, where: str) -> int:
    if type(shape) is not tuple:
        raise ValueError(f"{where}: a field shape is a tuple of int")
    count = 1
    for n in shape:
        if type(n) is not int or n < 0:
            raise ValueError(f"{where}: a field shape holds non-negative ints")
        count *= n
    return count
