"""The capsule validator: the judgement of a DLPack capsule by the capsule-visible DLPACK rules.

`check_capsule(capsule)` reads a "dltensor_versioned" or "dltensor" capsule with ctypes
(`caiconform.dlpack.header`'s structs) and returns one `Finding` per broken rule (the
catalogue's DLPACK- rules with `dict_visible`: what a capsule alone shows), in the form
`caiconform.validate` gives them. `check_dlpack(obj)` asks an object exposing `__dlpack__` for a
capsule as a consumer that needs no stream ordering does (a versioned capsule first:
`max_version=(1, 0)`, then the legacy call), judges its `__dlpack_device__` and the capsule, and
lets the capsule go, unconsumed, so its own destructor calls the producer's deleter. Neither
touches a device: only the capsule's own fields are read, each guarded before the next is used
(a NULL shape, an absurd ndim, a versioned struct of another major version are findings, never a
read past them). A versioned capsule is judged by its own version: NULL strides for ndim != 0
are a finding from DLPack 1.2 on only, and so is an enumeration value its minor version does not
define (a float8 code in a 1.0 capsule, kDLTrn in a 1.1 one). It lives with the vocabulary it
judges by: the reference consumer (`caiconform.reference.dlpack_import`), the checks and
`caiconform check` all judge a capsule with it.
"""

from __future__ import annotations

import ctypes
from typing import Any

from caiconform.dlpack.capsule import STRUCTS, capi, capsule_name, capsule_pointer
from caiconform.dlpack.devices import DeviceTupleError, dlpack_device
from caiconform.dlpack.header import (
    DEVICE_TYPES,
    IS_COPIED,
    IS_SUBBYTE_TYPE_PADDED,
    NO_SYNC,
    READ_ONLY,
    STREAM_DEVICES,
    STRIDES_REQUIRED_FROM,
    SUBBYTE_BITS,
    TYPE_CODES,
    VERSIONED,
    ZERO_ID_DEVICES,
    since_minor,
)
from caiconform.spec.findings import Finding, finding

__all__ = ["check_capsule", "check_dlpack", "MAX_NDIM"]

#: the most dimensions read from a capsule: an ndim beyond it is a finding, not a read of that
#: many shape entries from wherever the pointer leads
MAX_NDIM = 64
#: the flag bits dlpack.h defines: read-only, copied, sub-byte type padded
_KNOWN_FLAGS = READ_ONLY | IS_COPIED | IS_SUBBYTE_TYPE_PADDED
_EXPECTED_NAME = "a PyCapsule named 'dltensor_versioned' or 'dltensor'"

_get_destructor = capi("PyCapsule_GetDestructor", ctypes.c_void_p, ctypes.py_object)


def check_capsule(capsule: Any, *, asked_versioned: bool = False) -> list[Finding]:
    """Judge `capsule` against the capsule-visible DLPACK rules; [] when it breaks none.

    `asked_versioned`: the producer was asked with `max_version` of major 1, so an unversioned
    capsule is a DLPACK-VERSIONED-STRUCT finding. Never raises for anything `capsule` is.
    """
    return _judge(capsule, asked_versioned)[0]


def check_dlpack(obj: Any) -> tuple[list[Finding], str | None]:
    """Judge an object exposing `__dlpack__`: its `__dlpack_device__`, then the capsule it
    exports (`check_capsule`), and whether the capsule's device is the object's own.

    Returns (findings, None) when a capsule was judged, or (findings, why) when none was: the
    producer refused every call with BufferError (a refusal the array API standard asks for,
    e.g. non-native byte order: no finding), or raised something else (a
    DLPACK-EXPORT-BUFFERERROR finding). Nothing the object raises escapes.
    """
    findings: list[Finding] = []
    device = _device_of(obj, findings)
    # -1 ("no synchronization") first; a producer refusing it is asked with None, since
    # "Support for a stream value other than None is optional" [DLPACK-STREAM-OPTIONAL]
    streams: tuple[int | None, ...] = (None,)
    if device is not None and device[0] in STREAM_DEVICES:
        streams = (NO_SYNC, None)
    errors: list[str] = []
    refused: BaseException | None = None
    for stream in streams:
        for versioned in (True, False):
            kwargs: dict[str, Any] = {} if stream is None else {"stream": stream}
            if versioned:
                kwargs["max_version"] = (1, 0)
            try:
                capsule = obj.__dlpack__(**kwargs)
            except TypeError as exc:  # a signature without max_version: the legacy call next
                errors.append(f"{kwargs}: TypeError: {exc}")
                refused = exc
                continue
            except Exception as exc:  # noqa: BLE001 - a producer's refusal is what is judged
                errors.append(f"{kwargs}: {type(exc).__name__}: {exc}")
                refused = exc
                break
            judged, capsule_device = _judge(capsule, versioned)
            findings += judged
            if device is not None and capsule_device is not None and capsule_device != device:
                findings.append(
                    finding(
                        "DLPACK-DL-DEVICE-DEFAULT",
                        "dl_tensor.device",
                        f"{capsule_device}",
                        f"the object's own device {device} (__dlpack_device__)",
                    )
                )
            return findings, None
        if isinstance(refused, BufferError):
            break  # refused for what the array is, whatever the stream
    why = "__dlpack__ refused: " + "; ".join(errors)
    if refused is not None and not isinstance(refused, BufferError | TypeError):
        findings.append(
            finding(
                "DLPACK-EXPORT-BUFFERERROR",
                "__dlpack__()",
                f"raised {type(refused).__name__}",
                "BufferError for data that cannot be exported",
            )
        )
    return findings, why


def _device_of(obj: Any, findings: list[Finding]) -> tuple[int, int] | None:
    """`obj.__dlpack_device__()` as (device_type, device_id), or None with a finding: the
    answer must be a tuple of two ints (`dlpack_device`, exact)."""
    try:
        return dlpack_device(obj)
    except DeviceTupleError as exc:
        seen = exc.seen
    except Exception as exc:  # noqa: BLE001 - judged, not raised
        seen = f"raised {type(exc).__name__}"
    findings.append(
        finding("DLPACK-DEVICE-TUPLE", "__dlpack_device__()", seen, "(device_type, device_id)")
    )
    return None


def _judge(capsule: Any, asked_versioned: bool) -> tuple[list[Finding], tuple[int, int] | None]:
    """(findings, the tensor's device when its fields could be read)."""
    name = capsule_name(capsule)
    if name not in STRUCTS:
        if name is None:
            seen = f"a {type(capsule).__name__}, not a PyCapsule"
        else:
            used = " (already consumed)" if name.startswith(b"used_") else ""
            seen = f"a capsule named {name.decode(errors='replace')!r}{used}"
        return [finding("DLPACK-CAPSULE-NAME", "capsule", seen, _EXPECTED_NAME)], None
    found: list[Finding] = []
    if not _get_destructor(capsule):
        found.append(
            finding(
                "DLPACK-CAPSULE-DESTRUCTOR",
                "capsule",
                "no destructor (the deleter is never called if no consumer takes it)",
                "a destructor that calls the deleter of an unconsumed capsule",
            )
        )
    managed: Any = STRUCTS[name].from_address(capsule_pointer(capsule, name))
    version: tuple[int, int] | None = None
    flags = 0
    if name == VERSIONED:
        major, minor = int(managed.version.major), int(managed.version.minor)
        if major != 1:
            found.append(
                finding(
                    "DLPACK-VERSION-MAJOR-MISMATCH",
                    "version",
                    f"DLPack {major}.{minor}",
                    "major version 1 (another major's fields are not read; only its deleter "
                    "may be called)",
                )
            )
            return found, None
        version, flags = (major, minor), int(managed.flags)
        if flags & ~_KNOWN_FLAGS:
            found.append(
                finding(
                    "DLPACK-FLAGS-DEFAULT",
                    "flags",
                    f"{flags:#x}",
                    "only the read-only, copied and sub-byte-padded bits (0x7)",
                )
            )
    else:
        if asked_versioned:
            found.append(
                finding(
                    "DLPACK-VERSIONED-STRUCT",
                    "capsule",
                    "an unversioned 'dltensor' capsule, asked with max_version=(1, 0)",
                    "a 'dltensor_versioned' capsule (DLManagedTensorVersioned)",
                )
            )
    if not managed.deleter:  # allowed ("It can be NULL"), but the producer is never told
        found.append(
            finding(
                "DLPACK-DELETER-NULL",
                "deleter",
                "NULL: the producer is never told when the consumer is done with the tensor",
                "a deleter, unless the producer has no reasonable one (MAY)",
            )
        )
    tensor = managed.dl_tensor
    device = (int(tensor.device.device_type), int(tensor.device.device_id))
    code = int(tensor.dtype.code)
    found += _judge_device(device)
    found += _judge_dtype(code, int(tensor.dtype.bits), int(tensor.dtype.lanes))
    if flags & IS_SUBBYTE_TYPE_PADDED and code not in SUBBYTE_BITS:
        found.append(
            finding(
                "DLPACK-SUBBYTE-PADDED-FLAG",
                "flags",
                f"the sub-byte padded bit on {TYPE_CODES.get(code, f'code {code}')}",
                "the padded bit only on a float6 or float4 tensor",
            )
        )
    if version is not None:
        found += _judge_enum_values(version, code, device[0], flags)
    shape = _shape_of(tensor, found)
    if shape is not None:
        found += _judge_strides_given(tensor, version)
        found += _judge_layout(tensor, shape)
    return found, device


def _judge_enum_values(
    version: tuple[int, int], code: int, device_type: int, flags: int
) -> list[Finding]:
    """A versioned capsule's enumeration values its own minor version does not define
    [DLPACK-VERSION-ENUM-VALUES]: one finding naming each."""
    minor = version[1]
    newer = [
        f"{what} {value} (DLPack 1.{since})"
        for what, value in (("type code", code), ("device type", device_type))
        if (since := since_minor(what, value)) > minor
    ]
    newer += [
        f"flag {bit:#x} (DLPack 1.{since})"
        for bit in (READ_ONLY, IS_COPIED, IS_SUBBYTE_TYPE_PADDED)
        if flags & bit and (since := since_minor("flag", bit)) > minor
    ]
    if not newer:
        return []
    return [
        finding(
            "DLPACK-VERSION-ENUM-VALUES",
            "version",
            f"DLPack 1.{minor} with {', '.join(newer)}",
            f"only values DLPack 1.{minor} defines (or a capsule of the version that adds them)",
        )
    ]


def _judge_strides_given(tensor: Any, version: tuple[int, int] | None) -> list[Finding]:
    """NULL strides for ndim != 0 in a capsule of DLPack 1.2 or later [DLPACK-STRIDES-NONNULL];
    before 1.2, and in a legacy capsule, they mean compact row-major
    [DLPACK-STRIDES-NULL-LEGACY]."""
    ndim = int(tensor.ndim)
    if not ndim or tensor.strides or version is None or version < STRIDES_REQUIRED_FROM:
        return []
    return [
        finding(
            "DLPACK-STRIDES-NONNULL",
            "dl_tensor.strides",
            f"NULL with ndim {ndim} in a DLPack {version[0]}.{version[1]} capsule",
            f"ndim strides (NULL is allowed before DLPack "
            f"{STRIDES_REQUIRED_FROM[0]}.{STRIDES_REQUIRED_FROM[1]} only)",
        )
    ]


def _judge_device(device: tuple[int, int]) -> list[Finding]:
    kind, ident = device
    if kind not in DEVICE_TYPES:
        return [
            finding(
                "DLPACK-DEVICE-TYPE", "dl_tensor.device", f"device type {kind}", "a DLDeviceType"
            )
        ]
    if kind in ZERO_ID_DEVICES and ident != 0:
        return [
            finding(
                "DLPACK-DEVICE-ID-ZERO",
                "dl_tensor.device",
                f"device type {kind} with device_id {ident}",
                "device_id 0 for CPU, pinned and managed memory",
            )
        ]
    return []


def _judge_dtype(code: int, bits: int, lanes: int) -> list[Finding]:
    seen = f"code {code}, bits {bits}, lanes {lanes}"
    if code not in TYPE_CODES:
        return [finding("DLPACK-DTYPE-CODE", "dl_tensor.dtype", seen, "a DLDataTypeCode (0-17)")]
    if bits == 0 or lanes == 0:
        return [finding("DLPACK-DTYPE-BITS", "dl_tensor.dtype", seen, "bits and lanes above 0")]
    if code == 6 and (bits, lanes) != (8, 1):
        return [finding("DLPACK-DTYPE-BOOL", "dl_tensor.dtype", seen, "bool as bits 8, lanes 1")]
    wanted = SUBBYTE_BITS.get(code)
    if wanted is not None and bits != wanted:
        return [
            finding(
                "DLPACK-DTYPE-FP4-BITS" if wanted == 4 else "DLPACK-DTYPE-SUBBYTE-BITS",
                "dl_tensor.dtype",
                seen,
                f"bits {wanted} for {TYPE_CODES[code]}",
            )
        ]
    return []


def _shape_of(tensor: Any, found: list[Finding]) -> tuple[int, ...] | None:
    """The tensor's shape, or None with a DLPACK-SHAPE finding when it cannot be read."""
    ndim = int(tensor.ndim)
    if ndim < 0 or ndim > MAX_NDIM:
        found.append(
            finding("DLPACK-SHAPE", "dl_tensor.ndim", str(ndim), f"0 to {MAX_NDIM} dimensions")
        )
        return None
    if ndim and not tensor.shape:
        found.append(
            finding("DLPACK-SHAPE", "dl_tensor.shape", f"NULL with ndim {ndim}", "ndim extents")
        )
        return None
    shape = tuple(int(tensor.shape[i]) for i in range(ndim))
    bad = [i for i, extent in enumerate(shape) if extent < 0]
    if bad:
        found.append(
            finding(
                "DLPACK-SHAPE",
                f"dl_tensor.shape[{bad[0]}]",
                str(shape[bad[0]]),
                "an extent of 0 or more",
            )
        )
        return None
    return shape


def _judge_layout(tensor: Any, shape: tuple[int, ...]) -> list[Finding]:
    found: list[Finding] = []
    data, offset = int(tensor.data or 0), int(tensor.byte_offset)
    size = 1
    for extent in shape:
        size *= extent
    if size == 0 and data:
        found.append(
            finding("DLPACK-ZERO-SIZE-NULL", "dl_tensor.data", f"{data:#x} for size 0", "NULL")
        )
    if size and not data:
        found.append(
            finding("DLPACK-DATA-NONNULL", "dl_tensor.data", f"NULL for size {size}", "a pointer")
        )
    if data + offset >= 2**64:
        found.append(
            finding(
                "DLPACK-BYTE-OFFSET",
                "dl_tensor.byte_offset",
                f"{offset:#x} past data {data:#x}",
                "data + byte_offset within the 64-bit address space",
            )
        )
    if size and shape and tensor.strides:
        itemsize = max(1, (int(tensor.dtype.bits) * int(tensor.dtype.lanes) + 7) // 8)
        strides = [int(tensor.strides[i]) for i in range(len(shape))]
        span = sum(abs(s) * (n - 1) for s, n in zip(strides, shape, strict=True)) * itemsize
        if span >= 2**63:
            found.append(
                finding(
                    "DLPACK-STRIDES-ELEMENTS",
                    "dl_tensor.strides",
                    f"{tuple(strides)} spanning {span} bytes",
                    "element strides whose extent fits in 64 bits",
                )
            )
    return found
