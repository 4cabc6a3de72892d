"""The reference producer's DLPack C exchange API table (`__dlpack_c_exchange_api__`, dlpack.h 1.3).

`exchange_table(to_object, allocate)` builds one `DLPackExchangeAPI` for a type whose objects
have `__dlpack__`, and returns the PyCapsule named "dlpack_exchange_api" that the type carries
(docs/spec/dlpack/dlpack_h_exchange_api.md). Its functions are ctypes callbacks, kept alive with
the table for the life of the process [DLPACK-CAPI-ALIVE]:
- `managed_tensor_from_py_object_no_sync`: the object's own `__dlpack__` asked for no
  synchronization (stream -1 on a device with streams, None on the host) and a versioned
  capsule, whose tensor is taken over as a consumer takes it (the capsule renamed "used_"): the
  same tensor `__dlpack__` gives [DLPACK-CAPI-SAME-TENSOR], without a wait [DLPACK-CAPI-NO-SYNC];
- `managed_tensor_to_py_object_no_sync`: `to_object(address)`, which takes the tensor's
  ownership and returns an object of the type [DLPACK-CAPI-TO-PY-OBJECT];
- `current_work_stream`: NULL, the legacy default stream: the reference producer has no current
  stream, its arrays' work is finished or ordered by their `__dlpack__`'s events;
- `managed_tensor_allocator`: `allocate(shape, dtype, device)`'s object, exported as above, or,
  without `allocate` or when it raises, NULL after one SetError
  [DLPACK-CAPI-ALLOCATOR-SETERROR];
- `dltensor_from_py_object_no_sync`: NULL, the non-owning export not offered
  [DLPACK-CAPI-DLTENSOR-OPTIONAL].
A function that fails returns -1 (`_failed` says why no Python exception comes with it).
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from typing import Any

from caiconform.dlpack import header
from caiconform.dlpack.capsule import capi, stream_for
from caiconform.reference import dlpack_export as dx

__all__ = ["exchange_table", "take_elements", "typestr_for", "VERSION"]

#: the DLPack version of the table's header
VERSION = header.HEADER_VERSION


#: every table made, with its callbacks: alive for the life of the process
_TABLES: list[Any] = []
_new_capsule = capi(
    "PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p
)
_incref = capi("Py_IncRef", None, ctypes.py_object)


def _failed(what: str, exc: BaseException) -> int:
    """-1, `exc` written to stderr: a ctypes callback cannot leave a Python exception set for
    its C caller (ctypes clears what a callback raises, and a C-API call that sets one raises it
    at once), so a failing function of this table breaks the header's return convention
    [DLPACK-CAPI-RETURN]. The family only asks it for arrays DLPack describes, which its
    functions do not refuse."""
    print(f"reference DLPack exchange table: {what}: {type(exc).__name__}: {exc}", file=sys.stderr)
    return -1


def _tensor(address: int) -> Any:
    """A `DLManagedTensorVersioned*` holding `address` (NULL for 0)."""
    return ctypes.cast(address or None, ctypes.POINTER(header.DLManagedTensorVersioned))


def _take_over(obj: Any) -> int:
    """The tensor of `obj.__dlpack__` with no synchronization asked, owned by the caller."""
    capsule = obj.__dlpack__(stream=stream_for(obj), max_version=VERSION)
    return dx.consume_name(capsule)


def take_elements(address: int) -> tuple[Any, str]:
    """(a host copy of the elements of the owning tensor at `address`, their typestr), the
    tensor released through its deleter once read: what a `to_object` taking a tensor's
    ownership starts from."""
    from caiconform.dlpack.capsule import read_managed
    from caiconform.dlpack.dtypes import typestr_of
    from caiconform.dlpack.elements import element_type
    from caiconform.reference.dlpack_read import read_elements

    tensor = read_managed(address)
    try:
        return read_elements(tensor, element_type(tensor)), typestr_of(tensor)
    finally:
        dx.call_deleter(address, True)


def typestr_for(dtype: tuple[int, int, int], device: tuple[int, int]) -> str:
    """The typestr of an allocator prototype's (code, bits, lanes) on a CUDA `device`;
    ValueError for a type no typestr spells or another device."""
    from caiconform.dlpack.dtypes import typestr_of
    from caiconform.dlpack.header import kDLCUDA

    code, bits, lanes = dtype
    typestr = typestr_of(type("Prototype", (), {"code": code, "bits": bits, "lanes": lanes}))
    if typestr == "?" or device[0] != kDLCUDA:
        raise ValueError(f"no reference array of type {dtype} on device {device}")
    return typestr


def exchange_table(
    to_object: Callable[[int], Any],
    allocate: Callable[[tuple[int, ...], tuple[int, int, int], tuple[int, int]], Any] | None = None,
) -> Any:
    """A "dlpack_exchange_api" PyCapsule over a new table (see the module docstring): set it on
    a type as `__dlpack_c_exchange_api__`."""

    def from_object(py_object: int, out: Any) -> int:
        out[0] = _tensor(0)
        try:
            out[0] = _tensor(_take_over(ctypes.cast(py_object, ctypes.py_object).value))
        except Exception as exc:  # noqa: BLE001 - the C caller sees -1
            return _failed("managed_tensor_from_py_object_no_sync", exc)
        return 0

    def to_py_object(tensor: int, out: Any) -> int:
        out[0] = None
        try:
            made = to_object(ctypes.cast(tensor, ctypes.c_void_p).value or 0)
        except Exception as exc:  # noqa: BLE001 - the C caller sees -1
            return _failed("managed_tensor_to_py_object_no_sync", exc)
        _incref(made)  # the new reference `out` carries
        out[0] = id(made)
        return 0

    def work_stream(_device_type: int, _device_id: int, out: Any) -> int:
        out[0] = None
        return 0

    def allocator(prototype: Any, out: Any, ctx: int, set_error: Any) -> int:
        out[0] = _tensor(0)
        try:
            if allocate is None:
                raise NotImplementedError("the reference producer's table allocates nothing")
            tensor = prototype.contents
            shape = tuple(int(tensor.shape[i]) for i in range(int(tensor.ndim)))
            dtype = (int(tensor.dtype.code), int(tensor.dtype.bits), int(tensor.dtype.lanes))
            device = (int(tensor.device.device_type), int(tensor.device.device_id))
            out[0] = _tensor(_take_over(allocate(shape, dtype, device)))
        except Exception as exc:  # noqa: BLE001 - told through SetError, as the header asks
            set_error(ctx, type(exc).__name__.encode(), str(exc).encode(errors="replace"))
            return -1
        return 0

    table = header.DLPackExchangeAPI()
    table.header.version.major, table.header.version.minor = VERSION
    callbacks = (
        header.DLPackManagedTensorAllocator(allocator),
        header.DLPackManagedTensorFromPyObjectNoSync(from_object),
        header.DLPackManagedTensorToPyObjectNoSync(to_py_object),
        header.DLPackCurrentWorkStream(work_stream),
    )
    (
        table.managed_tensor_allocator,
        table.managed_tensor_from_py_object_no_sync,
        table.managed_tensor_to_py_object_no_sync,
        table.current_work_stream,
    ) = callbacks
    _TABLES.append((table, callbacks))
    return _new_capsule(ctypes.addressof(table), header.EXCHANGE_API_NAME, None)
