"""The reference DLPack consumer: read a producer's capsule directly, with no library between.

`import_dlpack(obj)` does what the array API standard's `from_dlpack` asks of a consumer
(docs/spec/dlpack/array_api_dlpack.md), in an order that never reads a field before the ones
guarding it:
1. `obj.__dlpack_device__()`; for a device with streams, the consumer's own stream on it (the
   reference CAI consumer's, `caiconform.reference.consumer`): the stream the elements are read
   on, so it is the one passed [DLPACK-STREAM-PRODUCER-SYNC]; never 0 [DLPACK-STREAM-ZERO-
   FORBIDDEN]. Whatever the two methods raise propagates [DLPACK-FROM-DLPACK-PROPAGATES].
2. `obj.__dlpack__(stream=..., max_version=(1, 3))`, the legacy call after a TypeError.
3. The capsule judged by `caiconform.dlpack.validate.check_capsule` (name, version, dtype,
   device, shape, strides, byte_offset) before anything is read through it, by its own
   version: capsules of DLPack 1.0 to 1.3 are read alike, NULL strides as compact row-major
   before 1.2 [DLPACK-STRIDES-NULL-LEGACY], a 1.2+ capsule of ndim != 0 without strides
   refused [DLPACK-STRIDES-NONNULL].
4. Ownership taken: the capsule renamed to "used_dltensor(_versioned)" [DLPACK-CONSUMER-RENAME];
   from here on the deleter is called exactly once, whatever happens [DLPACK-DELETER-ONCE,
   DLPACK-CONSUMER-CALLS-DELETER], a capsule of another major version included (only its deleter
   is touched) [DLPACK-VERSION-MAJOR-MISMATCH, DLPACK-CONSUMER-VERIFIES-VERSION].
5. The elements read into host memory (`caiconform.reference.dlpack_read`): CUDA memory
   through the reference CAI consumer (the capsule's description as a CAI dict: it checks every
   byte lies in one allocation before it reads, on the stream passed in 1.), host memory
   (kDLCPU) with numpy.
A capsule the consumer will not read raises `ConsumerRefused` with findings naming the rules.
A float6/float4 code with other bits stops the import [DLPACK-DTYPE-SUBBYTE-BITS,
DLPACK-DTYPE-FP4-BITS]; elements with no numpy type (bfloat16, float8) are read as raw bytes of
their size; float6/float4 elements (packed or padded) and vector types are not read: refused
as a type this consumer does not hold [DLPACK-PORT-DTYPE].
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from caiconform.dlpack.capsule import Capsule, capsule_name, read_capsule
from caiconform.dlpack.devices import DeviceTupleError, dlpack_device
from caiconform.dlpack.elements import UnreadableType, element_type
from caiconform.dlpack.header import (
    HEADER_VERSION,
    LEGACY,
    STREAM_DEVICES,
    VERSIONED,
    kDLCPU,
    kDLCUDA,
    kDLCUDAHost,
    kDLCUDAManaged,
)
from caiconform.reference import dlpack_export as dx
from caiconform.reference.consumer import ConsumerRefused
from caiconform.spec.findings import Finding, finding

__all__ = ["import_dlpack", "DLPackImport", "MAX_VERSION", "READABLE_DEVICES"]

#: the newest DLPack version the reference consumer reads (dlpack.h 1.3, `header.HEADER_VERSION`)
MAX_VERSION = HEADER_VERSION
#: device types whose memory the reference consumer reads: kDLCPU, kDLCUDA, kDLCUDAHost,
#: kDLCUDAManaged
READABLE_DEVICES = (kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged)
#: what check_capsule reports that leaves the capsule readable: a producer's shortcoming that
#: does not change what the elements are
_READABLE_ANYWAY = frozenset(
    {
        "DLPACK-CAPSULE-DESTRUCTOR",
        "DLPACK-VERSIONED-STRUCT",
        "DLPACK-FLAGS-DEFAULT",
        "DLPACK-ZERO-SIZE-NULL",
        "DLPACK-DELETER-NULL",
        "DLPACK-VERSION-ENUM-VALUES",  # values of a newer minor version: this consumer knows 1.3
        "DLPACK-SUBBYTE-PADDED-FLAG",  # a padded bit on a whole-byte type changes no element
    }
)


@dataclass
class DLPackImport:
    """What the reference consumer read: `values` (host array of the capsule's shape),
    `capsule` (the parsed fields), `stream` (the one passed to `__dlpack__`), `calls` (the
    keyword arguments of each `__dlpack__` call), `warnings` (findings that did not stop the
    read), `deleter_called` (False only for a NULL deleter)."""

    values: np.ndarray
    capsule: Capsule
    stream: int | None
    calls: list[dict] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    deleter_called: bool = True

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.values if dtype is None else self.values.astype(dtype)


def _stream_for(device: tuple[int, int]) -> int | None:
    """The consumer's own stream on a device with streams, else None."""
    if device[0] not in STREAM_DEVICES:
        return None
    from caiconform.cuda.device import current_device, ensure_context
    from caiconform.reference.consumer import _own_stream

    ordinal = device[1] if device[0] == kDLCUDA else current_device()
    ensure_context(ordinal)
    return _own_stream(ordinal)


def _device_of(obj: Any) -> tuple[int, int]:
    """The object's device, any pair read (`dlpack_device`, not exact); what the method raises
    propagates [DLPACK-FROM-DLPACK-PROPAGATES]; ConsumerRefused for an answer that is no pair."""
    try:
        return dlpack_device(obj, exact=False)
    except DeviceTupleError as exc:
        raise ConsumerRefused(
            [
                finding(
                    "DLPACK-DEVICE-TUPLE",
                    "__dlpack_device__()",
                    exc.seen,
                    "(device_type, device_id)",
                )
            ]
        ) from None


def _ask(obj: Any, stream: int | None, calls: list[dict]) -> tuple[Any, bool]:
    """(capsule, asked for a versioned one): max_version first, the legacy call after a
    TypeError."""
    kwargs: dict[str, Any] = {"stream": stream, "max_version": MAX_VERSION}
    calls.append(dict(kwargs))
    try:
        return obj.__dlpack__(**kwargs), True
    except TypeError:
        legacy = {"stream": stream} if stream is not None else {}
        calls.append(dict(legacy))
        return obj.__dlpack__(**legacy), False


def import_dlpack(obj: Any) -> DLPackImport:
    """Import `obj` (anything with `__dlpack__` and `__dlpack_device__`) as the module
    docstring says; ConsumerRefused for a capsule it will not read."""
    from caiconform.dlpack.validate import check_capsule
    from caiconform.reference.dlpack_read import read_elements

    device = _device_of(obj)
    stream = _stream_for(device)
    calls: list[dict] = []
    capsule, asked_versioned = _ask(obj, stream, calls)
    found = check_capsule(capsule, asked_versioned=asked_versioned)
    name = capsule_name(capsule)
    if name not in (VERSIONED, LEGACY):  # not ours to take: nothing is renamed or called
        raise ConsumerRefused(found)
    refusing = [f for f in found if f.rule not in _READABLE_ANYWAY]
    parsed = None
    if not refusing:
        parsed = read_capsule(capsule)  # judged above: its fields can be read
    versioned = name == VERSIONED
    address = dx.consume_name(capsule)
    try:
        if parsed is None:
            raise ConsumerRefused(refusing)
        if parsed.device[0] not in READABLE_DEVICES:
            raise ConsumerRefused(
                [
                    finding(
                        "DLPACK-DEVICE-TYPE",
                        "dl_tensor.device",
                        f"device type {parsed.device[0]}",
                        f"memory the reference consumer reads {READABLE_DEVICES}",
                    )
                ]
            )
        try:
            dtype = element_type(parsed)
        except UnreadableType as exc:
            raise ConsumerRefused(
                [finding(exc.rule, "dl_tensor.dtype", exc.seen, exc.expected)]
            ) from None
        values = read_elements(parsed, dtype)  # on our own stream, passed: nothing to wait for
    except BaseException:
        dx.call_deleter(address, versioned)  # refused or failed: released all the same
        raise
    called = dx.call_deleter(address, versioned)  # read: the tensor is no longer needed
    warnings = [f for f in found if f.rule in _READABLE_ANYWAY]
    return DLPackImport(values, parsed, stream, calls, warnings, called)
