"""Read a producer's own DLPack capsule, with ctypes and nothing else in between.

The agreement family compares an object's `__cuda_array_interface__` with its `__dlpack__`
export. Reading DLPack through another library (cuda.core's `StridedMemoryView.from_dlpack`)
puts a second implementation between the producer and the verdict: when the two disagree, the
report cannot say whose bug it is. This module calls `obj.__dlpack__` and parses the capsule
itself, following `dlpack.h` (v1.1): `DLManagedTensorVersioned` in a "dltensor_versioned"
capsule, or the legacy `DLManagedTensor` in a "dltensor" one; `DLTensor` = data, device
(type, id), ndim, dtype (code, bits, lanes), shape and strides as int64 *elements* (strides may
be NULL: compact row-major), byte_offset. The capsule is read, not consumed: its name stays, so
its own destructor calls the producer's deleter when it is collected.

Type codes (dlpack.h `DLDataTypeCode`): 0 int, 1 uint, 2 float, 3 opaque handle, 4 bfloat,
5 complex, 6 bool, 10 float8_e4m3fn, 12 float8_e5m2 (others are named by number).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DLPackError",
    "Capsule",
    "read_capsule",
    "export",
    "typestr_of",
    "READ_ONLY",
    "IS_COPIED",
]

READ_ONLY = 1 << 0  # DLPACK_FLAG_BITMASK_READ_ONLY
IS_COPIED = 1 << 1  # DLPACK_FLAG_BITMASK_IS_COPIED
_CODES = {
    0: "int",
    1: "uint",
    2: "float",
    3: "opaque",
    4: "bfloat",
    5: "complex",
    6: "bool",
    10: "float8_e4m3fn",
    12: "float8_e5m2",
}
_KIND = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}
_NAMED = {(4, 16): "bfloat16", (10, 8): "float8_e4m3fn", (12, 8): "float8_e5m2"}


class DLPackError(ValueError):
    """The object's DLPack export could not be read; the message says why."""


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int32),
        ("dtype", _DataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _Managed(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", _Tensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _ManagedVersioned(ctypes.Structure):
    _fields_ = [
        ("version", _Version),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _Tensor),
    ]


@dataclass(frozen=True)
class Capsule:
    """What a DLPack capsule says. `strides` in elements as the capsule holds them (None when
    the capsule has none: compact row-major), read as signed 64-bit integers."""

    name: str
    version: tuple[int, int] | None
    data: int
    byte_offset: int
    device: tuple[int, int]
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None
    code: int
    bits: int
    lanes: int
    readonly: bool
    copied: bool

    @property
    def pointer(self) -> int:
        """The address of element 0: data + byte_offset."""
        return self.data + self.byte_offset

    @property
    def itemsize(self) -> int:
        return (self.bits * self.lanes + 7) // 8

    @property
    def byte_strides(self) -> tuple[int, ...]:
        """Strides in bytes, compact row-major ones when the capsule has none."""
        if self.strides is not None:
            return tuple(s * self.itemsize for s in self.strides)
        out, step = [], self.itemsize
        for extent in reversed(self.shape):
            out.append(step)
            step *= max(extent, 1)
        return tuple(reversed(out))

    @property
    def type_name(self) -> str:
        return f"{_CODES.get(self.code, f'code {self.code}')}{self.bits}x{self.lanes}"


_api = ctypes.pythonapi
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def read_capsule(capsule: Any) -> Capsule:
    """Parse a "dltensor_versioned" or "dltensor" capsule without consuming it."""
    for name, struct in ((b"dltensor_versioned", _ManagedVersioned), (b"dltensor", _Managed)):
        if _api.PyCapsule_IsValid(capsule, name):
            address = _api.PyCapsule_GetPointer(capsule, name)
            if not address:
                raise DLPackError(f"the {name.decode()} capsule holds a NULL pointer")
            managed = struct.from_address(address)
            break
    else:
        raise DLPackError(
            f"not a DLPack capsule: {type(capsule).__name__} (a used or foreign capsule, or no "
            f"capsule at all)"
        )
    tensor = managed.dl_tensor
    ndim = int(tensor.ndim)
    if ndim < 0 or ndim > 64:
        raise DLPackError(f"implausible ndim {ndim}")
    shape = tuple(int(tensor.shape[i]) for i in range(ndim)) if ndim else ()
    strides = (
        tuple(int(tensor.strides[i]) for i in range(ndim))
        if ndim and bool(tensor.strides)
        else (None if ndim else ())
    )
    versioned = struct is _ManagedVersioned
    flags = int(managed.flags) if versioned else 0
    return Capsule(
        name=name.decode(),
        version=(int(managed.version.major), int(managed.version.minor)) if versioned else None,
        data=int(tensor.data or 0),
        byte_offset=int(tensor.byte_offset),
        device=(int(tensor.device.device_type), int(tensor.device.device_id)),
        shape=shape,
        strides=strides,
        code=int(tensor.dtype.code),
        bits=int(tensor.dtype.bits),
        lanes=int(tensor.dtype.lanes),
        readonly=bool(flags & READ_ONLY),
        copied=bool(flags & IS_COPIED),
    )


def export(obj: Any) -> tuple[Capsule, Any]:
    """Call `obj.__dlpack__` as a consumer that needs no stream ordering (stream=-1, then no
    stream argument for producers that refuse -1), asking for a versioned capsule first
    (max_version=(1, 0)) and falling back to the legacy call. Returns (parsed, the capsule):
    keep the capsule alive while its memory is used."""
    attempts = (
        {"stream": -1, "max_version": (1, 0)},
        {"max_version": (1, 0)},
        {"stream": -1},
        {},
    )
    errors = []
    for kwargs in attempts:
        try:
            capsule = obj.__dlpack__(**kwargs)
        except TypeError as exc:  # an older signature: try the next form
            errors.append(f"{kwargs}: {exc}")
            continue
        except (BufferError, ValueError, RuntimeError) as exc:
            if kwargs.get("stream") == -1:
                errors.append(f"{kwargs}: {exc}")
                continue
            raise DLPackError(f"__dlpack__ refused: {type(exc).__name__}: {exc}") from None
        return read_capsule(capsule), capsule
    raise DLPackError("__dlpack__ refused every call form: " + "; ".join(errors))


def typestr_of(capsule: Capsule) -> str:
    """The CAI typestr (or caiconform dtype name, `caiconform.spec.dtypes`) the capsule's
    element type corresponds to on a little-endian machine; "?" when none does."""
    if capsule.lanes != 1:
        return "?"
    named = _NAMED.get((capsule.code, capsule.bits))
    if named is not None:
        return named
    kind = _KIND.get(capsule.code)
    if kind is None or capsule.bits % 8:
        return "?"
    size = capsule.bits // 8
    return f"|{kind}{size}" if size == 1 or kind == "b" else f"<{kind}{size}"
