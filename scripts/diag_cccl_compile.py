"""What cuda.compute's compiles cost a worker, and whether they can be paid before the fork
(issue 11: cuda.cccl cells were 42 % of the exchanges' time on an H100, the critical path).

Four measurements, each in a fresh process (cuda.compute keeps its builds per process):
1. `default`: today's consumer, `unary_transform` on the current device, one contiguous CuPy
   array per dtype, first call timed (compile + load + run), then a second call;
2. `aot-serial`: no CUDA in the process: `make_unary_transform(..., compute_capability=cc)` on
   stand-ins of the consumer's own argument types (no allocation), one dtype after another, in
   a helper thread (its wrapper cache is that thread's: the main thread's stays empty);
3. `aot-threads`: the same, one thread per dtype (does the compile release the GIL?);
4. `forked`: after 2, fork: the child makes a CUDA context and calls
   `make_unary_transform(..., compute_capability=cc)` on real arrays, first call per dtype
   timed, checks the values, and checks a non-contiguous array is still refused (the wrapper
   cache of the child's main thread is empty, so the factory reads every first array's CAI).

Usage: python scripts/diag_cccl_compile.py > cccl.txt (needs a GPU, cupy, cuda-cccl).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

DTYPES = ["|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8"]


def compute_capability() -> int:
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[0]
    major, minor = out.split(".")
    return int(major) * 10 + int(minor)


class StandIn:
    """The consumer's own argument type, describing no memory (for the cache key's type)."""

    def __init__(self, typestr: str) -> None:
        self.desc = {
            "shape": (1,),
            "typestr": typestr,
            "data": (0, False),
            "strides": None,
            "version": 3,
        }

    @property
    def __cuda_array_interface__(self) -> dict:
        return self.desc


class Real:
    """The same type's real counterpart: wraps an array's CAI."""

    def __init__(self, arr) -> None:
        self.arr = arr

    @property
    def __cuda_array_interface__(self) -> dict:
        return self.arr.__cuda_array_interface__


def aot(typestr: str, cc: int) -> float | str:
    from cuda.compute import OpKind, make_unary_transform

    began = time.perf_counter()
    try:
        make_unary_transform(
            d_in=StandIn(typestr), d_out=StandIn(typestr), op=OpKind.IDENTITY, compute_capability=cc
        )
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"
    return round(time.perf_counter() - began, 4)


def mode_default() -> dict:
    import cupy
    import numpy as np
    from cuda.compute import OpKind, unary_transform

    out = {}
    for typestr in DTYPES:
        a = cupy.arange(1000).astype(np.dtype(typestr))
        b = cupy.empty_like(a)
        times = []
        for _ in range(2):
            began = time.perf_counter()
            unary_transform(d_in=Real(a), d_out=Real(b), op=OpKind.IDENTITY, num_items=a.size)
            cupy.cuda.Device().synchronize()
            times.append(round(time.perf_counter() - began, 4))
        out[typestr] = times
    return out


def mode_aot(threads: bool) -> dict:
    import cuda.compute  # noqa: F401

    cc = compute_capability()
    result: dict[str, float] = {}
    began = time.perf_counter()
    if threads:
        workers = [
            threading.Thread(target=lambda t=t: result.__setitem__(t, aot(t, cc))) for t in DTYPES
        ]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    else:
        helper = threading.Thread(
            target=lambda: [result.__setitem__(t, aot(t, cc)) for t in DTYPES]
        )
        helper.start()
        helper.join()
    return {"cc": cc, "wall_s": round(time.perf_counter() - began, 3), "per_dtype": result}


def forked_child(cc: int) -> dict:
    import cupy
    import numpy as np
    from cuda.compute import OpKind, make_unary_transform

    out = {}
    for typestr in DTYPES:
        a = cupy.arange(1000).astype(np.dtype(typestr))
        b = cupy.zeros_like(a)
        began = time.perf_counter()
        t = make_unary_transform(
            d_in=Real(a), d_out=Real(b), op=OpKind.IDENTITY, compute_capability=cc
        )
        t(d_in=Real(a), d_out=Real(b), op=OpKind.IDENTITY, num_items=a.size)
        cupy.cuda.Device().synchronize()
        out[typestr] = {
            "first_s": round(time.perf_counter() - began, 4),
            "equal": bool((a == b).all()),
        }
    # a fresh dtype-key in this thread: the factory must read it and refuse the strided view
    a = cupy.arange(2000, dtype=np.float32)[::2]
    b = cupy.zeros(1000, dtype=np.float32)
    try:
        threading_result = {}

        def strided():
            try:
                make_unary_transform(
                    d_in=Real(a), d_out=Real(b), op=OpKind.IDENTITY, compute_capability=cc
                )
                threading_result["refused"] = None
            except ValueError as exc:
                threading_result["refused"] = str(exc)

        th = threading.Thread(target=strided)
        th.start()
        th.join()
        out["strided_new_thread"] = threading_result
    except Exception as exc:  # noqa: BLE001
        out["strided_new_thread"] = repr(exc)
    # and in the main thread after a contiguous f4 (cuda.compute's own wrapper cache)
    try:
        make_unary_transform(d_in=Real(a), d_out=Real(b), op=OpKind.IDENTITY, compute_capability=cc)
        out["strided_main_after_contiguous"] = "accepted"
    except ValueError as exc:
        out["strided_main_after_contiguous"] = str(exc)
    return out


def mode_forked() -> dict:
    parent = mode_aot(threads=False)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            payload = forked_child(parent["cc"])
        except Exception as exc:  # noqa: BLE001
            payload = {"error": repr(exc)}
        os.write(w, json.dumps(payload).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.waitpid(pid, 0)
    return {"parent": parent, "child": json.loads(data)}


def main() -> None:
    if len(sys.argv) > 1:
        mode = sys.argv[1]
        began = time.perf_counter()
        import cuda.compute  # noqa: F401

        imported = time.perf_counter() - began
        result = {
            "default": mode_default,
            "aot-serial": lambda: mode_aot(False),
            "aot-threads": lambda: mode_aot(True),
            "forked": mode_forked,
        }[mode]()
        print(json.dumps({"mode": mode, "import_s": round(imported, 3), **result}))
        return
    for mode in ("default", "aot-serial", "aot-threads", "forked"):
        began = time.perf_counter()
        proc = subprocess.run([sys.executable, __file__, mode], capture_output=True, text=True)
        print(f"== {mode}: rc {proc.returncode}, {time.perf_counter() - began:.1f} s")
        print(proc.stdout.strip())
        if proc.returncode:
            print(proc.stderr[-3000:])
        sys.stdout.flush()


if __name__ == "__main__":
    main()
