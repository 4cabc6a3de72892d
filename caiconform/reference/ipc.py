"""CUDA IPC without Numba: export a device range, open it in a spawned process, expose it there.

The exporting process turns a device range into an `IpcDescriptor` (a picklable record: the
64-byte CUDA IPC handle of the driver allocation holding the range, the range's offset and size
inside it, and the exporting device's UUID and PCI bus id). The importing process opens it with
`IpcImport`, which exposes the bytes through ``__cuda_array_interface__`` and closes the mapping
on `close()`. `IpcExport` keeps the exported memory alive until the importer sets the export's
`done` event: freeing memory that another process still maps is the bug this prevents.

A second backend, `CoreIpcExport`, shares a buffer of a cuda.core IPC-enabled memory pool
(`DeviceMemoryResource` with ``ipc_enabled=True``); cuda.core passes the pool's shareable handle
as a file descriptor through multiprocessing. `core_ipc_supported()` says whether the driver and
device allow it.

Importer processes must be started with ``spawn``: a forked child inherits a CUDA driver state
it cannot use.
"""

from __future__ import annotations

import functools
import multiprocessing
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from caiconform.cuda.device import device_count, ensure_context
from caiconform.cuda.errors import CUDAError, call

__all__ = [
    "IpcDescriptor",
    "IpcExport",
    "IpcImport",
    "CoreIpcExport",
    "ChildRead",
    "device_identity",
    "ordinal_for_uuid",
    "read_in_child",
    "read_core_in_child",
    "core_ipc_supported",
    "staged_copy",
]

#: Bytes of a CUipcMemHandle (CU_IPC_HANDLE_SIZE).
HANDLE_BYTES = 64


def _spawn() -> multiprocessing.context.SpawnContext:
    return multiprocessing.get_context("spawn")


@functools.cache
def device_identity(ordinal: int) -> tuple[str, str]:
    """(UUID as 32 hex digits, PCI bus id "0000:xx:yy.z") of device `ordinal`.

    Ordinals differ between processes with different CUDA_VISIBLE_DEVICES; the UUID does not,
    so descriptors name the device by UUID and keep the bus id for people reading reports.
    Cached: a device's identity does not change while the process runs.
    """
    from cuda.bindings import driver as cu

    dev = call(cu.cuDeviceGet, ordinal)
    uuid = call(cu.cuDeviceGetUuid, dev)
    bus = call(cu.cuDeviceGetPCIBusId, 32, dev)
    if isinstance(bus, bytes):
        bus = bus.split(b"\0", 1)[0].decode()
    return bytes(uuid.bytes).hex(), bus.rstrip("\0")


def ordinal_for_uuid(uuid_hex: str) -> int:
    """The ordinal, in this process, of the device with this UUID; LookupError if not visible."""
    for ordinal in range(device_count()):
        if device_identity(ordinal)[0] == uuid_hex:
            return ordinal
    raise LookupError(f"no visible device has UUID {uuid_hex}")


@dataclass(frozen=True)
class IpcDescriptor:
    """Everything an importer needs, and nothing that only makes sense in the exporter.

    `handle` is the IPC handle of the driver allocation's *base*; the exported bytes start
    `offset` bytes after it and run for `size` bytes. `typestr` and `shape` describe them as an
    array for ``__cuda_array_interface__`` on the importing side.
    """

    handle: bytes
    offset: int
    size: int
    device_uuid: str
    pci_bus_id: str
    typestr: str = "|u1"
    shape: tuple[int, ...] = field(default=())

    def __post_init__(self) -> None:
        if len(self.handle) != HANDLE_BYTES:
            raise ValueError(f"IPC handle must be {HANDLE_BYTES} bytes, got {len(self.handle)}")
        if self.offset < 0 or self.size < 0:
            raise ValueError(f"offset and size must be >= 0, got {self.offset}, {self.size}")
        if not self.shape:
            itemsize = np.dtype(self.typestr).itemsize
            object.__setattr__(self, "shape", (self.size // itemsize,))


class IpcExport:
    """The exporting side of one device range.

    Parameters
    ----------
    ptr, size: the device range (any address inside a driver allocation, not only its base).
    owner: the object that owns the memory; held until `close()` so the memory outlives every
        importer that says it is still using it.
    typestr, shape: how the importer should see the bytes (default: `size` bytes, ``|u1``).

    The context is synchronized at export, so the importer sees finished data without a stream.
    """

    def __init__(
        self,
        ptr: int,
        size: int,
        *,
        owner: Any = None,
        typestr: str = "|u1",
        shape: tuple[int, ...] = (),
    ) -> None:
        from cuda.bindings import driver as cu

        dptr = cu.CUdeviceptr(int(ptr))
        attr = cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
        self.device = int(call(cu.cuPointerGetAttribute, attr, dptr, detail=f"0x{int(ptr):x}"))
        ensure_context(self.device)
        base, extent = call(cu.cuMemGetAddressRange, dptr, detail=f"0x{int(ptr):x}")
        base = int(base)
        if int(ptr) + size > base + int(extent):
            raise ValueError(
                f"range 0x{int(ptr):x}+{size} runs past its allocation 0x{base:x}+{int(extent)}"
            )
        call(cu.cuCtxSynchronize)
        handle = call(cu.cuIpcGetMemHandle, cu.CUdeviceptr(base), detail=f"base 0x{base:x}")
        uuid, bus = device_identity(self.device)
        self.descriptor = IpcDescriptor(
            bytes(handle.reserved), int(ptr) - base, size, uuid, bus, typestr, tuple(shape)
        )
        self.owner = owner
        self.done = _spawn().Event()

    def wait_done(self, timeout: float | None = None) -> bool:
        """Block until the importer set `done` (True) or `timeout` seconds passed (False)."""
        return self.done.wait(timeout)

    def close(self) -> None:
        """Let go of the owner: the exporter may now free the memory."""
        self.owner = None

    def __enter__(self) -> IpcExport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class IpcImport:
    """An opened IPC descriptor in the importing process.

    Parameters
    ----------
    descriptor: what the exporter sent.
    device: ordinal of the device whose context maps the memory. Default: the exporting device
        (found by UUID). Another device maps it through peer access, which the driver enables
        lazily (CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS); opening then fails if the two devices are
        not peers.
    """

    def __init__(self, descriptor: IpcDescriptor, device: int | None = None) -> None:
        from cuda.bindings import driver as cu

        self.descriptor = descriptor
        self.device = ordinal_for_uuid(descriptor.device_uuid) if device is None else device
        ensure_context(self.device)
        handle = cu.CUipcMemHandle()
        handle.reserved = descriptor.handle
        flags = cu.CUipcMem_flags.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
        self._base: int | None = int(call(cu.cuIpcOpenMemHandle, handle, flags))

    @property
    def ptr(self) -> int:
        """Address of the exported bytes in this process."""
        if self._base is None:
            raise ValueError("IPC import is closed")
        return self._base + self.descriptor.offset

    @property
    def __cuda_array_interface__(self) -> dict:
        return {
            "shape": self.descriptor.shape,
            "typestr": self.descriptor.typestr,
            "data": (self.ptr, False),
            "strides": None,
            "version": 3,
            "stream": None,
        }

    def to_host(self) -> np.ndarray:
        """A host copy of the exported bytes, shaped and typed as described."""
        return _to_host(self.ptr, self.descriptor, self.device)

    def close(self) -> None:
        """Unmap the memory (idempotent). The exporter still owns it."""
        if self._base is None:
            return
        from cuda.bindings import driver as cu

        ensure_context(self.device)
        base, self._base = self._base, None
        call(cu.cuIpcCloseMemHandle, cu.CUdeviceptr(base))

    def __enter__(self) -> IpcImport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _to_host(ptr: int, descriptor: IpcDescriptor, device: int) -> np.ndarray:
    from cuda.bindings import driver as cu

    ensure_context(device)
    out = np.empty(descriptor.shape, dtype=np.dtype(descriptor.typestr))
    if descriptor.size:
        call(cu.cuMemcpyDtoH, out.ctypes.data, cu.CUdeviceptr(ptr), descriptor.size)
    return out


def staged_copy(descriptor: IpcDescriptor, device: int) -> np.ndarray:
    """Open `descriptor` on its own device, copy the bytes device-to-device into a fresh
    allocation on `device`, close the mapping; returns a host copy of what landed on `device`.

    The path for devices that are not peers: Numba's `_StagedIpcImpl` does the same. The
    device copy is freed before returning; the host copy is the evidence.
    """
    from cuda.bindings import driver as cu

    source = ordinal_for_uuid(descriptor.device_uuid)
    with IpcImport(descriptor, source) as opened:
        ensure_context(device)
        dst = int(call(cu.cuMemAlloc, max(descriptor.size, 1)))
        try:
            src_ctx = call(cu.cuDevicePrimaryCtxRetain, call(cu.cuDeviceGet, source))
            dst_ctx = call(cu.cuDevicePrimaryCtxRetain, call(cu.cuDeviceGet, device))
            try:
                call(
                    cu.cuMemcpyPeer,
                    cu.CUdeviceptr(dst),
                    dst_ctx,
                    cu.CUdeviceptr(opened.ptr),
                    src_ctx,
                    descriptor.size,
                )
                call(cu.cuCtxSynchronize)
            finally:
                call(cu.cuDevicePrimaryCtxRelease, call(cu.cuDeviceGet, source))
                call(cu.cuDevicePrimaryCtxRelease, call(cu.cuDeviceGet, device))
            return _to_host(dst, descriptor, device)
        finally:
            ensure_context(device)
            call(cu.cuMemFree, cu.CUdeviceptr(dst))


@dataclass
class ChildRead:
    """What an importer process saw: the bytes, its CAI dict, and where it opened them."""

    data: np.ndarray | None
    cai: dict | None
    device: int | None
    path: str
    error: str | None = None
    open_close_s: float = 0.0


def _importer_main(descriptor: IpcDescriptor, device: int | None, path: str, done, conn) -> None:
    """Body of the spawned importer: open, read, close, then tell the exporter it is done.

    The contexts are made current before the clock starts, so `open_close_s` is the open, read
    and close alone, not this process's CUDA start-up."""
    try:
        source = ordinal_for_uuid(descriptor.device_uuid)
        target = source if device is None else device
        ensure_context(source)
        ensure_context(target)
        start = time.perf_counter()
        if path == "staged":
            data = staged_copy(descriptor, target)
            cai, opened_on = None, target
        else:
            with IpcImport(descriptor, device) as opened:
                cai = dict(opened.__cuda_array_interface__)
                data = opened.to_host()
                opened_on = opened.device
        elapsed = time.perf_counter() - start
        conn.send(ChildRead(data, cai, opened_on, path, None, elapsed))
    except Exception as exc:  # reported to the parent, which judges it
        conn.send(ChildRead(None, None, device, path, f"{type(exc).__name__}: {exc}"))
    finally:
        done.set()
        conn.close()


def read_in_child(
    export: IpcExport, *, device: int | None = None, path: str = "direct", timeout: float = 120.0
) -> ChildRead:
    """Open `export` in a spawned process and return what that process read.

    `path` is "direct" (map the memory on `device`, peer access if it is another device) or
    "staged" (map it on the exporting device and copy device-to-device onto `device`). The
    export's memory stays alive until the child has set `done`.
    """
    if path not in ("direct", "staged"):
        raise ValueError(f"path must be 'direct' or 'staged', got {path!r}")
    ctx = _spawn()
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(
        target=_importer_main, args=(export.descriptor, device, path, export.done, child)
    )
    proc.start()
    child.close()
    try:
        if not parent.poll(timeout):
            raise TimeoutError(f"importer sent nothing within {timeout} s")
        result = parent.recv()
        export.wait_done(timeout)
    finally:
        proc.join(timeout)
        if proc.is_alive():
            proc.kill()
            proc.join()
    return result


def core_ipc_supported(device: int = 0) -> tuple[bool, str]:
    """(True, "") when the device's memory pools can export POSIX file descriptors, the
    shareable handle cuda.core's IPC-enabled pools use; else (False, the reason)."""
    from cuda.bindings import driver as cu

    try:
        ensure_context(device)
        dev = call(cu.cuDeviceGet, device)
        attr = cu.CUdevice_attribute
        pools = call(cu.cuDeviceGetAttribute, attr.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev)
        kinds = call(
            cu.cuDeviceGetAttribute, attr.CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, dev
        )
    except CUDAError as exc:
        return False, str(exc)
    if not pools:
        return False, f"device {device} has no stream-ordered memory pools"
    fd = int(cu.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    if not kinds & fd:
        return False, f"device {device} pools cannot export POSIX file descriptors ({kinds:#x})"
    return True, ""


class CoreIpcExport:
    """A buffer of a cuda.core IPC-enabled pool, shared with spawned processes.

    cuda.core pickles the pool (as a file descriptor, through multiprocessing) and the buffer
    (as its IPC descriptor); the importer gets a mapped `Buffer`. `fill` writes the bytes the
    importer should see; the exporter keeps the buffer until the importer sets `done`.
    """

    def __init__(self, size: int, device: int = 0, *, pool_bytes: int = 64 << 20) -> None:
        from cuda.core import Device, DeviceMemoryResource, DeviceMemoryResourceOptions

        ensure_context(device)
        self.device = device
        dev = Device(device)
        self.stream = dev.create_stream()
        options = DeviceMemoryResourceOptions(ipc_enabled=True, max_size=pool_bytes)
        self.mr = DeviceMemoryResource(dev, options=options)
        self.buffer = self.mr.allocate(size, stream=self.stream)
        self.size = size
        self.done = _spawn().Event()

    @property
    def ptr(self) -> int:
        return int(self.buffer.handle)

    def fill(self, data: np.ndarray) -> None:
        """Copy `data` (exactly `size` bytes) into the buffer and wait for the copy."""
        from cuda.bindings import driver as cu

        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        if raw.size != self.size:
            raise ValueError(f"fill needs {self.size} bytes, got {raw.size}")
        ensure_context(self.device)
        call(cu.cuMemcpyHtoD, cu.CUdeviceptr(self.ptr), raw.ctypes.data, self.size)
        call(cu.cuCtxSynchronize)

    def close(self) -> None:
        """Free the buffer back to the pool and close the pool."""
        self.buffer.close(self.stream)
        self.stream.sync()
        self.mr.close()


def _core_importer_main(mr, buffer, size: int, done, conn) -> None:
    """Body of the spawned cuda.core importer: the pool and buffer arrived mapped."""
    try:
        from cuda.bindings import driver as cu

        start = time.perf_counter()
        ensure_context(mr.device_id)
        out = np.empty(size, dtype=np.uint8)
        call(cu.cuMemcpyDtoH, out.ctypes.data, cu.CUdeviceptr(int(buffer.handle)), size)
        cai = {
            "shape": (size,),
            "typestr": "|u1",
            "data": (int(buffer.handle), False),
            "version": 3,
            "strides": None,
            "stream": None,
        }
        mapped = bool(buffer.is_mapped)
        buffer.close()
        elapsed = time.perf_counter() - start
        conn.send(
            ChildRead(out, dict(cai, mapped=mapped), mr.device_id, "cuda-core", None, elapsed)
        )
    except Exception as exc:  # reported to the parent, which judges it
        conn.send(ChildRead(None, None, None, "cuda-core", f"{type(exc).__name__}: {exc}"))
    finally:
        done.set()
        conn.close()


def read_core_in_child(export: CoreIpcExport, *, timeout: float = 120.0) -> ChildRead:
    """Send a `CoreIpcExport`'s pool and buffer to a spawned process and return what it read."""
    ctx = _spawn()
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(
        target=_core_importer_main, args=(export.mr, export.buffer, export.size, export.done, child)
    )
    proc.start()
    child.close()
    try:
        if not parent.poll(timeout):
            raise TimeoutError(f"importer sent nothing within {timeout} s")
        result = parent.recv()
        export.done.wait(timeout)
    finally:
        proc.join(timeout)
        if proc.is_alive():
            proc.kill()
            proc.join()
    return result
