"""numba-cuda-mlir on a real GPU: its device arrays read by the reference consumer in several
layouts, reference exports read by its three consumers (as_cuda_array, from_cuda_array_interface,
a kernel launch), its Numba stream rules, and one EMM plugin checked under its memory manager.
Skips when numba_cuda_mlir is not importable."""

from __future__ import annotations

import importlib.util
import textwrap

import numpy as np
import pytest
from _cases import layouts, sample_values

from caiconform.adapters import registry
from caiconform.adapters.base import SkipExchange
from caiconform.cuda import gpu_available

HAVE_GPU, NO_GPU_REASON = gpu_available()
MLIR = importlib.util.find_spec("numba_cuda_mlir") is not None
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not HAVE_GPU, reason=NO_GPU_REASON),
    pytest.mark.skipif(not MLIR, reason="numba_cuda_mlir not importable"),
]

CASES = ("C", "F", "sliced", "negative", "zero-size", "0-d")
TYPESTRS = ("<f4", "<i2", "<c8")
CONSUMERS = ("numba-mlir", "numba-mlir-from-cai", "numba-mlir-kernel")


def _adapter(name: str):
    adapter = registry.get(name)
    ok, why = adapter.available()
    if not ok:
        pytest.fail(f"{name} unavailable although numba_cuda_mlir imports: {why}")
    return adapter


@pytest.mark.parametrize("typestr", TYPESTRS)
@pytest.mark.parametrize("case", CASES)
def test_numba_mlir_arrays_read_back_by_the_reference_consumer(case, typestr):
    from caiconform.reference.consumer import consume

    layout, axis = layouts(np.dtype(typestr).itemsize)[case]
    values = sample_values(layout.shape, typestr, axis)
    try:
        obj = _adapter("numba-mlir").produce(values, layout, typestr)
    except SkipExchange as exc:
        pytest.skip(f"numba-mlir: {exc}")
    assert type(obj).__module__.startswith("numba_cuda_mlir"), type(obj)
    got = consume(obj, sync="host").values
    np.testing.assert_array_equal(got, values, err_msg=f"numba-mlir -> reference [{case}]")


@pytest.mark.parametrize("consumer", CONSUMERS)
@pytest.mark.parametrize("case", ("C", "sliced", "negative", "zero-size"))
def test_reference_exports_read_by_each_numba_mlir_consumer(consumer, case):
    typestr = "<f4"
    layout, axis = layouts(4)[case]
    values = sample_values(layout.shape, typestr, axis)
    obj = _adapter("reference").produce(values, layout, typestr)
    try:
        got = _adapter(consumer).consume(obj)
    except SkipExchange as exc:
        pytest.skip(f"{consumer}: {exc}")
    np.testing.assert_array_equal(got, values, err_msg=f"reference -> {consumer} [{case}]")


@pytest.mark.parametrize("scenario", ("pending", "legacy", "per-thread", "external"))
def test_numba_mlir_stream_scenarios_land(scenario):
    from caiconform.cuda.device import synchronize
    from caiconform.reference.consumer import consume

    layout, axis = layouts(2)["sliced"]
    values = sample_values(layout.shape, "<i2", axis)
    obj = _adapter("numba-mlir").produce(values, layout, "<i2", scenario)
    synchronize()
    np.testing.assert_array_equal(consume(obj, sync="host").values, values, err_msg=scenario)


@pytest.mark.parametrize("consumer", CONSUMERS)
def test_numba_mlir_imports_are_judged_by_numbas_stream_rules(consumer):
    """Runs the streams family's Numba scenario; the outcome is numba-cuda-mlir's, so the test
    asserts a verdict was reached (pass or fail with a rule), not which one."""
    from caiconform.checks import streams

    params = {
        "stream_scenario": "numba-sync",
        "delay_us": 50_000,
        "typestr": "<f4",
        "shape": [64],
        "seed": 0,
    }
    result = streams.execute(params, "reference", consumer)
    assert result.outcome in ("pass", "fail"), result.message
    if result.outcome == "fail":
        assert result.rule, result.message


_PLUGIN = textwrap.dedent(
    '''
    """numba-cuda-mlir's own memory manager, as a plugin: defer_cleanup is inherited from it."""
    from numba_cuda_mlir.numba_cuda.cudadrv.driver import NumbaCUDAMemoryManager


    class PassThrough(NumbaCUDAMemoryManager):
        """Numba's allocations through Numba's own code, from outside Numba's package."""


    _numba_memory_manager = PassThrough
    '''
)


def test_emm_check_runs_a_plugin_under_numba_cuda_mlir_by_both_routes(tmp_path, monkeypatch):
    from caiconform.emm.checker import check_plugin

    (tmp_path / "mlir_passthrough_plugin.py").write_text(_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    report = check_plugin("mlir_passthrough_plugin:PassThrough", numba="numba-cuda-mlir")
    assert report.status == "checked", report.reason
    assert report.environment["numba_implementation"] == "numba-cuda-mlir"
    assert report.environment["numba_cuda_mlir"], report.environment
    lost = [r.message for r in report.results if r.outcome in ("crash", "hang", "poisoned")]
    assert not lost, "\n".join(lost)
    judged = {r.check for r in report.results if r.outcome in ("pass", "fail")}
    for route in ("set_memory_manager", "NUMBA_CUDA_MEMORY_MANAGER"):
        assert f"path:device_array via {route}" in judged, (route, sorted(judged))
    assert "env-variable" in judged


@pytest.mark.parametrize("cls", ["ReferenceDirectManager", "ReferencePoolManager"])
def test_the_reference_plugins_keep_the_emm_contract_under_numba_cuda_mlir(cls):
    """caiconform's reference plugin, derived from numba-cuda-mlir's classes when checked
    under it: the plugin fails no MUST rule of its own; Numba's own failures are listed apart
    (the report's numba_failures) and are numba-cuda-mlir's findings, not this test's."""
    from caiconform.emm.checker import check_plugin

    report = check_plugin(f"caiconform.reference.emm:{cls}", numba="numba-cuda-mlir")
    assert report.status == "checked", report.reason
    outcomes = {r.rule: r.outcome for r in report.results if r.check == "subclass"}
    assert outcomes == {"EMM-SUBCLASS": "pass"}, outcomes
    lost = [r.message for r in report.results if r.outcome in ("crash", "hang", "poisoned")]
    assert not lost, "\n".join(lost)
    own = [r.message for r in report.results if report.counts_against(r)]
    assert not own, "\n".join(own)
