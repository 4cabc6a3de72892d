"""The DLPack consumers of the adapters and the protocol probe, on a machine without a GPU.

Every adapter claiming `consume-dlpack` has its own `consume_dlpack` and a reproducer line for
it, and docs/protocols.md names it; `scripts/protocol_probe.py` runs here without crashing,
every library skipped or errored with its reason, and counts which protocol a path read (shown
with numpy arrays standing in for device memory).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from caiconform.adapters import registry
from caiconform.adapters.base import Adapter
from caiconform.report.standalone import libraries
from caiconform.report.standalone._text import array_of

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "scripts" / "protocol_probe.py"
PROTOCOLS_DOC = ROOT / "docs" / "protocols.md"

DLPACK_CONSUMERS = [
    name for name in registry.names() if "consume-dlpack" in registry.get(name).capabilities
]
#: a plain byte array, which every consumer with standalone DLPack lines reads
PLAIN = array_of({"typestr": "|u1", "shape": [4], "seed": 0})


def test_the_libraries_that_import_dlpack_claim_it():
    assert {"torch", "cupy", "jax", "numba-kernel", "cuda.core", "warp", "mpi4py"} <= set(
        DLPACK_CONSUMERS
    )
    for name in ("numba", "numba-from-cai", "cuda.cccl", "rmm", "pycuda", "pyarrow"):
        assert "consume-dlpack" not in registry.get(name).capabilities, name


@pytest.mark.parametrize("name", DLPACK_CONSUMERS)
def test_a_dlpack_consumer_has_its_own_import_and_a_reproducer_line(name):
    adapter = registry.get(name)
    assert type(adapter).consume_dlpack is not Adapter.consume_dlpack, name
    snippet = adapter.repro_consume_dlpack()
    assert "result" in snippet and "__cuda_array_interface__" not in snippet, snippet


@pytest.mark.parametrize("name", DLPACK_CONSUMERS)
def test_docs_protocols_names_every_dlpack_consumer(name):
    assert f"| {name} |" in PROTOCOLS_DOC.read_text(encoding="utf-8"), name


@pytest.mark.parametrize("name", registry.names())
def test_the_standalone_dlpack_lines_set_result_without_the_cai(name):
    snip = libraries.consume_dlpack(name, PLAIN)
    if snip is None:
        return
    assert "result =" in snip.code
    assert "__cuda_array_interface__" not in snip.code
    assert "consume-dlpack" in registry.get(name).capabilities


def test_the_probe_runs_without_a_gpu_and_says_why_each_library_did_not_run(tmp_path):
    from caiconform.cuda import gpu_available

    if gpu_available()[0]:
        pytest.skip("a GPU is here: the probe runs for real (minutes), by hand: scripts/README.md")
    out = tmp_path / "protocols.json"
    done = subprocess.run(
        [sys.executable, str(PROBE), "--out", str(out), "--timeout", "60"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(out.read_text())
    records = {r["library"]: r for r in document["libraries"]}
    assert set(records) == set(_probe().PATHS)
    for name, record in records.items():
        assert record["status"] in ("skipped", "error"), (name, record)
        assert record["reason"], name
    assert document["markdown"] in done.stdout
    assert "| library |" in done.stdout


class _HostArray:
    """Host memory exposing both protocols, as a device array would (numpy's own DLPack)."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values

    @property
    def __cuda_array_interface__(self) -> dict:
        v = self.values
        return {"shape": v.shape, "typestr": v.dtype.str, "data": (v.ctypes.data, False),
                "strides": None, "version": 3}  # fmt: skip

    def __dlpack__(self, **kwargs):
        kwargs.pop("stream", None)
        return self.values.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.values.__dlpack_device__()


def _read_cai(obj) -> np.ndarray:
    class View:
        __array_interface__ = obj.__cuda_array_interface__

    return np.array(View())


def _probe():
    spec = importlib.util.spec_from_file_location("protocol_probe", PROBE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_probe_tells_which_protocol_each_path_read(monkeypatch):
    probe = _probe()

    class Source:
        name = "host"

        def __init__(self) -> None:
            self.array = _HostArray(probe.VALUES.copy())

        both = probe.Source.both

    def both(o, s):
        _read_cai(o)
        return np.from_dlpack(o)

    def fails(o, s):
        raise BufferError("refused")

    paths = {
        "reads the CAI": lambda o, s: _read_cai(o),
        "reads DLPack": lambda o, s: np.from_dlpack(o, copy=True),
        "reads both": both,
        "reads wrong": lambda o, s: _read_cai(o)[::-1],
        "fails": fails,
    }
    monkeypatch.setattr(probe, "Source", Source)
    monkeypatch.setitem(probe.PATHS, "host", ("numpy", lambda: paths))
    record = probe.probe_library("host")
    got = {e["path"]: e for e in record["paths"]}
    assert record["status"] == "ran"
    assert got["reads the CAI"]["protocol"] == "cai" and got["reads the CAI"]["values"] == "right"
    assert got["reads DLPack"]["protocol"] == "dlpack"
    assert got["reads DLPack"]["dlpack_calls"][0]["copy"] is True
    assert got["reads both"]["protocol"] == "both"
    assert got["reads wrong"]["values"].startswith("wrong")
    assert got["fails"]["protocol"] == "neither"
    assert got["fails"]["error"] == "BufferError: refused"
    table = probe.markdown([record])
    assert "`reads DLPack` | **dlpack** | 0 | 1 (" in table
