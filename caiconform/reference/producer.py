"""The reference producer: a device array laid out exactly as asked, exported through the CAI.

`ReferenceArray` allocates through the tracking memory manager (so its lifetime is observable),
writes the values at the requested byte strides with the fill kernel, and plays one of the
stream scenarios of `caiconform.spec.scenarios.STREAM_SCENARIOS`. `interface_dict` is the pure
function that builds the exported dict; it holds the spec's key rules per version and is tested
on the CPU.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np

from caiconform.spec.layout import Layout, c_strides
from caiconform.spec.scenarios import STREAM_SCENARIOS

__all__ = [
    "ReferenceArray",
    "interface_dict",
    "host_values",
    "check_layout",
    "sentinel_of",
    "DEFAULT_DELAY_US",
]

#: Spin before the final write in scenarios with pending work (µs): long enough that a
#: consumer which does not wait reads the sentinel, short enough for many examples.
DEFAULT_DELAY_US = 20_000
MAX_NDIM = 8


def interface_dict(
    ptr: int,
    layout: Layout,
    typestr: str,
    version: int = 3,
    readonly: bool = False,
    stream: int | None = None,
    mask: Any = None,
    descr: list | None = None,
) -> dict:
    """The `__cuda_array_interface__` dict of an array whose element 0 is at `ptr`.

    Exports exactly the keys `version` defines: shape, typestr, data, version and strides
    always; mask from version 1 on; stream only in version 3. Zero-size arrays export pointer 0
    (required from version 2, harmless before). Versions 0 and 1 did not say what omitted
    strides mean, so they always get explicit strides; from version 2 on a C-contiguous layout
    given without strides exports `strides: None`.
    """
    if version not in (0, 1, 2, 3):
        raise ValueError(f"version must be 0..3, got {version!r}")
    if version == 0 and mask is not None:
        raise ValueError("version 0 has no mask entry [CAI-V0-NO-MASK]")
    if version < 3 and stream is not None:
        raise ValueError(f"version {version} has no stream entry [CAI-V2-STREAM-UNDEFINED]")
    if stream == 0:
        raise ValueError("stream 0 is forbidden; use None, 1 or 2 [CAI-STREAM-ZERO-FORBIDDEN]")
    shape = tuple(int(n) for n in layout.shape)
    itemsize = np.dtype(typestr).itemsize
    strides = layout.strides
    if strides is None and version < 2:
        strides = c_strides(shape, itemsize)
    size = math.prod(shape)
    d: dict[str, Any] = {
        "shape": shape,
        "typestr": typestr,
        "data": (int(ptr) if size else 0, bool(readonly)),
        "version": version,
        "strides": None if strides is None else tuple(int(s) for s in strides),
    }
    if descr is not None:
        d["descr"] = [tuple(field) for field in descr]
    if version >= 1:
        d["mask"] = mask
    if version >= 3:
        d["stream"] = stream
    return d


def host_values(values: Any, shape: tuple[int, ...], typestr: str) -> np.ndarray:
    """`values` as a C-contiguous host array of `shape` and dtype `typestr`.

    Reshapes when the element count already matches, else broadcasts where numpy would. For
    void types (e.g. `<V2`) a byte array whose last dimension is the item size is
    reinterpreted rather than converted.
    """
    dtype = np.dtype(typestr)
    arr = np.asarray(values)
    if arr.dtype != dtype:
        if dtype.kind == "V" and arr.dtype.itemsize == dtype.itemsize:
            arr = np.ascontiguousarray(arr).view(dtype)  # a structured or named type's bytes
        elif dtype.kind == "V" and arr.dtype == np.uint8:
            arr = np.ascontiguousarray(arr).view(dtype).reshape(arr.shape[:-1])
        else:
            arr = arr.astype(dtype)
    if arr.shape != tuple(shape) and arr.size == math.prod(shape):
        arr = arr.reshape(shape)  # e.g. one value given as a 1-element array for a 0-d shape
    return np.asarray(np.broadcast_to(arr, shape), order="C")  # asarray keeps 0-d arrays 0-d


def check_layout(layout: Layout, itemsize: int, values: np.ndarray) -> None:
    """Refuse layouts whose elements would overwrite each other with different bytes.

    Zero strides (broadcast) are fine when the values agree along those axes. Other overlaps
    would make the memory depend on write order, so they are refused; for small arrays the
    exact byte offsets decide, for large ones a sufficient ordering condition.
    """
    if len(layout.shape) > MAX_NDIM:
        raise ValueError(f"at most {MAX_NDIM} dimensions, got {len(layout.shape)}")
    strides = layout.effective_strides(itemsize)
    if len(strides) != len(layout.shape):
        raise ValueError(f"strides {strides} do not match shape {layout.shape}")
    if values.size == 0:
        return
    items = np.asarray(values, order="C").view(f"V{itemsize}") if itemsize else values
    for axis, (n, s) in enumerate(zip(layout.shape, strides, strict=True)):
        if s == 0 and n > 1:
            first = np.take(items, [0], axis=axis)
            if not (items == first).all():
                raise ValueError(f"axis {axis} has stride 0 but its values differ")
    dims = sorted(
        ((n, abs(s)) for n, s in zip(layout.shape, strides, strict=True) if n > 1 and s != 0),
        key=lambda t: t[1],
    )
    reach = itemsize
    ordered = True
    for n, s in dims:
        if s < reach:
            ordered = False
            break
        reach += (n - 1) * s
    if ordered:
        return
    if values.size > 1 << 20:
        raise ValueError(f"layout {layout} may overlap itself; refused for arrays this large")
    offsets = np.zeros(1, dtype=np.int64)
    for n, s in zip(layout.shape, strides, strict=True):
        if s != 0:
            offsets = (offsets[:, None] + np.arange(n, dtype=np.int64) * s).reshape(-1)
    offsets = np.sort(offsets)
    if offsets.size > 1 and np.diff(offsets).min() < itemsize:
        raise ValueError(f"layout {layout} places distinct elements on overlapping bytes")


def sentinel_of(values: np.ndarray) -> np.ndarray:
    """The bytes a pending array holds before its final write: the complement of every final
    byte, so an element read too early differs from the expected value in every byte."""
    raw = np.frombuffer(np.asarray(values, order="C").tobytes(), dtype=np.uint8)
    return np.bitwise_not(raw).view(values.dtype).reshape(values.shape)


def _finish_work(streams: list[int]) -> None:
    """Wait for the streams an array left work on (run when the array is collected)."""
    from caiconform.cuda.streams import synchronize_stream

    for handle in streams:
        synchronize_stream(handle)


class ReferenceArray:
    """A device array exporting `__cuda_array_interface__`, built for conformance testing.

    Parameters
    ----------
    values: the logical elements (anything numpy turns into `layout.shape` of `typestr`).
    layout: byte strides, offset inside the allocation, padding (`caiconform.spec.layout`).
    typestr: any numpy-representable typestr, byte order included (`>i4`, `|b1`, `<V2`, ...).
    version: the CAI version exported (0-3), with exactly that version's keys.
    readonly: the exported read-only flag.
    mask: a ReferenceArray of bools, or a host array turned into one (C layout), exported
        as `mask` (version >= 1).
    stream_scenario: one of STREAM_SCENARIOS; with version < 3 there is no stream to export,
        so the work is finished before the array is handed out.
    delay_us: spin before the final write in scenarios with pending work.
    device: the device ordinal; manager: the TrackingMemoryManager (default: the shared LOG).
    memory: the memory kind (`caiconform.cuda.memkinds.MEMORY_KINDS`: device, stream-ordered,
        managed, mapped or registered host memory, VMM); None: the example's kind
        (`memkinds.current_kind()`, "device" unless the runner drew another). A mask is made
        of the same kind. guard: for "vmm", at least this many unmapped bytes follow the
        array, so a read that far past its end faults.

    The exported stream is owned by the array and lives as long as it does
    [CAI-LIFETIME-STREAM]; the allocation is freed when the array is closed or collected.
    """

    def __init__(
        self,
        values: Any,
        layout: Layout,
        typestr: str,
        *,
        version: int = 3,
        readonly: bool = False,
        mask: ReferenceArray | np.ndarray | None = None,
        stream_scenario: str = "none",
        delay_us: int = DEFAULT_DELAY_US,
        device: int = 0,
        manager: Any = None,
        descr: list | None = None,
        memory: str | None = None,
        guard: int = 0,
    ) -> None:
        from caiconform.cuda import memkinds
        from caiconform.cuda.device import ensure_context
        from caiconform.reference.tracking import TrackingMemoryManager

        memory = memkinds.check_kind(memory or memkinds.current_kind())

        if stream_scenario not in STREAM_SCENARIOS:
            raise ValueError(
                f"stream_scenario must be one of {STREAM_SCENARIOS}, got {stream_scenario!r}"
            )
        if version not in (0, 1, 2, 3):
            raise ValueError(f"version must be 0..3, got {version!r}")
        if mask is not None and version == 0:
            raise ValueError("version 0 has no mask entry [CAI-V0-NO-MASK]")
        if mask is not None and not isinstance(mask, ReferenceArray):
            host_mask = np.asarray(mask, dtype=np.bool_)
            mask = ReferenceArray(
                host_mask,
                Layout(host_mask.shape),
                "|b1",
                version=version,
                device=device,
                manager=manager,
                memory=memory,
            )
        from caiconform.spec.dtypes import descr_of, is_named, storage_typestr

        #: the caiconform name of a named type (bfloat16, ...): DLPack has codes for some
        self.dtype_name = typestr if is_named(typestr) else None
        if is_named(typestr):  # bfloat16, float8, structured: exported as numpy can spell them
            descr = descr if descr is not None else descr_of(typestr)
            typestr = storage_typestr(typestr)
        self.layout = layout
        self.typestr = typestr
        self.descr = descr
        self.version = version
        self.readonly = readonly
        self.mask = mask
        self.device = device
        self.memory = memory
        self.stream_scenario = stream_scenario
        self.values = host_values(values, layout.shape, typestr)
        self.itemsize = self.values.dtype.itemsize
        check_layout(layout, self.itemsize, self.values)
        self.strides = layout.effective_strides(self.itemsize)
        self._streams: list[Any] = []
        self._keep: list[Any] = []
        self.stream: int | None = None
        #: one `caiconform.reference.dlpack_export.Export` per `__dlpack__` capsule
        self.dlpack_exports: list[Any] = []
        #: when a consumer releases the last capsule's tensor it held (its deleter), overwrite the
        #: block with `dlpack_producer.POISON` first: a consumer reading after that reads it
        self.poison_on_release = False

        ensure_context(device)
        self.manager = manager if manager is not None else TrackingMemoryManager()
        self.allocation = None
        self.ptr = 0
        if self.values.size == 0 or self.itemsize == 0:
            return
        self.allocation = self.manager.allocate(
            layout.allocation_bytes(self.itemsize), device, "producer", memory, guard
        )
        self.ptr = self.allocation.ptr + layout.offset
        # Weakref callbacks run before the attributes are released: finish this array's work
        # before its allocation, staging buffers and streams go away.
        self._work: list[int] = []
        weakref.finalize(self, _finish_work, self._work).atexit = False
        self._play(stream_scenario, delay_us)

    # -- the scenarios -------------------------------------------------------------------

    def _fill(self, staging: Any, stream: int, begin: int = 0, end: int | None = None) -> None:
        from caiconform.cuda import kernels

        kernels.fill(
            self.ptr,
            staging.ptr,
            self.layout.shape,
            self.strides,
            self.itemsize,
            stream=stream,
            device=self.device,
            begin=begin,
            end=end,
        )

    def _play(self, scenario: str, delay_us: int) -> None:
        from cuda.bindings import driver

        from caiconform.cuda import kernels
        from caiconform.cuda.device import synchronize
        from caiconform.cuda.errors import call
        from caiconform.cuda.memory import DeviceBuffer
        from caiconform.cuda.streams import LEGACY, PER_THREAD, OwnedEvent, OwnedStream

        final = DeviceBuffer.from_host(self.values, self.device)
        self._keep.append(final)
        if scenario == "none":
            work = OwnedStream(self.device)
            self._fill(final, work.handle)
            work.synchronize()
            return
        sentinel = DeviceBuffer.from_host(sentinel_of(self.values), self.device)
        self._fill(sentinel, LEGACY)
        synchronize()
        sentinel.close()
        if scenario in ("legacy", "per-thread", "pending", "unsynced"):
            if scenario == "legacy":
                work = LEGACY
            elif scenario == "per-thread":
                work = PER_THREAD
            else:
                owned = OwnedStream(self.device)
                self._streams.append(owned)
                work = owned.handle
            self._work.append(work)
            kernels.spin(work, delay_us, device=self.device)
            self._fill(final, work)
            exported = work
            if scenario == "unsynced":
                idle = OwnedStream(self.device)
                self._streams.append(idle)
                exported = idle.handle
        else:  # multi-stream: two halves on two streams, exported on a third waiting on both
            first, second, third = (OwnedStream(self.device) for _ in range(3))
            self._streams += [first, second, third]
            half = self.values.size // 2
            self._work += [first.handle, second.handle, third.handle]
            for stream, (lo, hi), us in (
                (first, (0, half), delay_us),
                (second, (half, self.values.size), delay_us * 2),
            ):
                kernels.spin(stream.handle, us, device=self.device)
                self._fill(final, stream.handle, lo, hi)
            for stream in (first, second):
                event = OwnedEvent(self.device).record(stream.handle)
                self._keep.append(event)
                call(driver.cuStreamWaitEvent, driver.CUstream(third.handle), event.event, 0)
            exported = third.handle
        if self.version >= 3:
            self.stream = exported
        else:
            synchronize()

    # -- the interface -------------------------------------------------------------------

    @property
    def __cuda_array_interface__(self) -> dict:
        return interface_dict(
            self.ptr,
            self.layout,
            self.typestr,
            self.version,
            self.readonly,
            self.stream,
            self.mask,
            self.descr,
        )

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: Any = None,
        dl_device: Any = None,
        copy: bool | None = None,
    ) -> Any:
        """A DLPack capsule of this array, as the array API standard's `__dlpack__` says
        (`caiconform.reference.dlpack_producer`); its tracked `Export` is appended to
        `dlpack_exports`."""
        from caiconform.reference import dlpack_producer

        return dlpack_producer.export(
            self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy
        )

    def __dlpack_device__(self) -> tuple[int, int]:
        from caiconform.reference.dlpack_producer import device_of

        return device_of(self.memory, self.device)

    @staticmethod
    def from_dlpack_tensor(address: int) -> ReferenceArray:
        """The table's `managed_tensor_to_py_object_no_sync`: a ReferenceArray holding the
        elements of the owning tensor at `address` (a copy: a ReferenceArray owns its memory),
        the tensor released once read."""
        from caiconform.reference import dlpack_capi

        values, typestr = dlpack_capi.take_elements(address)
        return ReferenceArray(values, Layout(values.shape), typestr)

    @staticmethod
    def allocate_like(
        shape: tuple[int, ...], dtype: tuple[int, int, int], device: tuple[int, int]
    ) -> ReferenceArray:
        """The table's `managed_tensor_allocator`: a zeroed ReferenceArray of the prototype's
        shape and type on its CUDA device."""
        from caiconform.reference import dlpack_capi

        typestr = dlpack_capi.typestr_for(dtype, device)
        return ReferenceArray(
            np.zeros(shape, np.dtype(typestr)), Layout(shape), typestr, device=device[1]
        )

    @property
    def shape(self) -> tuple[int, ...]:
        return self.layout.shape

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    def synchronize(self) -> None:
        """Wait for every piece of work this array enqueued (all its scenario's streams)."""
        from cuda.bindings import driver

        from caiconform.cuda.errors import call

        call(driver.cuCtxSynchronize)

    def close(self) -> None:
        """Finish pending work and free the allocation now (the log records the free)."""
        if self.allocation is not None and not self.allocation.closed:
            self.synchronize()
            self.allocation.close()

    def __repr__(self) -> str:
        return (
            f"<ReferenceArray shape={self.layout.shape} typestr={self.typestr!r} "
            f"v{self.version} ptr=0x{self.ptr:x} stream={self.stream} "
            f"scenario={self.stream_scenario} memory={self.memory}>"
        )


def _exchange_table() -> Any:
    """The C exchange API table `ReferenceArray` carries (`caiconform.reference.dlpack_capi`)."""
    from caiconform.reference.dlpack_capi import exchange_table

    return exchange_table(ReferenceArray.from_dlpack_tensor, ReferenceArray.allocate_like)


#: DLPack 1.3's C exchange API table, on the type as dlpack.h asks [DLPACK-CAPI-ON-TYPE]
ReferenceArray.__dlpack_c_exchange_api__ = _exchange_table()
