"""memalloc: the pointer it returns (type, size, device, a live allocation that holds the data),
an impossible size refused, and the pointer's finalizer run exactly once."""

from __future__ import annotations

import gc
from itertools import pairwise
from typing import Any

import numpy as np

from caiconform.emm.gpu.base import (
    GpuCheckBase,
    allocation_range,
    pattern,
    pointer_attribute,
)
from caiconform.emm.result import failed, passed

#: The sizes memalloc is asked for: odd, tiny, a page, and just over 1 MiB.
MEMALLOC_SIZES = (1, 7, 4096, (1 << 20) + 3)

#: No device has 4 PiB: memalloc must raise, never return.
IMPOSSIBLE_SIZE = 1 << 52


class _CountingFinalizer:
    """Replaces a memory pointer's weakref.finalize with one that counts its calls, keeping the
    plugin's own function: how a check sees "the finalizer ran exactly once"."""

    def __init__(self, pointer: Any) -> None:
        import weakref

        self.calls = 0
        detached = pointer._finalizer.detach()
        if detached is None:
            raise ValueError("the finalizer has already run")
        obj, func, args, kwargs = detached

        def counted() -> None:
            self.calls += 1
            func(*args, **kwargs)

        pointer._finalizer = weakref.finalize(obj, counted)


class MemallocChecks(GpuCheckBase):
    """memalloc's pointers, its refusal of an impossible size, their finalizers."""

    def _check_memalloc(self) -> None:
        from cuda.bindings import driver as cu

        device = self.ctx.device.id
        mems = {}
        problems: dict[str, list[str]] = {k: [] for k in ("type", "ptr", "valid", "device", "data")}
        ranges = []
        for size in MEMALLOC_SIZES:
            mem = self.mgr.memalloc(size)
            mems[size] = mem
            if not self._is_pointer(mem, self.api.memory_pointer):
                problems["type"].append(f"{size}: {type(mem).__qualname__}")
            dptr = mem.device_pointer
            address = int(dptr)
            if not isinstance(dptr, cu.CUdeviceptr) or mem.size < size:
                problems["ptr"].append(f"{size}: {type(dptr).__qualname__}, size {mem.size}")
            if address == 0:
                problems["valid"].append(f"{size}: NULL")
                continue
            base, extent = allocation_range(address)
            if address + size > base + extent:
                problems["valid"].append(f"{size}: 0x{address:x}+{size} past 0x{base:x}+{extent}")
            ranges.append((address, address + size, size))
            ordinal = pointer_attribute(address, "CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL")
            kind = pointer_attribute(address, "CU_POINTER_ATTRIBUTE_MEMORY_TYPE")
            if ordinal != device or kind != int(cu.CUmemorytype.CU_MEMORYTYPE_DEVICE):
                problems["device"].append(f"{size}: device {ordinal}, memory type {kind}")
            data = pattern(size, size)
            self._write(mem, data)
            if not np.array_equal(self._read(mem, size), data):
                problems["data"].append(f"{size}")
        ranges.sort()
        overlaps = [f"{a[2]} and {b[2]}" for a, b in pairwise(ranges) if a[1] > b[0]]
        sizes = f"sizes {list(MEMALLOC_SIZES)}"
        self._emit_set(
            "memalloc-pointer-class",
            "EMM-POINTER-MEMALLOC",
            problems["type"],
            "MemoryPointer (or Numba's OwnedPointer around one)",
            sizes,
        )
        self._emit_set(
            "memalloc-pointer-object",
            "EMM-ALLOC-POINTER-OBJECT",
            problems["ptr"],
            "device_pointer a CUdeviceptr, size >= requested",
            sizes,
        )
        self._emit_set(
            "memalloc-valid",
            "EMM-ALLOC-VALID",
            problems["valid"],
            "nonzero pointer, whole request inside one driver allocation",
            sizes,
        )
        self._emit_set(
            "memalloc-disjoint",
            "EMM-ALLOC-VALID",
            overlaps,
            "live allocations do not overlap",
            sizes,
        )
        self._emit_set(
            "memalloc-device",
            "EMM-ALLOC-CURRENT-CONTEXT",
            problems["device"],
            f"device memory on device {device}",
            sizes,
        )
        self._emit_set(
            "memalloc-roundtrip",
            "EMM-SYNCHRONOUS",
            problems["data"],
            "bytes written at once read back unchanged",
            sizes,
        )

    def _check_impossible(self) -> None:
        try:
            mem = self.mgr.memalloc(IMPOSSIBLE_SIZE)
        except Exception as exc:
            self.emit(
                passed("memalloc-impossible", "EMM-ALLOC-VALID", f"raised {type(exc).__name__}")
            )
            return
        address = int(mem.device_pointer)
        self.emit(
            failed(
                "memalloc-impossible",
                "EMM-ALLOC-VALID",
                f"returned pointer 0x{address:x} for {IMPOSSIBLE_SIZE} bytes",
                "an exception",
            )
        )

    def _check_finalizer(self) -> None:
        size = 4096
        mem = self.mgr.memalloc(size)
        pointer = self._underlying(mem)
        finalizer = getattr(pointer, "_finalizer", None)
        if finalizer is None or not finalizer.alive:
            self.emit(
                failed(
                    "finalizer",
                    "EMM-POINTER-FINALIZER",
                    "no live finalizer",
                    "memalloc's pointer carries a finalizer",
                )
            )
            return
        counter = _CountingFinalizer(pointer)
        data = pattern(size, 3)
        arr = self._array(mem, size)
        arr.copy_to_device(data)
        view = arr[16:]
        del mem, pointer, arr, finalizer
        gc.collect()
        if counter.calls:
            self.emit(
                failed(
                    "finalizer-after-last-view",
                    "EMM-POINTER-FINALIZER",
                    f"finalizer ran {counter.calls}x while a slice was alive",
                    "memory kept while any view of it lives",
                )
            )
            return
        intact = np.array_equal(view.copy_to_host(), data[16:])
        del view
        gc.collect()
        if counter.calls == 1 and intact:
            self.emit(
                passed(
                    "finalizer",
                    "EMM-POINTER-FINALIZER",
                    "kept while a slice lived, ran once after it was dropped",
                )
            )
        else:
            self.emit(
                failed(
                    "finalizer",
                    "EMM-POINTER-FINALIZER",
                    f"ran {counter.calls}x, slice data intact={intact}",
                    "exactly once after the last view, data intact until then",
                )
            )
