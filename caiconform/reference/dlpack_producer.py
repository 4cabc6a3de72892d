"""The reference producer's `__dlpack__` and `__dlpack_device__`, as the array API standard says.

`request(...)` is the pure part: it reads the four keywords of `__dlpack__` against the array's
own device (docs/spec/dlpack/array_api_dlpack.md) and says what to export, or raises as the text
asks. `export(array, ...)` does it for a `ReferenceArray`: orders the array's pending work before
the consumer's stream, copies where asked or needed, and builds the capsule with
`caiconform.reference.dlpack_export` (tracked deleter; the `Export` appended to
`array.dlpack_exports`, the owner kept alive until the deleter runs).

The keywords:
- `max_version`: None gives a legacy "dltensor" capsule; a major of 1 or more a
  "dltensor_versioned" one of DLPack 1.3 [DLPACK-VERSIONED-STRUCT] (for an older ask too: a
  version other than max_version is the producer's to choose [DLPACK-MAX-VERSION-RETURNED], and
  1.3 changed no field a 1.x consumer reads). Strides are always written, a C-contiguous
  array's too: a 1.2+ capsule of ndim != 0 may not have NULL ones [DLPACK-STRIDES-NONNULL], and
  a legacy or older consumer reads explicit strides as well as NULL ones.
- `stream` (CUDA): None is the legacy default stream [DLPACK-STREAM-NONE-LEGACY], 1 the legacy
  default stream, 2 the per-thread one, a larger integer a stream handle; the array's pending
  work (its scenario's streams) is made to precede the consumer's stream with an event each
  [DLPACK-STREAM-PRODUCER-SYNC]; -1 asks for no synchronization [DLPACK-STREAM-NO-SYNC];
  0 and values below -1 are refused (ValueError) [DLPACK-STREAM-ZERO-FORBIDDEN]. The stream is
  never kept or destroyed [DLPACK-STREAM-OWNERSHIP]. A device without streams (pinned host
  memory, a kDLCPU copy) takes only None, and the work is waited for on the host
  [DLPACK-STREAM-CPU-NONE, DLPACK-STREAM-DL-DEVICE-CPU].
- `dl_device`: None or the array's own device exports in place; kDLCPU gives a host copy (or
  the memory itself, for host memory); anything else is BufferError
  [DLPACK-DL-DEVICE-BUFFERERROR].
- `copy`: True always copies, on the consumer's stream [DLPACK-COPY-TRUE, DLPACK-COPY-ON-STREAM];
  False never does, BufferError where a copy is needed [DLPACK-COPY-FALSE]; None copies only for
  a kDLCPU request of device memory [DLPACK-COPY-NONE]. A copy carries IS_COPIED
  [DLPACK-COPY-FLAG]; an export of read-only memory READ_ONLY [DLPACK-READONLY-FLAG].
What DLPack cannot say is refused with BufferError [DLPACK-EXPORT-BUFFERERROR]: a non-native
byte order [DLPACK-BYTE-ORDER-REFUSED], raw-byte or structured types, strides that are no
multiple of the item size, a mask; and a read-only array asked for a legacy capsule, which has
no flags field to say so (a copy, writable, is exported).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from caiconform.dlpack.header import (
    IS_COPIED,
    NO_SYNC,
    READ_ONLY,
    STREAM_DEVICES,
    kDLCPU,
    kDLCUDA,
    kDLCUDAHost,
    kDLCUDAManaged,
)
from caiconform.reference import dlpack_export as dx

__all__ = ["Request", "request", "device_of", "export"]


@dataclass(frozen=True)
class Request:
    """What one `__dlpack__` call asks, read: `versioned` capsule or legacy; `stream` the
    consumer's stream to order the work before (None: no device-side ordering), `host_wait`
    whether to wait for the work on the host first; `to_host` export a kDLCPU view of the data;
    `copy` whether the export is a copy."""

    versioned: bool
    stream: int | None
    host_wait: bool
    to_host: bool
    copy: bool


def _stream_value(stream: Any, has_streams: bool) -> tuple[int | None, bool]:
    """(the stream to order before, wait on the host) for the `stream` keyword."""
    if stream is not None and (isinstance(stream, bool) or not isinstance(stream, int)):
        raise TypeError(f"stream must be None or an int, got {type(stream).__name__}")
    if not has_streams:
        if stream is not None:
            raise ValueError(
                f"stream={stream}: a device without streams takes only stream=None "
                f"[DLPACK-STREAM-CPU-NONE]"
            )
        return None, True
    if stream is None:
        return 1, False  # the legacy default stream [DLPACK-STREAM-NONE-LEGACY]
    if stream == 0:
        raise ValueError("stream=0 is disallowed for CUDA [DLPACK-STREAM-ZERO-FORBIDDEN]")
    if stream < NO_SYNC:
        raise ValueError(f"stream={stream}: the stream must be -1 or more [DLPACK-STREAM-MIN]")
    if stream == NO_SYNC:
        return None, False
    return stream, False


def request(
    own: tuple[int, int],
    *,
    stream: Any = None,
    max_version: Any = None,
    dl_device: Any = None,
    copy: bool | None = None,
    host_memory: bool = False,
) -> Request:
    """Read the keywords of `__dlpack__` for an array on device `own` ((type, id), as
    `__dlpack_device__` says); `host_memory`: its memory is host-accessible, so a kDLCPU
    export can alias it. Raises BufferError, ValueError or TypeError as the module docstring
    lists."""
    if max_version is None:
        versioned = False
    else:
        try:
            major = int(max_version[0])
            int(max_version[1])
        except (TypeError, ValueError, IndexError):
            raise ValueError(f"max_version must be (major, minor), got {max_version!r}") from None
        versioned = major >= 1
    if copy not in (None, True, False):
        raise ValueError(f"copy must be None, True or False, got {copy!r}")
    to_host = False
    if dl_device is not None:
        try:
            wanted = (int(dl_device[0]), int(dl_device[1]))
        except (TypeError, ValueError, IndexError):
            raise BufferError(f"dl_device {dl_device!r} is no (device_type, device_id)") from None
        if wanted == (kDLCPU, 0) and wanted != own:
            to_host = True
        elif wanted != own:
            raise BufferError(
                f"dl_device {wanted}: the reference producer exports on its own device {own} "
                f"or on kDLCPU (1, 0) [DLPACK-DL-DEVICE-BUFFERERROR]"
            )
    must_copy = to_host and not host_memory
    if must_copy and copy is False:
        raise BufferError(
            "copy=False, but a kDLCPU export of device memory needs a copy "
            "[DLPACK-COPY-FALSE-CPU-BUFFERERROR]"
        )
    has_streams = own[0] in STREAM_DEVICES and not to_host
    chosen, host_wait = _stream_value(stream, has_streams)
    return Request(
        versioned=versioned,
        stream=chosen,
        host_wait=host_wait,
        to_host=to_host,
        copy=bool(copy) or must_copy,
    )


def device_of(memory: str, device: int) -> tuple[int, int]:
    """The DLPack device of the reference producer's memory kind: CUDA managed memory
    (13, 0), pinned host memory (3, 0), any other kind the CUDA device (2, ordinal)."""
    from caiconform.cuda.memkinds import HOST_KINDS

    if memory == "managed":
        return kDLCUDAManaged, 0
    if memory in HOST_KINDS:
        return kDLCUDAHost, 0
    return kDLCUDA, int(device)


def _order(array: Any, req: Request) -> None:
    """Make the array's pending work precede what the consumer does next."""
    from caiconform.cuda.streams import synchronize_stream, wait_stream

    work = list(getattr(array, "_work", ()))
    if req.host_wait or req.to_host:
        for handle in work:
            synchronize_stream(handle)
    elif req.stream is not None:
        for handle in work:
            if handle != req.stream:
                wait_stream(req.stream, handle, array.device)


def _host_copy(array: Any) -> tuple[int, Any]:
    """(address, owner) of a host copy of the array's bytes, the layout's whole allocation
    (its work waited for)."""
    from caiconform.cuda.memory import copy_to_host

    host = copy_to_host(array.allocation.ptr, array.layout.allocation_bytes(array.itemsize))
    return host.ctypes.data, host


def _copy(array: Any, stream: int) -> tuple[int, Any]:
    """(address, owner) of a device copy of the array's whole allocation, made on `stream`
    (the consumer's) [DLPACK-COPY-ON-STREAM]."""
    from cuda.bindings import driver

    from caiconform.cuda.errors import call
    from caiconform.cuda.memory import DeviceBuffer

    nbytes = array.layout.allocation_bytes(array.itemsize)  # what was asked: no guard pages
    buf = DeviceBuffer(nbytes, array.device)
    call(
        driver.cuMemcpyDtoDAsync,
        driver.CUdeviceptr(buf.ptr),
        driver.CUdeviceptr(array.allocation.ptr),
        nbytes,
        driver.CUstream(stream),
    )
    return buf.ptr, buf


def export(
    array: Any,
    *,
    stream: Any = None,
    max_version: Any = None,
    dl_device: Any = None,
    copy: bool | None = None,
) -> Any:
    """`array.__dlpack__(...)` for a `ReferenceArray`: a capsule, its `Export` appended to
    `array.dlpack_exports`."""
    from caiconform.cuda.memkinds import HOST_KINDS

    own = device_of(array.memory, array.device)
    req = request(
        own,
        stream=stream,
        max_version=max_version,
        dl_device=dl_device,
        copy=copy,
        host_memory=array.memory in HOST_KINDS,
    )
    if array.mask is not None:
        raise BufferError("DLPack has no mask: an array exporting a mask cannot be exported")
    code = dx.dl_dtype(array.values.dtype, getattr(array, "dtype_name", None))
    strides = dx.element_strides(array.strides, array.itemsize)  # never NULL: see the docstring
    readonly = bool(array.readonly) and not req.copy
    if readonly and not req.versioned:
        raise BufferError(
            "a read-only array asked for a legacy capsule, which has no read-only flag "
            "(ask with max_version=(1, 0))"
        )
    size = math.prod(array.layout.shape)
    data, owner, device = array.ptr, array, own
    if req.copy and size and not req.to_host:  # a device copy, ordered after the work
        copy_stream = req.stream if req.stream is not None else 1
        _order(array, Request(req.versioned, copy_stream, False, False, True))
        base, owner = _copy(array, copy_stream)
        data, device = base + array.layout.offset, (kDLCUDA, int(array.device))
    else:
        _order(array, req)
    if req.to_host:
        device = (kDLCPU, 0)
        if req.copy and size:
            base, owner = _host_copy(array)
            data = base + array.layout.offset
    flags = (READ_ONLY if readonly else 0) | (IS_COPIED if req.copy else 0)
    capsule, record = dx.make_capsule(
        data if size else 0,
        array.layout.shape,
        code,
        device,
        strides=strides,
        versioned=req.versioned,
        flags=flags,
        owner=owner,
    )
    if getattr(array, "poison_on_release", False) and owner is array and size:
        record.on_release = lambda: _poison_when_last(array)
    array.dlpack_exports.append(record)
    return capsule


#: the byte the reference producer writes over an array's block when a consumer releases the
#: last tensor it held of it (`ReferenceArray.poison_on_release`): a read after that reads it
POISON = 0xA5


def _poison_when_last(array: Any) -> None:
    """Poison the block once no tensor of the array is held any more: a consumer may release
    one capsule (numba types a kernel argument with one) while it reads through another."""
    if all(export.released for export in array.dlpack_exports):
        _poison(array)


def _poison(array: Any) -> None:
    """Overwrite the array's whole allocation with POISON and wait for it: the block a
    consumer released is no longer the values, as a pool reusing it would make it."""
    from cuda.bindings import driver

    from caiconform.cuda.device import ensure_context
    from caiconform.cuda.errors import call

    ensure_context(array.device)
    nbytes = array.layout.allocation_bytes(array.itemsize)
    call(driver.cuMemsetD8, driver.CUdeviceptr(array.allocation.ptr), POISON, nbytes)
    call(driver.cuCtxSynchronize)
