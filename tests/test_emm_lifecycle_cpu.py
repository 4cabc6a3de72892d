"""Numba's side of the plugin's lifecycle (`caiconform.emm.lifecycle`) on a CPU: a synthetic
Numba-like host that routes reset, get_memory_info and get_ipc_handle to its plugin, variants
that bypass the plugin on one of them, and set_memory_manager stand-ins that accept a wrong
interface_version. Also the host-alloc flag reading of the host-memory check."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import pytest

from caiconform.emm.gpu.host_memory import hostalloc_flags_missing
from caiconform.emm.lifecycle import (
    BAD_VERSIONS,
    ROUTED,
    LifecycleChecks,
    check_interface_version_rejected,
    spy,
)
from caiconform.emm.result import CheckResult


class Plugin:
    interface_version = 1

    def __init__(self, context=None):
        self.context = context
        self.next = 1 << 44
        self.resets = 0

    def memalloc(self, size):
        address, self.next = self.next, self.next + (1 << 30)
        return SimpleNamespace(device_pointer=address, size=size)

    def get_memory_info(self):
        return (3, 7)

    def get_ipc_handle(self, memory):
        return SimpleNamespace(base=memory, offset=0)

    def reset(self):
        self.resets += 1


class SilentPlugin(Plugin):
    """Provides no memory info: raises, as the text allows."""

    def get_memory_info(self):
        raise RuntimeError("no memory info")


class NoIpcPlugin(Plugin):
    """Cannot share its memory: get_ipc_handle raises (EMM-IPC-HANDLE judges that)."""

    def get_ipc_handle(self, memory):
        raise NotImplementedError("no IPC")


class IntInfoPlugin(Plugin):
    """Answers get_memory_info with an object tuple() cannot take."""

    def get_memory_info(self):
        return 42


class IpcArrayHandle:
    def __init__(self, ipc_handle):
        self._ipc_handle = ipc_handle


class FakeArray:
    def __init__(self, ctx, size):
        self.ctx = ctx
        self.gpu_data = ctx.memory_manager.memalloc(size)
        ctx.calls.append(("memalloc", id(ctx.memory_manager)))

    def get_ipc_handle(self):
        if self.ctx.bypass == "ipc":  # builds the handle itself, as if Numba knew the base
            return IpcArrayHandle(SimpleNamespace(base=self.gpu_data, offset=0))
        memory = self.gpu_data
        if self.ctx.bypass == "ipc-other-memory":
            memory = self.ctx.memory_manager.memalloc(16)
        return IpcArrayHandle(self.ctx.memory_manager.get_ipc_handle(memory))


class FakeContext:
    def __init__(self, plugin_cls, bypass: str, calls: list) -> None:
        self.memory_manager = plugin_cls(context=self)
        self.bypass = bypass
        self.calls = calls
        if bypass != "no-initialize":
            calls.append(("initialize", id(self.memory_manager)))

    def reset(self):
        if self.bypass != "reset":
            self.memory_manager.reset()

    def get_memory_info(self):
        if self.bypass == "memory-info":  # the driver's numbers, not the plugin's
            return (1, 2)
        if self.bypass == "memory-info-swallows":
            try:
                return self.memory_manager.get_memory_info()
            except RuntimeError:
                return (0, 0)
        return self.memory_manager.get_memory_info()


def fake_numba(plugin_cls=Plugin, bypass: str = "", devices: int = 2):
    """A Numba-like host; device 0's context is made (and its instance initialized) at once,
    device 1's when first entered (its instance initialized unless bypass="no-initialize")."""
    calls: list[tuple[str, int]] = []
    contexts = [FakeContext(plugin_cls, "" if bypass == "no-initialize" else bypass, calls)]
    current = [0]

    @contextlib.contextmanager
    def gpu(index):
        while len(contexts) <= index:
            contexts.append(FakeContext(plugin_cls, bypass, calls))
        saved, current[0] = current[0], index
        try:
            yield
        finally:
            current[0] = saved

    return SimpleNamespace(
        current_context=lambda: contexts[current[0]],
        device_array=lambda n, dtype: FakeArray(contexts[current[0]], n),
        gpus=_Gpus(gpu, devices),
        calls=calls,
    )


class _Gpus:
    def __init__(self, gpu, devices):
        self.gpu, self.devices = gpu, devices

    def __len__(self):
        return self.devices

    def __getitem__(self, index):
        return self.gpu(index)


def run(cuda, **kwargs) -> dict[str, CheckResult]:
    results: list[CheckResult] = []
    kwargs.setdefault("calls", lambda: cuda.calls)
    LifecycleChecks(cuda, results.append, **kwargs).run()
    return {r.check: r for r in results}


def test_a_host_routing_every_lifecycle_call_to_the_plugin_passes():
    got = run(fake_numba())
    assert {check: r.outcome for check, r in got.items()} == {c: "pass" for c, _, _ in ROUTED}
    assert {r.rule for r in got.values()} == {rule for _, rule, _ in ROUTED}


def test_a_plugin_exception_reaching_the_caller_passes_and_a_swallowed_one_fails():
    assert run(fake_numba(SilentPlugin))["memory-info-routed"].outcome == "pass"
    bad = run(fake_numba(SilentPlugin, "memory-info-swallows"))["memory-info-routed"]
    assert bad.outcome == "fail" and "RuntimeError" in bad.message


def test_a_plugin_refusing_ipc_routed_to_the_caller_passes_and_one_swallowed_fails():
    got = run(fake_numba(NoIpcPlugin))["ipc-handle-routed"]
    assert got.outcome == "pass" and "NotImplementedError" in got.seen
    bad = run(fake_numba(NoIpcPlugin, "ipc"))["ipc-handle-routed"]
    assert bad.outcome == "fail" and "without calling" in bad.message


def test_memory_info_routing_passes_whatever_object_the_plugin_answers():
    got = run(fake_numba(IntInfoPlugin))["memory-info-routed"]
    assert got.outcome == "pass" and "42" in got.seen


@pytest.mark.parametrize(
    ("bypass", "check", "said"),
    [
        ("reset", "reset-routed", "without calling the plugin's reset"),
        ("memory-info", "memory-info-routed", "without calling the plugin's get_memory_info"),
        ("ipc", "ipc-handle-routed", "without calling the plugin's get_ipc_handle"),
        ("ipc-other-memory", "ipc-handle-routed", "asked about memory at"),
        ("no-initialize", "initialize-other-context", "received ['memalloc']"),
    ],
)
def test_a_host_bypassing_the_plugin_on_one_call_fails_that_check_alone(bypass, check, said):
    got = run(fake_numba(bypass=bypass))
    failing = {c for c, r in got.items() if r.outcome != "pass"}
    assert failing == {check}
    assert said in got[check].message and got[check].rule in got[check].message


@pytest.mark.parametrize(("devices", "calls"), [(1, True), (2, False)])
def test_initialize_on_another_context_needs_two_devices_and_the_calls(devices, calls):
    cuda = fake_numba(bypass="no-initialize", devices=devices)
    got = run(cuda, calls=(lambda: cuda.calls) if calls else None)["initialize-other-context"]
    assert got.outcome == "skip"


def test_numba_s_own_manager_is_a_skip_for_every_routing_check():
    got = run(fake_numba(bypass="reset"), plugin_in_use=False)
    assert {r.outcome for r in got.values()} == {"skip"}


def test_the_spy_is_removed_after_the_block():
    mgr = Plugin()
    with spy(mgr, "reset") as seen:
        mgr.reset()
    assert len(seen.calls) == 1 and "reset" not in vars(mgr)


def _api(checks_version: bool, installs_first: bool = False):
    state = {"manager": "previous"}

    def set_memory_manager(cls):
        if installs_first:
            state["manager"] = cls
        if checks_version and cls(context=None).interface_version != 1:
            raise RuntimeError("EMM Plugin interface has the wrong version")
        state["manager"] = cls

    return (
        SimpleNamespace(
            set_memory_manager=set_memory_manager,
            get_manager=lambda: state["manager"],
            restore_manager=lambda previous: state.__setitem__("manager", previous),
        ),
        state,
    )


def test_set_memory_manager_refusing_each_wrong_version_passes_and_keeps_the_manager():
    api, state = _api(checks_version=True)
    result = check_interface_version_rejected(Plugin, api)
    assert result.outcome == "pass" and result.rule == "EMM-NUMBA-INTERFACE-VERSION-CHECKED"
    assert state["manager"] == "previous"
    assert all(f"{v}: RuntimeError" in str(result.seen) for v in BAD_VERSIONS)


def test_set_memory_manager_accepting_a_wrong_version_fails():
    api, state = _api(checks_version=False)
    result = check_interface_version_rejected(Plugin, api)
    assert result.outcome == "fail" and "accepted interface_version 0, 2" in result.message
    assert state["manager"] == "previous"


def test_set_memory_manager_installing_then_refusing_fails():
    api, _ = _api(checks_version=True, installs_first=True)
    result = check_interface_version_rejected(Plugin, api)
    assert result.outcome == "fail" and "installed the plugin anyway" in result.message


BITS = {"portable": 0x1, "mapped": 0x2, "wc": 0x4}


@pytest.mark.parametrize(
    ("got", "asked", "unified", "missing"),
    [
        # seen on two H100s, driver 580.159.04: PORTABLE asked, 0x2 reported
        (0x2, {"portable": True, "mapped": False, "wc": False}, True, []),
        (0x2, {"portable": True, "mapped": False, "wc": False}, False, ["portable"]),
        (0x2, {"portable": False, "mapped": True, "wc": True}, True, ["wc"]),
        (0x6, {"portable": False, "mapped": True, "wc": True}, True, []),
        (0x0, {"portable": False, "mapped": True, "wc": False}, False, ["mapped"]),
    ],
)
def test_host_alloc_flags_implied_by_unified_addressing_are_not_required(
    got, asked, unified, missing
):
    assert hostalloc_flags_missing(got, asked, BITS, unified) == missing
