"""The adapters upload values in the shape asked, and the adapter self-check holds each adapter
against its library's own API (on CPU: the stand-in libraries of `_fakelibs`)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _fakelibs import install

from caiconform.adapters import _staging, registry, selfcheck
from caiconform.results.record import coverage_of_params
from caiconform.spec.dtypes import numpy_dtype
from caiconform.spec.layout import Layout

FAKED = ("cupy", "pycuda", "warp", "jax", "rmm")


@pytest.fixture
def fresh_registry():
    registry.clear_cache()
    yield
    registry.clear_cache()


def _adapter(monkeypatch, name):
    install(monkeypatch, name)
    return registry.get(name)


@pytest.mark.parametrize("name", ["pycuda", "warp", "jax"])
def test_a_0d_request_uploads_a_0d_array(monkeypatch, fresh_registry, name):
    adapter = _adapter(monkeypatch, name)
    obj = adapter.produce(np.array(1.5, "<f4"), Layout(()), "<f4")
    shape = obj.__cuda_array_interface__["shape"]
    assert tuple(shape) == (), f"got shape {tuple(shape)}, expected () [{name} producer, 0-d]"


def test_a_0d_bfloat16_reaches_jax_as_a_0d_ml_dtypes_array(monkeypatch, fresh_registry):
    adapter = _adapter(monkeypatch, "jax")
    values = np.zeros((), numpy_dtype("bfloat16"))
    obj = adapter.produce(values, Layout(()), "bfloat16")
    assert obj.host.shape == () and obj.host.dtype == np.dtype("<f2")


def test_c_ordered_keeps_the_shape_and_makes_c_order():
    for values in (np.array(2.0), np.arange(6.0).reshape(2, 3).T, np.zeros((0, 3))):
        out = _staging.c_ordered(values)
        assert out.shape == values.shape and out.flags.c_contiguous
        np.testing.assert_array_equal(out, values)


def test_every_case_is_labelled_as_the_run_labels_its_examples():
    adapter = registry.get("cupy")
    for role in ("producer", "consumer"):
        for case in selfcheck.cases(adapter, role, full=True):
            labels = coverage_of_params({"typestr": case.typestr, "layout": case.layout.to_dict()})
            assert (labels["layout"], labels["dtype"]) == (case.label, case.dtype), case


def test_the_quick_set_covers_every_layout_kind_dtype_class_and_memory_kind():
    adapter = registry.get("cupy")
    quick = selfcheck.cases(adapter, "producer")
    full = selfcheck.cases(adapter, "producer", full=True)
    assert len(quick) < len(full) / 3
    for attr in ("label", "dtype", "memory"):
        assert {getattr(c, attr) for c in quick} == {getattr(c, attr) for c in full}, attr
    assert {c.label for c in selfcheck.cases(adapter, "consumer")} == {"C", "0d", "zero-size"}
    with pytest.raises(ValueError, match="role 'both'"):
        selfcheck.cases(adapter, "both")


@pytest.mark.parametrize("name", FAKED)
def test_the_adapters_agree_with_their_libraries(monkeypatch, fresh_registry, name):
    result = selfcheck.run(_adapter(monkeypatch, name), full=True)
    checks = [selfcheck.Check.from_dict(c) for c in result["checks"]]
    differing = [c.message for c in selfcheck.failures(checks)]
    assert not differing, "\n".join(differing)
    ok = {(c.role, c.layout, c.memory) for c in checks if c.status == selfcheck.OK}
    if name != "rmm":  # RMM makes 1-d byte arrays only
        assert ("producer", "0d", "device") in ok and ("consumer", "0d", "device") in ok
    produced = {kind for role, _, kind in ok if role == "producer"}
    assert produced == set(registry.get(name).memory_kinds), sorted(ok)
    assert result["adapter"] == name and result["seconds"] >= 0


def test_the_old_0d_upload_is_found(monkeypatch, fresh_registry):
    adapter = _adapter(monkeypatch, "pycuda")
    monkeypatch.setattr(_staging, "c_ordered", np.ascontiguousarray)
    case = selfcheck.Case("0d", Layout(()), "<f4")
    check = selfcheck.check_producer(adapter, case)
    assert check.status == selfcheck.DIFFERS, check.message
    assert (check.field, check.seen, check.expected) == ("shape", "(1,)", "()")
    assert check.message == (
        "caiconform's pycuda adapter (producer, layout 0d, <f4, device memory): got shape (1,), "
        "expected () [caiconform adapter self-check]"
    )


def test_a_view_built_at_the_wrong_strides_is_found(monkeypatch, fresh_registry):
    from caiconform.adapters import cupy_adapter

    adapter = _adapter(monkeypatch, "cupy")
    view = cupy_adapter._CupyBackend.view

    def contiguous(self, buf, layout, dtype, stream):
        return view(self, buf, Layout(layout.shape, offset=layout.offset), dtype, stream)

    monkeypatch.setattr(cupy_adapter._CupyBackend, "view", contiguous)
    layouts = dict(selfcheck._layouts(4))  # the first layout of each label
    check = selfcheck.check_producer(adapter, selfcheck.Case("sliced", layouts["sliced"], "<f4"))
    assert check.status == selfcheck.DIFFERS and check.field == "strides", check.message
    assert check.expected == "(32, 8) (the sliced layout's)"
    ok = selfcheck.check_producer(adapter, selfcheck.Case("C", layouts["C"], "<f4"))
    assert ok.status == selfcheck.OK, ok.message


def test_values_written_wrong_are_found(monkeypatch, fresh_registry):
    adapter = _adapter(monkeypatch, "cupy")
    image = _staging.host_image
    monkeypatch.setattr(
        "caiconform.adapters._scenarios.host_image", lambda v, lay, d: np.invert(image(v, lay, d))
    )
    check = selfcheck.check_producer(adapter, selfcheck.Case("C", Layout((2, 3)), "<i4"))
    assert check.status == selfcheck.DIFFERS and check.field == "values", check.message
    assert check.seen.startswith("6 of 6 elements differ")


def test_a_consumer_read_back_in_another_shape_is_found(monkeypatch, fresh_registry):
    adapter = _adapter(monkeypatch, "cupy")
    consume = type(adapter).consume
    # a consume with code of its own after the library's calls (a ravel) is no library call
    monkeypatch.setattr(type(adapter), "consume", lambda self, obj: consume(self, obj).ravel())
    monkeypatch.setattr(type(adapter), "consume_is_library_call", False)
    check = selfcheck.check_consumer(adapter, selfcheck.Case("0d", Layout(()), "<f8"))
    assert check.status == selfcheck.DIFFERS, check.message
    assert (check.field, check.seen) == ("shape", "shape (1,), expected ()")


def test_a_library_refusing_its_own_array_is_no_harness_defect(monkeypatch, fresh_registry):
    adapter = _adapter(monkeypatch, "rmm")
    check = selfcheck.check_consumer(adapter, selfcheck.Case("C", Layout((2, 3)), "|u1"))
    assert check.status == selfcheck.OK, check.message  # RMM's own array is 1-d bytes
    monkeypatch.setattr(type(adapter), "own_array", lambda self, values: 1 / 0)
    check = selfcheck.check_consumer(adapter, selfcheck.Case("C", Layout((2, 3)), "|u1"))
    assert check.status == selfcheck.REFUSED and "ZeroDivisionError" in check.reason


class _HostExport:
    """A stand-in for the reference producer's export: host values behind a CAI dict."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = np.array(values, order="C")
        self.__cuda_array_interface__ = {**self.values.__array_interface__, "version": 3}


@pytest.fixture(params=[False, True], ids=["no-reference", "reference"])
def reference_producer(request, monkeypatch, fresh_registry):
    """The reference producer unavailable (as without a GPU) or available, whatever this
    machine has: available, it exports host values, which cuda.cccl's consume (faked too: the
    library needs a GPU) reads back from the export it is handed."""
    reference = registry.get("reference")
    if not request.param:
        monkeypatch.setattr(reference, "available", lambda: (False, "no GPU (faked)"))
        return False
    monkeypatch.setattr(reference, "available", lambda: (True, ""))
    monkeypatch.setattr(reference, "produce", lambda values, *_: _HostExport(values))
    cccl = type(registry.get("cuda.cccl"))
    monkeypatch.setattr(cccl, "consume", lambda self, obj: obj.producer.values.copy())
    return True


def test_an_adapter_without_an_array_of_its_own_is_skipped_once(reference_producer):
    quick = selfcheck.run(registry.get("mpi4py"))["checks"]  # consumes, has no arrays
    assert len(quick) == 1 and quick[0]["reason"].startswith(selfcheck.NO_OWN_ARRAY)
    full = selfcheck.run(registry.get("cuda.cccl"), full=True)  # the reference export instead
    statuses = {c["status"] for c in full["checks"]}
    if reference_producer:
        assert len(full["checks"]) > 1 and statuses == {selfcheck.OK}, full["checks"]
    else:
        assert statuses == {selfcheck.SKIPPED}, full["checks"]
        assert "reference producer" in full["checks"][0]["reason"]
    reference = selfcheck.run(registry.get("reference"))
    producer = [c for c in reference["checks"] if c["role"] == "producer"]
    assert len(producer) == 1 and producer[0]["reason"].startswith(selfcheck.NO_OWN_ARRAY)


def _failed(**where):
    base = dict(
        adapter="pycuda",
        role="producer",
        layout="0d",
        dtype="float32",
        memory="device",
        typestr="<f4",
        status=selfcheck.DIFFERS,
        field="shape",
        seen="(1,)",
        expected="()",
    )
    return selfcheck.Check(**{**base, **where})


def _record(**fields):
    base = {
        "producer": "pycuda",
        "consumer": "reference",
        "outcome": "fail",
        "rule": "CAI-PRODUCER-DESCRIBES-DATA",
        "coverage": {"layout": "0d", "dtype": "float32", "memory": "device"},
    }
    return {**base, **fields}


def test_a_record_in_a_slice_that_differed_is_filed_under_caiconform():
    checks = [_failed(), _failed(adapter="cupy", role="consumer", layout="C")]
    culprit = selfcheck.harness_culprit(_record(), checks=checks)
    assert culprit["library"] == "caiconform" and culprit["role"] == "producer"
    assert culprit["why"].startswith("a harness defect, not pycuda's: caiconform's pycuda")
    consumer = _record(producer="numba", consumer="cupy", coverage={"layout": "C"})
    consumer["coverage"].update(dtype="float32", memory="device")
    assert selfcheck.harness_culprit(consumer, checks=checks)["role"] == "consumer"
    for other in (
        _record(outcome="pass"),
        _record(outcome="skip"),
        _record(coverage={"layout": "C", "dtype": "float32", "memory": "device"}),
        _record(coverage={"layout": "0d", "dtype": "int", "memory": "device"}),
        _record(producer="cupy"),
    ):
        assert selfcheck.harness_culprit(other, checks=checks) is None, other
    params = {"typestr": "<f4", "layout": {"shape": [], "strides": None, "kind": "C"}}
    from_params = _record(coverage=None, params=params)
    assert selfcheck.harness_culprit(from_params, checks=checks)["library"] == "caiconform"
    floor = _record(  # a floor record names its zero-size shape; its params say zero-size
        coverage={"layout": "zero-size[0, 3] strides", "dtype": "float32"},
        params={"typestr": "<f4", "layout": {"shape": [0, 3], "strides": [12, 4]}},
    )
    zero = [_failed(layout="zero-size")]
    assert selfcheck.harness_culprit(floor, checks=zero)["library"] == "caiconform"


def test_the_run_directory_keeps_the_self_check_and_the_run_says_what_differed(tmp_path):
    from caiconform.runner.libraries import LibraryInfo

    found = {"adapter": "pycuda", "seconds": 0.01, "checks": [_failed().to_dict()]}
    clean = {"adapter": "cupy", "seconds": 0.02, "checks": []}
    infos = {
        "pycuda": LibraryInfo.from_dict({"name": "pycuda", "available": True, "selfcheck": found}),
        "cupy": LibraryInfo.from_dict({"name": "cupy", "available": True, "selfcheck": clean}),
        "torch": LibraryInfo("torch", False, "not installed"),
    }
    notes = selfcheck.save_and_tell(tmp_path, infos)
    assert notes[0].startswith("adapter self-check: 1 case(s) where caiconform's adapter differs")
    assert "got shape (1,), expected ()" in notes[0]
    assert notes[-1] == "adapter self-check: 2 adapter(s), 0.03 s in their probes"
    saved = json.loads((tmp_path / selfcheck.SELFCHECK_FILE).read_text())
    assert sorted(saved) == ["cupy", "pycuda"]
    assert selfcheck.load(tmp_path) == [_failed()]
    assert selfcheck.harness_culprit(_record(), tmp_path)["library"] == "caiconform"
    assert selfcheck.save_and_tell(tmp_path, {"torch": infos["torch"]}) == []
    assert not (tmp_path / selfcheck.SELFCHECK_FILE).exists()
    assert selfcheck.harness_culprit(_record(), tmp_path) is None


def test_the_source_runs_the_quick_self_check_after_the_probe(monkeypatch, fresh_registry):
    from caiconform.adapters.pycuda_adapter import PycudaAdapter
    from caiconform.runner import libraries

    install(monkeypatch, "pycuda")
    monkeypatch.setattr(PycudaAdapter, "available", lambda self: (True, ""))
    answer = libraries.selfcheck("pycuda")
    checks = answer["checks"]
    producer = [c for c in checks if c["role"] == "producer"]
    assert len(producer) == len(selfcheck.cases(registry.get("pycuda"), "producer"))
    assert not selfcheck.failures(selfcheck.Check.from_dict(c) for c in checks)
    (consumer,) = [c for c in checks if c["role"] == "consumer"]  # its consume compiles
    assert consumer["status"] == selfcheck.SKIPPED and "compiles a kernel" in consumer["reason"]
    assert "selfcheck" not in libraries.probe("pycuda")  # asked for apart, after the probe
    monkeypatch.setenv(selfcheck.MODE_ENV, "off")
    assert libraries.selfcheck("pycuda") is None
    monkeypatch.setenv(selfcheck.MODE_ENV, "full")
    full = libraries.selfcheck("pycuda")["checks"]
    assert sum(c["role"] == "consumer" for c in full) == len(
        selfcheck.cases(registry.get("pycuda"), "consumer", full=True)
    )
    monkeypatch.delenv(selfcheck.MODE_ENV)

    def broken(adapter, full=False):
        raise RuntimeError("boom")

    monkeypatch.setattr(selfcheck, "run", broken)
    assert libraries.selfcheck("pycuda") == {
        "adapter": "pycuda",
        "error": "RuntimeError: boom",
    }


def test_a_run_files_the_failures_of_a_differing_adapter_under_caiconform(tmp_path, monkeypatch):
    from pathlib import Path

    from caiconform.results.catalogue import build_catalogue
    from caiconform.results.verdict import judge
    from caiconform.runner.config import RunConfig
    from caiconform.runner.driver import run_matrix
    from caiconform.runner.journal import Journal

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent.parent))
    config = RunConfig(
        out=tmp_path / "run",
        checks=["tests.synthetic.checks"],
        libraries=["good", "wrong", "segfault"],
        max_examples=5,
        seed=7,
        workers=1,
        timeout_s=5.0,
        gpus=0,
        shrink=False,
        confirm=False,
        spare_workers=False,
        zygote=False,
        fork_workers=False,
        adapter_source="tests.synthetic.selfcheck_source",
    )
    result = run_matrix(config)
    assert any("1 case(s) where caiconform's adapter differs" in n for n in result.notes)
    lost = [n for n in result.notes if n.startswith("adapter self-check of segfault")]
    assert lost and "the self-check failed" in lost[0], result.notes
    adapters = json.loads((config.out / "adapters.json").read_text())
    assert adapters["segfault"]["available"] is True
    assert (config.out / selfcheck.SELFCHECK_FILE).is_file()
    records = Journal(config.out, result.run_id).results.records
    records = [r for r in records if r["producer"] != "segfault"]
    failed = [r for r in records if r["outcome"] == "fail"]
    assert failed and {r["producer"] for r in failed} == {"wrong"}
    for r in failed:
        assert r["culprit"]["library"] == "caiconform", r
    assert not any(r.get("culprit") for r in records if r["outcome"] == "pass")
    groups = build_catalogue(records)["groups"]
    assert {g["library"] for g in groups} == {"caiconform"}, groups
    verdict = judge(records, library="wrong")  # the library's CI: listed, never failing
    assert verdict.judged and {j.side for j in verdict.judged} == {"peer"}


def test_a_library_export_that_misstates_its_own_strides_is_the_library_s(
    monkeypatch, fresh_registry
):
    """The adapter built the broadcast view asked for (the library's own read of it holds the
    values), but the library's CAI states C strides for it (as numba-cuda does for a stride-0
    axis): the library's finding for the matrix (LIBRARY), never a harness defect."""
    import _fakelibs

    adapter = _adapter(monkeypatch, "cupy")
    export = _fakelibs.FakeArray.__cuda_array_interface__.fget

    def c_strides_claimed(self):
        d = export(self)
        if d.get("strides") and 0 in d["strides"]:
            d["strides"] = None
        return d

    monkeypatch.setattr(
        _fakelibs.FakeArray, "__cuda_array_interface__", property(c_strides_claimed)
    )
    layouts = dict(selfcheck._layouts(4))
    check = selfcheck.check_producer(
        adapter, selfcheck.Case("broadcast", layouts["broadcast"], "<f4")
    )
    assert check.status == selfcheck.LIBRARY, check.message
    assert "the library's own read of the array holds the values asked for" in check.reason
    assert selfcheck.failures([check]) == []


def test_a_misread_through_the_library_s_own_calls_is_the_library_s(monkeypatch, fresh_registry):
    """CuPy's adapter consumes with CuPy's own calls alone (`cupy.asarray`, `cupy.asnumpy`):
    what it reads wrong through the CAI is CuPy's reading (LIBRARY), for the matrix to judge;
    an adapter with code of its own between the import and the values (PyCUDA's gather
    kernel) is held to it (DIFFERS)."""
    import sys

    adapter = _adapter(monkeypatch, "cupy")
    cupy = sys.modules["cupy"]
    own_asarray = cupy.asarray

    def misread(obj):
        array = own_asarray(obj)
        if not isinstance(obj, np.ndarray):  # through the CAI
            array.host = array.host + 1
        return array

    monkeypatch.setattr(cupy, "asarray", misread)
    check = selfcheck.check_consumer(adapter, selfcheck.Case("C", Layout((2, 3)), "<f4"))
    assert check.status == selfcheck.LIBRARY, check.message
    assert "the library's CAI import" in check.reason
    monkeypatch.setattr(type(adapter), "consume_is_library_call", False)
    check = selfcheck.check_consumer(adapter, selfcheck.Case("C", Layout((2, 3)), "<f4"))
    assert check.status == selfcheck.DIFFERS, check.message


def test_the_fake_rmms_resources_do_not_outlive_its_test():
    """A fake RMM's memory resources (strings) made through the adapter are dropped with the
    fake: a GPU test later in the same worker makes real ones (a leaked one failed the
    self-check of the real RMM, 2026-12-02)."""
    from caiconform.adapters import rmm_adapter

    with pytest.MonkeyPatch.context() as monkeypatch:
        install(monkeypatch, "rmm")
        assert rmm_adapter._resource("managed") == "managed"
    assert "managed" not in rmm_adapter._made
