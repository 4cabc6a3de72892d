"""Device memory: allocate, free, copy, and ask the driver what a pointer is.

The reference consumer must learn where a pointer lives *without* touching the bytes, so a
malformed dict cannot fault: `pointer_info` uses cuPointerGetAttributes, which answers for any
address (unknown ones come back as memory type 0), and `address_range` uses
cuMemGetAddressRange, which fails cleanly (CUDA_ERROR_NOT_FOUND) outside an allocation.

Both hold for every memory kind a producer may export (`caiconform.cuda.memkinds`), which the
driver describes differently: CU_POINTER_ATTRIBUTE_CONTEXT is 0 for stream-ordered
(cuMemAllocAsync) and VMM memory, so the owning device is then read from
CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL; on a VMM mapping cuMemGetAddressRange gives the mapped
region (the pointer attributes' RANGE_START_ADDR/RANGE_SIZE give the whole reservation, an
unmapped guard included, so they are not asked for device memory); registered host memory is
described by those range attributes where cuMemGetAddressRange does not answer for it.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from caiconform.cuda.device import ensure_context
from caiconform.cuda.errors import CUDAError, call

__all__ = [
    "DeviceBuffer",
    "PointerInfo",
    "device_alloc",
    "device_free",
    "host_alloc",
    "host_free",
    "copy_to_host",
    "copy_from_host",
    "memset",
    "pointer_info",
    "address_range",
]

#: CUmemorytype values, named for findings ("seen: host").
MEMORY_TYPES = {0: "unregistered", 1: "host", 2: "device", 3: "array", 4: "unified"}


def device_alloc(nbytes: int, device: int = 0) -> int:
    """cuMemAlloc in `device`'s primary context; returns the pointer as an int."""
    from cuda.bindings import driver

    ensure_context(device)
    return int(call(driver.cuMemAlloc, nbytes, detail=f"{nbytes} bytes on device {device}"))


def device_free(ptr: int, device: int = 0) -> None:
    from cuda.bindings import driver

    ensure_context(device)
    call(driver.cuMemFree, driver.CUdeviceptr(ptr), detail=f"0x{ptr:x}")


def host_alloc(nbytes: int, device: int = 0) -> int:
    """Page-locked host memory (cuMemAllocHost): a host pointer the driver knows about."""
    from cuda.bindings import driver

    ensure_context(device)
    return int(call(driver.cuMemAllocHost, nbytes))


def host_free(ptr: int, device: int = 0) -> None:
    from cuda.bindings import driver

    ensure_context(device)
    call(driver.cuMemFreeHost, ptr)


def copy_to_host(ptr: int, nbytes: int, stream: int | None = None) -> np.ndarray:
    """Copy `nbytes` from device `ptr` into a new uint8 array.

    With `stream` the copy is ordered on that stream and the stream is synchronized; without,
    cuMemcpyDtoH runs on the legacy default stream.
    """
    from cuda.bindings import driver

    out = np.empty(nbytes, dtype=np.uint8)
    if nbytes == 0:
        return out
    if stream is None:
        call(driver.cuMemcpyDtoH, out.ctypes.data, driver.CUdeviceptr(ptr), nbytes)
    else:
        handle = driver.CUstream(stream)
        call(driver.cuMemcpyDtoHAsync, out.ctypes.data, driver.CUdeviceptr(ptr), nbytes, handle)
        call(driver.cuStreamSynchronize, handle)
    return out


#: current context (its handle) -> the non-blocking stream `copy_from_host` and `memset`
#: without a stream enqueue on and wait for (`_landed`)
_copy_streams: dict[int, int] = {}
_copy_lock = threading.Lock()


def _copy_stream(fresh: bool = False) -> int:
    """This context's stream for work that is done when its call returns (`_landed`: copies
    from the host, memsets); made once, again when `fresh`."""
    from cuda.bindings import driver

    context = int(call(driver.cuCtxGetCurrent))
    with _copy_lock:
        if fresh or context not in _copy_streams:
            flags = int(driver.CUstream_flags.CU_STREAM_NON_BLOCKING)
            _copy_streams[context] = int(call(driver.cuStreamCreate, flags))
        return _copy_streams[context]


def copy_from_host(ptr: int, data: np.ndarray) -> None:
    """Copy a contiguous host array's bytes to device `ptr` (in the current context); they
    are in device memory when it returns.

    cuMemcpyHtoD alone does not promise that: from pageable memory it may return once the
    bytes are staged for the DMA (CUDA's "API synchronization behavior"), ordered before later
    work on the legacy stream only. The reference producer fills its arrays from such a buffer
    with a kernel on a non-blocking stream, which could then read it before the bytes landed
    and hand a consumer wrong values, blamed on the consumer. So the copy runs on a
    non-blocking stream of this context, which is then synchronized: no wait on any other
    work either (the stream scenarios' pending work stays pending)."""
    from cuda.bindings import driver

    data = np.ascontiguousarray(data)
    if not data.nbytes:
        return
    _landed(
        lambda stream: call(
            driver.cuMemcpyHtoDAsync, driver.CUdeviceptr(ptr), data.ctypes.data, data.nbytes, stream
        )
    )


def _landed(enqueue: Callable[[Any], object]) -> None:
    """Enqueue work on this context's copy stream (`_copy_stream`) and wait for that stream
    alone; a stream of a context since destroyed is replaced once."""
    from cuda.bindings import driver

    for fresh in (False, True):
        stream = driver.CUstream(_copy_stream(fresh))
        try:
            enqueue(stream)
        except CUDAError as exc:
            if fresh or exc.name != "CUDA_ERROR_INVALID_HANDLE":
                raise
            continue
        call(driver.cuStreamSynchronize, stream)
        return


def memset(ptr: int, byte: int, nbytes: int, stream: int | None = None) -> None:
    """Set `nbytes` at `ptr` to `byte`: done when it returns, or ordered on `stream`.

    Without a stream cuMemsetD8 would not do: on device memory it "is asynchronous with
    respect to the host" (CUDA's API synchronization behavior), ordered before later work on
    the legacy stream only. The adversarial family zeroes a mutant's allocation with it and
    hands the dict over with no stream, i.e. ready; the reference consumer then gathers on its
    own non-blocking stream, and can read the allocation's stale bytes before the zeros land,
    a wrong read blamed on the consumer. So the memset runs on this context's copy stream, which is then synchronized (`_landed`)."""
    from cuda.bindings import driver

    if nbytes == 0:
        return
    if stream is None:
        _landed(
            lambda copy: call(driver.cuMemsetD8Async, driver.CUdeviceptr(ptr), byte, nbytes, copy)
        )
    else:
        call(driver.cuMemsetD8Async, driver.CUdeviceptr(ptr), byte, nbytes, driver.CUstream(stream))


@dataclass(frozen=True)
class PointerInfo:
    """What the driver says about an address (cuPointerGetAttributes).

    `memory_type` is one of MEMORY_TYPES' names; "unregistered" means the driver does not know
    the address (pageable host memory, freed memory, garbage). `device` is the ordinal owning
    the memory (-1 when unknown), `context` the owning context handle (0 for none or for
    memory not bound to a context: stream-ordered pool memory and VMM mappings), `device_pointer`
    the address a kernel uses (0 if the memory is not mapped into the device's address space).
    """

    ptr: int
    memory_type: str
    device: int
    context: int
    is_managed: bool
    device_pointer: int

    @property
    def device_accessible(self) -> bool:
        if self.memory_type in ("device", "unified") or self.is_managed:
            return True
        return self.memory_type == "host" and self.device_pointer != 0


def pointer_info(ptr: int) -> PointerInfo:
    """Ask the driver about `ptr` without dereferencing it."""
    from cuda.bindings import driver

    attr = driver.CUpointer_attribute
    wanted = [
        attr.CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        attr.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        attr.CU_POINTER_ATTRIBUTE_CONTEXT,
        attr.CU_POINTER_ATTRIBUTE_IS_MANAGED,
        attr.CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
    ]
    values = call(
        driver.cuPointerGetAttributes,
        len(wanted),
        wanted,
        driver.CUdeviceptr(ptr),
        detail=f"0x{ptr:x}",
    )
    mem_type, ordinal, ctx, managed, dev_ptr = (_as_int(v) for v in values)
    if ctx:
        ordinal = _context_device(ctx)
    return PointerInfo(
        ptr=ptr,
        memory_type=MEMORY_TYPES.get(mem_type, f"type {mem_type}"),
        device=ordinal if mem_type else -1,
        context=ctx,
        is_managed=bool(managed),
        device_pointer=dev_ptr,
    )


def _context_device(ctx: int) -> int:
    """Ordinal of the device a context belongs to.

    With driver 580.159.04 and cuda-bindings 13.3 on a two-GPU host,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL answers 0 for memory allocated in device 1's primary
    context, while CU_POINTER_ATTRIBUTE_CONTEXT names device 1's context. The context is the
    reliable answer.
    """
    from cuda.bindings import driver

    call(driver.cuCtxPushCurrent, driver.CUcontext(ctx))
    try:
        return int(call(driver.cuCtxGetDevice))
    finally:
        call(driver.cuCtxPopCurrent)


def _as_int(value: object) -> int:
    """cuda.bindings returns enums, handle objects or ints for attribute values; fold to int."""
    if value is None:
        return 0
    if isinstance(value, bool | int):
        return int(value)
    try:
        return int(value)
    except TypeError:
        getptr = getattr(value, "getPtr", None)
        return int(getptr()) if getptr else 0


def address_range(ptr: int) -> tuple[int, int] | None:
    """(base, size) of the allocation holding `ptr`, or None when no allocation holds it.

    cuMemGetAddressRange first: for device, stream-ordered, managed and mapped pinned memory
    the allocation, for a VMM mapping the mapped region (never the unmapped rest of its
    reservation). Where it finds nothing, host memory the driver knows (registered host
    memory) is described by CU_POINTER_ATTRIBUTE_RANGE_START_ADDR and RANGE_SIZE, when
    CU_POINTER_ATTRIBUTE_MAPPED says the address is backed (`_host_range`). Only
    CUDA_ERROR_NOT_FOUND and CUDA_ERROR_INVALID_VALUE mean "not inside an allocation"; any
    other failure is raised.
    """
    from cuda.bindings import driver

    try:
        base, size = call(driver.cuMemGetAddressRange, driver.CUdeviceptr(ptr))
    except CUDAError as exc:
        if exc.name in ("CUDA_ERROR_NOT_FOUND", "CUDA_ERROR_INVALID_VALUE"):
            return _host_range(ptr)
        raise
    return int(base), int(size)


def _host_range(ptr: int) -> tuple[int, int] | None:
    """(start, size) of the host range the driver registered around `ptr`, or None when `ptr`
    is no backed host memory the driver knows."""
    from cuda.bindings import driver

    attr = driver.CUpointer_attribute
    wanted = [
        attr.CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        attr.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        attr.CU_POINTER_ATTRIBUTE_RANGE_SIZE,
        attr.CU_POINTER_ATTRIBUTE_MAPPED,
    ]
    try:
        values = call(driver.cuPointerGetAttributes, len(wanted), wanted, driver.CUdeviceptr(ptr))
    except CUDAError as exc:
        if exc.name in ("CUDA_ERROR_NOT_FOUND", "CUDA_ERROR_INVALID_VALUE"):
            return None
        raise
    mem_type, start, size, mapped = (_as_int(v) for v in values)
    if MEMORY_TYPES.get(mem_type) != "host" or not mapped or size <= 0:
        return None
    if not start <= ptr < start + size:
        return None
    return start, size


class DeviceBuffer:
    """Scratch device memory owned by this package (staging, gather output, checksum slots).

    Not recorded in any allocation log: lifetime evidence concerns the producer's arrays only.
    Freed on `close()` or when collected.
    """

    def __init__(self, nbytes: int, device: int = 0) -> None:
        self.nbytes = nbytes
        self.device = device
        self.ptr = device_alloc(max(nbytes, 1), device)
        self._finalizer = weakref.finalize(self, device_free, self.ptr, device)

    @classmethod
    def from_host(cls, data: np.ndarray, device: int = 0) -> DeviceBuffer:
        data = np.ascontiguousarray(data)
        buf = cls(data.nbytes, device)
        copy_from_host(buf.ptr, data)
        return buf

    def to_host(self, stream: int | None = None) -> np.ndarray:
        return copy_to_host(self.ptr, self.nbytes, stream)

    def close(self) -> None:
        self._finalizer()
