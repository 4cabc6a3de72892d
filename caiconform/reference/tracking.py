"""A memory manager that records every allocation and every free.

Lifetime is observed, not assumed (docs/internals.md, Lifetime observed): the reference producer and the EMM plugin
allocate through this module, so a test can drop the producer, run the garbage collector, and ask
the log whether the bytes a consumer still holds were freed. `AllocationLog` is pure Python and
safe to use from finalizers running on any thread; CUDA is imported only when memory is actually
allocated or freed.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from caiconform.cuda.memkinds import KindMemory

__all__ = [
    "AllocationRecord",
    "AllocationLog",
    "Allocation",
    "TrackingMemoryManager",
    "LOG",
]


@dataclass
class AllocationRecord:
    """One allocation: where, how big, on which device, and when it was made and freed.

    `tag` says who asked for it (e.g. "producer", "mask", "emm"), so a lifetime failure message
    can name the buffer. `freed_at` stays None while the memory is live.
    """

    ptr: int
    size: int
    device: int
    tag: str = ""
    allocated_at: float = field(default_factory=time.monotonic)
    freed_at: float | None = None

    @property
    def time(self) -> float:
        """When the record last changed: the free time once freed, else the allocation time."""
        return self.allocated_at if self.freed_at is None else self.freed_at

    def to_dict(self) -> dict:
        return {
            "ptr": self.ptr,
            "size": self.size,
            "device": self.device,
            "tag": self.tag,
            "allocated_at": self.allocated_at,
            "freed_at": self.freed_at,
        }


class AllocationLog:
    """Thread-safe record of live and freed allocations, keyed by device pointer.

    The driver may hand out a freed address again, so a pointer can appear in `frees` several
    times; `is_live` answers for the current allocation at that address and `was_freed` for any
    earlier one. Recording an allocation at an address that is still live, or freeing an address
    that is not live, is a bookkeeping bug in the caller and raises ValueError at once rather than
    silently corrupting the lifetime evidence.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[int, AllocationRecord] = {}
        self._frees: list[AllocationRecord] = []
        self._allocs = 0

    def record_alloc(self, ptr: int, size: int, device: int, tag: str = "") -> AllocationRecord:
        if size < 0:
            raise ValueError(f"allocation size must be >= 0, got {size}")
        record = AllocationRecord(int(ptr), int(size), int(device), tag)
        with self._lock:
            if record.ptr in self._live and record.ptr != 0:
                raise ValueError(f"allocation recorded at 0x{record.ptr:x}, which is still live")
            self._live[record.ptr] = record
            self._allocs += 1
        return record

    def record_free(self, ptr: int) -> AllocationRecord:
        with self._lock:
            record = self._live.pop(int(ptr), None)
            if record is None:
                raise ValueError(
                    f"free recorded for 0x{int(ptr):x}, which is not a live allocation"
                )
            record.freed_at = time.monotonic()
            self._frees.append(record)
        return record

    @property
    def live_count(self) -> int:
        with self._lock:
            return len(self._live)

    @property
    def live_bytes(self) -> int:
        with self._lock:
            return sum(r.size for r in self._live.values())

    @property
    def frees(self) -> list[AllocationRecord]:
        """Freed allocations, oldest first (a copy: safe to iterate while others free)."""
        with self._lock:
            return list(self._frees)

    @property
    def alloc_count(self) -> int:
        with self._lock:
            return self._allocs

    def is_live(self, ptr: int) -> bool:
        with self._lock:
            return int(ptr) in self._live

    def was_freed(self, ptr: int) -> bool:
        with self._lock:
            return any(r.ptr == int(ptr) for r in self._frees)

    def live(self) -> list[AllocationRecord]:
        with self._lock:
            return list(self._live.values())

    def snapshot(self) -> dict:
        """Counts and records as plain JSON-able data, for journals and failure messages."""
        with self._lock:
            return {
                "allocs": self._allocs,
                "live_count": len(self._live),
                "live_bytes": sum(r.size for r in self._live.values()),
                "free_count": len(self._frees),
                "freed_bytes": sum(r.size for r in self._frees),
                "live": [r.to_dict() for r in self._live.values()],
            }


#: The process-wide log the reference producer and the EMM plugin share by default.
LOG = AllocationLog()


class Allocation:
    """Device memory owned by the tracking manager; freed on `close()` or when collected.

    The free goes through `weakref.finalize`, so it runs exactly once whether the owner closes
    it explicitly, drops the last reference, or the interpreter exits.
    """

    def __init__(
        self,
        ptr: int,
        size: int,
        device: int,
        log: AllocationLog,
        free: Callable[[int, int], None],
        tag: str = "",
    ) -> None:
        self.ptr = ptr
        self.size = size
        self.device = device
        self.tag = tag
        self.log = log
        #: the memory kind (`caiconform.cuda.memkinds`); set by the manager that made it
        self.kind = "device"
        log.record_alloc(ptr, size, device, tag)
        self._finalizer = weakref.finalize(self, _release, ptr, device, log, free)

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> Allocation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "live"
        return f"<Allocation 0x{self.ptr:x} {self.size} B device {self.device} {self.tag} {state}>"


def _release(ptr: int, device: int, log: AllocationLog, free: Callable[[int, int], None]) -> None:
    """Free first, then record: the log must never claim memory is gone while it is still mapped."""
    free(ptr, device)
    log.record_free(ptr)


class TrackingMemoryManager:
    """Allocates device memory with the CUDA driver and records it in an `AllocationLog`.

    Usable without Numba: the reference producer calls `allocate` directly, and the EMM plugin
    wraps the same log. Zero-byte requests get a real 1-byte allocation so the pointer is a
    genuine device address the driver can describe.
    """

    def __init__(self, log: AllocationLog | None = None) -> None:
        self.log = LOG if log is None else log

    def allocate(
        self,
        nbytes: int,
        device: int | None = None,
        tag: str = "",
        kind: str = "device",
        guard: int = 0,
    ) -> Allocation:
        """`nbytes` of memory of `kind` (`caiconform.cuda.memkinds`), recorded in the log;
        `guard`: the VMM kind's unmapped bytes after it. The Allocation's `kind` says which."""
        from caiconform.cuda import memkinds, memory

        if nbytes < 0:
            raise ValueError(f"nbytes must be >= 0, got {nbytes}")
        ordinal = 0 if device is None else device
        size = max(int(nbytes), 1)
        if memkinds.check_kind(kind) == "device":
            ptr = memory.device_alloc(size, ordinal)
            allocation = Allocation(ptr, size, ordinal, self.log, memory.device_free, tag)
        else:
            made = memkinds.allocate(kind, size, ordinal, guard)
            allocation = Allocation(made.ptr, size, ordinal, self.log, _kind_free(made), tag)
        allocation.kind = kind
        return allocation


def _kind_free(made: KindMemory) -> Callable[[int, int], None]:
    """The free function `Allocation` calls, for memory of another kind than cuMemAlloc's."""
    return lambda _ptr, _device: made.free()
