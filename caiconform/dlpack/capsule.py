"""Read a producer's own DLPack capsule, with ctypes and nothing else in between.

The agreement family compares an object's `__cuda_array_interface__` with its `__dlpack__`
export. Reading DLPack through another library (cuda.core's `StridedMemoryView.from_dlpack`)
puts a second implementation between the producer and the verdict: when the two disagree, the
report cannot say whose bug it is. This module calls `obj.__dlpack__` and parses the capsule
itself, following `dlpack.h` (v1.3, its structs from `caiconform.dlpack.header`):
`DLManagedTensorVersioned` in a "dltensor_versioned" capsule, or the legacy `DLManagedTensor` in
a "dltensor" one; `DLTensor` = data, device (type, id), ndim, dtype (code, bits, lanes), shape
and strides as int64 *elements* (NULL strides read as compact row-major, which a capsule may
say before DLPack 1.2 only: the validator judges that), byte_offset. The capsule is read, not
consumed: its name stays, so its own destructor calls the producer's deleter when it is
collected. A versioned capsule whose major version is not 1 is refused:
dlpack.h guarantees only the `version` field's place across major versions.

How `__dlpack__` is called (array API `__dlpack__`, 2023.12): `stream` is -1 ("producer must not
perform any synchronization": only the description is read here) for devices with streams
(CUDA, CUDA managed, ROCm, told by `__dlpack_device__`), None for the others, which accept only
None; `max_version=(1, 0)` asks for a versioned capsule, and a producer whose signature predates
it (TypeError) is asked again without.

The Python C-API functions are bound with `capi`, each binding a function object of its own
(`ctypes.pythonapi[name]`), so no two modules' argtypes for the same function clash.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

from caiconform.dlpack.devices import dlpack_device
from caiconform.dlpack.dtypes import typestr_of
from caiconform.dlpack.errors import DLPackError
from caiconform.dlpack.header import (
    IS_COPIED,
    LEGACY,
    NO_SYNC,
    READ_ONLY,
    STREAM_DEVICES,
    TYPE_CODES,
    VERSIONED,
    DLManagedTensor,
    DLManagedTensorVersioned,
)

__all__ = [
    "Capsule",
    "read_capsule",
    "read_managed",
    "export",
    "stream_for",
    "capsule_name",
    "capsule_pointer",
    "capi",
    "STRUCTS",
]

#: an unconsumed capsule's name -> the struct it holds
STRUCTS = {VERSIONED: DLManagedTensorVersioned, LEGACY: DLManagedTensor}


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
        return f"{TYPE_CODES.get(self.code, f'code {self.code}')}{self.bits}x{self.lanes}"

    @property
    def typestr(self) -> str:
        """`typestr_of(self)`: the CAI typestr or caiconform dtype name, "?" when none."""
        return typestr_of(self)


def capi(name: str, restype: Any, *argtypes: Any) -> Any:
    """A private ctypes binding of a C-API function: `pythonapi[name]` is a new function object,
    so these argtypes never clash with other modules' bindings of the same function."""
    fn = ctypes.pythonapi[name]
    fn.restype, fn.argtypes = restype, list(argtypes)
    return fn


_get_pointer = capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)
_get_name = capi("PyCapsule_GetName", ctypes.c_void_p, ctypes.py_object)


def capsule_name(capsule: Any) -> bytes | None:
    """The capsule's name (b"" for a capsule without one), None when it is no PyCapsule."""
    if type(capsule).__name__ != "PyCapsule":
        return None
    raw = _get_name(capsule)
    return ctypes.string_at(raw) if raw else b""


def capsule_pointer(capsule: Any, name: bytes) -> int:
    """The pointer a PyCapsule named `name` holds (0 for NULL); the C-API's ValueError for a
    capsule of another name."""
    return int(_get_pointer(capsule, name) or 0)


def read_capsule(capsule: Any) -> Capsule:
    """Parse a "dltensor_versioned" or "dltensor" capsule without consuming it.

    The capsule keeps its name, so whoever owns it next (its own destructor, when it is
    collected) calls the producer's deleter exactly once. DLPackError for anything else: an
    object that is no capsule, a capsule of another name (a "used_" one was consumed already),
    a NULL tensor or shape, a versioned capsule of another major version.
    """
    name = capsule_name(capsule)
    struct = STRUCTS.get(name or b"")
    if struct is None:
        if name is None:
            raise DLPackError(f"not a DLPack capsule: a {type(capsule).__name__}")
        used = " (already consumed)" if name.startswith(b"used_") else ""
        raise DLPackError(
            f"not a DLPack capsule: a capsule named {name.decode(errors='replace')!r}{used}, "
            f"expected 'dltensor_versioned' or 'dltensor'"
        )
    address = capsule_pointer(capsule, name)
    if not address:
        raise DLPackError(f"the {name.decode()} capsule holds a NULL pointer")
    return read_managed(address, versioned=struct is DLManagedTensorVersioned, name=name.decode())


def read_managed(
    address: int, *, versioned: bool = True, name: str = VERSIONED.decode()
) -> Capsule:
    """Parse the DLManagedTensorVersioned (`versioned`) or DLManagedTensor at `address`, as
    `read_capsule` parses a capsule's; `name` the capsule name it is reported under (a tensor
    the C exchange API handed out has no capsule: "dltensor_versioned", the kind it is).
    DLPackError for a NULL address, a major version other than 1 or an implausible tensor."""
    if not address:
        raise DLPackError("a NULL tensor")
    managed = (DLManagedTensorVersioned if versioned else DLManagedTensor).from_address(address)
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
        name=name,
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


def stream_for(obj: Any) -> int | None:
    """The `stream` a consumer that needs no ordering passes: -1 where the object's device has
    streams (`__dlpack_device__`), else None; -1 also when the device cannot be told."""
    try:
        device_type = dlpack_device(obj, exact=False)[0]
    except Exception:  # noqa: BLE001 - no or a broken __dlpack_device__: assume a stream device
        return NO_SYNC
    return NO_SYNC if device_type in STREAM_DEVICES else None


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
