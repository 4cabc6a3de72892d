"""Ask each installed library, on the GPU machine, what it exports and accepts for the cases the
coverage floor needs: exotic dtypes (bfloat16, float8), bool and complex, and arrays bound to the
library's own default / per-thread / side / non-blocking streams. Prints one JSON line per probe
(library, case, dict or exception); what it prints is evidence for the adapters' tables, not a test.

Usage on the device: python3 scripts/probe_exports.py > probe.jsonl
"""

from __future__ import annotations

import json
import traceback


def emit(library: str, case: str, **fields) -> None:
    print(json.dumps({"library": library, "case": case, **fields}, default=repr), flush=True)


def attempt(library: str, case: str, fn) -> None:
    try:
        emit(library, case, ok=True, result=fn())
    except BaseException as exc:  # noqa: BLE001 - any failure is the evidence
        tb = traceback.format_exc().strip().splitlines()[-3:]
        emit(library, case, ok=False, error=f"{type(exc).__name__}: {exc}", tail=tb)


class Holder:
    def __init__(self, d):
        self.__cuda_array_interface__ = d


def torch_probes() -> None:
    import torch

    for name in (
        "bfloat16",
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "bool",
        "complex64",
        "complex32",
        "uint16",
        "uint32",
    ):
        dt = getattr(torch, name, None)
        if dt is None:
            emit("torch", f"export-{name}", ok=False, error="no such dtype")
            continue
        attempt(
            "torch",
            f"export-{name}",
            lambda dt=dt: torch.zeros(4, dtype=dt, device="cuda").__cuda_array_interface__,
        )
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        t = torch.ones(4, device="cuda")
        attempt("torch", "export-under-side-stream", lambda: t.__cuda_array_interface__)
    src = torch.zeros(2, device="cuda", dtype=torch.bfloat16)
    d = dict(src.__cuda_array_interface__) if False else None
    ptr = src.data_ptr()
    for ts, descr in (("<V2", None), ("|V2", None), ("<V2", [("", "<V2")]), ("<f2", None)):
        dd = {
            "shape": (2,),
            "typestr": ts,
            "data": (ptr, False),
            "version": 3,
            "strides": None,
            "stream": None,
        }
        if descr:
            dd["descr"] = descr
        attempt(
            "torch",
            f"import-{ts}-{bool(descr)}",
            lambda dd=dd: str(torch.as_tensor(Holder(dd), device="cuda").dtype),
        )
    del d


def jax_probes() -> None:
    import jax
    import jax.numpy as jnp

    for name in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "bool_", "complex64", "float16"):
        dt = getattr(jnp, name, None)
        if dt is None:
            emit("jax", f"export-{name}", ok=False, error="no such dtype")
            continue
        attempt(
            "jax",
            f"export-{name}",
            lambda dt=dt: jax.device_put(jnp.zeros(4, dtype=dt)).__cuda_array_interface__,
        )
    import ml_dtypes
    import numpy as np

    emit(
        "jax",
        "ml_dtypes",
        version=ml_dtypes.__version__,
        bf16_str=np.dtype(ml_dtypes.bfloat16).str,
        f8_str=np.dtype(ml_dtypes.float8_e4m3fn).str,
        bf16_descr=np.dtype(ml_dtypes.bfloat16).descr,
    )
    x = jnp.arange(1 << 20, dtype=jnp.float32)
    y = (x * 2.0 + 1.0).sum() + x  # pending computation
    attempt("jax", "export-pending", lambda: y.__cuda_array_interface__)


def cupy_probes() -> None:
    import cupy as cp

    for dt in ("?", "c8", "c16", "f2"):
        attempt(
            "cupy", f"export-{dt}", lambda dt=dt: cp.zeros(4, dtype=dt).__cuda_array_interface__
        )
    nb = cp.cuda.Stream(non_blocking=True)
    with nb:
        a = cp.ones(4)
        attempt("cupy", "export-under-nonblocking", lambda: a.__cuda_array_interface__)
    ext = cp.cuda.ExternalStream(nb.ptr)
    with ext:
        attempt("cupy", "export-under-external", lambda: a.__cuda_array_interface__)
    with cp.cuda.Stream.ptds:
        attempt("cupy", "export-under-ptds", lambda: a.__cuda_array_interface__)
    attempt("cupy", "export-default", lambda: a.__cuda_array_interface__)
    buf = cp.zeros(2, dtype="f2")
    for ts in ("<V2", "|V2"):
        dd = {
            "shape": (2,),
            "typestr": ts,
            "data": (buf.data.ptr, False),
            "version": 3,
            "strides": None,
            "stream": None,
        }
        attempt("cupy", f"import-{ts}", lambda dd=dd: str(cp.asarray(Holder(dd)).dtype))


def numba_probes() -> None:
    import numpy as np
    from numba import cuda

    for label, maker in (
        ("default", cuda.default_stream),
        ("legacy", cuda.legacy_default_stream),
        ("per-thread", cuda.per_thread_default_stream),
        ("user", cuda.stream),
    ):
        attempt(
            "numba",
            f"export-on-{label}",
            lambda maker=maker: cuda.to_device(np.ones(4), stream=maker()).__cuda_array_interface__,
        )
    for dt in ("?", "c8", "c16", "f2"):
        attempt(
            "numba",
            f"export-{dt}",
            lambda dt=dt: cuda.to_device(np.zeros(4, dtype=dt)).__cuda_array_interface__,
        )

    def kernel():
        @cuda.jit
        def add(a, b, out):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = a[i] + b[i]

        a = cuda.to_device(np.arange(4.0))
        out = cuda.device_array(4)
        add[1, 32](a, a, out)
        return out.copy_to_host().tolist()

    attempt("numba", "kernel-compile", kernel)


def main() -> None:
    import subprocess

    emit(
        "env",
        "nvcc",
        out=subprocess.run(
            [
                "bash",
                "-c",
                "nvcc --version | tail -2; "
                "python3 -m pip list 2>/dev/null | grep -i "
                "-E 'ml.dtypes|numba|cuda|warp|rmm|dali'",
            ],
            capture_output=True,
            text=True,
        ).stdout,
    )
    for probe in (torch_probes, jax_probes, cupy_probes, numba_probes):
        attempt("probe", probe.__name__, probe)


if __name__ == "__main__":
    main()
