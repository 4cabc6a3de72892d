"""cuda.cccl's consumer with its builds on disk (`adapters._cccl_builds`), on a real GPU: the
first fresh process compiles and writes the build, the next reads it instead of compiling,
reads the same values, and cuda.compute still refuses a non-contiguous array first in a fresh
process (the factory reads its CAI as before)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gpu

_PROCESS = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    from caiconform.adapters import _cccl_builds, registry
    from caiconform.spec.layout import Layout

    cccl, ref = registry.get("cuda.cccl"), registry.get("reference")
    ok, why = cccl.available()
    if not ok:
        print(json.dumps({"skip": why}))
        sys.exit()
    seen = []
    plain = _cccl_builds.unary_identity
    _cccl_builds.unary_identity = lambda *a, **k: seen.append(plain(*a, **k)) or seen[-1]
    out = {}
    for case in sys.argv[1:]:
        if case == "strided-f4":
            layout = Layout((3, 4), strides=(32, 4), offset=0, pad=16, kind="sliced")
        else:
            layout = Layout((4, 5))
        typestr = "<" + case.split("-")[1]
        values = np.arange(np.prod(layout.shape)).reshape(layout.shape).astype(typestr)
        began = time.perf_counter()
        try:
            got = cccl.consume(ref.produce(values, layout, typestr))
            out[case] = {"equal": bool((got == values).all()), "source": seen[-1]}
        except Exception as exc:
            out[case] = {"error": f"{type(exc).__name__}: {exc}"}
        out[case]["s"] = time.perf_counter() - began
    print(json.dumps(out))
    """
)


def _fresh(cache, *cases: str) -> dict:
    env = {**os.environ, "CAICONFORM_CCCL_CACHE": str(cache)}
    proc = subprocess.run(
        [sys.executable, "-c", _PROCESS, *cases], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if "skip" in result:
        pytest.skip(result["skip"])
    return result


def test_a_second_process_reads_the_build_the_first_compiled(tmp_path):
    first = _fresh(tmp_path, "C-f4", "C-i2")
    assert first["C-f4"] == {**first["C-f4"], "equal": True, "source": "compiled"}
    assert first["C-i2"]["source"] == "compiled"
    assert len(list(tmp_path.glob("*.bin"))) == 2
    second = _fresh(tmp_path, "C-f4", "C-i2")
    assert second["C-f4"] == {**second["C-f4"], "equal": True, "source": "disk"}
    assert second["C-i2"] == {**second["C-i2"], "equal": True, "source": "disk"}
    # how much faster a read is than a compile is a measurement (docs/performance.md), not
    # asserted here: under the whole test command's load a read once took 4.7 s (2026-12-02)


def test_a_build_on_disk_does_not_hide_the_non_contiguous_refusal(tmp_path):
    _fresh(tmp_path, "C-f4")
    result = _fresh(tmp_path, "strided-f4", "C-f4")
    assert "Non-contiguous arrays are not supported" in result["strided-f4"]["error"]
    # the refused call had already placed the build from disk in this process's cache
    assert result["C-f4"] == {**result["C-f4"], "equal": True, "source": "memory"}


def test_a_runs_start_warms_the_builds_the_consumer_then_reads(tmp_path):
    """`cccl_adapter.warm` (what a run's start does in processes of its own) files each build
    under the key the consumer's own call looks up: a fresh process then reads it from disk.
    An element type cuda.compute treats as opaque is refused there, as in a cell."""
    env = {**os.environ, "CAICONFORM_CCCL_CACHE": str(tmp_path)}
    code = "import json; from caiconform.adapters import cccl_adapter as b; "
    code += "print(json.dumps(b.warm(['<f4', '<i2', '<c8'])))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    warmed = json.loads(proc.stdout.strip().splitlines()[-1])
    if "skipped" in warmed:
        pytest.skip(warmed["skipped"])
    assert warmed["<f4"] == "compiled" and warmed["<i2"] == "compiled"
    assert "Error" in warmed["<c8"]
    after = _fresh(tmp_path, "C-f4", "C-i2")
    assert after["C-f4"] == {**after["C-f4"], "equal": True, "source": "disk"}
    assert after["C-i2"] == {**after["C-i2"], "equal": True, "source": "disk"}
