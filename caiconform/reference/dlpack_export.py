"""Build DLPack capsules of both kinds with a tracked deleter: the reference producer's export.

`make_capsule` lays out a `DLManagedTensorVersioned` (DLPack 1.3, capsule "dltensor_versioned")
or a legacy `DLManagedTensor` (capsule "dltensor") over a given pointer, shape, element strides,
dtype and device (`caiconform.dlpack.header`'s ctypes structs, dlpack.h), and returns the
capsule with an `Export`: the record the caller keeps of that one tensor. Its `deleter_calls`
counts how often the tensor's deleter ran, so a family can see it called exactly once, by whom
and when [DLPACK-DELETER-ONCE] (docs/spec/dlpack/python_spec.md: "it is consumed exactly once").

Ownership follows the Python specification (docs/spec/dlpack/python_spec.md, Implementation):
the capsule's destructor calls the deleter only while the capsule still has its unconsumed name;
a consumer renames it to "used_dltensor(_versioned)" and takes the deleter over. Until the
deleter runs, a module-level registry holds the `Export` and through it the owner (the object
whose memory the tensor describes), so the memory outlives every Python reference the producer's
user drops; the deleter releases it.

Two ctypes hazards shape the code. The deleter and the destructor are C function pointers made
from Python callables: the CFUNCTYPE objects are module-level constants, alive as long as the
module, since a capsule may outlive any object that made it. And a ctypes callback takes the GIL
itself on entry, from whatever thread calls it [DLPACK-DELETER-GIL]. The destructor receives the
capsule while it is being deallocated, so it works on the bare address (`c_void_p` arguments):
turning a dying object into a `py_object` would take and drop a reference and deallocate it
twice. The capsule names are module-level bytes, allocated once [DLPACK-CAPSULE-NAMES-STATIC].
Element types are coded by `caiconform.dlpack.dtypes`, the table the reading of a capsule uses.
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from caiconform.dlpack.capsule import STRUCTS, capi, capsule_name, capsule_pointer
from caiconform.dlpack.dtypes import KIND_CODES, NAMED_CODES, ORDER
from caiconform.dlpack.header import (
    HEADER_VERSION,
    IS_COPIED,
    LEGACY,
    READ_ONLY,
    USED_LEGACY,
    USED_VERSIONED,
    VERSIONED,
    Deleter,
    DLManagedTensor,
    DLManagedTensorVersioned,
    kDLCPU,
)

__all__ = [
    "Export",
    "make_capsule",
    "host_capsule",
    "dl_dtype",
    "element_strides",
    "consume_name",
    "call_deleter",
    "stray_deleter_calls",
    "VERSION",
]

#: the DLPack version of the versioned capsules made here (dlpack.h 1.3, `header.HEADER_VERSION`)
VERSION = HEADER_VERSION

#: the newest version whose capsules may have NULL strides (DLPack 1.2 forbids them, ndim != 0)
_NULL_STRIDES_VERSION = (1, 1)

_is_valid = capi("PyCapsule_IsValid", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)
_get_pointer = capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)
_new = capi("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
_set_name = capi("PyCapsule_SetName", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)


class Export:
    """One exported tensor: its struct, the owner it keeps alive, and what happened to it.

    `deleter_calls`: how often its deleter ran; `by_destructor`: how many of those came from the
    capsule's own destructor (the capsule was dropped unconsumed); `versioned`, `flags`: what
    the capsule said; `address`: the managed struct's address (the deleter's argument).
    """

    def __init__(self, struct: Any, keep: list, owner: Any, versioned: bool, flags: int) -> None:
        self._struct = struct
        self._keep = keep
        self.owner = owner
        self.versioned = versioned
        self.flags = flags
        self.address = ctypes.addressof(struct)
        self.deleter_calls = 0
        self.by_destructor = 0
        #: called once, by the first deleter call, while the owner (and so its memory) is still
        #: held: the reference producer's poisoning of the block (`ReferenceArray.poison_on_release`)
        self.on_release: Any = None

    @property
    def released(self) -> bool:
        """Whether the deleter ran (so the owner is no longer held)."""
        return self.deleter_calls > 0

    def __repr__(self) -> str:
        kind = "versioned" if self.versioned else "legacy"
        return f"<Export {kind} at {self.address:#x}: deleter called {self.deleter_calls}x>"


#: reentrant: an allocation made while it is held may run the garbage collector, whose freeing
#: of an unconsumed capsule calls the deleter on this same thread
_lock = threading.RLock()
#: address -> Export whose deleter has not run: holds the owner alive until it does
_live: dict[int, Export] = {}
#: address -> Export whose deleter ran, while the caller keeps it (so a second call is counted)
_done: weakref.WeakValueDictionary[int, Export] = weakref.WeakValueDictionary()
_stray = [0]
#: Exports with a NULL deleter [DLPACK-DELETER-NULL]: no call ever frees their struct
_undeletable: list[Export] = []
_in_destructor = threading.local()


def stray_deleter_calls() -> int:
    """Deleter calls on an address no kept `Export` knows (after it was dropped, or never made
    here): a second call on a tensor whose record is gone."""
    return _stray[0]


def _on_delete(address: int | None) -> None:
    """The deleter every capsule made here carries: count the call, release the owner once."""
    with _lock:
        export = _live.pop(address or 0, None)
        if export is None:
            export = _done.get(address or 0)
            if export is None:
                _stray[0] += 1
                return
        else:
            _done[export.address] = export
        export.deleter_calls += 1
        if getattr(_in_destructor, "on", False):
            export.by_destructor += 1
        owner, export.owner = export.owner, None
        release, export.on_release = export.on_release, None
    if release is not None:  # outside the lock, while the owner is still held
        release()
    del owner  # outside the lock: releasing it may run finalizers that export again


def _on_destroy(capsule: int | None) -> None:
    """The capsule destructor: call the deleter only while the capsule has its unconsumed name
    [DLPACK-CAPSULE-DESTRUCTOR]; a consumer that renamed it owns the tensor."""
    for name, struct in STRUCTS.items():
        if _is_valid(capsule, name):
            address = _get_pointer(capsule, name)
            deleter = struct.from_address(address).deleter if address else None
            if deleter:
                _in_destructor.on = True
                try:
                    Deleter(deleter)(address)
                finally:
                    _in_destructor.on = False
            return


#: the C function pointers, alive as long as the module (a capsule may outlive any caller)
DELETER = Deleter(_on_delete)
DESTRUCTOR = Deleter(_on_destroy)
_DELETER_ADDRESS = ctypes.cast(DELETER, ctypes.c_void_p).value
_DESTRUCTOR_ADDRESS = ctypes.cast(DESTRUCTOR, ctypes.c_void_p).value


def make_capsule(
    data: int,
    shape: Sequence[int],
    dtype: tuple[int, int, int],
    device: tuple[int, int],
    *,
    strides: Sequence[int] | None = None,
    byte_offset: int = 0,
    versioned: bool = True,
    version: tuple[int, int] = VERSION,
    flags: int = 0,
    owner: Any = None,
    ndim: int | None = None,
    deleter: bool = True,
    destructor: bool = True,
    name: bytes | None = None,
) -> tuple[Any, Export]:
    """A DLPack capsule over `data` and the `Export` that tracks it.

    Parameters
    ----------
    data, byte_offset: the tensor's `data` pointer and `byte_offset` (element 0 at their sum).
    shape, strides: extents and strides in elements (None: NULL strides, compact row-major,
    which a capsule of `version` 1.2 or later may not have for ndim != 0
    [DLPACK-STRIDES-NONNULL]: give them, or an older `version`, for a valid one).
    dtype: (code, bits, lanes); device: (DLDeviceType, device_id).
    versioned: a "dltensor_versioned" capsule of `version` with `flags`, else a legacy one.
    owner: kept alive until the deleter runs (the object whose memory `data` is).
    The rest build bad capsules on purpose (adversarial inputs): `ndim` written in place of
    len(shape), `deleter=False` a NULL deleter [DLPACK-DELETER-NULL], `destructor=False` no
    capsule destructor, `name` another capsule name (e.g. USED_LEGACY, an already consumed one).
    """
    shape_arr = (ctypes.c_int64 * max(len(shape), 1))(*[int(n) for n in shape])
    keep: list = [shape_arr]
    strides_ptr = None
    if strides is not None:
        strides_arr = (ctypes.c_int64 * max(len(strides), 1))(*[int(s) for s in strides])
        keep.append(strides_arr)
        strides_ptr = ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64))
    struct: Any = DLManagedTensorVersioned() if versioned else DLManagedTensor()
    tensor = struct.dl_tensor
    tensor.data = int(data) or None
    tensor.device.device_type, tensor.device.device_id = (int(v) for v in device)
    tensor.ndim = len(shape) if ndim is None else int(ndim)
    tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes = (int(v) for v in dtype)
    tensor.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64)) if shape else None
    if strides_ptr is not None:
        tensor.strides = strides_ptr
    tensor.byte_offset = int(byte_offset)
    struct.deleter = _DELETER_ADDRESS if deleter else None
    if versioned:
        struct.version.major, struct.version.minor = (int(v) for v in version)
        struct.flags = int(flags)
    export = Export(struct, keep, owner, versioned, int(flags) if versioned else 0)
    struct.manager_ctx = export.address
    with _lock:
        if deleter:
            _live[export.address] = export
        else:  # nobody can release it: the struct stays allocated for the life of the process
            _undeletable.append(export)
    label = name if name is not None else (VERSIONED if versioned else LEGACY)
    _NAMES.setdefault(label, label)  # a name given here stays allocated as the static ones do
    capsule = _new(export.address, _NAMES[label], _DESTRUCTOR_ADDRESS if destructor else None)
    return capsule, export


#: every capsule name used, kept for the life of the process (a capsule holds the pointer)
_NAMES: dict[bytes, bytes] = {n: n for n in (VERSIONED, LEGACY, USED_VERSIONED, USED_LEGACY)}


def consume_name(capsule: Any) -> int:
    """Take ownership of a capsule's tensor as a consumer does: rename "dltensor" to
    "used_dltensor" (or the versioned pair) [DLPACK-CONSUMER-RENAME], so its destructor no longer
    calls the deleter. Returns the managed struct's address; ValueError for any other name."""
    name = capsule_name(capsule)
    used = {VERSIONED: USED_VERSIONED, LEGACY: USED_LEGACY}.get(name or b"")
    if used is None:
        raise ValueError(f"not an unconsumed DLPack capsule: name {name!r}")
    address = capsule_pointer(capsule, name)
    if _set_name(capsule, used) != 0:
        raise RuntimeError("PyCapsule_SetName failed")
    return address


def call_deleter(address: int, versioned: bool) -> bool:
    """Call the deleter of the managed struct at `address` (as its consumer, once); False when
    the struct's deleter is NULL (nothing to call [DLPACK-DELETER-NULL])."""
    struct = DLManagedTensorVersioned if versioned else DLManagedTensor
    deleter = struct.from_address(address).deleter
    if not deleter:
        return False
    Deleter(deleter)(address)
    return True


def dl_dtype(dtype: Any, name: str | None = None) -> tuple[int, int, int]:
    """(code, bits, lanes) of a numpy dtype, or of caiconform's named type `name` (bfloat16,
    float8) held as raw bytes. BufferError for what DLPack cannot say: a byte order other than
    the machine's [DLPACK-BYTE-ORDER-REFUSED], raw bytes, structured, string, datetime, object
    (the array API's "incompatible dtype" [DLPACK-EXPORT-BUFFERERROR])."""
    dtype = np.dtype(dtype)
    if name in NAMED_CODES:
        code, bits = NAMED_CODES[name]
        return code, bits, 1
    if dtype.byteorder not in ("=", "|", ORDER):
        raise BufferError(
            f"DLPack has no byte order: a {dtype.str} array is not in native byte order"
        )
    code = KIND_CODES.get(dtype.kind)
    if code is None or dtype.fields is not None:
        raise BufferError(f"DLPack has no data type for {dtype.str}")
    if dtype.itemsize * 8 > 255:  # DLDataType.bits is a uint8_t (dlpack.h)
        raise BufferError(f"DLPack's bits (uint8) cannot hold {dtype.str}'s {dtype.itemsize * 8}")
    return code, dtype.itemsize * 8, 1


def element_strides(byte_strides: Sequence[int], itemsize: int) -> tuple[int, ...]:
    """Byte strides as DLPack's element strides [DLPACK-STRIDES-ELEMENTS]; BufferError for a
    stride that is no multiple of the item size (DLPack cannot express it)."""
    out = []
    for s in byte_strides:
        if itemsize and int(s) % itemsize:
            raise BufferError(
                f"stride {s} bytes is no multiple of the item size {itemsize}: DLPack counts "
                f"strides in elements"
            )
        out.append(int(s) // itemsize if itemsize else 0)
    return tuple(out)


def host_capsule(
    array: np.ndarray,
    *,
    versioned: bool = True,
    readonly: bool | None = None,
    copied: bool = False,
    strides: bool = True,
) -> tuple[Any, Export]:
    """A kDLCPU capsule over a numpy array's memory, the array its owner. `readonly` (default:
    the array's own) and `copied` set the versioned flags; `strides=False` exports NULL strides
    (only for a C-contiguous array), in a legacy capsule or a versioned one of DLPack 1.1, the
    newest version that allows them [DLPACK-STRIDES-NULL-LEGACY]."""
    if readonly is None:
        readonly = not array.flags.writeable
    if not strides and not array.flags.c_contiguous:
        raise ValueError("NULL strides describe a C-contiguous array only")
    flags = (READ_ONLY if readonly else 0) | (IS_COPIED if copied else 0)
    data = array.__array_interface__["data"][0] if array.size else 0
    return make_capsule(
        data,
        array.shape,
        dl_dtype(array.dtype),
        (kDLCPU, 0),
        strides=element_strides(array.strides, array.itemsize) if strides else None,
        versioned=versioned,
        version=VERSION if strides else _NULL_STRIDES_VERSION,
        flags=flags,
        owner=array,
    )
