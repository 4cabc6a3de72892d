"""Memory kinds: every way a producer can hand out device-accessible memory, allocated and freed
the way each kind must be.

The CAI asks only that "the data must be device-accessible", and producers hand out more than
`cuMemAlloc` memory: stream-ordered pool memory (`cuMemAllocAsync`, from the device's default
pool or a pool of their own), managed memory, mapped pinned host memory, registered host memory
and VMM mappings. Their pointer attributes differ (CU_POINTER_ATTRIBUTE_CONTEXT is 0 for
stream-ordered and VMM memory; host memory has memory type "host" and a device pointer;
cuMemGetAddressRange on a VMM mapping gives the mapped region, not the reservation), so a
consumer that assumes one kind breaks on another. `allocate(kind, nbytes)` makes each one and
returns a `KindMemory` whose `free()` gives it back the way the kind requires.

The VMM kind reserves a range of virtual addresses after the mapping and leaves it unmapped (the
*guard*), and places the array at the end of the mapping: a read past the array's end faults
every time, whatever else the process has mapped (`cuMemAlloc` memory is followed by whatever
the allocator put there, so such a read faults or not with the process's memory map).

`current_kind()` is the kind the reference producer allocates when it is not told one: the
example's drawn kind (the worker sets it around each example, `using_kind`; a reproducer script
with `use_kind`). Library adapters that can make more than device memory read it too.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MEMORY_KINDS",
    "HOST_KINDS",
    "KIND_APIS",
    "KindMemory",
    "allocate",
    "current_kind",
    "use_kind",
    "using_kind",
    "check_kind",
]

#: every kind the reference producer can export, cheapest first ("device" is the default)
MEMORY_KINDS = (
    "device",
    "async",
    "async-pool",
    "managed",
    "host-mapped",
    "host-registered",
    "vmm",
)
#: the kinds whose bytes live in host memory (pointer memory type "host", with a device pointer)
HOST_KINDS = frozenset({"host-mapped", "host-registered"})
#: the driver calls that make each kind (for findings and reproducers)
KIND_APIS = {
    "device": "cuMemAlloc",
    "async": "cuMemAllocAsync (the device's default pool)",
    "async-pool": "cuMemAllocFromPoolAsync (a pool made with cuMemPoolCreate)",
    "managed": "cuMemAllocManaged (CU_MEM_ATTACH_GLOBAL)",
    "host-mapped": "cuMemHostAlloc (PORTABLE | DEVICEMAP), exported as cuMemHostGetDevicePointer",
    "host-registered": "cuMemHostRegister of page-aligned numpy memory (PORTABLE | DEVICEMAP)",
    "vmm": "cuMemCreate + cuMemAddressReserve + cuMemMap + cuMemSetAccess, an unmapped guard after",
}
#: alignment of the array inside a VMM mapping (it sits at the mapping's end, so a read past
#: it reaches the guard within this many bytes)
VMM_ALIGN = 256
_PAGE = 4096

_kind: contextvars.ContextVar[str] = contextvars.ContextVar("caiconform_memory_kind")


def check_kind(kind: str) -> str:
    """`kind`, or ValueError naming the kinds."""
    if kind not in MEMORY_KINDS:
        raise ValueError(f"unknown memory kind {kind!r}; expected one of {', '.join(MEMORY_KINDS)}")
    return kind


def current_kind() -> str:
    """The kind of the example running in this thread ("device" when none was set)."""
    return _kind.get("device")


def use_kind(kind: str | None) -> contextvars.Token:
    """Make `kind` (None: "device") this context's kind until reset with the returned token."""
    return _kind.set(check_kind(kind or "device"))


@contextmanager
def using_kind(kind: str | None) -> Iterator[str]:
    """Within the block, `current_kind()` is `kind` (None: "device")."""
    token = use_kind(kind)
    try:
        yield current_kind()
    finally:
        _kind.reset(token)


@dataclass
class KindMemory:
    """Memory of one kind: `ptr` is the address a kernel uses (the device pointer of host
    memory), `size` the bytes usable from it; `free()` releases it once."""

    kind: str
    ptr: int
    size: int
    device: int
    _release: Callable[[], None] = field(repr=False)
    _keep: Any = field(default=None, repr=False)
    _freed: bool = field(default=False, repr=False)

    def free(self) -> None:
        if not self._freed:
            self._freed = True
            self._release()
            self._keep = None


def _round_up(n: int, to: int) -> int:
    return -(-n // to) * to


def allocate(kind: str, nbytes: int, device: int = 0, guard: int = 0) -> KindMemory:
    """`nbytes` (at least 1) of memory of `kind` on `device`, its context current.

    guard: for "vmm", at least this many bytes of reserved, unmapped addresses follow the
    array (at least one allocation granule); ignored by the other kinds.
    """
    from caiconform.cuda.device import ensure_context

    check_kind(kind)
    ensure_context(device)
    size = max(int(nbytes), 1)
    return _MAKERS[kind](size, device, guard)


def _synchronized(device: int) -> None:
    """Wait for all work of `device`'s context: what a free of memory the driver does not
    synchronize for must do first (cuMemFree of stream-ordered memory "will not perform any
    implicit synchronization"; unmapping or unregistering memory a kernel still reads faults)."""
    from cuda.bindings import driver

    from caiconform.cuda.device import ensure_context
    from caiconform.cuda.errors import call

    ensure_context(device)
    call(driver.cuCtxSynchronize)


def _device(size: int, device: int, guard: int) -> KindMemory:
    from caiconform.cuda.memory import device_alloc, device_free

    ptr = device_alloc(size, device)
    return KindMemory("device", ptr, size, device, lambda: device_free(ptr, device))


def _free_stream_ordered(ptr: int, device: int) -> None:
    """After the context's work, cuMemFreeAsync on the stream that allocated it, waited for:
    the pool has the memory back when this returns. (A plain cuMemFree of pool memory leaves
    the pool's USED_MEM_CURRENT counting it, with driver 580: the pool grows with each free.)"""
    from cuda.bindings import driver

    from caiconform.cuda.errors import call
    from caiconform.cuda.memory import _copy_stream

    _synchronized(device)
    stream = driver.CUstream(_copy_stream())
    call(driver.cuMemFreeAsync, driver.CUdeviceptr(ptr), stream, detail=f"0x{ptr:x}")
    call(driver.cuStreamSynchronize, stream)


def _stream_ordered(size: int, device: int, pool: Any) -> int:
    """cuMemAllocAsync (pool None) or cuMemAllocFromPoolAsync on a stream of this process,
    which is then synchronized: the memory is ready for any stream when this returns."""
    from cuda.bindings import driver

    from caiconform.cuda.errors import call
    from caiconform.cuda.memory import _copy_stream

    stream = driver.CUstream(_copy_stream())
    if pool is None:
        ptr = call(driver.cuMemAllocAsync, size, stream, detail=f"{size} bytes")
    else:
        ptr = call(driver.cuMemAllocFromPoolAsync, size, pool, stream, detail=f"{size} bytes")
    call(driver.cuStreamSynchronize, stream)
    return int(ptr)


def _async(size: int, device: int, guard: int) -> KindMemory:
    ptr = _stream_ordered(size, device, None)
    return KindMemory("async", ptr, size, device, lambda: _free_stream_ordered(ptr, device))


_pools: dict[int, Any] = {}
_pools_lock = threading.Lock()


def _pool(device: int) -> Any:
    """This process's own memory pool on `device` (cuMemPoolCreate: pinned device memory),
    made once; it lives as long as the process."""
    from cuda.bindings import driver

    from caiconform.cuda.errors import call

    with _pools_lock:
        if device not in _pools:
            props = driver.CUmemPoolProps()
            props.allocType = driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
            props.handleTypes = driver.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_NONE
            props.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
            props.location.id = device
            _pools[device] = call(driver.cuMemPoolCreate, props)
        return _pools[device]


def _async_pool(size: int, device: int, guard: int) -> KindMemory:
    ptr = _stream_ordered(size, device, _pool(device))
    return KindMemory("async-pool", ptr, size, device, lambda: _free_stream_ordered(ptr, device))


def _managed(size: int, device: int, guard: int) -> KindMemory:
    from cuda.bindings import driver

    from caiconform.cuda.errors import call

    flags = int(driver.CUmemAttach_flags.CU_MEM_ATTACH_GLOBAL)
    ptr = int(call(driver.cuMemAllocManaged, size, flags, detail=f"{size} bytes"))

    def release() -> None:
        _synchronized(device)
        call(driver.cuMemFree, driver.CUdeviceptr(ptr), detail=f"0x{ptr:x}")

    return KindMemory("managed", ptr, size, device, release)


def _device_pointer(host: int) -> int:
    from cuda.bindings import driver

    from caiconform.cuda.errors import call

    return int(call(driver.cuMemHostGetDevicePointer, host, 0, detail=f"0x{host:x}"))


def _host_mapped(size: int, device: int, guard: int) -> KindMemory:
    from cuda.bindings import driver

    from caiconform.cuda.errors import call

    flags = driver.CU_MEMHOSTALLOC_PORTABLE | driver.CU_MEMHOSTALLOC_DEVICEMAP
    host = int(call(driver.cuMemHostAlloc, size, flags, detail=f"{size} bytes"))
    return _exported_host(
        "host-mapped", host, size, device, lambda: call(driver.cuMemFreeHost, host)
    )


def _host_registered(size: int, device: int, guard: int) -> KindMemory:
    """Page-aligned numpy memory, registered (cuMemHostRegister wants whole pages)."""
    import numpy as np
    from cuda.bindings import driver

    from caiconform.cuda.errors import call

    span = _round_up(size, _PAGE)
    raw = np.zeros(span + _PAGE, dtype=np.uint8)
    start = -raw.ctypes.data % _PAGE
    buffer = raw[start : start + span]
    host = int(buffer.ctypes.data)
    flags = driver.CU_MEMHOSTREGISTER_PORTABLE | driver.CU_MEMHOSTREGISTER_DEVICEMAP
    call(driver.cuMemHostRegister, host, span, flags, detail=f"{span} bytes at 0x{host:x}")
    return _exported_host(
        "host-registered", host, size, device, lambda: call(driver.cuMemHostUnregister, host), raw
    )


def _exported_host(
    kind: str, host: int, size: int, device: int, undo: Callable[[], object], keep: Any = None
) -> KindMemory:
    """Host memory the driver knows (`host`, given back by `undo`) exported through its device
    pointer; freed after the context's work, which may still read it; undone at once when the
    device pointer cannot be had."""

    def release() -> None:
        _synchronized(device)
        undo()

    try:
        ptr = _device_pointer(host)
    except Exception:
        undo()
        raise
    return KindMemory(kind, ptr, size, device, release, _keep=keep)


def _vmm_prop(device: int) -> Any:
    from cuda.bindings import driver

    prop = driver.CUmemAllocationProp()
    prop.type = driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = device
    return prop


def _vmm_readers(device: int) -> list[int]:
    """`device` and every device that can access its memory as a peer: a mapping is readable
    only where cuMemSetAccess grants it (cuCtxEnablePeerAccess does not reach VMM memory)."""
    from cuda.bindings import driver

    from caiconform.cuda.errors import call

    owner = call(driver.cuDeviceGet, device)
    readers = [device]
    for other in range(int(call(driver.cuDeviceGetCount))):
        # cuDeviceCanAccessPeer(dev, peerDev): can contexts on dev access peerDev's memory
        if other != device and call(
            driver.cuDeviceCanAccessPeer, call(driver.cuDeviceGet, other), owner
        ):
            readers.append(other)
    return readers


def _vmm(size: int, device: int, guard: int) -> KindMemory:
    from cuda.bindings import driver

    from caiconform.cuda.errors import call

    prop = _vmm_prop(device)
    minimum = driver.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM
    granule = int(call(driver.cuMemGetAllocationGranularity, prop, minimum))
    mapped = _round_up(size, granule)
    reserved = mapped + _round_up(max(int(guard), 1), granule)
    hint = driver.CUdeviceptr(0)  # anywhere
    base = int(call(driver.cuMemAddressReserve, reserved, granule, hint, 0, detail=f"{reserved} B"))
    undo: list[Callable[[], object]] = [
        lambda: call(driver.cuMemAddressFree, driver.CUdeviceptr(base), reserved)
    ]
    try:
        handle = call(driver.cuMemCreate, mapped, prop, 0, detail=f"{mapped} bytes")
        undo.append(lambda: call(driver.cuMemRelease, handle))
        call(driver.cuMemMap, driver.CUdeviceptr(base), mapped, 0, handle, 0)
        undo.append(lambda: call(driver.cuMemUnmap, driver.CUdeviceptr(base), mapped))
        access = []
        for reader in _vmm_readers(device):
            desc = driver.CUmemAccessDesc()
            desc.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
            desc.location.id = reader
            desc.flags = driver.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
            access.append(desc)
        call(driver.cuMemSetAccess, driver.CUdeviceptr(base), mapped, access, len(access))
    except Exception:
        for step in reversed(undo):
            step()
        raise

    def release() -> None:
        _synchronized(device)
        for step in reversed(undo):
            step()

    # the array ends at most VMM_ALIGN bytes before the unmapped guard
    ptr = base + mapped - _round_up(size, VMM_ALIGN)
    return KindMemory("vmm", ptr, size, device, release)


_MAKERS: dict[str, Callable[[int, int, int], KindMemory]] = {
    "device": _device,
    "async": _async,
    "async-pool": _async_pool,
    "managed": _managed,
    "host-mapped": _host_mapped,
    "host-registered": _host_registered,
    "vmm": _vmm,
}
