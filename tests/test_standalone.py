"""Standalone reproducers (`caiconform.report.standalone`): a script per catalogue group that
imports nothing of caiconform and prints one BUG:/OK: line.

Without a GPU the scripts are judged three ways: every group at or above refuses-valid of the
committed run (reports/latest) and of a synthetic set covering every family gets a script that
parses and imports no caiconform module (read with `ast`), or None where NOT_COVERED says why;
the harness's own groups (the PyCUDA 0-d upload, the JAX unversioned capsule) get none; and a
few scripts run in a fresh interpreter with caiconform blocked, over a stand-in
`cuda.bindings.driver` whose "device memory" is host memory and a stand-in `cupy` that reads
a dict as C-contiguous whatever its strides: a strided export read through it prints BUG and
exits 1, a C-contiguous one OK and 0, a consumer dying by a signal is a BUG of the crash
script.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from caiconform.report.standalone import FAMILIES, NO_CULPRIT, script_for_group, why_none
from caiconform.report.standalone.__main__ import main as write_folder

ROOT = Path(__file__).resolve().parents[1]
LATEST = ROOT / "reports" / "latest" / "findings.json"
AT_OR_ABOVE = ("corrupts", "crashes", "refuses-valid")

#: run as `python -c BOOT SCRIPT`: the script runs with caiconform unimportable
BOOT = """
import runpy, sys
class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name == "caiconform" or name.startswith("caiconform."):
            raise ModuleNotFoundError("caiconform is blocked: " + name, name=name)
sys.meta_path.insert(0, Blocked())
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""

FAKE_DRIVER = """
import ctypes, enum, itertools

class CUresult(enum.Enum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1

class CUstream_flags(enum.Enum):
    CU_STREAM_NON_BLOCKING = 1

class CUstream:
    def __init__(self, handle=0):
        self.handle = int(handle)
    def __int__(self):
        return self.handle

OK = CUresult.CUDA_SUCCESS
_allocations, _streams = {}, itertools.count(16)

def cuInit(flags): return (OK,)
def cuDeviceGet(ordinal): return (OK, 0)
def cuDevicePrimaryCtxRetain(device): return (OK, 1)
def cuCtxSetCurrent(context): return (OK,)
def cuCtxSynchronize(): return (OK,)
def cuStreamCreate(flags): return (OK, CUstream(next(_streams)))
def cuStreamSynchronize(stream): return (OK,)

def cuMemAlloc(nbytes):
    buffer = ctypes.create_string_buffer(int(nbytes))
    _allocations[ctypes.addressof(buffer)] = buffer
    return (OK, ctypes.addressof(buffer))

def _copy(dst, src, nbytes, stream=None):
    ctypes.memmove(int(dst), int(src), int(nbytes))
    return (OK,)

cuMemcpyHtoD = cuMemcpyDtoHAsync = cuMemcpyDtoDAsync = _copy

def cuMemsetD8(dst, value, count):
    ctypes.memset(int(dst), int(value), int(count))
    return (OK,)
"""

#: reads a dict's bytes as if C-contiguous, whatever its strides (a consumer that misreads)
FAKE_CUPY = """
import ctypes
import numpy as np

def asarray(obj):
    d = obj.__cuda_array_interface__
    dtype, count = np.dtype(d["typestr"]), int(np.prod(d["shape"]))
    raw = (ctypes.c_uint8 * (count * dtype.itemsize)).from_address(d["data"][0])
    return np.frombuffer(bytes(raw), dtype).reshape(d["shape"])

def asnumpy(array):
    return np.asarray(array)
"""


def group(cell: str, params: dict, **fields) -> dict:
    """A findings.json group of one example."""
    out = {
        "library": cell.split("/")[2] if cell.split("/")[2] != "-" else cell.split("/")[1],
        "role": "consumer",
        "rule": "CAI-CONSUMER-READS-DESCRIBED",
        "input_rule": None,
        "level": "MUST",
        "outcome": "fail",
        "severity": "corrupts",
        "count": 1,
        "cells": [cell],
        "message": "synthetic",
        "version": "0.0",
        "reproducer": {"cell": cell, "params": params, "run_id": "synthetic"},
    }
    out.update(fields)
    return out


def layout(shape, strides=None, offset=0, kind="C"):
    return {"shape": shape, "strides": strides, "offset": offset, "pad": 0, "kind": kind}


#: one or more groups of every family, each a kind of defect the generator writes a script for
SYNTHETIC = {
    "roundtrip-misread": group(
        "roundtrip/reference/cuda.cccl",
        {"seed": 0, "typestr": "<f4", "layout": layout([2], [8], 8, "sliced")},
    ),
    "roundtrip-crash": group(
        "roundtrip/reference/torch",
        {"seed": 3, "typestr": "|b1", "layout": layout([3], [-1], 2, "negative")},
        outcome="crash",
        severity="crashes",
    ),
    "roundtrip-kernel-sliced-8": group(
        "roundtrip/cupy/numba-kernel",
        {"seed": 0, "typestr": "<f4", "layout": layout([3, 4], [128, 32], 0, "sliced")},
    ),
    "roundtrip-library-producer": group(
        "roundtrip/cupy/jax", {"seed": 0, "typestr": "<i4", "layout": layout([3, 4])}
    ),
    "zero_size": group(
        "zero_size/rmm/cuda.core",
        {"typestr": "|u1", "layout": layout([0])},
        outcome="rejected-valid",
        severity="refuses-valid",
    ),
    "versions": group(
        "versions/-/cuda.core",
        {
            "version": 0,
            "unknown_version": None,
            "extra_key": None,
            "typestr": "|b1",
            "shape": [1],
            "seed": 0,
        },
        rule="CAI-VERSION-KNOWN",
        outcome="rejected-valid",
        severity="refuses-valid",
    ),
    "mask": group(
        "mask/-/torch",
        {"mask": "random", "version": 3, "typestr": "|b1", "shape": [1], "seed": 0},
        rule="CAI-MASK-TRUTH",
    ),
    "mask-numba": group(
        "mask/-/numba-kernel",
        {"mask": "random", "version": 2, "typestr": "<f4", "shape": [4, 3], "seed": 0},
        rule="CAI-MASK-NUMBA-NOTIMPLEMENTED",
    ),
    "readonly": group(
        "readonly/-/cupy",
        {"typestr": "|b1", "shape": [1], "seed": 0},
        rule="CAI-DATA-READONLY-HONOURED",
    ),
    "lifetime": group(
        "lifetime/-/jax", {"typestr": "|b1", "shape": [1], "seed": 0}, rule="CAI-LIFETIME-DATA-HELD"
    ),
    "streams-consumer": group(
        "streams/cupy/torch",
        {"stream_scenario": "external", "delay_us": 0, "typestr": "<u8", "shape": [2], "seed": 1},
        rule="CAI-SYNC-CONSUMER",
    ),
    "streams-stream-zero": group(
        "streams/numba/cuda.cccl",
        {
            "stream_scenario": "library-default",
            "delay_us": 0,
            "typestr": "|b1",
            "shape": [3],
            "seed": 0,
        },
        role="producer",
        library="numba",
        rule="CAI-STREAM-ZERO-FORBIDDEN",
    ),
    "streams-v2-pending": group(
        "streams/torch/jax",
        {"stream_scenario": "legacy", "delay_us": 0, "typestr": "|b1", "shape": [2], "seed": 0},
        role="producer",
        library="torch",
        rule="CAI-PORT-V2-PENDING",
    ),
    "streams-numba-export": group(
        "streams/numba/reference",
        {
            "stream_scenario": "numba-export",
            "delay_us": 0,
            "typestr": "<f4",
            "shape": [4],
            "seed": 0,
        },
        role="producer",
        library="numba",
        rule="CAI-STREAM-ZERO-FORBIDDEN",
    ),
    "adversarial-object-fields": group(
        "adversarial/-/cupy",
        {
            "kind": "live",
            "mutation": "object-fields",
            "typestr": "<f4",
            "layout": layout([3]),
            "seed": 0,
        },
        rule="CAI-DESCR-OBJECT-REFUSED",
    ),
    "agreement": group(
        "agreement/cupy/-",
        {"typestr": "<i4", "layout": layout([3, 4], [21, 5], 0, "odd"), "seed": 0},
        role="producer",
        library="cupy",
        rule="CAI-DLPACK-AGREE",
    ),
    "schema-attribute": group(
        "schema/torch/-",
        {"typestr": "float8_e5m2", "layout": layout([3, 4]), "seed": 0, "stream_scenario": "none"},
        role="producer",
        library="torch",
        rule="CAI-ATTR-RAISES-ATTRIBUTEERROR",
    ),
    "schema-unexportable": group(
        "schema/torch/-",
        {
            "typestr": "<f4",
            "layout": layout([3, 4]),
            "seed": 0,
            "stream_scenario": "none",
            "unexportable": "requires-grad",
            "export_setting": None,
        },
        role="producer",
        library="torch",
        rule="CAI-ATTR-RAISES-ATTRIBUTEERROR",
    ),
    "schema-export-setting": group(
        "schema/cupy/-",
        {
            "typestr": "<f4",
            "layout": layout([3, 4]),
            "seed": 0,
            "stream_scenario": "none",
            "unexportable": None,
            "export_setting": "CUPY_CUDA_ARRAY_INTERFACE_EXPORT_VERSION=2",
        },
        role="producer",
        library="cupy",
        rule="CAI-V2-STREAM-UNDEFINED",
    ),
    "schema-extent": group(
        "schema/numba/-",
        {
            "typestr": "|b1",
            "layout": layout([2], [0], 0, "broadcast"),
            "seed": 0,
            "stream_scenario": "none",
        },
        role="producer",
        library="numba",
        rule="CAI-DATA-EXTENT-IN-ALLOCATION",
    ),
    "adversarial-mutant-crash": group(
        "adversarial/-/cupy",
        {
            "kind": "mutant",
            "rule": "CAI-DESCR-GRAMMAR",
            "interface": {
                "$dict": [
                    ["shape", {"$tuple": [1, 4, 1]}],
                    ["typestr", "<f8"],
                    ["data", {"$tuple": [733696, True]}],
                    ["version", 3],
                    ["strides", {"$tuple": [0, 8, 0]}],
                    ["descr", []],
                    ["stream", 345],
                    [
                        "mask",
                        {
                            "$cai": {
                                "$dict": [
                                    ["shape", {"$tuple": [4]}],
                                    ["typestr", "|b1"],
                                    ["data", {"$tuple": [4096, False]}],
                                    ["version", 3],
                                ]
                            }
                        },
                    ],
                ]
            },
        },
        rule=None,
        input_rule="CAI-DESCR-GRAMMAR",
        outcome="crash",
        severity="crashes",
    ),
    "adversarial-live-poisoned": group(
        "adversarial/-/pycuda",
        {
            "kind": "live",
            "mutation": "extent-past-allocation",
            "typestr": "<c8",
            "layout": layout([1, 4]),
            "seed": 0,
        },
        rule="CAI-DATA-EXTENT-IN-ALLOCATION",
        outcome="poisoned",
        severity="crashes",
    ),
    "adversarial-live-refused": group(
        "adversarial/-/numba-kernel",
        {
            "kind": "live",
            "mutation": "negative-strides",
            "typestr": "|b1",
            "layout": layout([1], [-1], 0, "negative"),
            "seed": 0,
        },
        outcome="rejected-valid",
        severity="refuses-valid",
    ),
    "adversarial-live-stream": group(
        "adversarial/-/numba",
        {
            "kind": "live",
            "mutation": "stream-bogus",
            "typestr": "|b1",
            "layout": layout([1]),
            "seed": 0,
        },
        rule=None,
        input_rule="CAI-STREAM-LIVE",
        outcome="crash",
        severity="crashes",
    ),
    "dlpack_roundtrip-refused": group(
        "dlpack_roundtrip/reference/jax",
        {"typestr": "<i2", "layout": layout([3], [6], 4, "sliced"), "seed": 0},
        rule="DLPACK-CONSUMER-READS-DESCRIBED",
        outcome="rejected-valid",
        severity="refuses-valid",
    ),
    "dlpack_roundtrip-producer": group(
        "dlpack_roundtrip/cupy/torch",
        {"typestr": "<f4", "layout": layout([3, 4], [21, 5], 0, "odd"), "seed": 0},
        role="producer",
        library="cupy",
        rule="DLPACK-PRODUCER-DESCRIBES-DATA",
    ),
    "dlpack_roundtrip-crash": group(
        "dlpack_roundtrip/cupy/torch",
        {"typestr": "|b1", "layout": layout([2], [-1], 1, "negative"), "seed": 26095},
        outcome="crash",
        severity="crashes",
    ),
    "dlpack_copy-flag": group(
        "dlpack_copy/torch/-",
        {"case": "copy-true", "typestr": "|u1", "shape": [2], "seed": 0},
        role="producer",
        library="torch",
        rule="DLPACK-COPY-FLAG",
        severity="refuses-valid",
    ),
    "dlpack_copy-buffererror": group(
        "dlpack_copy/cupy/-",
        {"case": "device-cpu-no-copy", "typestr": "|b1", "shape": [1], "seed": 0},
        role="producer",
        library="cupy",
        rule="DLPACK-COPY-FALSE-CPU-BUFFERERROR",
        severity="refuses-valid",
    ),
    "dlpack_versions": group(
        "dlpack_versions/cupy/-",
        {
            "max_version": [1, 1],
            "typestr": "<f4",
            "layout": layout([4], [-4], 12, "negative"),
            "seed": 0,
        },
        role="producer",
        library="cupy",
        rule="DLPACK-STRIDES-ELEMENTS",
        severity="refuses-valid",
    ),
    "dlpack_lifetime-rename": group(
        "dlpack_lifetime/reference/numba-kernel",
        {"typestr": "|b1", "shape": [1], "seed": 0},
        rule="DLPACK-CONSUMER-RENAME",
        severity="refuses-valid",
    ),
    "dlpack_lifetime-held": group(
        "dlpack_lifetime/reference/torch",
        {"typestr": "<f8", "shape": [2, 3], "seed": 0},
        rule="DLPACK-CONSUMER-CALLS-DELETER",
        severity="refuses-valid",
    ),
    "dlpack_lifetime-refused": group(
        "dlpack_lifetime/jax/cuda.core",
        {"typestr": "float8_e5m2", "shape": [4, 3], "seed": 0},
        rule="DLPACK-CONSUMER-READS-DESCRIBED",
        outcome="rejected-valid",
        severity="refuses-valid",
    ),
    "dlpack_adversarial-deleter": group(
        "dlpack_adversarial/-/cuda.core",
        {"kind": "ndim-huge"},
        rule="DLPACK-CONSUMER-CALLS-DELETER",
        severity="refuses-valid",
    ),
    "dlpack_adversarial-crash": group(
        "dlpack_adversarial/-/cuda.core",
        {"kind": "used-capsule"},
        outcome="crash",
        severity="crashes",
    ),
    "dlpack_adversarial-null-deleter": group(
        "dlpack_adversarial/-/numba-mlir-kernel",
        {"kind": "null-deleter"},
        rule="DLPACK-DELETER-NULL",
        outcome="rejected-valid",
        severity="refuses-valid",
    ),
    "dlpack_streams": group(
        "dlpack_streams/torch/-",
        {"stream": 2, "scenario": "none", "typestr": "<f8", "shape": [1], "seed": 0},
        role="producer",
        library="torch",
        rule="DLPACK-STREAM-OPTIONAL",
        outcome="rejected-valid",
        severity="refuses-valid",
    ),
    "dlpack_capi": group(
        "dlpack_capi/torch/-",
        {"scenario": "none", "typestr": "<f4", "layout": layout([2, 3], None, 0, "C"), "seed": 0},
        role="producer",
        library="torch",
        rule="DLPACK-CAPI-SAME-TENSOR",
    ),
    "dlpack_consumer": group(
        "dlpack_consumer/-/torch",
        {"case": "stream", "scenario": "pending", "typestr": "<f4", "shape": [64], "seed": 0},
        rule="DLPACK-STREAM-PRODUCER-SYNC",
    ),
    "dlpack_consumer-release": group(
        "dlpack_consumer/-/torch",
        {"case": "release", "scenario": "none", "typestr": "<f4", "shape": [2, 3], "seed": 0},
        rule="DLPACK-CONSUMER-READS-DESCRIBED",
    ),
    "dlpack_consumer-copy": group(
        "dlpack_consumer/-/cupy",
        {"case": "copy", "scenario": "none-own", "typestr": "<f4", "shape": [2, 3], "seed": 0},
        rule="DLPACK-FROM-DEVICE",
        outcome="rejected-valid",
        severity="refuses-valid",
    ),
}


def caiconform_imports(source: str) -> list[str]:
    """The caiconform modules a script imports (import and from-import statements)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "caiconform"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "caiconform":
            found.append(node.module)
    return found


def child_code(script: str) -> str | None:
    """The source a crash script runs in its child (its CHILD literal), if it has one."""
    for node in ast.walk(ast.parse(script)):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "CHILD":
            return ast.literal_eval(node.value)
    return None


def check_script(text: str) -> None:
    """A script that parses, imports no caiconform (its child neither) and can say BUG and OK."""
    assert caiconform_imports(text) == [], "a standalone reproducer imports caiconform"
    child = child_code(text)
    if child is not None:
        assert caiconform_imports(child) == [], "a crash reproducer's child imports caiconform"
    assert "BUG: " in text and "OK: " in text


@pytest.mark.skipif(
    not LATEST.is_file(),
    reason="reports/latest/findings.json is not in this copy of the tree (the published run; "
    "the synthetic groups below cover every family without it)",
)
def test_every_latest_group_at_or_above_refuses_valid_has_a_standalone_script() -> None:
    groups = [g for g in json.loads(LATEST.read_text())["groups"] if g["severity"] in AT_OR_ABOVE]
    assert groups, "reports/latest has no group at or above refuses-valid"
    missing = []
    for g in groups:
        text = script_for_group(g)
        if text is None:
            missing.append((g["library"], g["role"], g["rule"], why_none(g)))
            continue
        check_script(text)
    # only the harness's own groups, and those of no single library, are left without a script
    allowed = ("caiconform's own defect, not the library's", NO_CULPRIT)
    assert all(reason in allowed for *_, reason in missing), missing
    assert len(missing) <= len(groups) // 10, f"{len(missing)} of {len(groups)} without a script"


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_synthetic_group_of_every_family_gets_a_script_without_caiconform(name: str) -> None:
    text = script_for_group(SYNTHETIC[name])
    assert text is not None, f"no script for the synthetic {name} group"
    check_script(text)
    assert SYNTHETIC[name]["reproducer"]["cell"] in text  # the header says what the run saw


@pytest.mark.parametrize("consumer", ["numba-kernel", "numba-mlir-kernel"])
def test_a_kernel_consumers_script_hands_the_kernel_the_object_by_its_cai_alone(consumer) -> None:
    """The numba-kernel consumers are judged on the CAI (`_staging.CAIOnly`); numba-cuda types
    an argument with `__dlpack__` by DLPack first, so a script passing a CuPy array itself
    would test the other protocol."""
    g = dict(SYNTHETIC["roundtrip-kernel-sliced-8"], library=consumer)
    g["cells"] = [f"roundtrip/cupy/{consumer}"]
    g["reproducer"] = {**g["reproducer"], "cell": g["cells"][0]}
    text = script_for_group(g)
    assert text is not None
    check_script(text)
    from caiconform.adapters.numba_adapter import _REPRO_CAI_ONLY

    assert _REPRO_CAI_ONLY in text and "](CAIOnly(obj), dst)" in text
    assert "](obj, dst)" not in text
    namespace: dict = {}
    exec(_REPRO_CAI_ONLY, namespace)
    both = type("Both", (), {"__cuda_array_interface__": {"k": 1}, "__dlpack__": None})()
    wrapped = namespace["CAIOnly"](both)
    assert wrapped.__cuda_array_interface__ == {"k": 1} and not hasattr(wrapped, "__dlpack__")


def test_the_synthetic_set_covers_every_family() -> None:
    families = {g["reproducer"]["cell"].split("/")[0] for g in SYNTHETIC.values()}
    assert set(FAMILIES) <= families


@pytest.mark.parametrize(
    "g",
    [
        group(
            "roundtrip/pycuda/cuda.cccl",
            {"typestr": "|b1", "layout": layout([], [], 0, "F"), "seed": 0},
            role="producer",
            library="pycuda",
            rule="CAI-PRODUCER-DESCRIBES-DATA",
        ),
        group(
            "agreement/jax/-",
            {"typestr": "|i1", "layout": layout([], [], 0, "F"), "seed": 0},
            role="producer",
            library="jax",
            rule="CAI-DLPACK-AGREE",
        ),
    ],
    ids=["pycuda-0d-upload", "jax-unversioned-capsule"],
)
def test_the_harness_own_groups_get_no_script(g: dict) -> None:
    assert script_for_group(g) is None
    assert why_none(g) == "caiconform's own defect, not the library's"


def test_a_group_without_an_example_or_of_an_unknown_family_gets_none() -> None:
    assert script_for_group({"library": "cupy", "reproducer": None}) is None
    assert script_for_group(group("devices/-/cupy", {"typestr": "<f4"})) is None
    bad = group("versions/-/cupy", {"version": 3})  # no typestr: params of another shape
    assert script_for_group(bad) is None


@pytest.fixture(scope="module")
def fakes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the stand-in cuda.bindings.driver and cupy."""
    root = tmp_path_factory.mktemp("fakes")
    (root / "cuda" / "bindings").mkdir(parents=True)
    (root / "cuda" / "__init__.py").write_text("")
    (root / "cuda" / "bindings" / "__init__.py").write_text("")
    (root / "cuda" / "bindings" / "driver.py").write_text(FAKE_DRIVER)
    (root / "cupy.py").write_text(FAKE_CUPY)
    return root


def run_script(text: str, fakes: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    script = tmp_path / "repro.py"
    script.write_text(text)
    env = {"PYTHONPATH": str(fakes), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-c", BOOT, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def last_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stdout.strip().splitlines()
    return lines[-1] if lines else proc.stderr


def test_a_consumer_that_misreads_a_strided_export_prints_bug(fakes: Path, tmp_path: Path) -> None:
    g = group(
        "roundtrip/reference/cupy",
        {"seed": 0, "typestr": "<f4", "layout": layout([2], [8], 8, "sliced")},
    )
    proc = run_script(script_for_group(g), fakes, tmp_path)
    line = last_line(proc)
    assert proc.returncode == 1 and line.startswith("BUG: cupy read"), (proc.stdout, proc.stderr)
    assert "[CAI-CONSUMER-READS-DESCRIBED]" in line and "1 of 2 elements differ" in line


def test_the_same_consumer_reading_a_c_contiguous_export_prints_ok(
    fakes: Path, tmp_path: Path
) -> None:
    g = group("roundtrip/reference/cupy", {"seed": 0, "typestr": ">i4", "layout": layout([3, 4])})
    proc = run_script(script_for_group(g), fakes, tmp_path)
    assert proc.returncode == 0 and last_line(proc).startswith("OK: cupy read the values"), (
        proc.stdout,
        proc.stderr,
    )


def test_a_refusal_of_a_valid_export_prints_bug_naming_the_exception(
    fakes: Path, tmp_path: Path
) -> None:
    # an unknown key is legal: the stand-in reads it; made to refuse, the script says BUG
    g = group(
        "versions/-/cupy",
        {
            "version": 3,
            "unknown_version": None,
            "extra_key": "owner",
            "typestr": "|b1",
            "shape": [2],
            "seed": 0,
        },
        rule="CAI-KEYS-UNKNOWN",
        outcome="rejected-valid",
        severity="refuses-valid",
    )
    text = script_for_group(g)
    proc = run_script(text, fakes, tmp_path)
    assert proc.returncode == 0 and last_line(proc).startswith("OK: cupy read"), proc.stdout
    broken = text.replace("def read(obj):", "def read(obj):\n    raise TypeError('refused')", 1)
    proc = run_script(broken, fakes, tmp_path)
    line = last_line(proc)
    assert proc.returncode == 1 and line.startswith("BUG: cupy refused a valid export"), line
    assert "TypeError: refused" in line and "[CAI-KEYS-UNKNOWN]" in line


def test_a_crash_runs_in_a_child_and_a_death_by_signal_is_the_bug(
    fakes: Path, tmp_path: Path
) -> None:
    g = group(
        "adversarial/-/cupy",
        {
            "kind": "mutant",
            "rule": "CAI-DATA-NONZERO-SIZE-NONNULL",
            "interface": {
                "$dict": [
                    ["shape", {"$tuple": [4]}],
                    ["typestr", "|b1"],
                    ["data", {"$tuple": [0, False]}],
                    ["version", 3],
                    ["strides", {"$tuple": [0]}],
                ]
            },
        },
        rule=None,
        input_rule="CAI-DATA-NONZERO-SIZE-NONNULL",
        outcome="crash",
        severity="crashes",
    )
    proc = run_script(script_for_group(g), fakes, tmp_path)
    line = last_line(proc)
    assert proc.returncode == 1 and "killed the process with SIGSEGV" in line, (line, proc.stderr)
    assert "[CAI-DATA-NONZERO-SIZE-NONNULL]" in line


def test_the_folder_writer_lists_every_group_and_refuses_an_unreadable_file(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    assert write_folder([str(tmp_path / "missing.json"), str(tmp_path / "out")]) == 2
    findings = tmp_path / "findings.json"
    findings.write_text(json.dumps({"groups": list(SYNTHETIC.values())}))
    assert write_folder([str(findings), str(tmp_path / "out")]) == 0
    rows = (tmp_path / "out" / "manifest.tsv").read_text().splitlines()
    assert len(rows) == 1 + len(SYNTHETIC)
    scripts = sorted((tmp_path / "out").glob("*.py"))
    assert len(scripts) == len(SYNTHETIC)
    assert f"{len(SYNTHETIC)} scripts for {len(SYNTHETIC)} groups" in capsys.readouterr().out


def test_a_dlpack_consumer_script_hands_a_versioned_capsule_only_to_who_asks_for_one() -> None:
    """The stream case's capsules, the warm-up's included, are versioned only when the
    consumer's `__dlpack__` call passes a max_version of 1 or more (DLPack's Python
    specification): the warm-up's had been versioned always, and numba-cuda-mlir's kernel
    launcher failed the script's first call (SystemError) where the run's worker had read."""
    text = script_for_group(SYNTHETIC["dlpack_consumer"])
    tree = ast.parse(text)
    (versioned,) = [
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "versioned"
    ]
    scope: dict = {}
    exec(compile(ast.Module([versioned], []), "<script>", "exec"), scope)
    assert scope["versioned"]({}) is None
    assert scope["versioned"]({"max_version": None}) is None
    assert scope["versioned"]({"max_version": (1, 0)}) == (1, 1)
    calls = [
        n for n in ast.walk(tree)
        if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "make_capsule"
    ]  # fmt: skip
    assert len(calls) == 2
    assert all(any(k.arg == "version" for k in call.keywords) for call in calls)
