"""The safe reference consumer: refuse what is invalid, read what is valid, never fault.

Order of business (docs/internals.md, Validate first): validate the dict (pure Python); ask the driver what the
pointer is (cuPointerGetAttributes answers for any address); check that every byte the layout
reaches lies in one allocation (cuMemGetAddressRange); vet the stream handle before the driver
sees it; honour the stream (host synchronize, or an event wait enqueued on the consumer's own
stream); only then read, through the gather or checksum kernel. Every refusal is a
`ConsumerRefused` carrying findings with rule IDs; a malformed dict can therefore never make a
kernel touch memory outside an allocation and leave a sticky error in the context.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from caiconform.spec.findings import Finding, finding
from caiconform.spec.layout import byte_extent, c_strides

__all__ = ["consume", "ConsumerRefused", "ConsumeResult", "SYNC_MODES", "inspect_dict"]

#: host: cuStreamSynchronize on the exported stream before reading; enqueue: the consumer's
#: own stream waits on an event recorded on the exported stream; ignore: no synchronization
#: (the user opt-out of CAI-SYNC-CONSUMER-IGNORE, the control that shows a race is real).
SYNC_MODES = ("host", "enqueue", "ignore")


class ConsumerRefused(Exception):
    """The consumer would not read the object; `findings` say which rules it breaks."""

    def __init__(self, findings: list[Finding]) -> None:
        self.findings = list(findings)
        self.rules = [f.rule for f in self.findings]
        super().__init__("; ".join(f.message for f in self.findings) or "refused")


@dataclass
class ConsumeResult:
    """What the consumer read.

    `values`: host array of the logical shape (None when a checksum was taken instead);
    `checksum`: (plain, weighted) as `caiconform.cuda.kernels.host_checksum` computes;
    `owner`: the producer object, held as `numba.cuda.as_cuda_array` holds it
    [CAI-LIFETIME-DATA-HELD]; `warnings`: non-MUST findings of the validator; `pointer`, the
    driver's PointerInfo; `allocation`: (base, size) holding the extent; `stream`: the stream
    honoured (None when there was none or it was ignored); `mask`: the mask's values, if any.
    """

    values: np.ndarray | None
    owner: Any
    interface: dict
    checksum: tuple[int, int] | None = None
    mask: np.ndarray | None = None
    warnings: list[Finding] = field(default_factory=list)
    pointer: Any = None
    allocation: tuple[int, int] | None = None
    stream: int | None = None

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """The values, so `np.asarray(result)` works where an adapter expects an array."""
        if self.values is None:
            raise ValueError("this result holds a checksum, not the values")
        return self.values if dtype is None else self.values.astype(dtype)


@dataclass(frozen=True)
class _Plan:
    """A validated dict reduced to what reading needs."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: np.dtype
    ptr: int
    stream: int | None
    mask: Any
    version: int

    @property
    def count(self) -> int:
        return math.prod(self.shape)


def _interface(obj: Any) -> dict:
    if type(obj) is dict:
        return obj
    try:
        d = obj.__cuda_array_interface__
    except Exception as exc:
        raise ConsumerRefused(
            [finding("CAI-ATTR-DICT", "", f"{type(exc).__name__} reading the attribute", "a dict")]
        ) from None
    if type(d) is not dict:
        raise ConsumerRefused([finding("CAI-ATTR-DICT", "", type(d).__name__, "a dict")])
    return d


def _with_fields(dtype: np.dtype, descr: Any) -> np.dtype:
    """`dtype` (raw bytes `V<n>`) with the named fields `descr` gives them, when it gives any
    of that item size: a structured export keeps its fields [CAI-PORT-DESCR-FIELDS]. Object
    fields are refused [CAI-DESCR-OBJECT-REFUSED]: device memory holds no object of ours."""
    if dtype.kind == "O":
        raise ConsumerRefused(
            [finding("CAI-DESCR-OBJECT-REFUSED", "typestr", dtype.str, "no object kind")]
        )
    from caiconform.spec.dtypes import descr_dtype

    # a descr numpy cannot build was judged by the validator; the bytes are kept
    fields = descr_dtype(descr) if dtype.kind == "V" else None
    if fields is None:
        return dtype
    if fields.hasobject:
        raise ConsumerRefused(
            [finding("CAI-DESCR-OBJECT-REFUSED", "descr", repr(descr), "no object fields")]
        )
    if fields.names is None or fields.itemsize != dtype.itemsize:
        return dtype
    return fields


def inspect_dict(d: dict) -> tuple[_Plan, list[Finding]]:
    """Validate `d` and reduce it to a reading plan; ConsumerRefused on any MUST finding."""
    from caiconform.spec.validate import validate

    report = validate(d)
    if not report.ok:
        raise ConsumerRefused(report.errors)
    warnings = [f for f in report.findings if f not in report.errors]
    try:
        dtype = np.dtype(d["typestr"])
    except TypeError as exc:
        raise ConsumerRefused(
            [finding("CAI-TYPESTR-GRAMMAR", "typestr", repr(d["typestr"]), f"numpy dtype ({exc})")]
        ) from None
    dtype = _with_fields(dtype, d.get("descr"))
    shape = tuple(int(n) for n in d["shape"])
    strides = d.get("strides")
    strides = (
        c_strides(shape, dtype.itemsize) if strides is None else tuple(int(s) for s in strides)
    )
    version = int(d["version"])
    stream = d.get("stream") if version >= 3 else None
    return (
        _Plan(
            shape=shape,
            strides=strides,
            dtype=dtype,
            ptr=int(d["data"][0]),
            stream=None if stream is None else int(stream),
            mask=d.get("mask") if version >= 1 else None,
            version=version,
        ),
        warnings,
    )


def _check_pointer(plan: _Plan) -> tuple[Any, tuple[int, int]]:
    """Driver checks on the pointer and the extent; ConsumerRefused with the rule broken."""
    from caiconform.cuda.memory import address_range, pointer_info

    lo, hi = byte_extent(plan.shape, plan.strides, plan.dtype.itemsize)
    first, last = plan.ptr + lo, plan.ptr + hi
    if first < 0 or last > 2**64:
        raise ConsumerRefused(
            [
                finding(
                    "CAI-DATA-EXTENT-IN-ALLOCATION",
                    "data[0]",
                    f"bytes [{first:#x}, {last:#x}) outside the address space",
                    "every byte reached inside one allocation",
                )
            ]
        )
    info = pointer_info(plan.ptr)
    if not info.device_accessible:
        raise ConsumerRefused(
            [
                finding(
                    "CAI-DATA-DEVICE-ACCESSIBLE",
                    "data[0]",
                    f"{plan.ptr:#x} is {info.memory_type} memory",
                    "device, managed or mapped pinned memory",
                )
            ]
        )
    found = address_range(first)
    if found is None:
        raise ConsumerRefused(
            [
                finding(
                    "CAI-DATA-EXTENT-IN-ALLOCATION",
                    "data[0]",
                    f"lowest byte {first:#x} in no allocation",
                    "every byte reached inside one allocation",
                )
            ]
        )
    base, size = found
    if last > base + size:
        raise ConsumerRefused(
            [
                finding(
                    "CAI-DATA-EXTENT-IN-ALLOCATION",
                    "data[0]",
                    f"bytes [{first:#x}, {last:#x}) end {last - base - size} bytes past "
                    f"allocation [{base:#x}, {base + size:#x})",
                    "every byte reached inside one allocation",
                )
            ]
        )
    return info, (base, size)


def _owning_device(ptr: int) -> int | None:
    """Ordinal of the device whose memory `ptr` is, or None for any other kind of pointer.

    The consumer reads device memory on the device that owns it: the address range, the
    producer's stream and the gather kernel all belong to that device's context, so a device-1
    array consumed while device 0 is current needs neither peer access nor a wrong-context query.
    """
    from caiconform.cuda.errors import CUDAError
    from caiconform.cuda.memory import pointer_info

    try:
        info = pointer_info(ptr)
    except CUDAError:  # _check_pointer asks again and refuses with the rule
        return None
    return info.device if info.memory_type == "device" else None


_own_streams = threading.local()


def _own_stream(device: int) -> int:
    """This thread's consumer stream on `device` (non-blocking, created once)."""
    from caiconform.cuda.streams import OwnedStream

    streams = getattr(_own_streams, "by_device", None)
    if streams is None:
        streams = _own_streams.by_device = {}
    if device not in streams:
        streams[device] = OwnedStream(device)
    return streams[device].handle


def _honour_stream(plan: _Plan, sync: str, own: int, device: int) -> int | None:
    from caiconform.cuda.streams import stream_status, synchronize_stream, wait_stream

    if plan.stream is None or sync == "ignore":
        return None
    ok, why = stream_status(plan.stream)
    if not ok:
        raise ConsumerRefused(
            [finding("CAI-STREAM-LIVE", "stream", why, "a live stream: 1, 2 or a cudaStream_t")]
        )
    if sync == "host":
        synchronize_stream(plan.stream)
    else:
        wait_stream(own, plan.stream, device)
    return plan.stream


def _read(plan: _Plan, own: int, device: int, checksum: bool) -> tuple[Any, Any]:
    from caiconform.cuda import kernels
    from caiconform.cuda.memory import DeviceBuffer, memset

    itemsize = plan.dtype.itemsize
    if checksum:
        out = DeviceBuffer(16, device)
        memset(out.ptr, 0, 16, stream=own)
        kernels.checksum(
            out.ptr, plan.ptr, plan.shape, plan.strides, itemsize, stream=own, device=device
        )
        plain, weighted = out.to_host(stream=own).view("<u8")
        return None, (int(plain), int(weighted))
    buf = DeviceBuffer(plan.count * itemsize, device)
    kernels.gather(buf.ptr, plan.ptr, plan.shape, plan.strides, itemsize, stream=own, device=device)
    raw = buf.to_host(stream=own)
    return raw.view(plan.dtype).reshape(plan.shape), None


def consume(
    obj: Any,
    *,
    sync: str = "host",
    checksum_over: int | None = None,
    device: int | None = None,
) -> ConsumeResult:
    """Read `obj` (an object exposing `__cuda_array_interface__`, or the dict itself) safely.

    sync: one of SYNC_MODES. checksum_over: when the array has at least this many elements,
    return an on-device checksum instead of the values (for multi-GiB arrays). device: the
    consumer's device (default: the current one). Raises ConsumerRefused for input that breaks
    a MUST rule or that the driver shows cannot be read; CUDAError only for driver failures.
    """
    if sync not in SYNC_MODES:
        raise ValueError(f"sync must be one of {SYNC_MODES}, got {sync!r}")
    d = _interface(obj)
    plan, warnings = inspect_dict(d)
    result = ConsumeResult(values=None, owner=obj, interface=d, warnings=warnings)
    if plan.count == 0 or plan.dtype.itemsize == 0:
        # frombuffer keeps a non-native byte order that np.empty drops for some kinds (>m8)
        empty = np.frombuffer(b"", dtype=plan.dtype) if plan.dtype.itemsize else None
        result.values = (
            empty.reshape(plan.shape) if empty is not None and plan.count == 0
            else np.empty(plan.shape, dtype=plan.dtype)
        )  # fmt: skip
        return result
    from caiconform.cuda.device import current_device, ensure_context

    home = current_device() if device is None else ensure_context(device)
    owner = _owning_device(plan.ptr)
    device = home if owner is None or owner == home else ensure_context(owner)
    try:
        result.pointer, result.allocation = _check_pointer(plan)
        mask = None
        if plan.mask is not None:
            mask = consume(plan.mask, sync=sync, device=device).values
        own = _own_stream(device)
        result.stream = _honour_stream(plan, sync, own, device)
        use_checksum = checksum_over is not None and plan.count >= checksum_over
        result.values, result.checksum = _read(plan, own, device, use_checksum)
        result.mask = mask
    finally:
        if device != home:
            ensure_context(home)
    return result
