"""The DLPack pieces of the standalone reproducers, as source text: dlpack.h's structs in ctypes,
a capsule's fields read without consuming it, and a capsule built over any pointer with a
deleter that counts its calls.

`HELPERS` has the shape of `_text.HELPERS` (name -> source), which takes these in: a script
carries a helper only where it refers to a name the helper defines. The structs are dlpack.h's
with the small ones inlined (`DLDevice`, `DLDataType` and `DLPackVersion` are fields of their
own: the same offsets, fewer lines). The builder (`make_capsule`) is the stand-in of
caiconform's reference producer over DLPack (`caiconform.reference.dlpack_export`): a
`DLManagedTensorVersioned` (or a legacy `DLManagedTensor`) in a "dltensor_versioned" (or
"dltensor") capsule made with `PyCapsule_New` through `ctypes.pythonapi`; the deleter, a ctypes
CFUNCTYPE, counts its calls per tensor in `DELETER_CALLS`; the capsule's destructor calls the
deleter only while the capsule keeps its unconsumed name (docs/spec/dlpack/python_spec.md). It
needs no GPU: over host memory with device (kDLCPU, 0) it is what numpy's `from_dlpack` takes.
The structs' text is rendered from `caiconform.dlpack.header`'s `_fields_` (`flat_fields`), so a
script's struct is the one caiconform reads capsules with; the rest is the script's own text.
"""

from __future__ import annotations

import ctypes
from typing import Any

from caiconform.dlpack import header

__all__ = ["HELPERS", "flat_fields"]

#: structs whose fields a script's struct holds in place of the struct: the same offsets,
#: fewer lines
_INLINED = (header.DLDevice, header.DLDataType, header.DLPackVersion)
#: the ctypes types the structs use, by the name a script spells them with (the fixed-width
#: aliases: `ctypes.c_int32.__name__` is the platform's "c_int")
_CTYPE_NAMES = {
    getattr(ctypes, name): name
    for name in ("c_void_p", "c_int32", "c_uint8", "c_uint16", "c_uint32", "c_int64", "c_uint64")
}
#: what the scripts' struct classes say of themselves, by struct
_COMMENTS = {
    header.DLTensor: "DLDevice (type, id) and DLDataType (code, bits, lanes) inlined",
    header.DLManagedTensor: 'a legacy "dltensor" capsule\'s struct',
    header.DLManagedTensorVersioned: '"dltensor_versioned"; DLPackVersion inlined',
}


def flat_fields(struct: type) -> list[tuple[str, Any]]:
    """`struct`'s `_fields_` with those of the `_INLINED` structs in their place."""
    out: list[tuple[str, Any]] = []
    for name, kind in struct._fields_:
        out += flat_fields(kind) if kind in _INLINED else [(name, kind)]
    return out


def _spelled(kind: Any) -> str:
    """A field's type as script source: `ctypes.c_int64`, `ctypes.POINTER(...)`, `DLTensor`."""
    if kind in _CTYPE_NAMES:
        return f"ctypes.{_CTYPE_NAMES[kind]}"
    if issubclass(kind, ctypes._Pointer):
        return f"ctypes.POINTER({_spelled(kind._type_)})"
    return kind.__name__


def _struct_source(struct: type) -> str:
    """The script's class of `struct`: its flat fields, as many to a line as fit in 100."""
    items = [f'("{name}", {_spelled(kind)})' for name, kind in flat_fields(struct)]
    lines, line = [], "    _fields_ = [" + items[0]
    for item in items[1:]:
        if len(line) + len(", ") + len(item) + len(",") <= 100:
            line += ", " + item
        else:
            lines.append(line + ",")
            line = " " * len("    _fields_ = [") + item
    lines.append(line + "]")
    head = f"class {struct.__name__}(ctypes.Structure):  # {_COMMENTS[struct]}"
    return "\n".join([head, *lines])


_STRUCTS = (
    "\n"
    + "\n\n\n".join(_struct_source(struct) for struct in _COMMENTS)
    + "\n\n\nSTRUCTS = {"
    + f'b"{header.VERSIONED.decode()}": DLManagedTensorVersioned, '
    + f'b"{header.LEGACY.decode()}": DLManagedTensor'
    + "}\n"
)

_FLAGS = (
    f"\nREAD_ONLY, IS_COPIED = {header.READ_ONLY}, {header.IS_COPIED}"
    "  # DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_FLAG_BITMASK_IS_COPIED\n"
)

_CAPI = """
def capi(name, restype, *argtypes):  # a binding of its own of a Python C-API function
    fn = ctypes.pythonapi[name]
    fn.restype, fn.argtypes = restype, list(argtypes)
    return fn
"""

_NAME = """
_name_of = capi("PyCapsule_GetName", ctypes.c_void_p, ctypes.py_object)


def capsule_name(capsule):  # its name (b"" when none); None for anything but a PyCapsule
    if type(capsule).__name__ != "PyCapsule":
        return None
    raw = _name_of(capsule)
    return ctypes.string_at(raw) if raw else b""
"""

_READ = """
_pointer_in = capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)


def read_capsule(capsule):
    # the fields of an unconsumed DLPack capsule, read with ctypes; the capsule keeps its name
    name = capsule_name(capsule)
    if name not in STRUCTS:
        raise ValueError(f"not an unconsumed DLPack capsule: {type(capsule).__name__} {name!r}")
    managed = STRUCTS[name].from_address(_pointer_in(capsule, name))
    versioned, t = name == b"dltensor_versioned", managed.dl_tensor
    if not 0 <= t.ndim <= 64:
        raise ValueError(f"implausible ndim {t.ndim}")
    return {"name": name.decode(), "version": (managed.major, managed.minor) if versioned else None,
            "flags": managed.flags if versioned else None, "data": t.data or 0,
            "byte_offset": t.byte_offset, "device": (t.device_type, t.device_id),
            "dtype": (t.code, t.bits, t.lanes), "shape": tuple(t.shape[:t.ndim]),
            "strides": tuple(t.strides[:t.ndim]) if t.strides else None}
"""

_BYTE_STRIDES = """
def byte_strides(fields, itemsize):  # the capsule's strides in bytes (NULL: C-contiguous)
    if fields["strides"] is not None:
        return tuple(s * itemsize for s in fields["strides"])
    out, step = [], itemsize
    for extent in reversed(fields["shape"]):
        out.insert(0, step)
        step *= max(extent, 1)
    return tuple(out)
"""

_VALUES = """
def capsule_values(fields, dtype):
    # the elements a capsule describes, copied to the host: kDLCPU memory through ctypes,
    # CUDA memory (device types 2, 3, 13) with the driver
    shape, steps = fields["shape"], byte_strides(fields, dtype.itemsize)
    ptr = fields["data"] + fields["byte_offset"]
    if 0 in shape:
        return np.empty(shape, dtype)
    if fields["device"][0] != 1:
        return read_at(ptr, shape, dtype, steps)
    lo = sum((n - 1) * s for n, s in zip(shape, steps) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(shape, steps) if s > 0) + dtype.itemsize
    raw = np.frombuffer((ctypes.c_char * (hi - lo)).from_address(ptr + lo), np.uint8)
    return np.ndarray(shape, dtype, buffer=raw, offset=-lo, strides=steps).copy()
"""

_BUILDER = """
DELETER_CALLS = {}  # address of a tensor made here -> how often its deleter ran
_MADE = {}  # address -> the struct and the arrays it points to, kept for the whole run
_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_valid = capi("PyCapsule_IsValid", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)
_pointer_at = capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)
_new = capi("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
_NAMES = {n: n for n in (b"dltensor_versioned", b"dltensor", b"used_dltensor_versioned",
                         b"used_dltensor")}  # a capsule keeps a pointer to its name: never freed


def _on_delete(address, calls=DELETER_CALLS):  # the tensor's deleter: count the call
    calls[address or 0] = calls.get(address or 0, 0) + 1


def _on_destroy(capsule, structs=STRUCTS, valid=_valid, pointer=_pointer_at, fn=_FN):
    # the capsule's destructor (on the bare address: the capsule is being freed): the tensor
    # is released only while the capsule is unconsumed; a consumer renames it and owns it.
    # What it uses is bound here: a capsule freed as the script ends outlives its globals
    for name, struct in structs.items():
        if valid(capsule, name):
            address = pointer(capsule, name)
            deleter = struct.from_address(address).deleter if address else None
            if deleter:
                fn(deleter)(address)
            return


DELETER, DESTRUCTOR = _FN(_on_delete), _FN(_on_destroy)
for _kept in (DELETER, DESTRUCTOR, _MADE):  # never freed: a capsule may be freed after them
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(_kept))


def make_capsule(data, shape, dtype, device, *, strides=None, byte_offset=0, version=(1, 1),
                 flags=0, ndim=None, name=None, deleter=True):
    # a DLManagedTensorVersioned (version None: a legacy DLManagedTensor) over `data`, in a new
    # capsule; dtype (code, bits, lanes), device (type, id), strides in elements (None: NULL).
    # ndim, name and deleter=False make bad capsules on purpose. Returns (capsule, address)
    struct = DLManagedTensor() if version is None else DLManagedTensorVersioned()
    extents = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    keep = [struct, extents]
    t = struct.dl_tensor
    t.data = int(data) or None
    t.device_type, t.device_id = device
    t.ndim = len(shape) if ndim is None else ndim
    t.code, t.bits, t.lanes = dtype
    if shape:
        t.shape = ctypes.cast(extents, ctypes.POINTER(ctypes.c_int64))
    if strides is not None:
        steps = (ctypes.c_int64 * max(len(strides), 1))(*strides)
        keep.append(steps)
        t.strides = ctypes.cast(steps, ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = byte_offset
    if version is not None:
        struct.major, struct.minor = version
        struct.flags = flags
    address = ctypes.addressof(struct)
    struct.manager_ctx = address
    struct.deleter = ctypes.cast(DELETER, ctypes.c_void_p).value if deleter else None
    _MADE[address] = keep
    DELETER_CALLS[address] = 0
    label = _NAMES[name or (b"dltensor" if version is None else b"dltensor_versioned")]
    return _new(address, label, ctypes.cast(DESTRUCTOR, ctypes.c_void_p).value), address
"""

_PRODUCER = """
class CapsuleProducer:
    # an object whose __dlpack__ hands out a fresh capsule from make(kwargs) at each call, noting
    # the call's keywords, the caller's file and line and the tensor's address; keep=True also
    # keeps each capsule (to read its name after the import; clear `capsules` to let them go)
    def __init__(self, make, device, keep=False):
        self.make, self.device, self.keep = make, device, keep
        self.calls, self.tensors, self.capsules = [], [], []

    def __dlpack__(self, *args, **kwargs):
        caller = sys._getframe(1)
        self.calls.append((args, kwargs, f"{caller.f_code.co_filename}:{caller.f_lineno}"))
        capsule, address = self.make(kwargs)
        self.tensors.append(address)
        if self.keep:
            self.capsules.append(capsule)
        return capsule

    def __dlpack_device__(self):
        return self.device
"""

_ONLY = """
class DLPackOnly:  # the producer's array seen through DLPack alone: no CAI to fall back to
    def __init__(self, array):
        self.array = array

    def __dlpack__(self, *args, **kwargs):
        return self.array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()
"""

_READ_MANAGED = """
def read_managed(address):
    # the fields of the DLManagedTensorVersioned at `address` (a tensor the C exchange API
    # handed out, no capsule around it), read with ctypes
    managed = DLManagedTensorVersioned.from_address(address)
    t = managed.dl_tensor
    if not 0 <= t.ndim <= 64:
        raise ValueError(f"implausible ndim {t.ndim}")
    return {"name": "dltensor_versioned", "version": (managed.major, managed.minor),
            "flags": managed.flags, "data": t.data or 0, "byte_offset": t.byte_offset,
            "device": (t.device_type, t.device_id), "dtype": (t.code, t.bits, t.lanes),
            "shape": tuple(t.shape[:t.ndim]), "strides": tuple(t.strides[:t.ndim]) if t.strides else None}
"""

_EXCHANGE_API = f"""
_ENTRIES = {tuple(name for name, _ in header.EXCHANGE_API_ENTRIES)!r}


def exchange_api(obj):
    # the {header.EXCHANGE_API_ATTRIBUTE} table of type(obj) (DLPack 1.3), read with ctypes:
    # its address, version, prev_api chain (address, version) and its five entries (0: NULL)
    held = getattr(type(obj), "{header.EXCHANGE_API_ATTRIBUTE}")
    address = capi("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
        held, b"{header.EXCHANGE_API_NAME.decode()}")
    words = (ctypes.c_uint32 * 2).from_address(address)
    slots = (ctypes.c_void_p * (2 + len(_ENTRIES))).from_address(address)  # header, then entries
    chain, link, seen = [], slots[1], {{address}}
    while link and link not in seen and len(chain) < 16:
        seen.add(link)
        older = (ctypes.c_uint32 * 2).from_address(link)
        chain.append((link, (older[0], older[1])))
        link = (ctypes.c_void_p * 2).from_address(link)[1]
    return {{"address": address, "version": (words[0], words[1]), "prev": chain,
            "prev_cut": bool(link), "entries": dict(zip(_ENTRIES, (slots[2 + i] or 0
                                                              for i in range(len(_ENTRIES)))))}}


FROM_OBJECT = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
TO_OBJECT = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
SET_ERROR = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p)
ALLOCATOR = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                              ctypes.c_void_p, SET_ERROR)
"""

#: name -> source, as `_text.HELPERS` (a helper before those that use it)
HELPERS: dict[str, str] = {
    "dlpack_structs": _STRUCTS,
    "dlpack_flags": _FLAGS,
    "capi": _CAPI,
    "capsule_name": _NAME,
    "read_capsule": _READ,
    "read_managed": _READ_MANAGED,
    "exchange_api": _EXCHANGE_API,
    "byte_strides": _BYTE_STRIDES,
    "capsule_values": _VALUES,
    "dlpack_builder": _BUILDER,
    "capsule_producer": _PRODUCER,
    "dlpack_only": _ONLY,
}
