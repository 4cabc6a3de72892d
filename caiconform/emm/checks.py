"""EMM checks that need a GPU, run inside the plugin's own process with the plugin installed.

Each `_check_*` method judges one part of the contract against the live plugin instance Numba
made for the current context, and emits `CheckResult`s as it goes (so a crash later in the run
keeps what was already learned). Observations go through the CUDA driver (cuda.bindings), not
through the plugin: the pointer's device and allocation come from cuPointerGetAttribute and
cuMemGetAddressRange, the data from copies Numba makes.
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
import pickle
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import numpy as np

from caiconform.cuda.errors import call
from caiconform.emm.lifecycle import LifecycleChecks
from caiconform.emm.paths import PATHS, PathChecks, Recorder
from caiconform.emm.result import CheckResult, failed, passed, skipped
from caiconform.emm.static import NumbaEMM

__all__ = ["GpuChecks", "MEMALLOC_SIZES", "IMPOSSIBLE_SIZE", "hostalloc_flags_missing"]

#: The sizes memalloc is asked for: odd, tiny, a page, and just over 1 MiB.
MEMALLOC_SIZES = (1, 7, 4096, (1 << 20) + 3)
#: No device has 4 PiB: memalloc must raise, never return.
IMPOSSIBLE_SIZE = 1 << 52
#: Bytes allocated when a free can only be seen in cuMemGetInfo, and the slack allowed.
_BIG = 256 << 20
_SLACK = 64 << 20
_INVISIBLE = (
    "the allocation never showed in cuMemGetInfo (a pool served it), so its free cannot be "
    "seen there either"
)


def _pattern(n: int, seed: int) -> np.ndarray:
    return ((np.arange(n, dtype=np.uint64) * 131 + seed * 17 + 7) % 251).astype(np.uint8)


def _free_bytes() -> int:
    from cuda.bindings import driver as cu

    return int(call(cu.cuMemGetInfo)[0])


def _allocation_range(address: int) -> tuple[int, int]:
    from cuda.bindings import driver as cu

    base, size = call(cu.cuMemGetAddressRange, cu.CUdeviceptr(address), detail=f"0x{address:x}")
    return int(base), int(size)


def _pointer_attribute(address: int, name: str) -> int:
    from cuda.bindings import driver as cu

    attr = getattr(cu.CUpointer_attribute, name)
    return int(call(cu.cuPointerGetAttribute, attr, cu.CUdeviceptr(address)))


#: flags a device with unified addressing gives every cuMemHostAlloc allocation, asked or not
UNIFIED_IMPLIED = ("portable", "mapped")


def hostalloc_flags_missing(
    got: int, asked: dict[str, bool], bits: dict[str, int], unified: bool
) -> list[str]:
    """The cuMemHostAlloc flags asked for that cuMemHostGetFlags does not report, less those
    the driver implies.

    The driver's Unified Addressing section ("Automatic Mapping of Host Allocated Host
    Memory"): on a device with unified addressing, all host memory allocated with
    cuMemHostAlloc is accessible from all contexts on all devices whether or not
    CU_MEMHOSTALLOC_PORTABLE and CU_MEMHOSTALLOC_DEVICEMAP are given. The flags word is the
    driver's view of the allocation, not the request: on two H100s (driver 580.159.04) a
    PORTABLE-only allocation, Numba's own memhostalloc's, reported 0x2 (DEVICEMAP, no PORTABLE).
    So under unified addressing a missing PORTABLE or DEVICEMAP bit is no finding (the mapped
    case is judged by a device write seen on the host instead); WRITECOMBINED stays judged.
    """
    return [
        name
        for name, on in asked.items()
        if on and not got & int(bits[name]) and not (unified and name in UNIFIED_IMPLIED)
    ]


def _unified_addressing(device: int) -> bool:
    from cuda.bindings import driver as cu

    attr = cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING
    return bool(call(cu.cuDeviceGetAttribute, attr, call(cu.cuDeviceGet, device)))


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


def _importer_main(items: list[tuple[str, bytes, bytes]], conn) -> None:
    """Spawned by the IPC check: open each pickled IpcHandle with Numba, read it, close it.

    Handles are opened one at a time, so two sub-allocations of one driver allocation are never
    mapped twice at once in this process.
    """
    out: dict[str, str] = {}
    try:
        from numba import cuda
        from numba.cuda.cudadrv.devicearray import DeviceNDArray

        ctx = cuda.current_context()
        for name, blob, expected in items:
            try:
                handle = pickle.loads(blob)
                mem = handle.open(ctx)
                view = DeviceNDArray((handle.size,), (1,), np.uint8, gpu_data=mem)
                data = view.copy_to_host().tobytes()
                del view, mem
                handle.close()
                if data == expected:
                    out[name] = "ok"
                else:
                    bad = next(
                        i for i, (a, b) in enumerate(zip(data, expected, strict=False)) if a != b
                    )
                    out[name] = f"bytes differ from byte {bad} of {len(expected)}"
            except Exception as exc:
                out[name] = f"{type(exc).__name__}: {exc}"
    except Exception as exc:
        out["*"] = f"{type(exc).__name__}: {exc}"
    conn.send(out)
    conn.close()


def _fresh_main(module_name: str, qualname: str, via_env: bool, blob: bytes | None, conn) -> None:
    """Spawned by the fresh-process check: the plugin set the way a user would (through
    ``NUMBA_CUDA_MEMORY_MANAGER=<module>`` in this process's environment from its start when the
    module names the class as ``_numba_memory_manager``, else with set_memory_manager before any
    context), then every allocation path, IPC open included (the handle came from another
    process). Sends the results' dicts."""
    out: list[dict] = []
    try:
        import importlib

        module = importlib.import_module(module_name)
        plugin: Any = module
        for part in qualname.split("."):
            plugin = getattr(plugin, part)
        from numba import cuda
        from numba.cuda.cudadrv.driver import driver

        recorder = Recorder(plugin, driver).install()
        if not via_env:
            cuda.set_memory_manager(plugin)
        route = "NUMBA_CUDA_MEMORY_MANAGER" if via_env else "set_memory_manager (fresh process)"
        mgr = cuda.current_context().memory_manager
        if via_env:
            value = os.environ.get("NUMBA_CUDA_MEMORY_MANAGER")
            if type(mgr) is plugin:
                out.append(passed("env-variable", "EMM-SET-ENV", f"={value}").to_dict())
            else:
                out.append(
                    failed(
                        "env-variable", "EMM-SET-ENV", type(mgr).__qualname__, plugin.__qualname__
                    ).to_dict()
                )
        PathChecks(cuda, recorder, route, lambda r: out.append(r.to_dict())).run(blob)
    except Exception as exc:
        out.append(
            failed(
                "fresh-process",
                "EMM-NUMBA-NO-DIRECT-ALLOC",
                f"{type(exc).__name__}: {exc}",
                "the paths checked",
            ).to_dict()
        )
    conn.send(out)
    conn.close()


class GpuChecks:
    """The checks of one plugin class in this process; `emit` receives each result.

    `recorder` (installed before the context was made) watches the plugin's methods and Numba's
    driver allocators for the allocation-path checks; None for Numba's own manager, where no
    plugin is in use. `target` is the (module, qualname) the user named, for the fresh process;
    `via_env`: the module names the class as ``_numba_memory_manager``.
    """

    def __init__(
        self,
        plugin: type,
        api: NumbaEMM,
        emit: Callable[[CheckResult], None],
        *,
        recorder: Recorder | None = None,
        target: tuple[str, str] | None = None,
        via_env: bool = False,
    ) -> None:
        from numba import cuda

        self.cuda = cuda
        self.plugin = plugin
        self.api = api
        self.emit = emit
        self.recorder = recorder
        self.target = target or (plugin.__module__, plugin.__qualname__)
        self.via_env = via_env

    # -- helpers -----------------------------------------------------------------------------
    def _array(self, mem: Any, nbytes: int):
        from numba.cuda.cudadrv.devicearray import DeviceNDArray

        return DeviceNDArray((nbytes,), (1,), np.uint8, gpu_data=mem)

    def _write(self, mem: Any, data: np.ndarray) -> None:
        self._array(mem, data.size).copy_to_device(data)

    def _read(self, mem: Any, nbytes: int) -> np.ndarray:
        return self._array(mem, nbytes).copy_to_host()

    def _underlying(self, mem: Any) -> Any:
        """The MemoryPointer behind an OwnedPointer wrapper (Numba's own memalloc returns one)."""
        return mem._mem if isinstance(mem, self.api.owned_pointer) else mem

    def _is_pointer(self, mem: Any, kind: type) -> bool:
        if isinstance(mem, kind):
            return True
        return isinstance(mem, self.api.owned_pointer) and isinstance(mem._view, kind)

    def _guard(self, check: str, rule: str, body: Callable[[], None]) -> None:
        """Run one check; an exception the plugin raises is a failure of that check."""
        try:
            body()
        except Exception as exc:
            self.emit(failed(check, rule, f"{type(exc).__name__}: {exc}", "no exception"))

    # -- the run -----------------------------------------------------------------------------
    def run(self, on_start: Callable[[str, str], None] | None = None) -> None:
        """Run every check group; `on_start(check, rule)` is told which one is about to run,
        so a crash can be pinned on it."""
        started = on_start or (lambda check, rule: None)
        started("binding", "EMM-ONE-INSTANCE-PER-CONTEXT")
        ctx = self.cuda.current_context()
        self.ctx = ctx
        self.mgr = ctx.memory_manager
        self._check_binding()
        for check, rule, body in (
            ("allocation-paths", "EMM-NUMBA-NO-DIRECT-ALLOC", self._check_paths),
            ("fresh-process", "EMM-SET-ENV", self._check_fresh_process),
            ("numba-uses-plugin", "EMM-NUMBA-NO-DIRECT-ALLOC", self._check_numba_uses_plugin),
            ("memalloc", "EMM-ALLOC-VALID", self._check_memalloc),
            ("memalloc-impossible", "EMM-ALLOC-VALID", self._check_impossible),
            ("finalizer", "EMM-POINTER-FINALIZER", self._check_finalizer),
            ("host-memory", "EMM-ALLOC-POINTER-OBJECT", self._check_host_memory),
            ("memory-info", "EMM-MEMORYINFO-TYPE", self._check_memory_info),
            ("ipc", "EMM-IPC-HANDLE", self._check_ipc),
            ("ipc-cai-import", "EMM-IPCHANDLE-OFFSET", self._check_ipc_imported),
            ("lifecycle-routing", "EMM-NUMBA-IPC-ROUTED", self._check_routing),
            ("defer-cleanup", "EMM-DEFER-CLEANUP", self._check_defer),
            ("initialize", "EMM-INITIALIZE-IDEMPOTENT", self._check_initialize),
            ("reset-before-initialize", "EMM-RESET-BEFORE-INITIALIZE", self._check_reset_early),
            ("reset", "EMM-RESET-FREES", self._check_reset),
            ("reset-routed", "EMM-NUMBA-RESET-ROUTED", self._check_reset_routed),
        ):
            started(check, rule)
            self._guard(check, rule, body)
            gc.collect()

    def _check_binding(self) -> None:
        mgr, ctx = self.mgr, self.ctx
        same = self.cuda.current_context().memory_manager is mgr
        if type(mgr) is self.plugin and mgr.context is ctx and same:
            self.emit(
                passed(
                    "one-instance-per-context",
                    "EMM-ONE-INSTANCE-PER-CONTEXT",
                    f"{type(mgr).__qualname__} bound to {ctx!r}",
                )
            )
        else:
            self.emit(
                failed(
                    "one-instance-per-context",
                    "EMM-ONE-INSTANCE-PER-CONTEXT",
                    f"{type(mgr).__qualname__}, context {mgr.context!r}, same={same}",
                    f"{self.plugin.__qualname__} bound to {ctx!r}, one instance",
                )
            )
        previous = self.api.get_manager()
        try:
            self.api.set_memory_manager(self.api.default_manager)
            kept = self.cuda.current_context().memory_manager is mgr
        finally:
            self.api.restore_manager(previous)
        if kept:
            self.emit(
                passed(
                    "context-bound",
                    "EMM-CONTEXT-BOUND",
                    "existing context kept its instance after set_memory_manager",
                )
            )
        else:
            self.emit(
                failed(
                    "context-bound",
                    "EMM-CONTEXT-BOUND",
                    "instance replaced",
                    "existing context keeps its instance",
                )
            )

    def _not_a_plugin(self) -> str | None:
        if self.recorder is None:
            return "Numba's own memory manager: no EMM plugin is in use, so the rule does not apply"
        return None

    def _check_paths(self) -> None:
        """Every Numba allocation path through the plugin set with set_memory_manager in this
        process (`paths.PathChecks`); IPC open is judged in the fresh process."""
        why = self._not_a_plugin()
        if why:
            for path, _ in PATHS:
                self.emit(
                    skipped(f"path:{path} via set_memory_manager", "EMM-NUMBA-NO-DIRECT-ALLOC", why)
                )
            return
        PathChecks(self.cuda, self.recorder, "set_memory_manager", self.emit).run(None)

    def _check_fresh_process(self) -> None:
        """The paths again in a spawned process where the plugin is set as a user would:
        ``NUMBA_CUDA_MEMORY_MANAGER=<module>`` (the exact module name the user gave) when the
        module names the class, else set_memory_manager; an IPC handle exported here is opened
        there."""
        why = self._not_a_plugin()
        if why:
            self.emit(skipped("env-variable", "EMM-SET-ENV", why))
            return
        if not self.via_env:
            self.emit(
                skipped(
                    "env-variable",
                    "EMM-SET-ENV",
                    f"module {self.target[0]}'s _numba_memory_manager is not this class",
                )
            )
        blob = None
        mem = self.mgr.memalloc(4096)
        try:
            blob = pickle.dumps(self.mgr.get_ipc_handle(mem))
        except Exception as exc:
            self.emit(
                skipped(
                    "path:ipc-open",
                    "EMM-NUMBA-NO-DIRECT-ALLOC",
                    f"no IPC handle to open: {type(exc).__name__}: {exc}",
                )
            )
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe(duplex=False)
        saved = os.environ.pop("NUMBA_CUDA_MEMORY_MANAGER", None)
        if self.via_env:
            os.environ["NUMBA_CUDA_MEMORY_MANAGER"] = self.target[0]
        try:
            proc = ctx.Process(target=_fresh_main, args=(*self.target, self.via_env, blob, child))
            proc.start()
        finally:
            os.environ.pop("NUMBA_CUDA_MEMORY_MANAGER", None)
            if saved is not None:
                os.environ["NUMBA_CUDA_MEMORY_MANAGER"] = saved
        child.close()
        try:
            if not parent.poll(300):
                raise RuntimeError("the fresh process sent nothing within 300 s")
            for data in parent.recv():
                self.emit(CheckResult.from_dict(data))
        except EOFError:
            raise RuntimeError(f"the fresh process died (exit code {proc.exitcode})") from None
        finally:
            proc.join(30)
            if proc.is_alive():
                proc.kill()
        del mem

    def _check_numba_uses_plugin(self) -> None:
        mgr = self.mgr
        seen: list[int] = []
        original = mgr.memalloc

        def counting(size: int):
            mem = original(size)
            seen.append(int(mem.device_pointer))
            return mem

        mgr.memalloc = counting
        try:
            arr = self.cuda.device_array(1000, dtype=np.uint8)
            ptr = int(arr.device_ctypes_pointer.value)
        finally:
            del mgr.memalloc
        if seen == [ptr]:
            self.emit(
                passed(
                    "numba-uses-plugin",
                    "EMM-NUMBA-NO-DIRECT-ALLOC",
                    "cuda.device_array went through memalloc",
                )
            )
        else:
            self.emit(
                failed(
                    "numba-uses-plugin",
                    "EMM-NUMBA-NO-DIRECT-ALLOC",
                    f"memalloc returned {seen}, array at {ptr}",
                    "one memalloc call returning the array's pointer",
                )
            )

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
            base, extent = _allocation_range(address)
            if address + size > base + extent:
                problems["valid"].append(f"{size}: 0x{address:x}+{size} past 0x{base:x}+{extent}")
            ranges.append((address, address + size, size))
            ordinal = _pointer_attribute(address, "CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL")
            kind = _pointer_attribute(address, "CU_POINTER_ATTRIBUTE_MEMORY_TYPE")
            if ordinal != device or kind != int(cu.CUmemorytype.CU_MEMORYTYPE_DEVICE):
                problems["device"].append(f"{size}: device {ordinal}, memory type {kind}")
            data = _pattern(size, size)
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

    def _emit_set(self, check: str, rule: str, problems: list[str], expected: str, over) -> None:
        """One result for a property checked over several cases; `over` names the cases."""
        if problems:
            self.emit(failed(check, rule, "; ".join(problems), expected))
        else:
            self.emit(passed(check, rule, over))

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
        data = _pattern(size, 3)
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

    def _check_host_memory(self) -> None:
        from cuda.bindings import driver as cu

        mapped_cls, pinned_cls = self.api.mapped_memory, self.api.pinned_memory
        flags = {
            "portable": cu.CU_MEMHOSTALLOC_PORTABLE,
            "mapped": cu.CU_MEMHOSTALLOC_DEVICEMAP,
            "wc": cu.CU_MEMHOSTALLOC_WRITECOMBINED,
        }
        unified = _unified_addressing(self.ctx.device.id)
        size = 4096
        for mapped, portable, wc in ((False, True, False), (True, False, True)):
            rule = "EMM-POINTER-MAPPED" if mapped else "EMM-POINTER-PINNED"
            check = f"memhostalloc(mapped={mapped})"
            mem = self.mgr.memhostalloc(size, mapped=mapped, portable=portable, wc=wc)
            want = mapped_cls if mapped else pinned_cls
            if not self._is_pointer(mem, want):
                self.emit(failed(check, rule, type(mem).__qualname__, want.__qualname__))
                continue
            got = int(call(cu.cuMemHostGetFlags, mem.host_pointer))
            asked = {"portable": portable, "mapped": mapped, "wc": wc}
            missing = hostalloc_flags_missing(got, asked, flags, unified)
            if missing:
                self.emit(failed(check, rule, f"flags {got:#x} lack {missing}", "flags as asked"))
                continue
            if mapped:
                call(cu.cuMemsetD8, cu.CUdeviceptr(int(mem.device_pointer)), 0x5A, size)
                call(cu.cuCtxSynchronize)
                raw = (ctypes.c_uint8 * size).from_address(int(mem.host_pointer))
                host = np.ctypeslib.as_array(raw)
                if not (host == 0x5A).all():
                    self.emit(
                        failed(
                            check,
                            rule,
                            "device writes not visible on the host",
                            "mapped memory shared",
                        )
                    )
                    continue
            self.emit(passed(check, rule, f"{type(mem).__qualname__}, flags {got:#x}"))
        for mapped in (False, True):
            rule = "EMM-POINTER-MAPPED" if mapped else "EMM-POINTER-PINNED"
            check = f"mempin(mapped={mapped})"
            owner = np.zeros(size * 2, dtype=np.uint8)
            mem = self.mgr.mempin(owner, owner.ctypes.data, owner.nbytes, mapped=mapped)
            want = mapped_cls if mapped else pinned_cls
            kind = _pointer_attribute(owner.ctypes.data, "CU_POINTER_ATTRIBUTE_MEMORY_TYPE")
            if not self._is_pointer(mem, want):
                self.emit(failed(check, rule, type(mem).__qualname__, want.__qualname__))
            elif kind != int(cu.CUmemorytype.CU_MEMORYTYPE_HOST):
                self.emit(failed(check, rule, f"memory type {kind}", "registered host memory"))
            elif mapped and int(mem.device_pointer) != int(
                call(cu.cuMemHostGetDevicePointer, owner.ctypes.data, 0)
            ):
                self.emit(
                    failed(
                        check,
                        rule,
                        "device pointer differs from the driver's",
                        "cuMemHostGetDevicePointer's",
                    )
                )
            else:
                self.emit(passed(check, rule, type(mem).__qualname__))
            del mem

    def _check_memory_info(self) -> None:
        from cuda.bindings import driver as cu

        try:
            info = self.mgr.get_memory_info()
        except RuntimeError as exc:
            name = type(exc).__name__
            self.emit(
                passed(
                    "memory-info-raises",
                    "EMM-MEMORY-INFO-RAISES",
                    f"raised {name} (a RuntimeError)",
                )
            )
            self.emit(
                failed(
                    "memory-info-device",
                    "EMM-MEMORY-INFO",
                    f"raised {name}",
                    "free and total memory",
                )
            )
            self.emit(
                skipped(
                    "memory-info",
                    "EMM-MEMORYINFO-TYPE",
                    f"get_memory_info raised {name}: no MemoryInfo to judge",
                )
            )
            return
        except Exception as exc:
            self.emit(
                failed(
                    "memory-info-raises",
                    "EMM-MEMORY-INFO-RAISES",
                    f"{type(exc).__name__}: {exc}",
                    "a MemoryInfo or a RuntimeError",
                )
            )
            return
        self.emit(
            skipped(
                "memory-info-raises",
                "EMM-MEMORY-INFO-RAISES",
                "get_memory_info returned a result: nothing to raise",
            )
        )
        _, total = call(cu.cuMemGetInfo)
        if not isinstance(info, self.api.memory_info) or not 0 <= info.free <= info.total:
            self.emit(
                failed(
                    "memory-info",
                    "EMM-MEMORYINFO-TYPE",
                    repr(info),
                    "MemoryInfo(free, total), 0 <= free <= total",
                )
            )
            return
        self.emit(passed("memory-info", "EMM-MEMORYINFO-TYPE", repr(info)))
        if info.total != int(total):
            self.emit(
                failed(
                    "memory-info-device",
                    "EMM-MEMORY-INFO",
                    f"total {info.total}",
                    f"the device's total {int(total)}",
                )
            )
        else:
            self.emit(passed("memory-info-device", "EMM-MEMORY-INFO", "matches cuMemGetInfo"))

    def _check_ipc(self) -> None:
        from cuda.bindings import driver as cu

        mgr = self.mgr
        whole = mgr.memalloc(4096)
        big = mgr.memalloc(1 << 20)
        first, second = mgr.memalloc(4096), mgr.memalloc(4096)
        fills = {}
        for i, (mem, n) in enumerate(
            ((whole, 4096), (big, 1 << 20), (first, 4096), (second, 4096))
        ):
            fills[id(mem)] = _pattern(n, 11 + i)
            self._write(mem, fills[id(mem)])
        piece = big.view(1000, 4000)
        cases = {
            "whole": (whole, fills[id(whole)]),
            "slice": (piece, fills[id(big)][1000:4000]),
            "suballoc-1": (first, fills[id(first)]),
            "suballoc-2": (second, fills[id(second)]),
        }
        identity = self.ctx.device.get_device_identity()
        problems: dict[str, list[str]] = {
            k: [] for k in ("type", "base", "handle", "size", "offset", "source")
        }
        blobs = []
        offsets = {}
        for name, (mem, data) in cases.items():
            handle = mgr.get_ipc_handle(mem)
            if not isinstance(handle, self.api.ipc_handle):
                problems["type"].append(f"{name}: {type(handle).__qualname__}")
                continue
            if handle.base is not mem and self._underlying(handle.base) is not self._underlying(
                mem
            ):
                problems["base"].append(f"{name}: base is {type(handle.base).__qualname__}")
            raw = getattr(handle.handle, "reserved", None)
            if not isinstance(handle.handle, cu.CUipcMemHandle) or len(bytes(raw or b"")) != 64:
                problems["handle"].append(f"{name}: {type(handle.handle).__qualname__}")
            if handle.size != mem.size:
                problems["size"].append(f"{name}: {handle.size} for memory.size {mem.size}")
            address = int(mem.device_pointer)
            base, _ = _allocation_range(address)
            offsets[name] = handle.offset
            if handle.offset != address - base:
                problems["offset"].append(
                    f"{name}: {handle.offset}, pointer - base {address - base}"
                )
            if handle.source_info != identity:
                problems["source"].append(f"{name}: {handle.source_info}")
            try:
                blobs.append((name, pickle.dumps(handle), data.tobytes()))
            except Exception as exc:
                problems["handle"].append(f"{name}: does not pickle ({type(exc).__name__}: {exc})")
        self._emit_set(
            "ipc-handle-class", "EMM-IPCHANDLE-TYPE", problems["type"], "IpcHandle", list(cases)
        )
        self._emit_set(
            "ipc-handle-base",
            "EMM-IPCHANDLE-BASE",
            problems["base"],
            "the memory passed in",
            list(cases),
        )
        self._emit_set(
            "ipc-handle-bytes",
            "EMM-IPCHANDLE-HANDLE",
            problems["handle"],
            "a 64-byte CUipcMemHandle that pickles",
            list(cases),
        )
        self._emit_set(
            "ipc-handle-size", "EMM-IPCHANDLE-SIZE", problems["size"], "memory.size", list(cases)
        )
        self._emit_set(
            "ipc-handle-offset",
            "EMM-IPCHANDLE-OFFSET",
            problems["offset"],
            "pointer - driver allocation base",
            offsets,
        )
        self._emit_set(
            "ipc-handle-source",
            "EMM-IPCHANDLE-SOURCE-INFO",
            problems["source"],
            "the device's identity",
            list(cases),
        )
        self.emit(passed("ipc-handle", "EMM-IPC-HANDLE", f"returned for {list(cases)}"))
        self._check_ipc_same_process(mgr.get_ipc_handle(whole))
        if not blobs:
            return
        first_base, second_base = (
            _allocation_range(int(m.device_pointer))[0] for m in (first, second)
        )
        shared = "one driver allocation" if first_base == second_base else "separate allocations"
        opened = self._open_in_child(blobs)
        for name, _, _ in blobs:
            verdict = opened.get(name, opened.get("*", "no answer"))
            rule = "EMM-IPC-OPEN-OTHER-PROCESS" if name == "whole" else "EMM-IPCHANDLE-OFFSET"
            label = f"ipc-open-{name}"
            if verdict == "ok":
                note = f"offset {offsets.get(name)}" + (
                    f", {shared}" if name.startswith("suballoc") else ""
                )
                self.emit(passed(label, rule, note))
            else:
                self.emit(failed(label, rule, verdict, "the exported bytes, in a spawned process"))
        del whole, big, first, second, piece, cases

    def _check_ipc_imported(self) -> None:
        """IPC of a CAI-imported array: the reference producer's array sits 512 bytes into its
        driver allocation; `cuda.as_cuda_array` wraps it and `get_ipc_handle` goes to the plugin
        (`lifecycle`), which did not allocate it. The handle must carry the offset from the
        driver allocation's base, so that opened in another process it shows the exported
        bytes [EMM-IPCHANDLE-OFFSET]; a plugin that refuses such memory leaves the user no way
        to share an imported array [EMM-IPC-HANDLE]."""
        from caiconform.reference.producer import ReferenceArray
        from caiconform.spec.layout import Layout

        check = "ipc-cai-import"
        values = _pattern(4096, 13)
        exported = ReferenceArray(values, Layout((4096,), offset=512), "|u1", memory="device")
        imported = self.cuda.as_cuda_array(exported)
        address = int(exported.ptr)
        try:
            handle = imported.get_ipc_handle()._ipc_handle
        except Exception as exc:
            self.emit(
                failed(
                    check,
                    "EMM-IPC-HANDLE",
                    f"get_ipc_handle of as_cuda_array(obj) raised {type(exc).__name__}: {exc}",
                    "an IpcHandle for memory Numba imported through the CAI",
                )
            )
            return
        base, _ = _allocation_range(address)
        if handle.offset != address - base:
            self.emit(
                failed(
                    check,
                    "EMM-IPCHANDLE-OFFSET",
                    f"offset {handle.offset}",
                    f"pointer - driver allocation base = {address - base}",
                )
            )
            return
        verdict = self._open_in_child([(check, pickle.dumps(handle), values.tobytes())])
        verdict = verdict.get(check, verdict.get("*", "no answer"))
        if verdict == "ok":
            self.emit(
                passed(check, "EMM-IPCHANDLE-OFFSET", f"offset {handle.offset}; opened elsewhere")
            )
        else:
            self.emit(
                failed(
                    check,
                    "EMM-IPCHANDLE-OFFSET",
                    verdict,
                    "the exported bytes, in a spawned process",
                )
            )
        del imported, exported

    def _routing(self) -> LifecycleChecks:
        rec = self.recorder
        return LifecycleChecks(
            self.cuda,
            self.emit,
            plugin_in_use=rec is not None,
            calls=None if rec is None else (lambda: rec.calls),
        )

    def _check_routing(self) -> None:
        """get_memory_info and get_ipc_handle reach the plugin, and a second device's context
        initializes its instance first (`lifecycle.LifecycleChecks`)."""
        self._routing().run(("memory-info-routed", "ipc-handle-routed", "initialize-other-context"))

    def _check_reset_routed(self) -> None:
        """Context.reset() reaches the plugin's reset; last, as it cleans up every allocation."""
        self._routing().run(("reset-routed",))

    def _check_ipc_same_process(self, handle: Any) -> None:
        try:
            handle.open(self.ctx)
        except Exception as exc:
            self.emit(
                passed(
                    "ipc-refuse-same-process",
                    "EMM-IPC-OPEN-OTHER-PROCESS",
                    f"{type(exc).__name__}: {exc}",
                )
            )
            return
        handle.close()
        self.emit(
            failed(
                "ipc-refuse-same-process",
                "EMM-IPC-OPEN-OTHER-PROCESS",
                "opened",
                "refused in the exporting process",
            )
        )

    def _open_in_child(self, blobs: list[tuple[str, bytes, bytes]]) -> dict[str, str]:
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe(duplex=False)
        saved = os.environ.pop("NUMBA_CUDA_MEMORY_MANAGER", None)
        try:
            proc = ctx.Process(target=_importer_main, args=(blobs, child))
            proc.start()
        finally:
            if saved is not None:
                os.environ["NUMBA_CUDA_MEMORY_MANAGER"] = saved
        child.close()
        try:
            if not parent.poll(180):
                return {"*": "importer process sent nothing within 180 s"}
            return parent.recv()
        except EOFError:
            return {"*": f"importer process died (exit code {proc.exitcode})"}
        finally:
            proc.join(30)
            if proc.is_alive():
                proc.kill()

    def _check_defer(self) -> None:
        mgr = self.mgr

        class Sentinel(Exception):
            pass

        try:
            with mgr.defer_cleanup(), mgr.defer_cleanup():
                raise Sentinel
        except Sentinel:
            self.emit(
                passed(
                    "defer-nests-reraises",
                    "EMM-DEFER-CLEANUP",
                    "nested twice; the exception came through",
                )
            )
        except Exception as exc:
            self.emit(
                failed(
                    "defer-nests-reraises",
                    "EMM-DEFER-CLEANUP",
                    f"{type(exc).__name__}: {exc}",
                    "the raised exception",
                )
            )
        if isinstance(mgr, self.api.host_only):
            with mgr.defer_cleanup():
                held = mgr.deallocations.is_disabled
            if held:
                self.emit(
                    passed(
                        "hostonly-defer-super",
                        "EMM-HOSTONLY-DEFER-SUPER",
                        "host deallocations disabled inside",
                    )
                )
            else:
                self.emit(
                    failed(
                        "hostonly-defer-super",
                        "EMM-HOSTONLY-DEFER-SUPER",
                        "host deallocations still enabled inside",
                        "super().defer_cleanup() held",
                    )
                )
        log = getattr(mgr, "allocation_log", None)
        if log is not None and hasattr(log, "is_live"):
            with mgr.defer_cleanup():
                mem = mgr.memalloc(4096)
                address = int(mem.device_pointer)
                del mem
                gc.collect()
                inside = log.is_live(address)
            gc.collect()
            if log.is_live(address):
                self.emit(
                    failed(
                        "defer-frees-after-exit",
                        "EMM-DEFER-CLEANUP",
                        "still live",
                        "freed once the outermost defer_cleanup exited",
                    )
                )
            else:
                when = "deferred to the exit" if inside else "freed at once inside"
                self.emit(
                    passed("defer-frees-after-exit", "EMM-DEFER-CLEANUP", f"allocation log: {when}")
                )
            return
        before = _free_bytes()
        with mgr.defer_cleanup():
            mem = mgr.memalloc(_BIG)
            visible = before - _free_bytes() >= _BIG - _SLACK
            del mem
            gc.collect()
        gc.collect()
        after = _free_bytes()
        check = "defer-frees-after-exit"
        if not visible:
            self.emit(skipped(check, "EMM-DEFER-CLEANUP", _INVISIBLE))
        elif after >= before - _SLACK:
            self.emit(
                passed(
                    check, "EMM-DEFER-CLEANUP", f"cuMemGetInfo free back within {_SLACK >> 20} MiB"
                )
            )
        else:
            self.emit(
                skipped(
                    check,
                    "EMM-DEFER-CLEANUP",
                    f"{(before - after) >> 20} MiB not back in cuMemGetInfo after exit; "
                    "a pool or a lazy free queue may keep it, so this is not judged",
                )
            )

    def _check_initialize(self) -> None:
        mem = self.mgr.memalloc(4096)
        data = _pattern(4096, 5)
        self._write(mem, data)
        for _ in range(3):
            self.mgr.initialize()
        _allocation_range(int(mem.device_pointer))
        if np.array_equal(self._read(mem, 4096), data):
            self.emit(
                passed(
                    "initialize-idempotent",
                    "EMM-INITIALIZE-IDEMPOTENT",
                    "3 more initialize() calls; live allocation intact",
                )
            )
        else:
            self.emit(
                failed(
                    "initialize-idempotent",
                    "EMM-INITIALIZE-IDEMPOTENT",
                    "data changed",
                    "live allocations untouched",
                )
            )

    def _check_reset_early(self) -> None:
        fresh = self.plugin(context=self.ctx)
        fresh.reset()
        self.emit(
            passed(
                "reset-before-initialize",
                "EMM-RESET-BEFORE-INITIALIZE",
                "a fresh instance's reset() returned",
            )
        )

    def _check_reset(self) -> None:
        mgr = self.mgr
        host = None
        if isinstance(mgr, self.api.host_only):
            host = mgr.memhostalloc(4096, mapped=True)
        log = getattr(mgr, "allocation_log", None)
        before = _free_bytes()
        big = mgr.memalloc(_BIG)
        visible = before - _free_bytes() >= _BIG - _SLACK
        address = int(big.device_pointer)
        mgr.reset()
        gc.collect()
        if host is not None:
            if len(mgr.allocations):
                self.emit(
                    failed(
                        "hostonly-reset-super",
                        "EMM-HOSTONLY-RESET-SUPER",
                        f"{len(mgr.allocations)} host allocations left",
                        "super().reset() cleared them",
                    )
                )
            else:
                self.emit(
                    passed(
                        "hostonly-reset-super",
                        "EMM-HOSTONLY-RESET-SUPER",
                        "host allocations cleared",
                    )
                )
        if log is not None and hasattr(log, "is_live"):
            freed, how = not log.is_live(address), "allocation log"
        else:
            freed, how = visible and _free_bytes() >= before - _SLACK, "cuMemGetInfo"
        del big, host
        gc.collect()
        mem = mgr.memalloc(4096)
        data = _pattern(4096, 9)
        self._write(mem, data)
        works = np.array_equal(self._read(mem, 4096), data)
        if freed and works:
            self.emit(passed("reset", "EMM-RESET-FREES", f"freed ({how}); new allocation works"))
        elif works and how == "cuMemGetInfo":
            why = (
                _INVISIBLE
                if not visible
                else (f"{_BIG >> 20} MiB are not back in cuMemGetInfo; a pool may keep them")
            )
            self.emit(
                skipped(
                    "reset",
                    "EMM-RESET-FREES",
                    f"new allocation works, but the free is not judged: {why}",
                )
            )
        else:
            self.emit(
                failed(
                    "reset",
                    "EMM-RESET-FREES",
                    f"freed={freed} ({how}), new ok={works}",
                    "all memory freed, new allocations work",
                )
            )
