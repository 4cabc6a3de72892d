"""DLPack's element types as caiconform names them: DLDataTypeCode and bits <-> the CAI typestr
kind letter or caiconform's named type, one table read both ways.

A producer exporting an array asks kind -> code (`KIND_CODES`, `NAMED_CODES`); a consumer
reading a capsule asks code -> kind (`CODE_KINDS`, `CODE_NAMED`, `typestr_of`). Both are the
same table, so an export and the reading of it cannot disagree about a type. DLPack types are
native-endian (dlpack.h `DLDataType`): a typestr made here is in this machine's byte order.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["KIND_CODES", "NAMED_CODES", "CODE_KINDS", "CODE_NAMED", "typestr_of", "ORDER"]

#: the CAI typestr kind letter -> DLDataTypeCode (kDLInt, kDLUInt, kDLFloat, kDLComplex, kDLBool)
KIND_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
#: caiconform's named element types (`caiconform.spec.dtypes.OPAQUE`) -> (code, bits)
NAMED_CODES = {"bfloat16": (4, 16), "float8_e4m3fn": (10, 8), "float8_e5m2": (12, 8)}
#: the same tables read the other way
CODE_KINDS = {code: kind for kind, code in KIND_CODES.items()}
CODE_NAMED = {code_bits: name for name, code_bits in NAMED_CODES.items()}
#: this machine's byte order as a typestr's first character
ORDER = "<" if sys.byteorder == "little" else ">"


def typestr_of(capsule: Any) -> str:
    """The CAI typestr (or caiconform dtype name, `caiconform.spec.dtypes`) a capsule's element
    type (its `code`, `bits`, `lanes`) corresponds to, in this machine's byte order; "?" when
    none does."""
    if capsule.lanes != 1:
        return "?"
    named = CODE_NAMED.get((capsule.code, capsule.bits))
    if named is not None:
        return named
    kind = CODE_KINDS.get(capsule.code)
    if kind is None or capsule.bits % 8:
        return "?"
    size = capsule.bits // 8
    return f"|{kind}{size}" if size == 1 or kind == "b" else f"{ORDER}{kind}{size}"
