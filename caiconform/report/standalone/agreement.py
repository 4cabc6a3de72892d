"""agreement: the producer's own DLPack capsule and its CAI describe the same array.

The capsule is read with ctypes (the DLManagedTensor / DLManagedTensorVersioned structs of
dlpack.h): shape, strides (elements, times the item size), data pointer plus byte offset, and —
only in a versioned capsule, the only kind that has the field — the read-only flag. Where they
disagree, the memory is read at both descriptions and compared with the values written, which
says which export lies.
"""

from __future__ import annotations

from caiconform.report.standalone import exchange as ex
from caiconform.report.standalone._text import Script, array_of

__all__ = ["script"]

_DLPACK = '''
import ctypes


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", ctypes.c_int32 * 2),
                ("ndim", ctypes.c_int32), ("dtype", ctypes.c_uint8 * 4),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class Versioned(ctypes.Structure):  # DLManagedTensorVersioned
    _fields_ = [("version", ctypes.c_uint32 * 2), ("ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("tensor", DLTensor)]


class Unversioned(ctypes.Structure):  # DLManagedTensor
    _fields_ = [("tensor", DLTensor), ("ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


def capsule_view(capsule, itemsize):
    """(capsule kind, shape, byte strides or None, data pointer, read-only flag or None)."""
    name_of = ctypes.pythonapi.PyCapsule_GetName
    name_of.restype, name_of.argtypes = ctypes.c_char_p, [ctypes.py_object]
    pointer = ctypes.pythonapi.PyCapsule_GetPointer
    pointer.restype, pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    name = name_of(capsule)
    versioned = name == b"dltensor_versioned"
    managed = (Versioned if versioned else Unversioned).from_address(pointer(capsule, name))
    t = managed.tensor
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = tuple(t.strides[i] * itemsize for i in range(t.ndim)) if t.strides else None
    readonly = bool(managed.flags & 1) if versioned else None
    return name.decode(), shape, strides, (t.data or 0) + t.byte_offset, readonly
'''


def script(group: dict, params: dict, producer: str | None, consumer: str | None) -> str | None:
    array = array_of(params)
    if array is None or producer is None or array.size == 0:
        return None
    rule = group.get("rule") or "CAI-DLPACK-AGREE"
    context = ex.context_of(array)
    s = Script(f"agreement: {producer}'s DLPack capsule and its CAI for {context} [{rule}].")
    ex.header(s, group)
    ex.values(s, array)
    if not ex.library_export(s, producer, array):
        return None
    s.add(_DLPACK)
    s.add(
        f"""
        desc = obj.__cuda_array_interface__
        try:
            capsule = obj.__dlpack__(max_version=(1, 0))
        except TypeError:  # a producer that predates versioned capsules
            capsule = obj.__dlpack__()
        kind, shape, strides, data, readonly = capsule_view(capsule, dtype.itemsize)
        print("CAI:", desc)
        print(f"DLPack ({{kind}}): shape {{shape}} strides {{strides}} data {{data:#x}} read-only {{readonly}}")
        cai_strides = desc.get("strides") or np.empty(desc["shape"], dtype).strides
        dl_strides = strides or np.empty(shape, dtype).strides
        fields = [("shape", tuple(desc["shape"]), shape), ("strides", tuple(cai_strides), tuple(dl_strides)),
                  ("data", desc["data"][0], data)]
        if readonly is not None:  # an unversioned capsule has no read-only flag
            fields.append(("read-only", desc["data"][1], readonly))
        differs = [f"{{name}} {{a}} in the CAI and {{b}} in the {{kind}} capsule" for name, a, b in fields if a != b]
        if differs:
            by_cai = differ(read_back(desc), values)
            try:
                by_dl = differ(read_at(data, shape, dtype, dl_strides), values)
            except Exception as exc:  # a description no memory can hold
                by_dl = f"unreadable ({{type(exc).__name__}}: {{exc}})"
            verdict(True, f"{producer} exports two different arrays for {context}: {{'; '.join(differs)}}; "
                          f"read at the CAI: {{by_cai or 'the values written'}}; at the capsule: "
                          f"{{by_dl or 'the values written'}}; expected the same in both exports [{rule}]")
        verdict(False, f"{producer}'s {{kind}} capsule and CAI agree ({context})")
        """
    )
    return s.render()
