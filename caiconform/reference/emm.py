"""The reference Numba EMM plugin: device memory through cuda-python, every alloc and free logged.

Two plugin classes implement the External Memory Management interface (`emm` spec):

- `ReferenceDirectManager` makes one `cuMemAlloc` per `memalloc`, so every pointer is the base of
  its own driver allocation (IPC offsets of whole allocations are 0).
- `ReferencePoolManager` sub-allocates inside 2 MiB slabs whose first `ALIGN` bytes are never
  handed out, so every pointer sits at a nonzero offset from its driver allocation's base: the
  case the spec's IPC section warns about, made the rule rather than the exception.

Importing this module imports numba (the plugin classes must derive from Numba's base class):
numba-cuda's `numba.cuda`, or the package ``CAICONFORM_EMM_NUMBA_PACKAGE`` names, which
`caiconform.emm.checker` sets to the implementation it checks under
(``numba_cuda_mlir.numba_cuda`` for numba-cuda-mlir, whose `cudadrv/driver.py` keeps the same
classes); `caiconform` itself never imports it. Select it with ``NUMBA_CUDA_MEMORY_MANAGER=
caiconform.reference.emm`` (the mode comes from ``CAICONFORM_EMM_MODE``: ``direct``, the
default, or ``pool``) or with ``numba.cuda.set_memory_manager(ReferencePoolManager)``.

Deallocation and ``defer_cleanup`` (the spec asks plugins to document this): a finalizer frees
at once (direct: ``cuMemFree``; pool: the block returns to its slab; one empty slab is kept for
reuse, further empty ones go back to the driver). While any ``defer_cleanup`` is active, frees
are queued (the memory stays reserved) and the pool keeps every empty slab; the queued frees
and the slab trimming happen when the outermost ``defer_cleanup`` exits, even if it exits with
an exception. Host allocations are Numba's (`HostOnlyCUDAMemoryManager`), and their cleanup is
deferred by the same context manager. Managed memory (Numba's ``managed_array`` calls the
manager's ``memallocmanaged``, which the EMM text does not name) is the plugin's too: one
``cuMemAllocManaged`` per call in both modes, logged, freed like device memory (queued while
deferred) and by ``reset``; without this, Numba's host-only base would allocate it with the
driver directly.

Every device allocation and free is recorded in an `AllocationLog` (`allocation_log`), so
lifetime checks can see exactly when memory went back.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
import weakref
from collections.abc import Callable, Iterator

from cuda.bindings import driver as cu

from caiconform.cuda.errors import CUDAError, call
from caiconform.reference.suballoc import RangeTable, SlabPool
from caiconform.reference.tracking import LOG, AllocationLog

__all__ = [
    "ReferenceDirectManager",
    "ReferencePoolManager",
    "MODES",
    "manager_for_mode",
]

#: the Numba package the classes derive from (module docstring)
NUMBA_PACKAGE = os.environ.get("CAICONFORM_EMM_NUMBA_PACKAGE", "numba.cuda")
_numba = importlib.import_module(NUMBA_PACKAGE)
_driver = importlib.import_module(f"{NUMBA_PACKAGE}.cudadrv.driver")
HostOnlyCUDAMemoryManager = _numba.HostOnlyCUDAMemoryManager
IpcHandle, MemoryInfo = _numba.IpcHandle, _numba.MemoryInfo
AutoFreePointer, ManagedMemory = _driver.AutoFreePointer, _driver.ManagedMemory

#: Errors a finalizer may meet at interpreter exit, after the context (and with it the memory)
#: is already gone; the free is then moot and only recorded.
_GONE = frozenset(
    {"CUDA_ERROR_DEINITIALIZED", "CUDA_ERROR_CONTEXT_IS_DESTROYED", "CUDA_ERROR_INVALID_CONTEXT"}
)


def _driver_alloc(nbytes: int) -> int:
    return int(call(cu.cuMemAlloc, nbytes, detail=f"{nbytes} bytes"))


def _driver_free(address: int) -> None:
    try:
        call(cu.cuMemFree, cu.CUdeviceptr(address), detail=f"0x{address:x}")
    except CUDAError as exc:
        if exc.name not in _GONE:
            raise


class _ReferenceManager(HostOnlyCUDAMemoryManager):
    """Shared machinery: the pointer objects, the log, deferral, IPC handles. Subclasses say
    how addresses are obtained (`_obtain`), given back (`_give_back`), looked up
    (`_allocation_of`) and all dropped (`_drop_all`)."""

    mode = ""

    def __init__(self, *args, log: AllocationLog | None = None, **kwargs) -> None:
        # No CUDA here: Numba constructs a throwaway instance with context=None in
        # set_memory_manager just to read interface_version.
        super().__init__(*args, **kwargs)
        self.allocation_log = LOG if log is None else log
        self._lock = threading.RLock()
        self._live: dict[int, AutoFreePointer] = {}
        self._defer_depth = 0
        self._pending: list[int] = []
        self._managed: dict[int, int] = {}
        self._managed_objects: dict[int, ManagedMemory] = {}
        self._pending_managed: list[int] = []
        self.initialized = False

    # -- the EMM interface -------------------------------------------------------------------
    def initialize(self) -> None:
        """Nothing to prepare: the driver and the context exist once Numba calls this. Safe to
        call any number of times; it never touches live allocations."""
        self.initialized = True

    def memalloc(self, size: int):
        """Allocate `size` bytes on the context's device; a refcounted pointer keeps the memory
        alive while any view of it exists (Numba's own AutoFreePointer ownership)."""
        if size < 0:
            raise ValueError(f"memalloc size must be >= 0, got {size}")
        with self._lock:
            address = self._obtain(max(int(size), 1))
            self.allocation_log.record_alloc(
                address, size, self.context.device.id, f"emm-{self.mode}"
            )
            mem = AutoFreePointer(
                weakref.proxy(self.context),
                cu.CUdeviceptr(address),
                size,
                finalizer=self._finalizer(address),
            )
            self._live[address] = mem
        return mem.own()

    def memallocmanaged(self, size: int, attach_global: bool = True):
        """Managed memory for Numba's ``managed_array``: one ``cuMemAllocManaged`` (attached
        globally or to the host, as asked), logged and freed like device memory."""
        if size < 0:
            raise ValueError(f"memallocmanaged size must be >= 0, got {size}")
        attach = cu.CUmemAttach_flags
        flags = attach.CU_MEM_ATTACH_GLOBAL if attach_global else attach.CU_MEM_ATTACH_HOST
        nbytes = max(int(size), 1)
        with self._lock:
            address = int(call(cu.cuMemAllocManaged, nbytes, int(flags), detail=f"{nbytes} bytes"))
            self._managed[address] = nbytes
            self.allocation_log.record_alloc(
                address, size, self.context.device.id, f"emm-{self.mode}-managed"
            )
            mem = ManagedMemory(
                weakref.proxy(self.context),
                cu.CUdeviceptr(address),
                size,
                finalizer=self._managed_finalizer(address),
            )
            # `own()` holds the memory object only through a weak proxy: like Numba's own
            # manager (its `allocations` map), the plugin keeps it until its finalizer runs
            self._managed_objects[address] = mem
        return mem.own()

    def get_memory_info(self) -> MemoryInfo:
        free, total = call(cu.cuMemGetInfo)
        return MemoryInfo(free=int(free), total=int(total))

    def get_ipc_handle(self, memory) -> IpcHandle:
        """An IpcHandle for `memory` (an allocation or a view into one), built from the base of
        the driver allocation that holds it, which this plugin's bookkeeping knows. Memory this
        plugin did not allocate reaches it too: Numba routes `get_ipc_handle` of every device
        array to the plugin, one imported with `cuda.as_cuda_array` from another library's
        export included; the driver knows that allocation's base (cuMemGetAddressRange)."""
        address = int(memory.device_pointer)
        with self._lock:
            found = self._allocation_of(address)
        if found is None:
            found = call(cu.cuMemGetAddressRange, cu.CUdeviceptr(address), detail=f"0x{address:x}")
        base = int(found[0])
        handle = call(cu.cuIpcGetMemHandle, cu.CUdeviceptr(base), detail=f"base 0x{base:x}")
        return IpcHandle(
            memory,
            handle,
            memory.size,
            self.context.device.get_device_identity(),
            offset=address - base,
        )

    def reset(self) -> None:
        """Free every device allocation of this context at once (deferral or not), then let
        Numba's host-side manager clean up its own. Safe before `initialize`: with nothing
        allocated it makes no CUDA call."""
        with self._lock:
            live = list(self._live.items())
            self._live.clear()
            pending, self._pending = self._pending, []
            for _, mem in live:
                mem._finalizer.detach()
            self._drop_all()
            for address in [a for a, _ in live] + pending:
                self.allocation_log.record_free(address)
            managed = list(self._managed) + self._pending_managed
            self._managed.clear()
            self._managed_objects.clear()
            self._pending_managed = []
            for address in managed:
                self._free_managed(address)
        super().reset()

    @contextlib.contextmanager
    def defer_cleanup(self) -> Iterator[None]:
        """Queue frees (and, in pool mode, keep empty slabs) until the outermost exit; nests,
        and lets exceptions through. Holds the host-side deferral of the base class too."""
        with super().defer_cleanup():
            with self._lock:
                self._defer_depth += 1
                self._deferring(True)
            try:
                yield
            finally:
                with self._lock:
                    self._defer_depth -= 1
                    if self._defer_depth == 0:
                        pending, self._pending = self._pending, []
                        for address in pending:
                            self._release(address)
                        managed, self._pending_managed = self._pending_managed, []
                        for address in managed:
                            self._free_managed(address)
                        self._deferring(False)

    @property
    def interface_version(self) -> int:
        return 1

    # -- bookkeeping ---------------------------------------------------------------------------
    @property
    def deferring(self) -> bool:
        return self._defer_depth > 0

    def _finalizer(self, address: int) -> Callable[[], None]:
        def finalize() -> None:
            with self._lock:
                self._live.pop(address, None)
                if self._defer_depth:
                    self._pending.append(address)
                else:
                    self._release(address)

        return finalize

    def _managed_finalizer(self, address: int) -> Callable[[], None]:
        def finalize() -> None:
            with self._lock:
                self._managed_objects.pop(address, None)
                if self._managed.pop(address, None) is None:
                    return  # reset freed it already
                if self._defer_depth:
                    self._pending_managed.append(address)
                else:
                    self._free_managed(address)

        return finalize

    def _free_managed(self, address: int) -> None:
        _driver_free(address)
        self.allocation_log.record_free(address)

    def _release(self, address: int) -> None:
        self._give_back(address)
        self.allocation_log.record_free(address)

    def _deferring(self, active: bool) -> None:
        """Hook for the mode's own reaction to deferral starting (True) or ending (False)."""

    def _obtain(self, nbytes: int) -> int:
        raise NotImplementedError

    def _give_back(self, address: int) -> None:
        raise NotImplementedError

    def _allocation_of(self, address: int) -> tuple[int, int] | None:
        raise NotImplementedError

    def _drop_all(self) -> None:
        raise NotImplementedError


class ReferenceDirectManager(_ReferenceManager):
    """One driver allocation per `memalloc`; frees with `cuMemFree` (queued while deferred)."""

    mode = "direct"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._ranges = RangeTable()

    def _obtain(self, nbytes: int) -> int:
        address = _driver_alloc(nbytes)
        self._ranges.add(address, nbytes)
        return address

    def _give_back(self, address: int) -> None:
        self._ranges.remove(address)
        _driver_free(address)

    def _allocation_of(self, address: int) -> tuple[int, int] | None:
        return self._ranges.find(address)

    def _drop_all(self) -> None:
        for base in self._ranges:
            self._ranges.remove(base)
            _driver_free(base)


class ReferencePoolManager(_ReferenceManager):
    """Sub-allocations inside slabs (`SlabPool`); every pointer is at a nonzero offset from its
    slab's base. Blocks return to the pool at once (queued while deferred)."""

    mode = "pool"

    def __init__(self, *args, slab_bytes: int = 2 << 20, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.pool = SlabPool(_driver_alloc, _driver_free, slab_bytes)

    def _obtain(self, nbytes: int) -> int:
        return self.pool.allocate(nbytes)

    def _give_back(self, address: int) -> None:
        self.pool.release(address)

    def _allocation_of(self, address: int) -> tuple[int, int] | None:
        return self.pool.find(address)

    def _drop_all(self) -> None:
        self.pool.release_all()

    def _deferring(self, active: bool) -> None:
        self.pool.keep_empty = active
        if not active:
            self.pool.trim(self.pool.retain_empty)


MODES = {"direct": ReferenceDirectManager, "pool": ReferencePoolManager}


def manager_for_mode(mode: str) -> type[_ReferenceManager]:
    """The plugin class for `mode` ("direct" or "pool"); ValueError names the valid modes."""
    try:
        return MODES[mode]
    except KeyError:
        raise ValueError(
            f"CAICONFORM_EMM_MODE must be one of {sorted(MODES)}, got {mode!r}"
        ) from None


#: What NUMBA_CUDA_MEMORY_MANAGER=caiconform.reference.emm makes Numba use.
_numba_memory_manager = manager_for_mode(os.environ.get("CAICONFORM_EMM_MODE", "direct"))
