"""numba-cuda-mlir beside numba-cuda, without a GPU: the adapters' registration, availability and
module choice, the checks' dispatch by role, emm-check's --numba, the migration section."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest

from caiconform.adapters import numba_impls, registry
from caiconform.adapters.numba_adapter import NumbaAdapter, NumbaFromCAIAdapter

MLIR = ("numba-mlir", "numba-mlir-from-cai", "numba-mlir-kernel")
TWINS = dict(zip(MLIR, ("numba", "numba-from-cai", "numba-kernel"), strict=True))
MAIN = "import sys; from caiconform.cli import main; sys.exit(main())"


# -- the adapters -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", MLIR)
def test_registry_lists_each_mlir_adapter_with_its_twins_roles(name):
    assert name in registry.names()
    adapter, twin = registry.get(name), registry.get(TWINS[name])
    assert adapter.name == name
    assert adapter.capabilities == twin.capabilities, f"[{name}] roles differ from {twin.name}"
    assert adapter.module == "numba_cuda_mlir.cuda"
    assert adapter.distribution == "numba-cuda-mlir"
    assert adapter.implementation == "numba-cuda-mlir"


@pytest.mark.parametrize("name", MLIR)
def test_without_numba_cuda_mlir_each_adapter_says_why(name, monkeypatch):
    real = importlib.import_module

    def refuse(module, *args, **kwargs):
        if module.startswith("numba_cuda_mlir"):
            raise ModuleNotFoundError("No module named 'numba_cuda_mlir'")
        return real(module, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", refuse)
    ok, why = registry.get(name).available()
    assert not ok
    assert why.startswith("numba_cuda_mlir.cuda not importable: ModuleNotFoundError"), why


def test_versions_are_numba_cuda_mlirs_and_its_kernels_state_no_shim(monkeypatch):
    from importlib import metadata

    from caiconform.adapters import numba_adapter

    versions = {"numba-cuda": "0.30.4", "numba-cuda-mlir": "0.6.0"}

    def version(dist):
        if dist in versions:
            return versions[dist]
        raise metadata.PackageNotFoundError(dist)

    monkeypatch.setattr(metadata, "version", version)
    monkeypatch.setattr(numba_adapter, "NUMPY_SHIM", ["np.row_stack = np.vstack"])
    assert registry.get("numba-mlir").version() == "0.6.0"
    assert registry.get("numba-mlir-kernel").version() == "0.6.0"
    assert registry.get("numba-kernel").version() == "0.30.4+shim(np.row_stack = np.vstack)"


class _FakeArray:
    """What `_to_host` reads of a Numba device array."""

    def __init__(self, values: np.ndarray, where: str) -> None:
        self.values, self.where = values, where
        self.strides = values.strides

    def copy_to_host(self) -> np.ndarray:
        return self.values.copy()


def _described(desc: dict) -> np.ndarray:
    """The values a fake import reads: 0, 1, ... in the described shape (what `_Export` holds)."""
    shape = tuple(desc["shape"])
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


def _fake_cuda(monkeypatch, package: str, where: str) -> types.ModuleType:
    """A stand-in `cuda` module at `package`: its imports say which implementation made them."""
    cuda = types.ModuleType(package)

    def as_cuda_array(obj, sync=True):
        return _FakeArray(_described(obj.__cuda_array_interface__), where)

    def from_cuda_array_interface(desc, owner=None, sync=True):
        return _FakeArray(_described(desc), where)

    cuda.as_cuda_array = as_cuda_array
    cuda.from_cuda_array_interface = from_cuda_array_interface
    cuda.is_available = lambda: True
    monkeypatch.setitem(sys.modules, package, cuda)
    return cuda


class _Export:
    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": "<f4", "data": (1, False), "version": 3}


@pytest.mark.parametrize(
    ("cls", "module", "where"),
    [
        (NumbaAdapter, "numba.cuda", "numba-cuda"),
        (registry.BUILTIN["numba-mlir"], "numba_cuda_mlir.cuda", "numba-cuda-mlir"),
        (NumbaFromCAIAdapter, "numba.cuda", "numba-cuda"),
        (registry.BUILTIN["numba-mlir-from-cai"], "numba_cuda_mlir.cuda", "numba-cuda-mlir"),
    ],
)
def test_the_shared_numba_base_imports_through_its_own_implementation(
    cls, module, where, monkeypatch
):
    """Both implementations' fakes are present: each adapter must call its own."""
    _fake_cuda(monkeypatch, "numba.cuda", "numba-cuda")
    _fake_cuda(monkeypatch, "numba_cuda_mlir.cuda", "numba-cuda-mlir")
    if isinstance(cls, str):
        path, name = cls.split(":")
        cls = getattr(importlib.import_module(path), name)
    adapter = cls()
    assert adapter.cuda_module() is sys.modules[module]
    got = adapter.consume(_Export((2, 3)))
    np.testing.assert_array_equal(got, np.arange(6, dtype=np.float32).reshape(2, 3))
    assert adapter.available() == (True, "")


def test_views_hold_through_the_consumers_implementation(monkeypatch):
    from caiconform.checks import _views

    _fake_cuda(monkeypatch, "numba.cuda", "numba-cuda")
    _fake_cuda(monkeypatch, "numba_cuda_mlir.cuda", "numba-cuda-mlir")
    obj = _Export((3,))
    assert _views.hold("numba", obj).where == "numba-cuda"
    assert _views.hold("numba-mlir", obj).where == "numba-cuda-mlir"
    assert _views.hold("numba-mlir-from-cai", obj).where == "numba-cuda-mlir"
    assert _views.hold("numba-mlir-kernel", obj) is obj


def test_roles_implementations_and_twins():
    assert numba_impls.role("numba-mlir-kernel") == "numba-kernel"
    assert numba_impls.role("cupy") is None
    assert numba_impls.impl_of("numba-mlir").cuda == "numba_cuda_mlir.cuda"
    assert numba_impls.impl_of("numba-from-cai").cuda == "numba.cuda"
    assert numba_impls.twin("numba-from-cai") == "numba-mlir-from-cai"
    assert numba_impls.twin("numba-mlir-kernel") == "numba-kernel"
    assert numba_impls.twin("torch") is None


def test_numba_stream_scenarios_and_entries_cover_the_mlir_adapters():
    from caiconform.adapters import entries
    from caiconform.checks import _numba_streams, streams

    assert streams.numba_scenarios("reference", "numba-mlir-kernel") == (
        "numba-sync",
        "numba-stream-none",
        "numba-sync-off",
    )
    assert streams.numba_scenarios("numba-mlir", "reference") == ("numba-export",)
    for name in MLIR:
        assert _numba_streams.ENTRIES[name] == _numba_streams.ENTRIES[TWINS[name]]
        mine = [e.name for e in entries.entries_of(name)]
        assert mine == [e.name for e in entries.entries_of(TWINS[name])]
        if name != "numba-mlir-kernel":  # the kernel's entry cites the spec's example
            assert all("numba_cuda_mlir" in e.source for e in entries.entries_of(name))


def test_standalone_snippets_import_numba_cuda_mlir():
    from caiconform.report.standalone import libraries

    snip = libraries.consume("numba-mlir")
    assert snip.imports == ("from numba_cuda_mlir import cuda",)
    kernel = libraries.write("numba-mlir-kernel", 1)
    assert kernel.imports == ("from numba_cuda_mlir import cuda",)
    assert "row_stack" not in kernel.setup and "@cuda.jit" in kernel.setup
    assert "row_stack" in libraries.write("numba-kernel", 1).setup


# -- emm-check --numba ------------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", MAIN, "emm-check", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_emm_check_refuses_an_unknown_implementation():
    out = _cli("--numba", "numba-jit", "caiconform.reference.suballoc:RangeTable")
    assert out.returncode == 2
    assert "invalid choice: 'numba-jit'" in out.stderr


def test_emm_check_naming_an_implementation_not_installed_is_one_line_exit_2(monkeypatch, capsys):
    from caiconform.cli import main

    monkeypatch.setattr(numba_impls, "installed", lambda name: None)
    code = main(["emm-check", "--numba", "numba-cuda-mlir", "caiconform.reference.suballoc:X"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err == [
        "caiconform: error: --numba numba-cuda-mlir: the numba-cuda-mlir distribution is not "
        "installed"
    ]


@pytest.mark.parametrize(
    ("present", "chosen"),
    [
        ({"numba-cuda", "numba-cuda-mlir"}, "numba-cuda"),
        ({"numba-cuda-mlir"}, "numba-cuda-mlir"),
        (set(), "numba-cuda"),
    ],
)
def test_emm_check_default_is_numba_cuda_when_installed(present, chosen, monkeypatch):
    from caiconform.emm.checker import default_numba

    monkeypatch.setattr(numba_impls, "installed", lambda name: "1" if name in present else None)
    assert default_numba() == chosen


def test_check_plugin_refuses_an_unknown_implementation():
    from caiconform.emm.checker import check_plugin

    with pytest.raises(ValueError, match="numba must be one of"):
        check_plugin("caiconform.reference.suballoc:RangeTable", numba="numba-jit")


def test_under_a_missing_numba_cuda_mlir_the_checker_says_so_and_skips_everything():
    if numba_impls.installed("numba-cuda-mlir"):
        pytest.skip("numba-cuda-mlir is installed here")
    from caiconform.emm.checker import check_plugin

    report = check_plugin("collections:OrderedDict", numba="numba-cuda-mlir", timeout=120)
    assert report.status == "unavailable"
    assert report.reason.startswith("numba-cuda-mlir not importable"), report.reason
    assert {r.outcome for r in report.results} == {"skip"}


def test_the_plugins_process_is_told_the_implementation_and_the_callers_env_is_kept(
    tmp_path, monkeypatch
):
    """caiconform's reference plugin derives from the package CAICONFORM_EMM_NUMBA_PACKAGE
    names; the checker sets it for the plugin's process only."""
    from caiconform.emm.checker import check_plugin

    seen = tmp_path / "seen.txt"
    (tmp_path / "records_env_plugin.py").write_text(
        "import os\n"
        f"open({str(seen)!r}, 'w').write(os.environ.get('CAICONFORM_EMM_NUMBA_PACKAGE', '-'))\n"
        "class X:\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("CAICONFORM_EMM_NUMBA_PACKAGE", raising=False)
    check_plugin("records_env_plugin:X", numba="numba-cuda-mlir", timeout=120)
    assert seen.read_text() == "numba_cuda_mlir.numba_cuda"
    assert "CAICONFORM_EMM_NUMBA_PACKAGE" not in os.environ


def test_numba_cuda_mlirs_own_manager_is_numbas_side():
    from caiconform.emm.result import PluginReport

    target = "numba_cuda_mlir.numba_cuda.cudadrv.driver:NumbaCUDAMemoryManager"
    assert PluginReport(target).is_numba
    assert not PluginReport("caiconform.reference.emm_mlir:X").is_numba


def test_numba_emm_load_names_the_missing_implementation(monkeypatch):
    from caiconform.emm.static import NumbaEMM, NumbaUnavailable

    real = importlib.import_module

    def refuse(module, *args, **kwargs):
        if module.startswith("numba_cuda_mlir"):
            raise ModuleNotFoundError("No module named 'numba_cuda_mlir'")
        return real(module, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", refuse)
    with pytest.raises(NumbaUnavailable, match="^numba-cuda-mlir not importable"):
        NumbaEMM.load("numba-cuda-mlir")


# -- the migration section --------------------------------------------------------------------


def _group(library, role, rule, cells, outcome="fail", **extra):
    return {
        "library": library,
        "role": role,
        "rule": rule,
        "input_rule": None,
        "level_text": "MUST",
        "outcome": outcome,
        "severity": "wrong-data",
        "about_input": False,
        "cells": cells,
        **extra,
    }


def _cells(*keys, tested=1):
    out = []
    for key in keys:
        check, producer, consumer = key.split("/")
        out.append(
            {
                "check": check,
                "producer": None if producer == "-" else producer,
                "consumer": None if consumer == "-" else consumer,
                "tested": tested,
            }
        )
    return out


def test_migration_lists_groups_present_with_one_implementation_only():
    from caiconform.report.migration import migration_rows

    catalogue = {
        "groups": [
            # in both: the same rule by each implementation's kernel consumer
            _group("numba-kernel", "consumer", "CAI-A", ["roundtrip/cupy/numba-kernel"]),
            _group("numba-mlir-kernel", "consumer", "CAI-A", ["roundtrip/cupy/numba-mlir-kernel"]),
            # numba-cuda only
            _group("numba", "consumer", "CAI-B", ["streams/reference/numba"]),
            # numba-cuda-mlir only, and the partner's group, seen with mlir only
            _group("numba-mlir", "producer", "CAI-C", ["schema/numba-mlir/-"]),
            _group("cupy", "producer", "CAI-D", ["roundtrip/cupy/numba-mlir-kernel"]),
            # about its input: never listed
            _group("numba", "consumer", "CAI-E", ["streams/reference/numba"], about_input=True),
        ]
    }
    cells = _cells(
        "roundtrip/cupy/numba-kernel",
        "roundtrip/cupy/numba-mlir-kernel",
        "streams/reference/numba",
        "streams/reference/numba-mlir",
        "schema/numba/-",
        "schema/numba-mlir/-",
    )
    rows = migration_rows(catalogue, cells)
    seen = {(r["only_in"], r["library"], r["rule"]) for r in rows}
    assert seen == {
        ("numba-cuda", "numba", "CAI-B"),
        ("numba-cuda-mlir", "numba-mlir", "CAI-C"),
        ("numba-cuda-mlir", "cupy", "CAI-D"),
    }
    row = next(r for r in rows if r["rule"] == "CAI-B")
    assert row["numba_cell"] == "streams/reference/numba"
    assert row["mlir_cell"] == "streams/reference/numba-mlir"
    assert row["level_text"] == "MUST" and row["role"] == "consumer"


def test_migration_compares_only_pairs_where_both_ran():
    from caiconform.report.migration import migration_rows, ran_pairs

    catalogue = {"groups": [_group("numba", "consumer", "CAI-B", ["streams/reference/numba"])]}
    only_numba = _cells("streams/reference/numba")
    assert migration_rows(catalogue, only_numba) is None
    skipped = only_numba + _cells("streams/reference/numba-mlir", tested=0)
    assert ran_pairs(skipped) == []
    assert migration_rows(catalogue, skipped) is None
    both = only_numba + _cells("streams/reference/numba-mlir")
    assert ran_pairs(both) == [("streams/reference/numba", "streams/reference/numba-mlir")]
    assert migration_rows({"groups": []}, both) == []


def test_migration_section_renders_only_when_both_ran():
    from caiconform.report.html import render_migration
    from caiconform.report.markdown import _migration

    assert _migration({"migration": None}) == [] and render_migration({}) == ""
    assert "None: both implementations" in "\n".join(_migration({"migration": []}))
    row = {
        "numba_cell": "streams/reference/numba",
        "mlir_cell": "streams/reference/numba-mlir",
        "only_in": "numba-cuda",
        "library": "numba",
        "role": "consumer",
        "rule": "CAI-NUMBA-CONSUMER-SYNC",
        "input_rule": None,
        "level_text": "MUST",
        "outcome": "fail<script>",
        "severity": "wrong-data",
    }
    text = "\n".join(_migration({"migration": [row]}))
    assert "## numba-cuda and numba-cuda-mlir" in text
    assert "| numba-cuda | streams/reference/numba | streams/reference/numba-mlir |" in text
    assert "CAI-NUMBA-CONSUMER-SYNC | MUST" in text and "<script>" not in text
    page = render_migration({"migration": [row]})
    assert '<section id="migration">' in page and "&lt;script&gt;" in page


def test_the_matrix_carries_the_migration_rows(tmp_path):
    from caiconform.report.html import render_html
    from caiconform.report.load import Run
    from caiconform.report.markdown import render_markdown
    from caiconform.report.matrix import build_matrix

    def rec(consumer, outcome, rule=None, seq=0):
        return {
            "run_id": "r1",
            "seq": seq,
            "check": "roundtrip",
            "producer": "reference",
            "consumer": consumer,
            "outcome": outcome,
            "rule": rule,
            "params": {"typestr": "<f4", "shape": [2]},
            "message": f"{outcome} [{rule}]",
            "expected": "x",
            "repro": None,
            "shrunk": False,
        }

    records = [
        rec("numba", "pass", seq=1),
        rec("numba-mlir", "fail", "CAI-CONSUMER-READS-DESCRIBED", seq=2),
    ]
    matrix = build_matrix(Run(records), tmp_path)
    (row,) = matrix["migration"]
    assert row["only_in"] == "numba-cuda-mlir" and row["library"] == "numba-mlir"
    assert "## numba-cuda and numba-cuda-mlir" in render_markdown(matrix)
    assert '<section id="migration">' in render_html(matrix)
    assert json.loads(json.dumps(matrix["migration"])) == matrix["migration"]


# -- the copy kernels' disk cache ---------------------------------------------------------------


def _fake_implementation(monkeypatch, name: str, package: str) -> tuple[list, types.ModuleType]:
    """A Numba implementation `name` whose `cuda.jit(cache=..., opt=...)` records, per kernel
    made, the cache and optimisation flags and its config's CACHE_DIR at that moment (what
    numba's locator reads)."""
    from caiconform.adapters import numba_adapter

    config = types.ModuleType(f"{package}.core.config")
    config.CACHE_DIR = "the user's own"
    cuda = types.ModuleType(f"{package}.fakecuda")
    made: list = []

    def jit(cache=False, opt=True):
        def decorate(function):
            made.append((function.__name__, cache, opt, config.CACHE_DIR))
            return function

        return decorate

    cuda.jit = jit
    for module in (config, cuda):
        monkeypatch.setitem(sys.modules, module.__name__, module)
    impl = numba_impls.NumbaImpl(name, cuda.__name__, package, needs_shim=False)
    monkeypatch.setitem(numba_impls.IMPLS, name, impl)
    monkeypatch.setattr(numba_adapter, "IMPLS", numba_impls.IMPLS)
    return made, config


@pytest.mark.parametrize("name", ["numba-cuda-mlir", "numba-cuda"])
def test_copy_kernels_are_cached_in_caiconforms_folder_per_implementation(
    name, monkeypatch, tmp_path
):
    """Every copy kernel is made with numba's `cache=True` (and without NVVM's optimisations,
    `opt=False`) while the implementation's CACHE_DIR is caiconform's folder for that
    implementation (so numba-cuda's and numba-cuda-mlir's caches never meet), and the
    library's own setting is back afterwards."""
    from caiconform.adapters import numba_adapter

    made, config = _fake_implementation(monkeypatch, name, f"fake_{name.replace('-', '_')}")
    monkeypatch.setenv(numba_adapter.CACHE_ENV, str(tmp_path))
    kernels = numba_adapter._copy_kernels.__wrapped__(name)
    assert sorted(kernels) == [0, 1, 2, 3]
    assert [(n, c, o) for n, c, o, _ in made] == [(f"copy{i}", True, False) for i in range(4)]
    assert {d for *_, d in made} == {str(tmp_path / name)}
    assert config.CACHE_DIR == "the user's own"


def test_copy_kernels_restore_the_cache_setting_when_decorating_fails(monkeypatch, tmp_path):
    from caiconform.adapters import numba_adapter

    made, config = _fake_implementation(monkeypatch, "numba-cuda-mlir", "fake_broken")

    def refuses(cache=False, opt=True):
        raise RuntimeError("no jit here")

    sys.modules["fake_broken.fakecuda"].jit = refuses
    monkeypatch.setenv(numba_adapter.CACHE_ENV, str(tmp_path))
    with pytest.raises(RuntimeError, match="no jit here"):
        numba_adapter._copy_kernels.__wrapped__("numba-cuda-mlir")
    assert config.CACHE_DIR == "the user's own"
