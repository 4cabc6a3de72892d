"""Numba's side of EMM: with a plugin set, does every Numba allocation path go through it?

The EMM text (Overview): "When an EMM Plugin is in use, Numba will make memory allocations and
deallocations through the Plugin. It will never directly call functions such as cuMemAlloc,
cuMemFree, etc." [EMM-NUMBA-NO-DIRECT-ALLOC]. Each public allocation path of Numba is its own
check: the memory the path gives back must lie inside memory the plugin handed out (`memalloc`,
`memhostalloc`, `mempin`, or a `memallocmanaged` the plugin defines itself); otherwise the
finding names the API and the driver allocator that was called outside the plugin instead.

How it is observed (`Recorder`): before the plugin's context exists, the plugin class's
interface methods are wrapped (calls, order, what they return; a depth counter says when code
runs inside the plugin), and the allocators and frees of Numba's driver object
(`numba.cuda.cudadrv.driver.driver.cuMemAlloc`, ...) are wrapped to log every call with
whether it came from inside a plugin method. The plugin's own calls through cuda-python
(`cuda.bindings`) do not pass Numba's driver object and are not seen, as they need not be.

Everything here takes the `cuda` namespace and the driver object as arguments, so CPU tests
run the same checks against a synthetic Numba-like allocator.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from caiconform.emm.result import CheckResult, failed, passed, skipped

__all__ = [
    "PLUGIN_METHODS",
    "DRIVER_ALLOCATORS",
    "DRIVER_FREES",
    "PATHS",
    "ROUTES",
    "Recorder",
    "PathChecks",
]

RULE = "EMM-NUMBA-NO-DIRECT-ALLOC"

#: The interface methods the recorder wraps (`memallocmanaged` is not in the EMM text: Numba's
#: `managed_array` calls it, and only a plugin that defines it itself is routed through it).
PLUGIN_METHODS = (
    "initialize",
    "memalloc",
    "memhostalloc",
    "mempin",
    "memallocmanaged",
    "get_ipc_handle",
    "get_memory_info",
    "reset",
    "defer_cleanup",
)
#: Driver calls that allocate or pin (device-visible or host) memory.
DRIVER_ALLOCATORS = (
    "cuMemAlloc",
    "cuMemAllocManaged",
    "cuMemAllocPitch",
    "cuMemAllocAsync",
    "cuMemHostAlloc",
    "cuMemHostRegister",
)
#: Driver calls that free or unpin memory, and the IPC open and close.
DRIVER_FREES = ("cuMemFree", "cuMemFreeHost", "cuMemHostUnregister", "cuMemFreeAsync")
DRIVER_IPC = ("cuIpcOpenMemHandle", "cuIpcCloseMemHandle")

#: The two ways a user sets a plugin (EMM text, "Setting the EMM Plugin").
ROUTES = ("set_memory_manager", "NUMBA_CUDA_MEMORY_MANAGER")

#: Every allocation path, as (check name, the API a user calls); `PathChecks.run` runs them in
#: this order. IPC open needs a handle from another process and runs only where one is given.
PATHS = (
    ("device_array", "cuda.device_array"),
    ("device_array_like", "cuda.device_array_like"),
    ("to_device", "cuda.to_device"),
    ("managed_array", "cuda.managed_array"),
    ("mapped_array", "cuda.mapped_array"),
    ("pinned_array", "cuda.pinned_array"),
    ("pinned", "cuda.pinned"),
    ("mapped", "cuda.mapped"),
    ("deallocation", "cuda.defer_cleanup + del"),
    ("ipc-open", "IpcHandle.open"),
)


@dataclass
class DriverCall:
    name: str
    inside_plugin: bool
    method: str  # the plugin method running when the call was made, or ""


@dataclass
class Handed:
    """One piece of memory a plugin method gave Numba: [start, start + size) on `side`."""

    method: str
    side: str  # "device" or "host"
    start: int
    size: int

    def holds(self, address: int) -> bool:
        return self.start <= address < self.start + max(self.size, 1)


@dataclass
class Recorder:
    """Wraps the plugin class's methods and Numba's driver allocators; `uninstall` undoes it.

    `plugin_defined(name)`: whether the method is the plugin's own code or an interface method
    (a HostOnly plugin's `memhostalloc`/`mempin` are Numba's implementation, which the EMM text
    provides for plugins to inherit, so they count as the plugin's); `memallocmanaged` counts
    only when defined outside Numba.
    """

    plugin: type
    driver: Any
    calls: list[tuple[str, int]] = field(default_factory=list)
    handed: list[Handed] = field(default_factory=list)
    driver_calls: list[DriverCall] = field(default_factory=list)
    _stack: list[str] = field(default_factory=list)
    _undo: list[Callable[[], None]] = field(default_factory=list)

    # -- installing ----------------------------------------------------------------------------
    def install(self) -> Recorder:
        for name in PLUGIN_METHODS:
            if not hasattr(self.plugin, name) or not self._routed(name):
                continue
            self._wrap_method(name)
        for name in DRIVER_ALLOCATORS + DRIVER_FREES + DRIVER_IPC:
            self._wrap_driver(name)
        return self

    def uninstall(self) -> None:
        while self._undo:
            self._undo.pop()()

    def _routed(self, name: str) -> bool:
        if name != "memallocmanaged":
            return True
        for klass in self.plugin.__mro__:
            if name in vars(klass):
                where = getattr(vars(klass)[name], "__module__", None) or klass.__module__
                return not where.startswith("numba")
        return False

    def _wrap_method(self, name: str) -> None:
        plugin, rec = self.plugin, self
        own = name in vars(plugin)
        saved = vars(plugin).get(name)
        func = getattr(plugin, name)

        if name == "defer_cleanup":

            def wrapper(instance, *args, **kwargs):
                rec.calls.append((name, id(instance)))
                return rec._inside_cm(name, func(instance, *args, **kwargs))

        else:

            def wrapper(instance, *args, **kwargs):
                rec.calls.append((name, id(instance)))
                rec._stack.append(name)
                try:
                    result = func(instance, *args, **kwargs)
                finally:
                    rec._stack.pop()
                rec._returned(name, result, args, kwargs)
                return result

        setattr(plugin, name, wrapper)

        def undo() -> None:
            if own:
                setattr(plugin, name, saved)
            else:
                delattr(plugin, name)

        self._undo.append(undo)

    @contextmanager
    def _inside_cm(self, name: str, cm: Any) -> Iterator[Any]:
        self._stack.append(name)
        try:
            value = cm.__enter__()
        finally:
            self._stack.pop()
        try:
            yield value
        except BaseException as exc:
            self._stack.append(name)
            try:
                if not cm.__exit__(type(exc), exc, exc.__traceback__):
                    raise
            finally:
                self._stack.pop()
        else:
            self._stack.append(name)
            try:
                cm.__exit__(None, None, None)
            finally:
                self._stack.pop()

    def _wrap_driver(self, name: str) -> None:
        drv, rec = self.driver, self
        try:
            original = getattr(drv, name)
        except Exception:
            return
        had = name in vars(drv) if hasattr(drv, "__dict__") else False

        def wrapper(*args):
            method = rec._stack[-1] if rec._stack else ""
            rec.driver_calls.append(DriverCall(name, bool(rec._stack), method))
            return original(*args)

        setattr(drv, name, wrapper)

        def undo() -> None:
            if had:
                setattr(drv, name, original)
            else:
                delattr(drv, name)

        self._undo.append(undo)

    def _returned(self, name: str, mem: Any, args: tuple, kwargs: dict) -> None:
        size = _int(getattr(mem, "size", 0)) if mem is not None else 0
        if name in ("memalloc", "memallocmanaged"):
            self._hand(name, "device", getattr(mem, "device_pointer", None), size)
        elif name in ("memhostalloc", "mempin"):
            self._hand(name, "host", getattr(mem, "host_pointer", None), size)
            self._hand(name, "device", getattr(mem, "device_pointer", None), size)
            if name == "mempin" and len(args) >= 3:
                self._hand(name, "host", args[1], _int(args[2]))

    def _hand(self, method: str, side: str, pointer: Any, size: int) -> None:
        address = _int(pointer)
        if address:
            self.handed.append(Handed(method, side, address, size))

    # -- reading -------------------------------------------------------------------------------
    def mark(self) -> tuple[int, int, int]:
        return len(self.calls), len(self.handed), len(self.driver_calls)

    def since(self, mark: tuple[int, int, int]) -> tuple[list, list[Handed], list[DriverCall]]:
        return self.calls[mark[0] :], self.handed[mark[1] :], self.driver_calls[mark[2] :]

    def handed_out(self, address: int, side: str) -> Handed | None:
        return next((h for h in self.handed if h.side == side and h.holds(address)), None)


def _int(value: Any) -> int:
    if value is None:
        return 0
    try:
        return int(value)
    except (TypeError, ValueError):
        inner = getattr(value, "value", None)
        return int(inner) if inner is not None else 0


def device_address(array: Any) -> int:
    """The device pointer of a Numba device array (or a mapped/managed one)."""
    return _int(array.device_ctypes_pointer.value)


def host_address(array: Any) -> int:
    return int(np.asarray(array).ctypes.data)


def _direct(calls: list[DriverCall], names: tuple[str, ...]) -> list[str]:
    return sorted({c.name for c in calls if not c.inside_plugin and c.name in names})


class PathChecks:
    """The allocation-path checks of one route, in one process where the plugin is set.

    `cuda` is the `numba.cuda` namespace (or a synthetic one), `recorder` was installed before
    the plugin's context was made, `route` one of ROUTES; each result goes to `emit`.
    """

    def __init__(
        self, cuda: Any, recorder: Recorder, route: str, emit: Callable[[CheckResult], None]
    ) -> None:
        self.cuda = cuda
        self.rec = recorder
        self.route = route
        self.emit = emit

    def _name(self, path: str) -> str:
        return f"path:{path} via {self.route}"

    def run(self, ipc_blob: bytes | None = None) -> None:
        """Every path of PATHS, then initialize-before-use (judged from every call the context's
        instance received, from the context's creation on). An exception a path raises is that
        path's failure."""
        ctx = self.cuda.current_context()
        self.mgr = ctx.memory_manager
        bodies: dict[str, Callable[[], None]] = {
            "device_array": lambda: self._device(
                "device_array", "cuda.device_array", lambda: self.cuda.device_array(1000, np.uint8)
            ),
            "device_array_like": lambda: self._device(
                "device_array_like",
                "cuda.device_array_like",
                lambda: self.cuda.device_array_like(np.zeros(250, np.float32)),
            ),
            "to_device": lambda: self._device(
                "to_device", "cuda.to_device", lambda: self.cuda.to_device(np.arange(300))
            ),
            "managed_array": self._managed,
            "mapped_array": lambda: self._host(
                "mapped_array",
                "cuda.mapped_array",
                lambda: self.cuda.mapped_array(512, np.uint8),
                device_too=True,
            ),
            "pinned_array": lambda: self._host(
                "pinned_array", "cuda.pinned_array", lambda: self.cuda.pinned_array(512, np.uint8)
            ),
            "pinned": lambda: self._context_manager("pinned", "cuda.pinned", mapped=False),
            "mapped": lambda: self._context_manager("mapped", "cuda.mapped", mapped=True),
            "deallocation": self._deallocation,
            "ipc-open": lambda: self._ipc_open(ipc_blob),
        }
        for path, api in PATHS:
            try:
                bodies[path]()
            except Exception as exc:
                self.emit(
                    failed(
                        self._name(path),
                        RULE,
                        f"{api} raised {type(exc).__name__}: {exc}",
                        "the allocation made through the plugin",
                    )
                )
            gc.collect()
        self._initialize_first()

    # -- initialize before use ----------------------------------------------------------------
    def _initialize_first(self) -> None:
        """EMM-INITIALIZE-BEFORE-USE: Numba calls `initialize` (Context.prepare_for_use, when
        the context is made or pushed) before any other method of the context's instance."""
        mine = [name for name, owner in self.rec.calls if owner == id(self.mgr)]
        check = f"initialize-before-use via {self.route}"
        if mine and mine[0] == "initialize":
            self.emit(passed(check, "EMM-INITIALIZE-BEFORE-USE", f"first call: {mine[:3]}"))
        elif not mine:
            self.emit(
                failed(
                    check,
                    "EMM-INITIALIZE-BEFORE-USE",
                    "no method of the plugin called",
                    "initialize called before first use",
                )
            )
        else:
            self.emit(
                failed(check, "EMM-INITIALIZE-BEFORE-USE", f"calls {mine[:3]}", "initialize first")
            )

    # -- one kind of path each ----------------------------------------------------------------
    def _judge(self, path: str, api: str, address: int, side: str, mark, expected: str) -> bool:
        _, handed, driver = self.rec.since(mark)
        found = self.rec.handed_out(address, side)
        if found is not None:
            self.emit(passed(self._name(path), RULE, f"{api} -> 0x{address:x} from {found.method}"))
            return True
        direct = _direct(driver, DRIVER_ALLOCATORS)
        instead = ", ".join(direct) + " called by Numba" if direct else "no plugin allocation"
        self.emit(
            failed(
                self._name(path),
                RULE,
                f"{api} -> {side} memory 0x{address:x} not handed out by the plugin ({instead})",
                expected,
            )
        )
        return False

    def _device(self, path: str, api: str, make: Callable[[], Any]) -> None:
        """device_array, device_array_like and to_device: Numba allocates with
        `Context.memalloc` -> `memory_manager.memalloc` (numba-cuda 0.30.4, api.py)."""
        mark = self.rec.mark()
        array = make()
        self._judge(path, api, device_address(array), "device", mark, "memory from memalloc")
        if path == "device_array":
            self.emit(
                passed(
                    f"initialize-prepares via {self.route}",
                    "EMM-INITIALIZE-PREPARES",
                    "memalloc worked after initialize",
                )
            )

    def _managed(self) -> None:
        """managed_array: Numba calls `Context.memallocmanaged` -> `memory_manager.
        memallocmanaged`, which the EMM text does not name. A plugin deriving from
        HostOnlyCUDAMemoryManager inherits Numba's, which calls cuMemAllocManaged itself: managed
        (device-accessible) memory made outside the plugin. A plugin that defines
        memallocmanaged gets the call; one deriving from BaseCUDAMemoryManager alone makes
        Numba raise AttributeError (no allocation outside the plugin: not a finding)."""
        mark = self.rec.mark()
        try:
            array = self.cuda.managed_array(256, np.uint8)
        except AttributeError as exc:
            _, _, driver = self.rec.since(mark)
            if not _direct(driver, DRIVER_ALLOCATORS):
                self.emit(
                    passed(
                        self._name("managed_array"),
                        RULE,
                        f"refused ({exc}); nothing allocated outside the plugin",
                    )
                )
                return
            raise
        self._judge(
            "managed_array",
            "cuda.managed_array",
            device_address(array),
            "device",
            mark,
            "managed memory from the plugin (its own memallocmanaged)",
        )

    def _host(self, path: str, api: str, make: Callable[[], Any], device_too: bool = False) -> None:
        """pinned_array and mapped_array: Numba calls `Context.memhostalloc` ->
        `memory_manager.memhostalloc` (a HostOnly plugin inherits Numba's, which the EMM text
        provides for host memory)."""
        mark = self.rec.mark()
        array = make()
        ok = self._judge(path, api, host_address(array), "host", mark, "memory from memhostalloc")
        if ok and device_too:
            self._judge(
                path,
                api,
                device_address(array),
                "device",
                mark,
                "the mapping memhostalloc returned",
            )

    def _context_manager(self, path: str, api: str, mapped: bool) -> None:
        """cuda.pinned / cuda.mapped: Numba pins each array with `Context.mempin` ->
        `memory_manager.mempin` (mapped=False / True) for the block's duration."""
        owner = np.zeros(4096, np.uint8)
        mark = self.rec.mark()
        manager = getattr(self.cuda, path)
        with manager(owner) as view:
            ok = self._judge(path, api, host_address(owner), "host", mark, "memory from mempin")
            if ok and mapped and view is not None:
                self._judge(
                    path, api, device_address(view), "device", mark, "the mapping mempin returned"
                )

    def _deallocation(self) -> None:
        """cuda.defer_cleanup enters `memory_manager.defer_cleanup` (Context.defer_cleanup), and
        dropping a device array runs the plugin's finalizer: Numba must call no cuMemFree
        itself, inside the block or after it."""
        check = self._name("deallocation")
        mark = self.rec.mark()
        with self.cuda.defer_cleanup():
            array = self.cuda.device_array(4096, np.uint8)
            del array
            gc.collect()
        gc.collect()
        calls, _, driver = self.rec.since(mark)
        entered = any(name == "defer_cleanup" for name, _ in calls)
        direct = _direct(driver, DRIVER_FREES + DRIVER_ALLOCATORS)
        if entered and not direct:
            self.emit(passed(check, RULE, "plugin's defer_cleanup entered; no direct free"))
        else:
            seen = [] if entered else ["plugin's defer_cleanup not entered"]
            if direct:
                seen.append(", ".join(direct) + " called by Numba")
            self.emit(
                failed(
                    check,
                    RULE,
                    "; ".join(seen),
                    "cuda.defer_cleanup through the plugin, frees only by the plugin",
                )
            )

    def _ipc_open(self, blob: bytes | None) -> None:
        """IPC open: the EMM text gives plugins no open method; Numba opens a handle with
        cuIpcOpenMemHandle (Context.open_ipc_handle), which maps another process's memory and
        allocates nothing, and "Closing an IPC handle is handled internally within Numba"
        (cuIpcCloseMemHandle) [EMM-NUMBA-IPC-CLOSE]. Expected: no allocation outside the
        plugin, the close made by Numba, not the plugin."""
        check = self._name("ipc-open")
        if blob is None:
            for rule in (RULE, "EMM-NUMBA-IPC-CLOSE"):
                self.emit(
                    skipped(
                        check,
                        rule,
                        "an IPC handle opens only in another process: checked in the fresh process",
                    )
                )
            return
        import pickle

        handle = pickle.loads(blob)
        mark = self.rec.mark()
        opened = handle.open(self.cuda.current_context())
        del opened
        handle.close()
        gc.collect()
        calls, _, driver = self.rec.since(mark)
        direct = _direct(driver, DRIVER_ALLOCATORS)
        plugin_allocs = [n for n, _ in calls if n in ("memalloc", "memhostalloc", "mempin")]
        if direct or plugin_allocs:
            self.emit(
                failed(
                    check,
                    RULE,
                    f"allocations {direct + plugin_allocs}",
                    "opening maps the exported memory, allocating nothing",
                )
            )
        else:
            self.emit(passed(check, RULE, "cuIpcOpenMemHandle only; nothing allocated"))
        names = [c.name for c in driver]
        closed_by_numba = any(
            c.name == "cuIpcCloseMemHandle" and not c.inside_plugin for c in driver
        )
        if closed_by_numba:
            self.emit(passed(check, "EMM-NUMBA-IPC-CLOSE", "Numba called cuIpcCloseMemHandle"))
        else:
            self.emit(
                failed(
                    check,
                    "EMM-NUMBA-IPC-CLOSE",
                    f"driver calls {names}",
                    "cuIpcCloseMemHandle called by Numba",
                )
            )
