"""The environment a run happened in, for `env.json` and the reports: Python, platform, GPU,
driver and CUDA versions, and the version of every library that matters to an exchange.

Library versions come from installed distribution metadata, never from importing the library,
so capturing the environment costs milliseconds even with torch and JAX installed. GPU facts come
from `cuda.bindings` when the driver loads and from `nvidia-smi` when it is on PATH; without a GPU
`capture()` still succeeds and says why there is none.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from importlib import metadata
from typing import Any

__all__ = ["capture", "library_versions", "gpu_info", "visible_gpus", "LIBRARIES"]

#: distributions recorded by exact name
LIBRARIES = (
    "caiconform",
    "numpy",
    "hypothesis",
    "cuda-core",
    "cuda-bindings",
    "cuda-python",
    "numba",
    "numba-cuda",
    "numba-cuda-mlir",
    "torch",
    "jax",
    "jaxlib",
    "mpi4py",
    "pyarrow",
    "warp-lang",
    "pycuda",
    "cuda-cccl",
)
#: distributions recorded by prefix (cupy-cuda13x, rmm-cu13, librmm-cu13, jax-cuda13-plugin,
#: nvidia-dali-cuda130, ...)
LIBRARY_PREFIXES = (
    "cupy",
    "rmm",
    "librmm",
    "jax-cuda",
    "nvidia-cuda-runtime",
    "nvidia-cuda-nvrtc",
    "nvidia-dali",
)

_SMI_TIMEOUT_S = 10


def _normalise(name: str) -> str:
    return name.lower().replace("_", "-")


def library_versions() -> dict[str, str | None]:
    """Version of every relevant installed distribution (None when a listed one is absent).
    Where two versions of one are on the path (a release installed ahead of the environment's
    own: `scripts/gpu_releases.sh`), the first, the one that imports."""
    versions: dict[str, str | None] = dict.fromkeys(LIBRARIES)
    for dist in metadata.distributions():
        name = _normalise(dist.metadata.get("Name") or "")
        if (name in versions or name.startswith(LIBRARY_PREFIXES)) and versions.get(name) is None:
            versions[name] = dist.version
    return dict(sorted(versions.items()))


def visible_gpus() -> list[str]:
    """IDs of the GPUs this process may use, found without initialising CUDA: the entries of
    CUDA_VISIBLE_DEVICES when it is set, else the devices the NVIDIA kernel driver lists (or
    `nvidia-smi -L` prints). An empty list means no usable GPU."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        ids = [v.strip() for v in visible.split(",") if v.strip()]
        valid = []
        for v in ids:  # CUDA ignores everything from the first invalid entry on
            if v.startswith("-"):
                break
            valid.append(v)
        return valid
    proc_dir = "/proc/driver/nvidia/gpus"
    if os.path.isdir(proc_dir):
        return [str(i) for i in range(len(os.listdir(proc_dir)))]
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run(
                [smi, "-L"], capture_output=True, text=True, timeout=_SMI_TIMEOUT_S, check=False
            ).stdout
        except (OSError, subprocess.SubprocessError):
            return []
        return [str(i) for i, _ in enumerate(ln for ln in out.splitlines() if ln.startswith("GPU"))]
    return []


def _from_bindings() -> dict[str, Any]:
    from cuda.bindings import driver

    (err,) = driver.cuInit(0)
    if err != driver.CUresult.CUDA_SUCCESS:
        return {"error": f"cuInit failed: {err.name}"}
    err, version = driver.cuDriverGetVersion()
    err, count = driver.cuDeviceGetCount()
    devices = []
    for ordinal in range(count):
        _, dev = driver.cuDeviceGet(ordinal)
        _, name = driver.cuDeviceGetName(256, dev)
        _, major = driver.cuDeviceGetAttribute(
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev
        )
        _, minor = driver.cuDeviceGetAttribute(
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev
        )
        _, total = driver.cuDeviceTotalMem(dev)
        devices.append(
            {
                "index": ordinal,
                "name": name.split(b"\0", 1)[0].decode(errors="replace"),
                "compute_capability": f"{major}.{minor}",
                "memory_total_mib": int(total) // (1 << 20),
            }
        )
    return {"cuda_driver_api": f"{version // 1000}.{version % 1000 // 10}", "devices": devices}


def _from_smi() -> dict[str, Any]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return {}
    query = "--query-gpu=index,name,driver_version,memory.total"
    out = subprocess.run(
        [smi, query, "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        timeout=_SMI_TIMEOUT_S,
        check=False,
    ).stdout
    rows = [[f.strip() for f in line.split(",")] for line in out.splitlines() if line.strip()]
    return {
        "driver_version": rows[0][2] if rows else None,
        "smi_devices": [
            {"index": int(r[0]), "name": r[1], "memory_total_mib": int(float(r[3]))}
            for r in rows
            if len(r) == 4
        ],
    }


def gpu_info() -> dict[str, Any]:
    """What the driver says about the GPUs: `available`, `reason` when not, `devices`, the
    CUDA driver API version and (from nvidia-smi) the driver version. Never raises."""
    info: dict[str, Any] = {"available": False, "reason": "", "devices": []}
    errors = []
    try:
        info.update(_from_bindings())
    except Exception as exc:  # no driver, no cuda-bindings, an old driver: all mean "no GPU"
        errors.append(f"cuda.bindings: {type(exc).__name__}: {exc}")
    if "error" in info:
        errors.append(info.pop("error"))
    try:
        smi = _from_smi()
    except Exception as exc:
        errors.append(f"nvidia-smi: {type(exc).__name__}: {exc}")
        smi = {}
    info["driver_version"] = smi.get("driver_version")
    if not info["devices"] and smi.get("smi_devices"):
        info["devices"] = smi["smi_devices"]
    info["available"] = bool(info["devices"])
    if not info["available"]:
        errors.append("nvidia-smi not found" if not shutil.which("nvidia-smi") else "")
        info["reason"] = "; ".join(e for e in errors if e) or "no GPU found"
    return info


def capture() -> dict[str, Any]:
    """The whole environment record (`env.json`), JSON-able."""
    return {
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "platform": {
            "system": platform.system(),
            "release": platform.release(),
            "machine": platform.machine(),
            "libc": " ".join(platform.libc_ver()).strip() or None,
        },
        "cpu_count": os.cpu_count(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "gpu": gpu_info(),
        "libraries": library_versions(),
    }
