"""The reference EMM plugin and the EMM checker on a real GPU (each plugin in its own process)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from caiconform.cuda import gpu_available

HAVE_GPU, NO_GPU_REASON = gpu_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason=NO_GPU_REASON)]

try:
    import numba.cuda  # noqa: F401

    NUMBA, NO_NUMBA = True, ""
except Exception as exc:  # the checker reports this itself; these tests need it
    NUMBA, NO_NUMBA = False, f"numba-cuda not importable: {exc}"
needs_numba = pytest.mark.skipif(not NUMBA, reason=NO_NUMBA)


@pytest.fixture(scope="module", params=["ReferenceDirectManager", "ReferencePoolManager"])
def reference_report(request):
    from caiconform.emm.checker import check_plugin

    return request.param, check_plugin(f"caiconform.reference.emm:{request.param}")


@needs_numba
def test_reference_plugin_has_no_failure(reference_report):
    name, report = reference_report
    assert report.status == "checked", report.reason
    bad = [r.message for r in report.results if r.outcome not in ("pass", "skip")]
    assert not bad, "\n".join(bad)
    ran = {r.rule for r in report.results if r.outcome == "pass"}
    for rule in (
        "EMM-ALLOC-VALID",
        "EMM-POINTER-FINALIZER",
        "EMM-IPC-OPEN-OTHER-PROCESS",
        "EMM-IPCHANDLE-OFFSET",
        "EMM-DEFER-CLEANUP",
        "EMM-RESET-FREES",
    ):
        assert rule in ran, f"{name}: {rule} did not run"


@needs_numba
def test_reference_defer_and_reset_are_judged_from_the_allocation_log(reference_report):
    _, report = reference_report
    seen = {r.check: str(r.seen) for r in report.results}
    assert "allocation log" in seen["defer-frees-after-exit"]
    assert "deferred to the exit" in seen["defer-frees-after-exit"]
    assert "allocation log" in seen["reset"]


@needs_numba
def test_pool_offsets_are_nonzero_and_direct_offsets_of_whole_allocations_zero(reference_report):
    name, report = reference_report
    offsets = next(r.seen for r in report.results if r.check == "ipc-handle-offset")
    assert offsets["slice"] != 0
    if name == "ReferencePoolManager":
        assert all(v > 0 for v in offsets.values()), offsets
        shared = next(r.seen for r in report.results if r.check == "ipc-open-suballoc-2")
        assert "one driver allocation" in shared
    else:
        assert offsets["whole"] == 0 and offsets["suballoc-1"] == 0, offsets


@needs_numba
@pytest.mark.parametrize("mode", ["direct", "pool"])
def test_env_variable_selects_the_reference_plugin_and_its_log_records(mode):
    code = (
        "import gc\n"
        "from numba import cuda\n"
        "from caiconform.reference.tracking import LOG\n"
        "mgr = cuda.current_context().memory_manager\n"
        "a = cuda.device_array(1000, dtype='u1')\n"
        "ptr = a.device_ctypes_pointer.value\n"
        "live = LOG.is_live(ptr)\n"
        "del a; gc.collect()\n"
        "print(type(mgr).__name__, live, LOG.is_live(ptr), LOG.was_freed(ptr))\n"
    )
    env = dict(
        os.environ, NUMBA_CUDA_MEMORY_MANAGER="caiconform.reference.emm", CAICONFORM_EMM_MODE=mode
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180
    )
    assert out.returncode == 0, out.stderr
    expected = {"direct": "ReferenceDirectManager", "pool": "ReferencePoolManager"}[mode]
    assert out.stdout.split() == [expected, "True", "False", "True"]


@needs_numba
def test_checker_judges_numba_default_manager():
    from caiconform.emm.checker import check_plugin

    report = check_plugin("numba.cuda.cudadrv.driver:NumbaCUDAMemoryManager")
    assert report.status == "checked", report.reason
    rules = {r.rule: r.outcome for r in report.results}
    assert rules["EMM-SUBCLASS"] == "pass" and rules["EMM-ALLOC-VALID"] == "pass"


PATH_NAMES = (
    "device_array",
    "device_array_like",
    "to_device",
    "managed_array",
    "mapped_array",
    "pinned_array",
    "pinned",
    "mapped",
    "deallocation",
)


@needs_numba
@pytest.mark.parametrize(
    ("cls", "mode"), [("ReferenceDirectManager", "direct"), ("ReferencePoolManager", "pool")]
)
def test_every_numba_allocation_path_goes_through_the_reference_plugin_by_both_routes(
    cls, mode, monkeypatch
):
    """Both routes: set_memory_manager here, NUMBA_CUDA_MEMORY_MANAGER=caiconform.reference.emm
    (with CAICONFORM_EMM_MODE naming the mode) in the fresh process; IPC open there."""
    from caiconform.emm.checker import check_plugin, exit_code

    monkeypatch.setenv("CAICONFORM_EMM_MODE", mode)
    report = check_plugin(f"caiconform.reference.emm:{cls}")
    assert report.status == "checked", report.reason
    bad = [r.message for r in report.results if r.outcome not in ("pass", "skip")]
    assert not bad, "\n".join(bad)
    passed = {r.check for r in report.results if r.outcome == "pass"}
    for route in ("set_memory_manager", "NUMBA_CUDA_MEMORY_MANAGER"):
        for path in PATH_NAMES:
            assert f"path:{path} via {route}" in passed, (path, route)
        assert f"initialize-before-use via {route}" in passed
    assert "path:ipc-open via NUMBA_CUDA_MEMORY_MANAGER" in passed
    rules = {r.rule for r in report.results if r.outcome == "pass"}
    assert {"EMM-SET-ENV", "EMM-NUMBA-IPC-CLOSE", "EMM-INITIALIZE-BEFORE-USE"} <= rules
    assert exit_code([report]) == 0


@needs_numba
def test_numba_default_manager_paths_are_not_applicable():
    from caiconform.emm.checker import check_plugin

    report = check_plugin("numba.cuda.cudadrv.driver:NumbaCUDAMemoryManager")
    paths = [r for r in report.results if r.check.startswith("path:")]
    assert paths and {r.outcome for r in paths} == {"skip"}
    assert all("does not apply" in r.message for r in paths)


@needs_numba
def test_a_host_only_plugin_without_memallocmanaged_is_told_numba_called_cu_mem_alloc_managed(
    tmp_path, monkeypatch
):
    """numba-cuda 0.30.4's HostOnlyCUDAMemoryManager.memallocmanaged calls cuMemAllocManaged
    itself: with a plugin that does not define it, managed_array bypasses the plugin."""
    from caiconform.emm.checker import check_plugin

    (tmp_path / "nomanaged_plugin.py").write_text(
        "from caiconform.reference.emm import ReferenceDirectManager\n"
        "from numba.cuda.cudadrv.driver import HostOnlyCUDAMemoryManager\n"
        "class NoManaged(ReferenceDirectManager):\n"
        "    memallocmanaged = HostOnlyCUDAMemoryManager.memallocmanaged\n"
        "_numba_memory_manager = NoManaged\n"
    )
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}:{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.syspath_prepend(str(tmp_path))
    report = check_plugin("nomanaged_plugin:NoManaged")
    bad = {r.check: r.message for r in report.results if r.outcome == "fail"}
    for route in ("set_memory_manager", "NUMBA_CUDA_MEMORY_MANAGER"):
        message = bad[f"path:managed_array via {route}"]
        assert "cuda.managed_array" in message and "cuMemAllocManaged called by Numba" in message


@needs_numba
def test_numba_routes_the_lifecycle_to_the_reference_plugin(reference_report):
    """reset, get_memory_info and get_ipc_handle reach the plugin; set_memory_manager refuses
    interface_version 0 and 2; a CAI-imported array's IPC handle opens in another process."""
    name, report = reference_report
    outcome = {r.check: r.outcome for r in report.results}
    for check in (
        "memory-info-routed",
        "ipc-handle-routed",
        "reset-routed",
        "interface-version-rejected",
        "ipc-cai-import",
        "memhostalloc(mapped=False)",
        "memhostalloc(mapped=True)",
    ):
        assert outcome.get(check) == "pass", (name, check, outcome.get(check))
    # a second device's context (two GPUs): its instance is initialized before first use
    assert outcome.get("initialize-other-context") in ("pass", "skip"), outcome


@needs_numba
def test_numba_default_manager_lifecycle_and_imported_array_ipc():
    """Numba's own manager: the routing checks do not apply (skip), the version check and the
    IPC of an array imported with as_cuda_array (GetIpcHandleMixin finds the base) pass."""
    from caiconform.emm.checker import check_plugin

    report = check_plugin("numba.cuda.cudadrv.driver:NumbaCUDAMemoryManager")
    outcome = {r.check: r.outcome for r in report.results}
    assert outcome["interface-version-rejected"] == "pass"
    assert outcome["ipc-cai-import"] == "pass"
    assert outcome["memhostalloc(mapped=False)"] == "pass"
    for check in ("memory-info-routed", "ipc-handle-routed", "reset-routed"):
        assert outcome[check] == "skip", check
