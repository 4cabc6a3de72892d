"""Element types beyond numpy's typestr codes, and the dtype classes coverage is counted in.

The CAI's `typestr` "has the same definition as typestr in the numpy array interface" and
`descr` "follows the same specification" (cai-v3#python-interface-specification). That grammar
has no code for bfloat16 or the float8 formats: the only spelling an exporter has for them is
raw bytes of the same size, kind `V` (`<V2` is what ml_dtypes' numpy dtype reports and what
PyTorch exports for bfloat16). Such an export is legal and keeps every byte, but the element
type is lost: a consumer sees opaque items [CAI-PORT-TYPESTR-OPAQUE]. A producer holding such
an array that refuses to export it at all leaves its users no CAI path
[CAI-PORT-OPAQUE-EXPORT]. Both are PORTABILITY findings: the text requires neither.

Inside caiconform such a type travels by its *name* wherever a typestr goes ("bfloat16" in an
example's params); `numpy_dtype(name)` gives the host container (`V2` carrying the name in its
metadata, so adapters can tell bfloat16 from float16-sized raw bytes) and `storage_typestr`
the conforming export. "structured" names one fixed structured dtype exported with `descr`.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "OPAQUE",
    "STRUCTURED",
    "STRUCTURED_DESCR",
    "is_named",
    "numpy_dtype",
    "storage_typestr",
    "descr_of",
    "descr_dtype",
    "padding_mask",
    "dtype_name",
    "dtype_class",
    "byte_order",
]

#: element types with no numpy typestr code -> item size in bytes
OPAQUE = {"bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1}
#: the name of the structured dtype the coverage floor exchanges
STRUCTURED = "structured"
#: its numpy descr: mixed sizes and byte orders, one padding field, 16 bytes
STRUCTURED_DESCR = [("a", "<f4"), ("b", "<i2"), ("c", "|u1"), ("", "|V1"), ("d", "<f8")]


def is_named(typestr: str) -> bool:
    """True for a caiconform dtype name (an opaque type or "structured"), not a typestr."""
    return typestr in OPAQUE or typestr == STRUCTURED


def numpy_dtype(typestr: str) -> np.dtype:
    """The numpy dtype holding elements of `typestr` (a typestr or a caiconform name) on the
    host. Opaque types are `V<n>` with `{"caiconform": name}` metadata."""
    if typestr in OPAQUE:
        return np.dtype(f"V{OPAQUE[typestr]}", metadata={"caiconform": typestr})
    if typestr == STRUCTURED:
        return np.dtype(STRUCTURED_DESCR)
    return np.dtype(typestr)


def storage_typestr(typestr: str) -> str:
    """The typestr a conforming producer exports for `typestr`: itself for a real typestr,
    `<V<n>` for a multi-byte opaque type (the spelling ml_dtypes and PyTorch use; `|V1` for a
    one-byte one, whose byte order cannot matter), `|V<n>` for the structured dtype (its fields go in `descr`)."""
    if typestr in OPAQUE:
        size = OPAQUE[typestr]
        return f"<V{size}" if size > 1 else f"|V{size}"
    if typestr == STRUCTURED:
        return f"|V{np.dtype(STRUCTURED_DESCR).itemsize}"
    return typestr


def padding_mask(dtype: np.dtype) -> np.ndarray | None:
    """For a structured dtype, a bool array over its item's bytes, False where a padding field
    (named "" in the descr, which numpy renames f<N>) lies: padding is not data, so a consumer
    need not keep it. None for other dtypes."""
    if dtype.names is None or dtype.itemsize != np.dtype(STRUCTURED_DESCR).itemsize:
        return None
    keep = np.ones(dtype.itemsize, dtype=bool)
    offset = 0
    for name, fmt in STRUCTURED_DESCR:
        size = np.dtype(fmt).itemsize
        if not name:
            keep[offset : offset + size] = False
        offset += size
    return keep


def descr_of(typestr: str) -> list[tuple[str, str]] | None:
    """The `descr` a conforming export carries for `typestr` (None: not needed)."""
    return list(STRUCTURED_DESCR) if typestr == STRUCTURED else None


def descr_dtype(descr: object) -> np.dtype | None:
    """The numpy dtype of a `descr` list naming at least one field (numpy names unnamed ones
    f0...), or None: no such list, or one numpy cannot build. Object fields are kept; whether
    they and the item size are acceptable is the caller's to judge."""
    if not isinstance(descr, list) or not any(
        isinstance(field, (tuple, list)) and field and field[0] for field in descr
    ):
        return None
    try:
        return np.dtype([tuple(field) for field in descr])
    except (TypeError, ValueError):
        return None


def dtype_name(dtype: np.dtype) -> str | None:
    """The caiconform name an adapter's dtype stands for ("bfloat16", "structured"), or None
    for an ordinary numpy dtype."""
    if dtype.metadata and "caiconform" in dtype.metadata:
        return str(dtype.metadata["caiconform"])
    if dtype.names is not None:
        return STRUCTURED
    return None


def dtype_class(typestr: str) -> str:
    """The coverage class of `typestr`: bool, int, uint, float16/32/64, complex, datetime,
    timedelta, bfloat16, float8_e4m3fn, float8_e5m2, structured, bytes, other."""
    if is_named(typestr):
        return typestr
    try:
        dtype = np.dtype(typestr)
    except TypeError:
        return "other"
    kind = dtype.kind
    if kind == "f":
        return f"float{dtype.itemsize * 8}"
    return {
        "b": "bool",
        "i": "int",
        "u": "uint",
        "c": "complex",
        "M": "datetime",
        "m": "timedelta",
        "V": "bytes",
    }.get(kind, "other")


def byte_order(typestr: str) -> str:
    """The byte-order character a typestr spells ("<", ">" or "|"); "|" for names whose order
    is fixed by their storage ("|" for one-byte types, "<" for bfloat16)."""
    storage = storage_typestr(typestr)
    return storage[0] if storage[:1] in ("<", ">", "|") else "|"
