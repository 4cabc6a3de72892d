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

Type codes (dlpack.h `DLDataTypeCode`, v1.1+): 0 int, 1 uint, 2 float, 3 opaque handle,
4 bfloat, 5 complex, 6 bool, 7-14 the float8 variants, 15-16 float6, 17 float4 (codes beyond
are named by number). A versioned capsule whose major version is not 1 is refused: dlpack.h
guarantees only the `version` field's place across major versions.

How `__dlpack__` is called (array API `__dlpack__`, 2023.12): `stream` is -1 ("producer must not
perform any synchronization": only the description is read here) for devices with streams
(CUDA, CUDA managed, ROCm, told by `__dlpack_device__`), None for the others, which accept only
None; `max_version=(1, 0)` asks for a versioned capsule, and a producer whose signature predates
it (TypeError) is asked again without.
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DLPackError",
    "Capsule",
    "read_capsule",
    "export",
    "typestr_of",
    "stream_for",
    "NO_SYNC",
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
    7: "float8_e3m4",
    8: "float8_e4m3",
    9: "float8_e4m3b11fnuz",
    10: "float8_e4m3fn",
    11: "float8_e4m3fnuz",
    12: "float8_e5m2",
    13: "float8_e5m2fnuz",
    14: "float8_e8m0fnu",
    15: "float6_e2m3fn",
    16: "float6_e3m2fn",
    17: "float4_e2m1fn",
}
#: DLDeviceType values whose `__dlpack__` takes a stream: kDLCUDA, kDLROCM, kDLCUDAManaged
_STREAM_DEVICES = frozenset({2, 10, 13})
#: "no synchronization" (array API `__dlpack__`, stream)
NO_SYNC = -1
_KIND = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}
#: (code, bits) -> the caiconform dtype name (`caiconform.spec.dtypes`) of types with no typestr
_NAMED = {(4, 16): "bfloat16", (10, 8): "float8_e4m3fn", (12, 8): "float8_e5m2"}
_ORDER = "<" if sys.byteorder == "little" else ">"


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
    def has_flags(self) -> bool:
        """True for a versioned capsule, whose `flags` field says read-only and copied; an
        unversioned ("dltensor") capsule has no such field, so it says neither (`readonly`
        and `copied` are then False for want of a field, not a statement)."""
        return self.version is not None

    @property
    def kind(self) -> str:
        """The capsule kind in words, for findings: what it is and which flags it carries."""
        if self.has_flags:
            major, minor = self.version or (0, 0)
            return f"a versioned '{self.name}' capsule (DLPack {major}.{minor}, with flags)"
        return f"an unversioned '{self.name}' capsule (no flags field: read-only and copied unsaid)"

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
        """dlpack.h's name of the element type with bits and lanes, e.g. "bfloat16x1"."""
        return f"{_CODES.get(self.code, f'code {self.code}')}{self.bits}x{self.lanes}"

    @property
    def typestr(self) -> str:
        """`typestr_of(self)`: the CAI typestr or caiconform dtype name, "?" when none."""
        return typestr_of(self)


_api = ctypes.pythonapi
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetName.restype = ctypes.c_void_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]


def read_capsule(capsule: Any) -> Capsule:
    """Parse a "dltensor_versioned" or "dltensor" capsule without consuming it.

    The capsule keeps its name, so whoever owns it next (its own destructor, when it is
    collected) calls the producer's deleter exactly once. DLPackError for anything else: an
    object that is no capsule, a capsule of another name (a "used_" one was consumed already),
    a NULL tensor or shape, a versioned capsule of another major version.
    """
    name = _name_of(capsule)
    struct = {b"dltensor_versioned": _ManagedVersioned, b"dltensor": _Managed}.get(name or b"")
    if struct is None:
        if name is None:
            raise DLPackError(f"not a DLPack capsule: a {type(capsule).__name__}")
        used = " (already consumed)" if name.startswith(b"used_") else ""
        raise DLPackError(
            f"not a DLPack capsule: a capsule named {name.decode(errors='replace')!r}{used}, "
            f"expected 'dltensor_versioned' or 'dltensor'"
        )
    address = _api.PyCapsule_GetPointer(capsule, name)
    if not address:
        raise DLPackError(f"the {name.decode()} capsule holds a NULL pointer")
    managed = struct.from_address(address)
    versioned = struct is _ManagedVersioned
    version = (int(managed.version.major), int(managed.version.minor)) if versioned else None
    if version is not None and version[0] != 1:
        raise DLPackError(
            f"DLPack version {version[0]}.{version[1]}: only major version 1 has a known layout"
        )
    tensor = managed.dl_tensor
    ndim = int(tensor.ndim)
    if ndim < 0 or ndim > 64:
        raise DLPackError(f"implausible ndim {ndim}")
    if ndim and not tensor.shape:
        raise DLPackError(f"ndim {ndim} with a NULL shape")
    shape = tuple(int(tensor.shape[i]) for i in range(ndim))
    strides: tuple[int, ...] | None = ()
    if ndim:
        strides = tuple(int(tensor.strides[i]) for i in range(ndim)) if tensor.strides else None
    flags = int(managed.flags) if versioned else 0
    return Capsule(
        name=name.decode(),
        version=version,
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


def _name_of(capsule: Any) -> bytes | None:
    """The capsule's name, or None when `capsule` is no PyCapsule."""
    if type(capsule).__name__ != "PyCapsule":
        return None
    raw = _api.PyCapsule_GetName(capsule)
    return ctypes.string_at(raw) if raw else b""


def stream_for(obj: Any) -> int | None:
    """The `stream` a consumer that needs no ordering passes: -1 where the object's device has
    streams (`__dlpack_device__`), else None; -1 also when the device cannot be told."""
    try:
        device_type = int(obj.__dlpack_device__()[0])
    except Exception:  # noqa: BLE001 - no or a broken __dlpack_device__: assume a stream device
        return NO_SYNC
    return NO_SYNC if device_type in _STREAM_DEVICES else None


def export(obj: Any) -> tuple[Capsule, Any]:
    """Call `obj.__dlpack__` as a consumer that needs no stream ordering (`stream_for`), asking
    for a versioned capsule first (max_version=(1, 0)) and falling back to the legacy call; a
    producer that refuses stream=-1 is asked once more without a stream. Returns (parsed, the
    capsule): keep the capsule alive while its memory is used; dropping it frees it."""
    stream = stream_for(obj)
    streams = [stream] if stream is None else [stream, None]
    errors = []
    for i, chosen in enumerate(streams):
        for versioned in (True, False):
            kwargs: dict[str, Any] = {} if chosen is None else {"stream": chosen}
            if versioned:
                kwargs["max_version"] = (1, 0)
            try:
                capsule = obj.__dlpack__(**kwargs)
            except TypeError as exc:  # an older signature: try the next form
                errors.append(f"{kwargs}: {exc}")
                continue
            except (BufferError, ValueError, RuntimeError) as exc:
                errors.append(f"{kwargs}: {type(exc).__name__}: {exc}")
                if i + 1 < len(streams):
                    break  # refused stream -1: ask without a stream
                raise DLPackError("__dlpack__ refused: " + "; ".join(errors)) from None
            return read_capsule(capsule), capsule
    raise DLPackError("__dlpack__ refused every call form: " + "; ".join(errors))


def typestr_of(capsule: Capsule) -> str:
    """The CAI typestr (or caiconform dtype name, `caiconform.spec.dtypes`) the capsule's
    element type corresponds to, in this machine's byte order (DLPack types are native-endian);
    "?" when none does."""
    if capsule.lanes != 1:
        return "?"
    named = _NAMED.get((capsule.code, capsule.bits))
    if named is not None:
        return named
    kind = _KIND.get(capsule.code)
    if kind is None or capsule.bits % 8:
        return "?"
    size = capsule.bits // 8
    return f"|{kind}{size}" if size == 1 or kind == "b" else f"{_ORDER}{kind}{size}"
