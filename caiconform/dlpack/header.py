"""dlpack.h's vocabulary, written once: its structs in ctypes, its enums and flag bits, the
capsule names of the Python specification, and the C exchange API's function table.

Everything else in caiconform that lays out, reads or names a DLPack struct takes it from here
(docs/spec/dlpack/dlpack_h.md is the header's text, DLPack 1.3, whose C exchange API at the end is
docs/spec/dlpack/dlpack_h_exchange_api.md; the structs are laid out as in 1.0). A versioned
capsule says the minor version it follows, and minor versions add enumeration values
(`SINCE_MINOR`), so what a value means can depend on the capsule's own version: NULL strides,
for one, are allowed before 1.2 only (`STRIDES_REQUIRED_FROM`). The ctypes field names are
dlpack.h's, so a field read here reads as the header does; function pointers that caiconform
calls itself (`deleter`) are `c_void_p`, cast to `Deleter` at the call, since a struct built
here stores a plain address in them.
"""

from __future__ import annotations

import ctypes

__all__ = [
    "HEADER_VERSION",
    "DLPackVersion",
    "DLDevice",
    "DLDataType",
    "DLTensor",
    "DLManagedTensor",
    "DLManagedTensorVersioned",
    "Deleter",
    "READ_ONLY",
    "IS_COPIED",
    "IS_SUBBYTE_TYPE_PADDED",
    "TYPE_CODES",
    "SUBBYTE_BITS",
    "SINCE_MINOR",
    "since_minor",
    "STRIDES_REQUIRED_FROM",
    "kDLCPU",
    "kDLCUDA",
    "kDLCUDAHost",
    "kDLOpenCL",
    "kDLVulkan",
    "kDLMetal",
    "kDLVPI",
    "kDLROCM",
    "kDLROCMHost",
    "kDLExtDev",
    "kDLCUDAManaged",
    "kDLOneAPI",
    "kDLWebGPU",
    "kDLHexagon",
    "kDLMAIA",
    "kDLTrn",
    "DEVICE_TYPES",
    "STREAM_DEVICES",
    "ZERO_ID_DEVICES",
    "VERSIONED",
    "LEGACY",
    "USED_VERSIONED",
    "USED_LEGACY",
    "NO_SYNC",
    "EXCHANGE_API_NAME",
    "EXCHANGE_API_ATTRIBUTE",
    "SetError",
    "DLPackManagedTensorAllocator",
    "DLPackManagedTensorFromPyObjectNoSync",
    "DLPackManagedTensorToPyObjectNoSync",
    "DLPackDLTensorFromPyObjectNoSync",
    "DLPackCurrentWorkStream",
    "DLPackExchangeAPIHeader",
    "DLPackExchangeAPI",
    "EXCHANGE_API_ENTRIES",
]

#: (DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION) of the header this vocabulary follows
HEADER_VERSION = (1, 3)

# --- DLDeviceType ---------------------------------------------------------------------------
kDLCPU = 1
kDLCUDA = 2
kDLCUDAHost = 3
kDLOpenCL = 4
kDLVulkan = 7
kDLMetal = 8
kDLVPI = 9
kDLROCM = 10
kDLROCMHost = 11
kDLExtDev = 12
kDLCUDAManaged = 13
kDLOneAPI = 14
kDLWebGPU = 15
kDLHexagon = 16
kDLMAIA = 17
kDLTrn = 18
#: DLDeviceType value -> its name in dlpack.h; a device type not here is none of dlpack.h's
DEVICE_TYPES = {
    kDLCPU: "kDLCPU",
    kDLCUDA: "kDLCUDA",
    kDLCUDAHost: "kDLCUDAHost",
    kDLOpenCL: "kDLOpenCL",
    kDLVulkan: "kDLVulkan",
    kDLMetal: "kDLMetal",
    kDLVPI: "kDLVPI",
    kDLROCM: "kDLROCM",
    kDLROCMHost: "kDLROCMHost",
    kDLExtDev: "kDLExtDev",
    kDLCUDAManaged: "kDLCUDAManaged",
    kDLOneAPI: "kDLOneAPI",
    kDLWebGPU: "kDLWebGPU",
    kDLHexagon: "kDLHexagon",
    kDLMAIA: "kDLMAIA",
    kDLTrn: "kDLTrn",
}
#: the device types whose `__dlpack__` takes a stream (array API `__dlpack__`, stream: CUDA,
#: ROCm and CUDA managed memory)
STREAM_DEVICES = frozenset({kDLCUDA, kDLROCM, kDLCUDAManaged})
#: the device types whose device_id dlpack.h sets to 0: "vanilla CPU memory, pinned memory, or
#: managed memory"
ZERO_ID_DEVICES = frozenset({kDLCPU, kDLCUDAHost, kDLROCMHost, kDLCUDAManaged})

# --- DLDataTypeCode -------------------------------------------------------------------------
#: DLDataTypeCode value -> its name (kDLInt ... kDLFloat4_e2m1fn, less the prefix)
TYPE_CODES = {
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
#: the sub-byte float codes -> the bits dlpack.h gives them ("Setting bits != 6 is currently
#: unspecified ... the consumer must stop importing if the value is unexpected")
SUBBYTE_BITS = {15: 6, 16: 6, 17: 4}

# --- DLManagedTensorVersioned.flags ---------------------------------------------------------
READ_ONLY = 1 << 0  # DLPACK_FLAG_BITMASK_READ_ONLY
IS_COPIED = 1 << 1  # DLPACK_FLAG_BITMASK_IS_COPIED
IS_SUBBYTE_TYPE_PADDED = 1 << 2  # DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED

# --- what each minor version of major 1 added ----------------------------------------------
#: ("type code" | "device type" | "flag", value) -> the first minor version of DLPack 1 whose
#: header defines it; a value not here is in 1.0's (dmlc/dlpack's releases: 1.1 added the
#: float8/float6/float4 codes and the sub-byte padded flag, kDLTrn came after 1.1, with 1.2)
SINCE_MINOR = {
    **{("type code", code): 1 for code in range(7, 18)},
    ("flag", IS_SUBBYTE_TYPE_PADDED): 1,
    ("device type", kDLTrn): 2,
}
#: the first minor version of DLPack 1 in which strides may not be NULL for ndim != 0 (dlpack.h
#: 1.3, DLTensor.strides: "This is not allowed in DLPack v1.2 and later")
STRIDES_REQUIRED_FROM = (1, 2)


def since_minor(kind: str, value: int) -> int:
    """The first minor version of DLPack 1 that defines `value` of `kind` ("type code",
    "device type", "flag"): 0 for what 1.0 had (and for values dlpack.h does not define,
    which other rules judge)."""
    return SINCE_MINOR.get((kind, value), 0)


# --- capsule names (docs/spec/dlpack/python_spec.md), the no-sync stream (array API) --------
VERSIONED = b"dltensor_versioned"
LEGACY = b"dltensor"
USED_VERSIONED = b"used_dltensor_versioned"
USED_LEGACY = b"used_dltensor"
#: the `stream` that asks for no synchronization (array API `__dlpack__`: "the producer must
#: not perform any synchronization")
NO_SYNC = -1


# --- the structs ----------------------------------------------------------------------------
class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


#: `void (*deleter)(DLManagedTensor(Versioned)* self)`, taking the struct's bare address
Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

# --- the C exchange API (DLPack 1.3: `__dlpack_c_exchange_api__`) ----------------------------
#: the capsule the type attribute holds, and the attribute, looked up on the type
EXCHANGE_API_NAME = b"dlpack_exchange_api"
EXCHANGE_API_ATTRIBUTE = "__dlpack_c_exchange_api__"

_TensorP = ctypes.POINTER(DLTensor)
_VersionedP = ctypes.POINTER(DLManagedTensorVersioned)
#: `void (*SetError)(void* error_ctx, const char* kind, const char* message)`
SetError = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p)
DLPackManagedTensorAllocator = ctypes.CFUNCTYPE(
    ctypes.c_int, _TensorP, ctypes.POINTER(_VersionedP), ctypes.c_void_p, SetError
)
DLPackManagedTensorFromPyObjectNoSync = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_VersionedP)
)
DLPackManagedTensorToPyObjectNoSync = ctypes.CFUNCTYPE(
    ctypes.c_int, _VersionedP, ctypes.POINTER(ctypes.c_void_p)
)
DLPackDLTensorFromPyObjectNoSync = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, _TensorP)
#: the device type is a DLDeviceType, an int32
DLPackCurrentWorkStream = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p)
)


class DLPackExchangeAPIHeader(ctypes.Structure):
    pass


DLPackExchangeAPIHeader._fields_ = [
    ("version", DLPackVersion),
    ("prev_api", ctypes.POINTER(DLPackExchangeAPIHeader)),
]

#: the function table's entries after its header, in dlpack.h's order
EXCHANGE_API_ENTRIES = (
    ("managed_tensor_allocator", DLPackManagedTensorAllocator),
    ("managed_tensor_from_py_object_no_sync", DLPackManagedTensorFromPyObjectNoSync),
    ("managed_tensor_to_py_object_no_sync", DLPackManagedTensorToPyObjectNoSync),
    ("dltensor_from_py_object_no_sync", DLPackDLTensorFromPyObjectNoSync),
    ("current_work_stream", DLPackCurrentWorkStream),
)


class DLPackExchangeAPI(ctypes.Structure):
    _fields_ = [("header", DLPackExchangeAPIHeader), *EXCHANGE_API_ENTRIES]
