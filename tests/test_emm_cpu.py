"""EMM checker on a machine without a GPU: static checks against stand-in Numba classes, the
result model, the slab sub-allocator, and the emm-check command's usage errors."""

from __future__ import annotations

import re
import subprocess
import sys
from abc import ABCMeta, abstractmethod
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caiconform.emm.checker import JUDGED_RULES, check_plugin, exit_code, parse_target
from caiconform.emm.result import CheckResult, PluginReport, failed
from caiconform.emm.static import NumbaEMM, static_checks
from caiconform.reference.suballoc import ALIGN, RangeTable, SlabPool
from caiconform.spec.rules import RULES

ROOT = Path(__file__).resolve().parents[1]
MAIN = "import sys; from caiconform.cli import main; sys.exit(main())"


# -- stand-ins for numba.cuda's base classes -------------------------------------------------
class FakeBase(metaclass=ABCMeta):
    def __init__(self, *args, **kwargs):
        if "context" not in kwargs:
            raise RuntimeError("Memory manager requires a context")
        self.context = kwargs.pop("context")

    @abstractmethod
    def memalloc(self, size): ...

    @abstractmethod
    def defer_cleanup(self): ...

    @property
    @abstractmethod
    def interface_version(self): ...


class FakeHostOnly(FakeBase):
    def defer_cleanup(self):
        """Defers host-side cleanup while active."""


def fake_api() -> tuple[NumbaEMM, dict]:
    state = {"manager": "previous"}

    def set_memory_manager(cls):
        if cls(context=None).interface_version != 1:
            raise RuntimeError("EMM Plugin interface has the wrong version")
        state["manager"] = cls

    api = NumbaEMM(
        base=FakeBase,
        host_only=FakeHostOnly,
        memory_pointer=object,
        owned_pointer=object,
        mapped_memory=object,
        pinned_memory=object,
        memory_info=tuple,
        ipc_handle=object,
        default_manager=FakeHostOnly,
        set_memory_manager=set_memory_manager,
        get_manager=lambda: state["manager"],
        restore_manager=lambda previous: state.__setitem__("manager", previous),
    )
    return api, state


class GoodPlugin(FakeHostOnly):
    def memalloc(self, size):
        return size

    @property
    def interface_version(self):
        return 1


def outcomes(results: list[CheckResult]) -> dict[str, str]:
    return {r.rule: r.outcome for r in results}


def test_a_conforming_plugin_passes_every_static_check_and_the_manager_is_restored():
    api, state = fake_api()
    results, instance = static_checks(GoodPlugin, api)
    assert all(r.outcome == "pass" for r in results), [r.message for r in results]
    assert set(outcomes(results)) == {
        "EMM-SUBCLASS",
        "EMM-HOSTONLY-MEMALLOC",
        "EMM-CONSTRUCT-NO-CUDA",
        "EMM-INTERFACE-VERSION",
        "EMM-SET-FUNCTION",
        "EMM-DEFER-CLEANUP-DOCUMENTED",
        "EMM-NUMBA-INTERFACE-VERSION-CHECKED",
    }
    assert isinstance(instance, GoodPlugin) and instance.context is None
    assert state["manager"] == "previous"


def test_not_a_subclass_fails_emm_subclass():
    class Stranger:
        def __init__(self, context=None):
            self.context = context

        interface_version = 1

    results, _ = static_checks(Stranger, fake_api()[0])
    bad = next(r for r in results if r.rule == "EMM-SUBCLASS")
    assert bad.outcome == "fail" and bad.message.endswith("[EMM-SUBCLASS]")


def test_abstract_methods_left_are_named():
    class Half(FakeBase):
        @property
        def interface_version(self):
            return 1

    results, instance = static_checks(Half, fake_api()[0])
    bad = next(r for r in results if r.rule == "EMM-SUBCLASS")
    assert bad.outcome == "fail" and "defer_cleanup" in bad.seen and "memalloc" in bad.seen
    assert instance is None
    assert outcomes(results)["EMM-CONSTRUCT-NO-CUDA"] == "fail"


def test_cuda_calls_in_the_constructor_are_seen_by_the_probe():
    calls = []

    class Eager(GoodPlugin):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            calls.append("cuCtxCreate")

    results, _ = static_checks(Eager, fake_api()[0], cuda_probe=lambda: f"contexts {len(calls)}")
    bad = next(r for r in results if r.rule == "EMM-CONSTRUCT-NO-CUDA")
    assert bad.outcome == "fail" and bad.level == "SHOULD" and "contexts 1" in bad.seen


@pytest.mark.parametrize("version", [2, True, "1"])
def test_wrong_interface_version_fails_and_set_memory_manager_restores(version):
    class Wrong(GoodPlugin):
        @property
        def interface_version(self):
            return version

    api, state = fake_api()
    results, _ = static_checks(Wrong, api)
    assert outcomes(results)["EMM-INTERFACE-VERSION"] == "fail"
    if version != 1:
        assert outcomes(results)["EMM-SET-FUNCTION"] == "fail"
    assert state["manager"] == "previous"


def test_undocumented_defer_cleanup_is_a_should_finding():
    class Quiet(FakeBase):
        def memalloc(self, size):
            return size

        def defer_cleanup(self):
            return None

        interface_version = 1

    results, _ = static_checks(Quiet, fake_api()[0])
    bad = next(r for r in results if r.rule == "EMM-DEFER-CLEANUP-DOCUMENTED")
    assert bad.outcome == "fail" and not bad.must_failure


def test_failed_message_names_seen_expected_and_rule():
    r = failed("memalloc-valid", "EMM-ALLOC-VALID", "NULL", "nonzero")
    assert r.message == "memalloc-valid: got NULL, expected nonzero [EMM-ALLOC-VALID]"
    assert r.level == "MUST" and r.must_failure
    assert CheckResult.from_dict(r.to_dict()) == r


def test_exit_code_usage_beats_failure_beats_pass():
    ok = PluginReport("a:B", results=[CheckResult("x", "EMM-ALLOC-VALID", "pass")])
    should = PluginReport("a:B", results=[CheckResult("x", "EMM-MEMORY-INFO", "fail")])
    must = PluginReport("a:B", results=[CheckResult("x", "EMM-ALLOC-VALID", "fail")])
    crash = PluginReport("a:B", results=[CheckResult("x", "EMM-ALLOC-VALID", "crash")])
    usage = PluginReport("a:B", status="usage", reason="nope")
    unchecked = PluginReport(
        "a:B", status="unavailable", results=[CheckResult("x", "EMM-ALLOC-VALID", "skip")]
    )
    assert exit_code([ok, should]) == 0
    assert exit_code([ok, unchecked]) == 3 and exit_code([unchecked, must]) == 1
    assert exit_code([ok, must]) == 1 and exit_code([crash]) == 1
    assert exit_code([must, usage]) == 2


def test_numbas_own_failures_do_not_fail_a_plugin_but_are_named_on_its_line():
    """A plugin (RMM's, say) is not failed for Numba allocating managed memory itself
    (EMM-NUMBA-NO-DIRECT-ALLOC binds Numba); the summary line names it as Numba's. Checking
    Numba's own manager, the same failure is the target's."""
    import io

    from rich.console import Console

    from caiconform.commands.emm_check import render

    numba_side = failed("path:managed_array", "EMM-NUMBA-NO-DIRECT-ALLOC", "cuMemAllocManaged", "x")
    plugin_side = failed("ipc-handle-bytes", "EMM-IPCHANDLE-HANDLE", "None", "64 bytes")
    plugin = PluginReport("rmm.allocators.numba:RMMNumbaManager", results=[numba_side])
    assert plugin.ok and exit_code([plugin]) == 0
    assert plugin.numba_failures == [numba_side] and numba_side.culprit == "numba"
    both = PluginReport("rmm.allocators.numba:RMMNumbaManager", results=[numba_side, plugin_side])
    assert not both.ok and exit_code([both]) == 1
    own = PluginReport("numba.cuda.cudadrv.driver:NumbaCUDAMemoryManager", results=[numba_side])
    assert not own.ok and own.numba_failures == []
    out = io.StringIO()
    render([both], Console(file=out, width=300))
    line = out.getvalue().splitlines()[-1]
    assert "1 MUST failure(s) (EMM-IPCHANDLE-HANDLE: ipc-handle-bytes)" in line, line
    assert "Numba's own, not the plugin's: 1 MUST failure(s) (EMM-NUMBA-NO-DIRECT-ALLOC" in line
    record = both.to_dict()
    assert (record["must_failures"], record["numba_must_failures"]) == (1, 1)
    assert [r["culprit"] for r in record["results"]] == ["numba", "plugin"]


def test_judged_rules_exist_and_cover_every_rule_the_checks_cite():
    assert set(JUDGED_RULES) <= set(RULES)
    cited = set()
    emm = ROOT / "caiconform/emm"
    for path in [emm / "checks.py", emm / "static.py", emm / "checker.py", *emm.glob("gpu/*.py")]:
        cited |= set(re.findall(r'"(EMM-[A-Z-]+)"', path.read_text()))
    assert cited - {"EMM-DEVICE-MEMORY"} <= set(JUDGED_RULES), cited - set(JUDGED_RULES)


def test_gpu_checks_lists_what_the_child_runs_in_order():
    """A child that dies before a check reports the checks it never reached from `GPU_CHECKS`
    (`_add_skips`), so that list must be what `GpuChecks.run` announces, in its order."""
    from types import SimpleNamespace

    from caiconform.emm.checker import GPU_CHECKS
    from caiconform.emm.checks import GpuChecks

    checks = object.__new__(GpuChecks)  # no numba here: the check bodies are stubbed below
    context = SimpleNamespace(memory_manager=None)
    checks.cuda = SimpleNamespace(current_context=lambda: context)
    checks.emit = lambda result: None
    checks.recorder = None
    for name in dir(GpuChecks):
        if name.startswith("_check_"):
            setattr(checks, name, lambda *args: None)
    announced: list[tuple[str, str]] = []
    checks.run(on_start=lambda check, rule: announced.append((check, rule)))
    assert announced == list(GPU_CHECKS)


@pytest.mark.parametrize("target", ["nocolon", ":Cls", "mod:", ""])
def test_parse_target_rejects_malformed(target):
    with pytest.raises(ValueError, match="module:Class"):
        parse_target(target)


def test_plugin_process_that_dies_is_a_crash_and_one_that_stalls_a_hang(tmp_path, monkeypatch):
    (tmp_path / "dies_plugin.py").write_text("import os\nos._exit(3)\n")
    (tmp_path / "stalls_plugin.py").write_text("import time\ntime.sleep(120)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    died = check_plugin("dies_plugin:X", timeout=60)
    assert [r.outcome for r in died.results] == ["crash"] and "exit code 3" in died.results[
        0
    ].message
    # no answer ever comes (the import sleeps for minutes): however soon it is given up on, the
    # stall is a hang; one second keeps the wait short
    stalled = check_plugin("stalls_plugin:X", timeout=1)
    assert [r.outcome for r in stalled.results] == ["hang"]
    assert exit_code([died]) == 1 and exit_code([stalled]) == 1


# -- the emm-check command -------------------------------------------------------------------
def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", MAIN, "emm-check", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("no_colon_here", "must be 'module:Class'"),
        ("caiconform_no_such_module:X", "not found"),
        ("caiconform.reference.suballoc:Nope", "has no attribute 'Nope'"),
        ("caiconform.reference.suballoc:ALIGN", "is not a class"),
    ],
)
def test_usage_errors_are_one_line_exit_2(target, says):
    out = _cli(target)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in out.stderr


@pytest.mark.parametrize(
    ("setup", "says"),
    [("no_colon", "--setup must be 'module:function'"), ("caiconform_nope:fn", "not usable")],
)
def test_bad_setup_is_a_usage_error(setup, says):
    out = _cli("--setup", setup, "caiconform.reference.suballoc:RangeTable")
    assert out.returncode == 2 and says in out.stderr and "Traceback" not in out.stderr


def test_without_numba_the_checker_says_so_and_skips_everything():
    try:
        import numba.cuda  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("numba-cuda is importable here")
    out = _cli("caiconform.reference.emm:ReferencePoolManager")
    assert out.returncode == 3, out.stderr
    assert "NOT CHECKED" in out.stdout and "numba-cuda not importable" in out.stdout
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith("caiconform emm-check: nothing checked (exit 3)")
    assert "numba-cuda not importable" in line
    json_out = _cli("--json", "caiconform.reference.emm:ReferencePoolManager")
    import json

    report = json.loads(json_out.stdout)["plugins"][0]
    assert report["status"] == "unavailable"
    assert {r["outcome"] for r in report["results"]} == {"skip"}
    assert {r["check"] for r in report["results"]} >= {"subclass", "memalloc", "ipc", "reset"}


# -- the slab sub-allocator ------------------------------------------------------------------
class FakeDriver:
    """Hands out addresses 1 GiB apart and records frees."""

    def __init__(self) -> None:
        self.next = 1 << 40
        self.live: dict[int, int] = {}
        self.freed: list[int] = []

    def alloc(self, nbytes: int) -> int:
        address, self.next = self.next, self.next + (1 << 30)
        self.live[address] = nbytes
        return address

    def free(self, address: int) -> None:
        del self.live[address]
        self.freed.append(address)


def test_range_table_finds_interior_addresses_and_refuses_overlap():
    table = RangeTable()
    table.add(1000, 100)
    table.add(2000, 50)
    assert table.find(1050) == (1000, 100) and table.find(2049) == (2000, 50)
    assert table.find(1100) is None and table.find(999) is None
    with pytest.raises(ValueError, match="overlaps"):
        table.add(1090, 20)
    assert table.remove(1000) == 100 and table.find(1050) is None


def test_pool_offsets_are_nonzero_aligned_and_blocks_share_a_slab():
    drv = FakeDriver()
    pool = SlabPool(drv.alloc, drv.free, slab_bytes=1 << 20)
    a, b = pool.allocate(7), pool.allocate(4096)
    ((base, size),) = drv.live.items()
    assert pool.find(a) == (base, size) == pool.find(b + 100)
    assert a - base == ALIGN and b - base == 2 * ALIGN and (a - base) % ALIGN == 0
    assert pool.block_size(a) == ALIGN


def test_pool_reuses_freed_blocks_coalesces_and_returns_empty_slabs():
    drv = FakeDriver()
    pool = SlabPool(drv.alloc, drv.free, slab_bytes=1 << 20, retain_empty=0)
    blocks = [pool.allocate(1000) for _ in range(3)]
    pool.release(blocks[1])
    assert pool.allocate(1000) == blocks[1]
    for address in blocks:
        pool.release(address)
    assert drv.live == {} and len(drv.freed) == 1 and pool.slabs == []


def test_pool_caches_one_empty_slab_for_the_next_request_by_default():
    drv = FakeDriver()
    pool = SlabPool(drv.alloc, drv.free, slab_bytes=1 << 20)
    first = pool.allocate(10)
    pool.release(first)
    assert len(drv.live) == 1 and pool.allocate(10) == first and len(drv.live) == 1
    second_slab = pool.allocate((1 << 20) - ALIGN)
    pool.release(second_slab)
    pool.release(first)
    assert len(drv.live) == 1 and len(drv.freed) == 1


def test_pool_keeps_empty_slabs_while_deferring_until_trim():
    drv = FakeDriver()
    pool = SlabPool(drv.alloc, drv.free, slab_bytes=1 << 20)
    pool.keep_empty = True
    blocks = [pool.allocate((1 << 20) - 2 * ALIGN) for _ in range(3)]
    for address in blocks:
        pool.release(address)
    assert len(drv.live) == 3
    assert pool.trim(1) == 2 and len(drv.live) == 1
    assert pool.trim() == 1 and drv.live == {}


def test_pool_large_request_gets_its_own_slab_and_unknown_release_raises():
    drv = FakeDriver()
    pool = SlabPool(drv.alloc, drv.free, slab_bytes=1 << 20)
    big = pool.allocate(3 << 20)
    assert drv.live[pool.find(big)[0]] >= (3 << 20) + ALIGN
    with pytest.raises(KeyError):
        pool.release(big + 1)
    pool.release_all()
    assert drv.live == {}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 300_000)), max_size=40))
def test_pool_blocks_stay_disjoint_inside_their_slabs(ops):
    drv = FakeDriver()
    pool = SlabPool(drv.alloc, drv.free, slab_bytes=1 << 20)
    live: dict[int, int] = {}
    for allocate, n in ops:
        if allocate or not live:
            address = pool.allocate(n)
            assert address not in live and (address - pool.find(address)[0]) >= ALIGN
            assert address % ALIGN == 0
            live[address] = n
        else:
            pool.release(min(live))
            del live[min(live)]
        spans = sorted((a, a + n) for a, n in live.items())
        assert all(x[1] <= y[0] for x, y in zip(spans, spans[1:], strict=False))
        for a, n in live.items():
            base, size = pool.find(a)
            assert a + n <= base + size
    for address in list(live):
        pool.release(address)
    assert len(drv.live) <= pool.retain_empty
    pool.trim()
    assert drv.live == {}


# -- RMM's resources as --setup functions ----------------------------------------------------
def test_each_rmm_setup_makes_its_resource_current(monkeypatch):
    """Each `rmm_setups` function sets one resource of the kind its name says (a stand-in rmm
    records the calls), with sizes small enough to share a GPU."""
    import types

    from caiconform.emm import rmm_setups

    current = []

    class Resource:
        def __init__(self, *args, **kwargs):
            self.args, self.kwargs = args, kwargs

    names = ("Pool", "Managed", "Arena", "Binning", "CudaAsync", "Cuda")
    mr = types.SimpleNamespace(
        **{f"{n}MemoryResource": type(f"{n}MemoryResource", (Resource,), {}) for n in names},
        set_current_device_resource=current.append,
    )
    monkeypatch.setitem(sys.modules, "rmm", types.SimpleNamespace(mr=mr))
    expected = {
        "pool": "PoolMemoryResource",
        "managed": "ManagedMemoryResource",
        "arena": "ArenaMemoryResource",
        "binning": "BinningMemoryResource",
        "cuda_async": "CudaAsyncMemoryResource",
    }
    assert set(rmm_setups.RESOURCES) == set(expected)
    for name in rmm_setups.RESOURCES:
        getattr(rmm_setups, name)()
        assert type(current[-1]).__name__ == expected[name], name
    assert len(current) == len(expected)
    by_kind = {type(r).__name__: r for r in current}
    assert by_kind["PoolMemoryResource"].kwargs["initial_pool_size"] == rmm_setups.INITIAL_BYTES
    assert by_kind["ArenaMemoryResource"].kwargs["arena_size"] == rmm_setups.INITIAL_BYTES
    assert type(by_kind["BinningMemoryResource"].args[0]).__name__ == "CudaMemoryResource"
