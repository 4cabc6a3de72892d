"""Hold a stream for a while without occupying the GPU: a host function that sleeps.

The streams family leaves a producer's final write pending behind a delay on its stream. A
busy-waiting kernel does that, but contexts of different processes are time-sliced on one GPU,
so a spinning kernel holds the whole GPU for its slice and every other worker's GPU calls wait
(docs/performance.md: `scripts/diag_contention.py`, spinning streams examples slowing every
other family's beside them). A host function
enqueued with `cuLaunchHostFunc` blocks the work behind it on that stream just the same (the
stream does not go on until it returns), but the GPU stays free for everyone else.

The host function is libc's `usleep` itself, its argument carried in `userData`: no Python
callback, so no GIL, so a consumer that synchronizes while holding the GIL cannot deadlock the
wait. A host function must not call CUDA; `usleep` does not. Linux only (libcuda.so.1 and
libc loaded through ctypes): `available()` says whether it can be used here.
"""

from __future__ import annotations

import ctypes
import functools

from caiconform.cuda.errors import CUDAError

__all__ = ["available", "sleep_on_stream", "MAX_CHUNK_US"]

#: POSIX leaves usleep(>= 1 s) undefined: longer waits are enqueued in pieces of this size
MAX_CHUNK_US = 500_000


@functools.cache
def _entry_points() -> tuple[ctypes._CFuncPtr, int]:
    """(cuLaunchHostFunc, address of usleep); OSError/AttributeError when not available."""
    libcuda = ctypes.CDLL("libcuda.so.1")
    launch = libcuda.cuLaunchHostFunc
    launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    launch.restype = ctypes.c_int
    usleep = ctypes.CDLL(None).usleep
    return launch, ctypes.cast(usleep, ctypes.c_void_p).value


def available() -> bool:
    """Whether host-function waits can be enqueued in this process."""
    try:
        _entry_points()
    except (OSError, AttributeError):
        return False
    return True


def sleep_on_stream(stream: int, us: int) -> None:
    """Enqueue a host-side sleep of `us` microseconds on `stream` (a raw handle: 1 legacy,
    2 per-thread, else a CUstream) in the current context: work enqueued after it on that
    stream starts no sooner than `us` after the work before it has finished."""
    if us < 0:
        raise ValueError(f"wait must be >= 0 us, got {us}")
    launch, usleep = _entry_points()
    left = us
    while left > 0:
        chunk = min(left, MAX_CHUNK_US)
        result = launch(ctypes.c_void_p(stream or None), usleep, ctypes.c_void_p(chunk))
        if result != 0:
            raise CUDAError("cuLaunchHostFunc", result, f"enqueueing a {chunk} us host wait")
        left -= chunk
