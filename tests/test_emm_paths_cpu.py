"""Numba's allocation paths under a plugin (`caiconform.emm.paths`), on a CPU: a synthetic
Numba-like library whose allocation paths call a plugin, and variants that bypass the plugin on
one path, call no `initialize`, or free memory themselves."""

from __future__ import annotations

import contextlib
import gc
import pickle
from types import SimpleNamespace

import numpy as np
import pytest

from caiconform.emm.paths import PATHS, PathChecks, Recorder


@pytest.fixture(autouse=True)
def _collect_only_what_the_test_makes() -> None:
    """`PathChecks.run` calls `gc.collect()` a dozen times, to see what the paths free: what
    the process held before the test (the session's, the earlier tests') is set aside from
    the collector first, for the rest of the session (`gc.freeze`, as tests/conftest.py does
    after collection), so each pass walks what the test makes, where the allocations it
    checks are. Late in an xdist worker the passes over everything else took most of a
    second per test."""
    gc.collect()
    gc.freeze()


class FakeDriver:
    """Numba's driver object: each call hands out a fresh address and is counted."""

    def __init__(self) -> None:
        self.next = 1 << 40

    def _address(self, nbytes: int) -> int:
        address, self.next = self.next, self.next + (1 << 30)
        return address

    def cuMemAlloc(self, nbytes):  # noqa: N802 (the driver's names)
        return self._address(nbytes)

    def cuMemAllocManaged(self, nbytes, flags):  # noqa: N802
        return self._address(nbytes)

    def cuMemHostAlloc(self, nbytes, flags):  # noqa: N802
        return self._address(nbytes)

    def cuMemHostRegister(self, pointer, nbytes, flags):  # noqa: N802
        return None

    def cuMemFree(self, pointer):  # noqa: N802
        return None

    def cuIpcOpenMemHandle(self, handle, flags):  # noqa: N802
        return 5 << 40

    def cuIpcCloseMemHandle(self, pointer):  # noqa: N802
        return None


DRIVER = FakeDriver()


class FakeHandle:
    """An IpcHandle that opens and closes the way Numba's does: through the driver object."""

    def open(self, ctx):
        return DRIVER.cuIpcOpenMemHandle(b"h", 1)

    def close(self):
        DRIVER.cuIpcCloseMemHandle(5 << 40)


def make_plugin():
    """A fresh plugin class (the recorder wraps the class, so each test gets its own)."""

    class Plugin:
        def __init__(self, context=None):
            self.context = context
            self.next = 1 << 44
            self.host: list[np.ndarray] = []

        def initialize(self):
            pass

        def memalloc(self, size):
            address, self.next = self.next, self.next + (1 << 30)
            return SimpleNamespace(device_pointer=address, size=size)

        def memhostalloc(self, size, mapped=False, portable=False, wc=False):
            buf = np.zeros(size, np.uint8)
            self.host.append(buf)
            device = buf.ctypes.data + (1 << 46) if mapped else 0
            return SimpleNamespace(host_pointer=buf.ctypes.data, device_pointer=device, size=size)

        def mempin(self, owner, pointer, size, mapped=False):
            device = pointer + (1 << 46) if mapped else 0
            return SimpleNamespace(host_pointer=pointer, device_pointer=device, size=size)

        @contextlib.contextmanager
        def defer_cleanup(self):
            yield

    return Plugin


class DeviceArray:
    def __init__(self, address: int) -> None:
        self.device_ctypes_pointer = SimpleNamespace(value=address)


class HostView(np.ndarray):
    """A mapped host array: numpy memory with a device pointer beside it."""


def fake_numba(plugin_cls, *, bypass: str = "", no_initialize: bool = False, free=False):
    """A Numba-like `cuda` namespace whose paths call the plugin, except `bypass`, which calls
    the driver instead (as numba-cuda's HostOnly base does for managed_array)."""
    state: dict = {}

    def current_context():
        if "ctx" not in state:
            mgr = plugin_cls(context=None)
            if not no_initialize:
                mgr.initialize()
            state["ctx"] = SimpleNamespace(memory_manager=mgr)
        return state["ctx"]

    def mgr():
        return current_context().memory_manager

    def device(path, nbytes):
        if bypass == path:
            return DeviceArray(DRIVER.cuMemAlloc(nbytes))
        return DeviceArray(mgr().memalloc(nbytes).device_pointer)

    def managed_array(n, dtype):
        if bypass == "managed_array":
            return DeviceArray(DRIVER.cuMemAllocManaged(n, 1))
        return DeviceArray(mgr().memalloc(n).device_pointer)

    def host(n, mapped):
        if bypass == ("mapped_array" if mapped else "pinned_array"):
            address = DRIVER.cuMemHostAlloc(n, 0)
            mem = SimpleNamespace(host_pointer=address, device_pointer=address)
            array = np.zeros(n, np.uint8).view(HostView)
        else:
            mem = mgr().memhostalloc(n, mapped=mapped)
            array = np.frombuffer(
                (
                    np.ctypeslib.as_array(
                        (np.ctypeslib.ctypes.c_uint8 * n).from_address(mem.host_pointer)
                    )
                ),
                np.uint8,
            ).view(HostView)
        array.device_ctypes_pointer = SimpleNamespace(value=mem.device_pointer)
        return array

    @contextlib.contextmanager
    def pinned(owner):
        if bypass == "pinned":
            DRIVER.cuMemHostRegister(owner.ctypes.data, owner.nbytes, 0)
        else:
            mgr().mempin(owner, owner.ctypes.data, owner.nbytes, mapped=False)
        yield

    @contextlib.contextmanager
    def mapped(owner):
        mem = mgr().mempin(owner, owner.ctypes.data, owner.nbytes, mapped=True)
        yield DeviceArray(mem.device_pointer)

    @contextlib.contextmanager
    def defer_cleanup():
        with mgr().defer_cleanup():
            yield
            if free:
                DRIVER.cuMemFree(1)

    return SimpleNamespace(
        current_context=current_context,
        device_array=lambda n, dtype: device("device_array", n),
        device_array_like=lambda a: device("device_array_like", a.nbytes),
        to_device=lambda a: device("to_device", a.nbytes),
        managed_array=managed_array,
        mapped_array=lambda n, dtype: host(n, True),
        pinned_array=lambda n, dtype: host(n, False),
        pinned=pinned,
        mapped=mapped,
        defer_cleanup=defer_cleanup,
    )


def run_paths(blob=None, **kwargs):
    plugin = make_plugin()
    recorder = Recorder(plugin, DRIVER).install()
    results = []
    try:
        cuda = fake_numba(plugin, **kwargs)
        PathChecks(cuda, recorder, "set_memory_manager", results.append).run(blob)
    finally:
        recorder.uninstall()
    assert not any(hasattr(DRIVER, "__dict__") and n in vars(DRIVER) for n in ("cuMemAlloc",))
    return plugin, results


def by_check(results):
    out: dict[str, list] = {}
    for r in results:
        out.setdefault(r.check, []).append(r)
    return out


def test_every_path_through_the_plugin_passes_and_ipc_open_is_judged_with_a_handle():
    plugin, results = run_paths(blob=pickle.dumps(FakeHandle()))
    bad = [r.message for r in results if r.outcome != "pass"]
    assert not bad, bad
    checks = by_check(results)
    for path, _ in PATHS:
        assert f"path:{path} via set_memory_manager" in checks, path
    rules = {r.rule for r in results}
    assert {
        "EMM-NUMBA-NO-DIRECT-ALLOC",
        "EMM-INITIALIZE-BEFORE-USE",
        "EMM-INITIALIZE-PREPARES",
        "EMM-NUMBA-IPC-CLOSE",
    } <= rules
    assert "memalloc" in plugin.__dict__ and not hasattr(plugin.memalloc, "__wrapped__")


@pytest.mark.parametrize(
    ("path", "api", "allocator"),
    [
        ("managed_array", "cuda.managed_array", "cuMemAllocManaged"),
        ("to_device", "cuda.to_device", "cuMemAlloc"),
        ("pinned_array", "cuda.pinned_array", "cuMemHostAlloc"),
        ("pinned", "cuda.pinned", "cuMemHostRegister"),
    ],
)
def test_a_path_that_bypasses_the_plugin_is_named_with_the_allocator_called(path, api, allocator):
    _, results = run_paths(bypass=path)
    failures = [r for r in results if r.outcome == "fail"]
    assert [r.check for r in failures] == [f"path:{path} via set_memory_manager"]
    (bad,) = failures
    assert bad.rule == "EMM-NUMBA-NO-DIRECT-ALLOC" and bad.level == "MUST"
    assert api in bad.message and f"{allocator} called by Numba" in bad.message


def test_no_initialize_before_first_use_is_a_finding():
    _, results = run_paths(no_initialize=True)
    bad = [r for r in results if r.outcome == "fail"]
    assert [r.rule for r in bad] == ["EMM-INITIALIZE-BEFORE-USE"]
    assert "memalloc" in bad[0].message


def test_a_direct_free_under_defer_cleanup_is_a_finding():
    _, results = run_paths(free=True)
    bad = [r for r in results if r.outcome == "fail"]
    assert [r.check for r in bad] == ["path:deallocation via set_memory_manager"]
    assert "cuMemFree called by Numba" in bad[0].message


def test_without_a_handle_ipc_open_is_skipped_with_the_reason():
    _, results = run_paths()
    skipped = [r for r in results if r.outcome == "skip"]
    assert {r.rule for r in skipped} == {"EMM-NUMBA-NO-DIRECT-ALLOC", "EMM-NUMBA-IPC-CLOSE"}
    assert all("another process" in r.message for r in skipped)
