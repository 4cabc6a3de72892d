"""How long a worker's ioctls took, when the ioctl clock (`benchmarks/ioctl_clock`) is preloaded.

A worker's calls into the NVIDIA driver reach it as ioctls on /dev/nvidia*, and those take
longer the more processes on the host make them, whatever GPU each uses (docs/performance.md).
`benchmarks/ioctl_clock` builds a library that, preloaded (`LD_PRELOAD`), counts every ioctl
of its process and the time it took; the worker reads the counters around each example and
journals the difference (`nv_ioctl_s`, `nv_ioctl_n`, `ioctl_s`), so `scripts/timing_summary.py`
can say how much of each family's example time was spent in the driver's ioctls. Without the
library every call here answers nothing and costs nothing.
"""

from __future__ import annotations

import ctypes
import os
import re

__all__ = ["LIBRARY", "counters", "spent"]

#: the preloaded library's file name (benchmarks/ioctl_clock)
LIBRARY = "libioctlclock.so"

_COUNTERS = ("cai_ioctl_ns", "cai_ioctl_n", "cai_nv_ioctl_ns", "cai_nv_ioctl_n")
_lib: ctypes.CDLL | None | bool = None


def _library() -> ctypes.CDLL | None:
    global _lib
    if _lib is None:
        preloaded = [p for p in re.split(r"[:\s]+", os.environ.get("LD_PRELOAD", "")) if p]
        path = next((p for p in preloaded if os.path.basename(p) == LIBRARY), None)
        try:
            _lib = ctypes.CDLL(path) if path else False
        except OSError:
            _lib = False
    return _lib or None


def counters() -> tuple[int, ...] | None:
    """The process's counters now (all ioctls' ns and count, the NVIDIA ones' ns and count),
    or None without the library."""
    lib = _library()
    if lib is None:
        return None
    return tuple(ctypes.c_ulonglong.in_dll(lib, name).value for name in _COUNTERS)


def spent(before: tuple[int, ...] | None, after: tuple[int, ...] | None) -> dict[str, float]:
    """The journal's ioctl keys for the span between two `counters()` readings ({} without)."""
    if before is None or after is None:
        return {}
    ns, _, nv_ns, nv_n = (a - b for a, b in zip(after, before, strict=True))
    return {"ioctl_s": ns / 1e9, "nv_ioctl_s": nv_ns / 1e9, "nv_ioctl_n": nv_n}
