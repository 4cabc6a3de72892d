"""Stream scenarios for third-party producers, written once over a small per-library backend.

Each producer adapter supplies a `Backend`: how its library uploads bytes, copies a byte range
on a stream, makes streams, makes one stream wait on others, and builds the strided view that
is handed to the consumer. `produce_staged` then plays the scenario (docs/internals.md, Streams live):

- `none`: upload the final image, synchronize the device, export.
- `pending` / `legacy` / `per-thread`: upload sentinel + final image; on the scenario's stream
  (the library's own side stream, the legacy default stream, the per-thread default stream) a
  delay, then the final write (a device-to-device copy of the final image over the
  sentinel). The view is built with that stream as its stream where the library records one
  per array (Numba); libraries that export their *current* stream at access time (CuPy) or no
  stream at all (PyTorch) export what they export — the streams check family judges it.
- `nonblocking` / `external` / `library-default`: like `pending`, on the stream the library
  gives its users for that (a non-blocking stream, an external-stream wrapper of a raw
  non-blocking handle, the library's default-stream object); the object handed on reads its
  interface while that stream is the library's current one (`Backend.export_under`), as user
  code inside `with stream:` does, so libraries that export their current stream export it.
- `multi-stream`: the two halves of the final write on two side streams, each after a delay;
  the stream the library exports is made to wait on both (events), as the spec prescribes.
- `unsynced`: like `pending`, but the stream with the work is deliberately not the exported one,
  and made non-blocking where the library allows, so that a consumer working on the legacy
  default stream is not rescued by that stream's implicit synchronization with blocking ones.

The delay is `caiconform.cuda.spin(stream_handle, us)` (a host-side sleep enqueued on the
stream, `caiconform.cuda.hostwait`), on the library's raw stream handle, so it sits on exactly
the stream the library's own copy is queued on.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from caiconform.adapters._staging import host_image, pending_image, spin_us, split_bytes
from caiconform.adapters.base import SkipExchange
from caiconform.spec.layout import Layout
from caiconform.spec.scenarios import LIBRARY_STREAM_SCENARIOS

__all__ = [
    "Backend",
    "UnderStream",
    "produce_staged",
    "launch_spin",
    "LEGACY_HANDLE",
    "PER_THREAD_HANDLE",
    "shared_raw_stream",
]

#: the raw handles CUDA (and the CAI) use for the two default streams
LEGACY_HANDLE = 1
PER_THREAD_HANDLE = 2


class Backend(Protocol):
    """What `produce_staged` needs from one library."""

    library: str

    def upload(self, image: np.ndarray) -> Any:
        """A device byte buffer of the library holding `image`; the copy has finished."""

    def synchronize(self) -> None:
        """Wait for all work the library queued on the device."""

    def stream(self, kind: str) -> Any:
        """A stream object of the library: kind "side" (a new stream, made the library's
        default way), "unsynced" (a new stream that does not synchronize implicitly with the
        legacy default stream, where the library can make one), "legacy", "per-thread",
        "export" (the stream the multi-stream scenario exports), "nonblocking", "external" or
        "library-default" (see the module docstring). Raise SkipExchange where the library
        cannot name that stream."""

    def handle(self, stream: Any) -> int:
        """The raw cudaStream_t of `stream` (1 / 2 for the default streams)."""

    def copy_range(self, buf: Any, lo: int, hi: int, nbytes: int, stream: Any) -> None:
        """Enqueue buf[lo:hi] = buf[nbytes + lo : nbytes + hi] on `stream`."""

    def wait(self, waiter: Any, streams: list[Any]) -> None:
        """Make `waiter` wait (device-side, through events) for the work queued on `streams`."""

    def view(self, buf: Any, layout: Layout, dtype: np.dtype, stream: Any | None) -> Any:
        """The library's strided array over `buf` at `layout`, recording `stream` as its stream
        where the library has such a notion (None: no stream)."""

    def export_under(self, array: Any, stream: Any) -> Any:
        """`array`, or an object whose `__cuda_array_interface__` is `array`'s read while
        `stream` is the library's current stream (see `UnderStream`)."""


class UnderStream:
    """A producer's array whose interface is read inside the library's `with stream:` block.

    CuPy exports the stream that is current when the attribute is read; user code that
    queues work on a stream and hands the array on inside `with stream:` exports that stream.
    The consumer reads the attribute later, so this object re-enters the block at each read.
    """

    __slots__ = ("array", "enter")

    def __init__(self, array: Any, enter: Any) -> None:
        self.array = array
        self.enter = enter  # a zero-argument callable returning a context manager

    @property
    def __cuda_array_interface__(self) -> dict:
        with self.enter():
            return self.array.__cuda_array_interface__

    def __repr__(self) -> str:
        return f"UnderStream({type(self.array).__name__})"


_raw_stream: list[Any] = []


def shared_raw_stream() -> int:
    """The handle of one raw non-blocking stream this process keeps for good, for libraries'
    external-stream wrappers (which never own the stream they wrap). One per process: work an
    example leaves on it is finished before the next example starts."""
    if not _raw_stream:
        from caiconform.cuda.streams import OwnedStream

        _raw_stream.append(OwnedStream())
    return _raw_stream[0].handle


def launch_spin(handle: int) -> None:
    """Delay `handle` by a spin kernel, so that what is queued after it is still pending when
    the producer returns."""
    try:
        from caiconform.cuda import spin
    except ImportError as exc:
        raise SkipExchange(f"pending-work scenarios need caiconform.cuda.spin: {exc}") from None
    spin(handle, spin_us())


def _pending(backend: Backend, values: np.ndarray, layout: Layout, dtype: np.dtype) -> Any:
    nbytes = layout.allocation_bytes(dtype.itemsize)
    buf = backend.upload(pending_image(host_image(values, layout, dtype)))
    backend.synchronize()
    return buf, nbytes


def produce_staged(
    backend: Backend, values: np.ndarray, layout: Layout, dtype: np.dtype, scenario: str
) -> Any:
    """Build the producer's object for `scenario` (see the module docstring)."""
    if scenario == "none":
        buf = backend.upload(host_image(values, layout, dtype))
        backend.synchronize()
        return backend.view(buf, layout, dtype, None)
    kind = {
        "pending": "side",
        "legacy": "legacy",
        "per-thread": "per-thread",
        "unsynced": "unsynced",
        "nonblocking": "nonblocking",
        "external": "external",
        "library-default": "library-default",
    }
    if scenario in kind:
        stream = backend.stream(kind[scenario])
        buf, nbytes = _pending(backend, values, layout, dtype)
        launch_spin(backend.handle(stream))
        backend.copy_range(buf, 0, nbytes, nbytes, stream)
        exported = None if scenario == "unsynced" else stream
        array = backend.view(buf, layout, dtype, exported)
        export_under = getattr(backend, "export_under", None)
        if scenario in LIBRARY_STREAM_SCENARIOS and export_under is not None:
            return export_under(array, stream)
        return array
    if scenario == "multi-stream":
        first, second = backend.stream("side"), backend.stream("side")
        exported = backend.stream("export")
        buf, nbytes = _pending(backend, values, layout, dtype)
        for stream, (lo, hi) in zip((first, second), split_bytes(nbytes), strict=True):
            launch_spin(backend.handle(stream))
            if hi > lo:
                backend.copy_range(buf, lo, hi, nbytes, stream)
        backend.wait(exported, [first, second])
        return backend.view(buf, layout, dtype, exported)
    raise ValueError(f"unknown stream scenario {scenario!r}")
