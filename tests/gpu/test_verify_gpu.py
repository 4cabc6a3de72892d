"""GPU tests of how `caiconform findings --verify` runs a standalone reproducer
(`caiconform.report.verify`): in a fresh `python -I` process with caiconform blocked, CUDA works
(a device round trip through cuda-bindings says OK), and every library this process can import
is importable there too (the GPU machine installs some with `pip --target` onto PYTHONPATH,
which `-I` ignores), so no defect is left unconfirmed for want of a library that is installed.
Everything here skips without a GPU.
"""

from __future__ import annotations

import importlib.util

import pytest

from caiconform.cuda import gpu_available
from caiconform.report import verify

HAVE_GPU, NO_GPU_REASON = gpu_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason=NO_GPU_REASON)]

#: a standalone script as the generator writes them: numpy and cuda-bindings, one OK/BUG line
ROUND_TRIP = """
import sys

import numpy as np
from cuda.bindings import driver as cu


def ck(result):
    err, *rest = result if isinstance(result, tuple) else (result,)
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA driver error {err.name}")
    return rest[0] if len(rest) == 1 else rest


ck(cu.cuInit(0))
ck(cu.cuCtxSetCurrent(ck(cu.cuDevicePrimaryCtxRetain(ck(cu.cuDeviceGet(0))))))
values = np.arange(64, dtype=np.float32)
ptr = int(ck(cu.cuMemAlloc(values.nbytes)))
ck(cu.cuMemcpyHtoD(ptr, values.ctypes.data, values.nbytes))
back = np.zeros_like(values)
ck(cu.cuMemcpyDtoH(back.ctypes.data, ptr, values.nbytes))
ck(cu.cuMemFree(ptr))
if np.array_equal(back, values):
    print("OK: 64 float32 values made the device round trip")
    sys.exit(0)
print("BUG: the device round trip changed the values")
sys.exit(1)
"""

#: the modules the standalone scripts of the adapters import
LIBRARIES = (
    "numpy",
    "cuda.bindings",
    "cuda.core",
    "cupy",
    "torch",
    "jax",
    "numba.cuda",
    "cuda.compute",
    "pycuda",
    "rmm",
    "warp",
)


def test_a_standalone_script_reaches_the_gpu_without_caiconform(tmp_path):
    script = tmp_path / "round_trip.py"
    script.write_text(ROUND_TRIP)
    record = verify.run_script(script, timeout_s=120)
    assert (record["standalone"], record["result"]) == ("does not", "ok"), (
        f"got {record}, expected the OK line of a device round trip [findings --verify]"
    )
    assert record["line"] == "OK: 64 float32 values made the device round trip"


def test_every_library_importable_here_is_importable_where_scripts_run():
    here = {name for name in LIBRARIES if _findable(name)}
    missing = verify.missing_modules(here)
    assert not missing, (
        f"got {sorted(missing)} not importable under python -I, expected every library this "
        "process finds (PYTHONPATH carried) [findings --verify]"
    )


def _findable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
