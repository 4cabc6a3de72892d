"""Calling a producer's DLPack C exchange API table, as a consumer written in C would.

The table (`caiconform.dlpack.exchange_api.read_exchange_api`: its header, entries and chain)
is a struct of C function pointers; each is called here through ctypes with the GIL held
(`PYFUNCTYPE`: the functions set Python exceptions, and a producer may rely on the caller
holding the GIL as a C extension calling them would), so a function that returns -1 with an
exception set shows the exception, and one that returns 0 with one set shows that too. Nothing
here judges: every call returns what happened (`Call`), the `dlpack_capi` family decides what
that means. A tensor the table exported is read as a `caiconform.dlpack.Capsule` (the same
reader as a `__dlpack__` capsule's) and released through its own deleter exactly once, unless
`managed_tensor_to_py_object_no_sync` took its ownership.
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass, field
from typing import Any

from caiconform.dlpack import header
from caiconform.dlpack.capsule import Capsule, read_managed


def _holding_the_gil(prototype: Any) -> Any:
    """dlpack.h's function type `prototype` (a CFUNCTYPE of `caiconform.dlpack.header`) called
    with the GIL held and the Python exception it leaves set raised (PYFUNCTYPE)."""
    return ctypes.PYFUNCTYPE(prototype._restype_, *prototype._argtypes_)


_FROM_OBJECT = _holding_the_gil(header.DLPackManagedTensorFromPyObjectNoSync)
_DLTENSOR_FROM_OBJECT = _holding_the_gil(header.DLPackDLTensorFromPyObjectNoSync)
_TO_OBJECT = _holding_the_gil(header.DLPackManagedTensorToPyObjectNoSync)
_WORK_STREAM = _holding_the_gil(header.DLPackCurrentWorkStream)
_ALLOCATOR = _holding_the_gil(header.DLPackManagedTensorAllocator)
VERSIONED_P = _VERSIONED_P = ctypes.POINTER(header.DLManagedTensorVersioned)


@dataclass
class Call:
    """What one call of a table function did: its return code, its output (an address, a
    stream handle, an object, a DLTensor), and the Python exception it left set. ctypes raises
    that exception as the call returns, so a call that left one has no return code seen
    (`rc` None): -1 by the header's convention, or a 0 the convention does not allow."""

    rc: int | None
    out: Any = None
    error: BaseException | None = None

    @property
    def succeeded(self) -> bool:
        """The function's own word: 0 and no exception."""
        return self.rc == 0 and self.error is None


@dataclass
class SetErrorLog:
    """The calls the allocator made of the `SetError` it was given: (kind, message) each."""

    calls: list[tuple[str, str]] = field(default_factory=list)


def _call(function: Any, *args: Any) -> tuple[int | None, BaseException | None]:
    try:
        return int(function(*args)), None
    except Exception as exc:  # noqa: BLE001 - the exception the function set: judged by the family
        return None, exc


@functools.cache
def bound(prototype: Any, entry: int) -> Any:
    """The table function at `entry` as a callable of `prototype` (one of this module's GIL-held
    twins), made once per entry: a consumer caches a type's table, and so does this."""
    return prototype(entry)


def from_object_function(entry: int) -> Any:
    """`managed_tensor_from_py_object_no_sync` at `entry`, callable as `fn(id(obj), byref(out))`
    (`out` a `DLManagedTensorVersioned*`): what a benchmark times without this module's
    bookkeeping around it."""
    return bound(_FROM_OBJECT, entry)


def tensor_from_object(entry: int, obj: Any) -> Call:
    """`managed_tensor_from_py_object_no_sync(obj, &out)`; `out` the owning tensor's address
    (0 for NULL)."""
    out = _VERSIONED_P()
    rc, error = _call(bound(_FROM_OBJECT, entry), id(obj), ctypes.byref(out))
    return Call(rc, _address(out), error)


def dltensor_from_object(entry: int, obj: Any) -> Call:
    """`dltensor_from_py_object_no_sync(obj, &out)` into a DLTensor on this side; `out` the
    struct (valid only while `obj` is left alone: the producer owns what it points to)."""
    out = header.DLTensor()
    rc, error = _call(bound(_DLTENSOR_FROM_OBJECT, entry), id(obj), ctypes.byref(out))
    return Call(rc, out, error)


def tensor_to_object(entry: int, address: int) -> Call:
    """`managed_tensor_to_py_object_no_sync(tensor, &out)`, which takes the tensor's ownership;
    `out` the object it made (its new reference handed to Python), or None."""
    out = ctypes.c_void_p()
    tensor = ctypes.cast(address, _VERSIONED_P)
    rc, error = _call(bound(_TO_OBJECT, entry), tensor, ctypes.byref(out))
    made = None
    if out.value:
        made = ctypes.cast(out.value, ctypes.py_object).value
        ctypes.pythonapi.Py_DecRef(ctypes.py_object(made))  # the reference `out` carried
    return Call(rc, made, error)


def work_stream(entry: int, device: tuple[int, int]) -> Call:
    """`current_work_stream(device_type, device_id, &out)`; `out` the stream handle (0: NULL,
    the legacy default stream)."""
    out = ctypes.c_void_p()
    rc, error = _call(bound(_WORK_STREAM, entry), int(device[0]), int(device[1]), ctypes.byref(out))
    return Call(rc, int(out.value or 0), error)


def allocate(
    entry: int, shape: tuple[int, ...], dtype: tuple[int, int, int], device: tuple[int, int]
) -> tuple[Call, SetErrorLog]:
    """`managed_tensor_allocator(prototype, &out, ctx, SetError)` for a prototype of `shape`,
    `dtype` (code, bits, lanes) and `device`; `out` the tensor's address, and what SetError was
    told."""
    log = SetErrorLog()

    def set_error(_ctx: Any, kind: bytes | None, message: bytes | None) -> None:
        log.calls.append(((kind or b"").decode(errors="replace"), (message or b"").decode()))

    callback = header.SetError(set_error)
    extents = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    prototype = header.DLTensor()
    prototype.ndim = len(shape)
    prototype.shape = ctypes.cast(extents, ctypes.POINTER(ctypes.c_int64))
    prototype.dtype.code, prototype.dtype.bits, prototype.dtype.lanes = dtype
    prototype.device.device_type, prototype.device.device_id = device
    out = _VERSIONED_P()
    rc, error = _call(
        bound(_ALLOCATOR, entry), ctypes.byref(prototype), ctypes.byref(out), None, callback
    )
    return Call(rc, _address(out), error), log


def _address(pointer: Any) -> int:
    """The address a ctypes pointer holds, 0 for NULL."""
    return int(ctypes.cast(pointer, ctypes.c_void_p).value or 0)


def read_dltensor(tensor: Any, version: tuple[int, int]) -> Capsule:
    """What a DLTensor filled by `dltensor_from_py_object_no_sync` says, as a tensor of the
    table's `version` would."""
    box = header.DLManagedTensorVersioned()
    box.version.major, box.version.minor = version
    box.dl_tensor = tensor
    return read_managed(ctypes.addressof(box))


def release(address: int) -> bool:
    """Call the deleter of the owning tensor at `address`, once (the consumer's call of
    `reference.dlpack_export.call_deleter`); False when the address or the deleter is NULL."""
    from caiconform.reference.dlpack_export import call_deleter

    return bool(address) and call_deleter(address, True)
