"""Streams and events as raw handles, plus the checks a consumer needs before trusting one.

CAI exports streams as bare integers (1 legacy, 2 per-thread, else a cudaStream_t pointer), so
this module works on ints throughout. A cudaStream_t is a pointer to a driver object: handing
the driver a garbage one can crash the process instead of returning an error. `stream_status`
therefore never passes an unvetted handle to the driver: it knows which streams this process
created and retired (see `_retired`), and for a foreign handle it only checks that the address
is readable host memory (`_host_readable`: the operating system, not the driver, is asked).
"""

from __future__ import annotations

import collections
import ctypes
import errno
import os
import threading
import weakref

from caiconform.cuda.device import ensure_context
from caiconform.cuda.errors import CUDAError, call

__all__ = [
    "LEGACY",
    "PER_THREAD",
    "OwnedStream",
    "OwnedEvent",
    "stream_status",
    "synchronize_stream",
    "wait_stream",
    "stream_query",
    "elapsed_ms",
]

LEGACY = 1
PER_THREAD = 2

_registry_lock = threading.Lock()
_live_handles: set[int] = set()
_destroyed_handles: set[int] = set()


def _cu_stream(handle: int):
    from cuda.bindings import driver

    return driver.CUstream(handle)


class OwnedStream:
    """A non-blocking stream this process created; destroyed when closed or collected.

    Non-blocking so it never serializes with the legacy default stream: pending work on it
    stays pending until someone synchronizes on *this* stream, which is what the stream
    scenarios need to make a race observable.
    """

    def __init__(self, device: int = 0, *, blocking: bool = False) -> None:
        from cuda.bindings import driver

        ensure_context(device)
        flags = 0 if blocking else int(driver.CUstream_flags.CU_STREAM_NON_BLOCKING)
        self.device = device
        self.handle = int(call(driver.cuStreamCreate, flags))
        with _registry_lock:
            _live_handles.add(self.handle)
            _destroyed_handles.discard(self.handle)
        self._finalizer = weakref.finalize(self, _destroy_stream, self.handle, device)

    def synchronize(self) -> None:
        synchronize_stream(self.handle)

    def close(self) -> None:
        self._finalizer()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def __int__(self) -> int:
        return self.handle

    def __repr__(self) -> str:
        return f"<OwnedStream 0x{self.handle:x} device {self.device}>"


#: Closed streams are retired, not destroyed at once: while a handle sits here the driver object
#: still exists, so no other library's new stream can reuse its address, and `stream_status` can
#: refuse the handle as destroyed without ever mistaking a foreign live stream for it. Only the
#: oldest retirees beyond the limit are really destroyed, and then forgotten.
_RETIRED_LIMIT = 256
_retired: collections.deque[tuple[int, int]] = collections.deque()


def _destroy_stream(handle: int, device: int) -> None:
    from cuda.bindings import driver

    with _registry_lock:
        _live_handles.discard(handle)
        _destroyed_handles.add(handle)
        _retired.append((handle, device))
        if len(_retired) <= _RETIRED_LIMIT:
            return
        handle, device = _retired.popleft()
        _destroyed_handles.discard(handle)
    ensure_context(device)
    call(driver.cuStreamDestroy, _cu_stream(handle))


class OwnedEvent:
    """An event (timing disabled unless asked), destroyed when closed or collected."""

    def __init__(self, device: int = 0, *, timing: bool = False) -> None:
        from cuda.bindings import driver

        ensure_context(device)
        flags = 0 if timing else int(driver.CUevent_flags.CU_EVENT_DISABLE_TIMING)
        self.event = call(driver.cuEventCreate, flags)
        self._finalizer = weakref.finalize(self, _destroy_event, self.event, device)

    def record(self, stream: int) -> OwnedEvent:
        from cuda.bindings import driver

        call(driver.cuEventRecord, self.event, _cu_stream(stream))
        return self

    def synchronize(self) -> None:
        from cuda.bindings import driver

        call(driver.cuEventSynchronize, self.event)

    def close(self) -> None:
        self._finalizer()


def _destroy_event(event, device: int) -> None:
    from cuda.bindings import driver

    ensure_context(device)
    call(driver.cuEventDestroy, event)


def elapsed_ms(start: OwnedEvent, end: OwnedEvent) -> float:
    """Milliseconds between two recorded timing events."""
    from cuda.bindings import driver

    return float(call(driver.cuEventElapsedTime, start.event, end.event))


def synchronize_stream(handle: int) -> None:
    from cuda.bindings import driver

    call(driver.cuStreamSynchronize, _cu_stream(handle))


def stream_query(handle: int) -> bool:
    """True when all work on the stream has finished, False while some is pending."""
    from cuda.bindings import driver

    result = driver.cuStreamQuery(_cu_stream(handle))[0]
    if result == driver.CUresult.CUDA_ERROR_NOT_READY:
        return False
    if int(result) != 0:
        raise CUDAError("cuStreamQuery", result, f"stream 0x{handle:x}")
    return True


def wait_stream(waiter: int, producer: int, device: int = 0) -> None:
    """Make `waiter` wait, on the device, for the work enqueued so far on `producer`:
    record an event on `producer` and cuStreamWaitEvent on `waiter`."""
    from cuda.bindings import driver

    event = OwnedEvent(device).record(producer)
    call(driver.cuStreamWaitEvent, _cu_stream(waiter), event.event, 0)
    event.close()


def stream_status(handle: int) -> tuple[bool, str]:
    """Whether a consumer may hand `handle` to the driver: (True, how it knows) or
    (False, why not). Never calls the driver with the handle itself."""
    if handle in (LEGACY, PER_THREAD):
        return True, "legacy default stream" if handle == LEGACY else "per-thread default stream"
    if handle <= 0 or handle >= 2**64:
        return False, f"{handle} is not a stream handle (1, 2 or a cudaStream_t pointer)"
    with _registry_lock:
        if handle in _live_handles:
            return True, "a live stream created by this process"
        if handle in _destroyed_handles:
            return False, f"stream 0x{handle:x} was destroyed"
    if handle % 8:
        return False, f"0x{handle:x} is not aligned as a driver object pointer"
    if not _host_readable(handle, 64):
        return False, f"0x{handle:x} is not readable host memory, so it is no cudaStream_t"
    return True, "a readable foreign handle (not verifiable further without the driver)"


_probe_lock = threading.Lock()
_probe_pipe: tuple[int, int] | None = None
_libc_write = None


def _host_readable(address: int, nbytes: int) -> bool:
    """True when `nbytes` at `address` can be read by this process.

    write(2) from the address into a pipe fails with EFAULT instead of faulting the process,
    so this tests an arbitrary integer without risking a segmentation fault.
    """
    global _probe_pipe, _libc_write
    with _probe_lock:
        if _probe_pipe is None:
            write = ctypes.CDLL(None, use_errno=True).write
            write.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
            write.restype = ctypes.c_ssize_t
            _libc_write = write
            _probe_pipe = os.pipe()
        read_fd, write_fd = _probe_pipe
        written = _libc_write(write_fd, address, nbytes)
        if written < 0:
            if ctypes.get_errno() == errno.EFAULT:
                return False
            raise OSError(ctypes.get_errno(), "probe write failed")
        os.read(read_fd, written)
        return written == nbytes
