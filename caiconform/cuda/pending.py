"""Leave work pending on any stream: spin, then write the final values.

This is how stream semantics are tested live (docs/internals.md, Streams live): a consumer that does not
synchronize on the exported stream reads what was there before the write. The functions take
raw stream handles, so adapters can use them on a third-party library's own side stream.
"""

from __future__ import annotations

import threading

import numpy as np

from caiconform.cuda import kernels
from caiconform.cuda.memory import DeviceBuffer
from caiconform.cuda.streams import OwnedEvent
from caiconform.spec.layout import Layout

__all__ = ["spin", "write_after_spin", "PendingWrite"]

_pending_lock = threading.Lock()
_pending: list[PendingWrite] = []


def spin(stream_handle: int, us: int, device: int = 0) -> None:
    """Enqueue a busy-wait of at least `us` microseconds on `stream_handle`."""
    kernels.spin(stream_handle, us, device=device)


class PendingWrite:
    """A spin-then-write enqueued on some stream. Holds the staging copy of the values until
    the write has run, so dropping this object early cannot free memory the GPU still reads."""

    def __init__(self, staging: DeviceBuffer, done: OwnedEvent, stream: int) -> None:
        self.staging = staging
        self.event = done
        self.stream = stream

    def done(self) -> bool:
        from cuda.bindings import driver

        return driver.cuEventQuery(self.event.event)[0] == driver.CUresult.CUDA_SUCCESS

    def wait(self) -> None:
        self.event.synchronize()


def write_after_spin(
    ptr: int,
    staging: np.ndarray,
    layout: Layout,
    stream_handle: int,
    us: int,
    device: int = 0,
) -> PendingWrite:
    """On `stream_handle`: spin `us` microseconds, then write `staging`'s elements (C order) to
    the array whose element 0 is at `ptr`, at `layout`'s strides.

    `staging` is copied to the device first (synchronously), so the caller may reuse it at
    once. Returns the PendingWrite; a module-level list also keeps it until the work is done.
    """
    values = np.ascontiguousarray(staging)
    if values.size != int(np.prod(layout.shape)):
        raise ValueError(f"staging has {values.size} elements, layout {layout.shape} needs more")
    itemsize = values.dtype.itemsize
    buffer = DeviceBuffer.from_host(values, device)
    spin(stream_handle, us, device)
    kernels.fill(
        ptr,
        buffer.ptr,
        layout.shape,
        layout.effective_strides(itemsize),
        itemsize,
        stream=stream_handle,
        device=device,
    )
    pending = PendingWrite(buffer, OwnedEvent(device).record(stream_handle), stream_handle)
    with _pending_lock:
        _pending[:] = [p for p in _pending if not p.done()]
        _pending.append(pending)
    return pending
