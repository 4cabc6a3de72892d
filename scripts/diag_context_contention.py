"""Is a new worker child's ~2 s first example its CUDA context made *beside others* (issue 11)?

In the default matrix on the H100 a new child's first example took ~2 s (252 s of slot time for
144 children), against 0.28 s for torch's context and 43 ms for its first example alone. This
forks N children at once from a process that imported what the fork server imports (every
library, no CUDA), each making the primary context through the driver (cuInit, retain, set
current, a 1 MiB allocation), then the first device operation of one library, and prints per N
the median and largest times of each step and the wave's wall time, exits included (context
teardown). N = 1 against N = 16: if the 16 take ~16x one, contexts are made one at a time
(the driver's lock) and fewer new children is the only lever; if ~1x, it is not the context.
Also N = 16 next to 16 busy processes (each exchanging small arrays in a loop), as in the run.
Usage: python scripts/diag_context_contention.py [VAR=VALUE ...] > context-contention.txt
(VAR=VALUE: set in the environment the children inherit, e.g. CUDA_DEVICE_MAX_CONNECTIONS=1,
which the driver reads when it makes a context; `--short`: the driver alone and torch, N = 1
and 16, alone and beside the busy ones)
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

from caiconform.runner import libraries

LIBRARIES = ("torch", "cupy", "numba", "cuda.core", "cuda.cccl", "pycuda", "jax")


def _first_op(library: str) -> None:
    """The library's own first device operation (its runtime's init, allocator, a copy)."""
    if library == "torch":
        import torch

        torch.zeros(4, device="cuda").add_(1)
        torch.cuda.synchronize()
    elif library == "cupy":
        import cupy

        (cupy.zeros(4) + 1).get()
    elif library == "numba":
        from numba import cuda

        cuda.to_device(bytearray(16)).copy_to_host()
    elif library == "driver":
        pass


def _context() -> float:
    from cuda.bindings import driver

    start = time.perf_counter()
    driver.cuInit(0)
    _, device = driver.cuDeviceGet(0)
    _, context = driver.cuDevicePrimaryCtxRetain(device)
    driver.cuCtxSetCurrent(context)
    _, pointer = driver.cuMemAlloc(1 << 20)
    driver.cuMemFree(pointer)
    return time.perf_counter() - start


def _child(library: str, go: int, report: int) -> None:
    os.read(go, 1)
    start = time.perf_counter()
    context_s = _context()
    middle = time.perf_counter()
    _first_op(library)
    end = time.perf_counter()
    os.write(report, (json.dumps([context_s, end - middle, end - start]) + "\n").encode())
    os._exit(0)


def _busy(stop: int) -> None:
    """A process exchanging small arrays in a loop until `stop` is readable (the run's load)."""
    import select

    import cupy

    a = cupy.arange(1024, dtype=cupy.float32)
    while not select.select([stop], [], [], 0)[0]:
        b = cupy.asarray(a)
        (b * 2).get()
    os._exit(0)


def wave(n: int, library: str) -> dict:
    go_r, go_w = os.pipe()
    rep_r, rep_w = os.pipe()
    pids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os.close(go_w)
            os.close(rep_r)
            _child(library, go_r, rep_w)
        pids.append(pid)
    os.close(go_r)
    os.close(rep_w)
    time.sleep(0.2)
    start = time.perf_counter()
    os.write(go_w, b"x" * n)
    with os.fdopen(rep_r, "rb") as f:
        lines = f.read()
    answered = time.perf_counter() - start
    for pid in pids:
        os.waitpid(pid, 0)
    wall = time.perf_counter() - start
    os.close(go_w)
    rows = [json.loads(line) for line in lines.decode().splitlines()]

    def stat(i: int) -> str:
        values = [r[i] for r in rows]
        return f"{statistics.median(values):.3f}/{max(values):.3f}"

    return {
        "n": n,
        "library": library,
        "answered": len(rows),
        "context_med_max_s": stat(0),
        "first_op_med_max_s": stat(1),
        "total_med_max_s": stat(2),
        "all_answered_s": round(answered, 3),
        "wall_with_exits_s": round(wall, 3),
    }


def main() -> None:
    short = "--short" in sys.argv
    for word in sys.argv[1:]:
        if "=" in word:
            key, _, value = word.partition("=")
            os.environ[key] = value
    print("environment:", [w for w in sys.argv[1:] if "=" in w], flush=True)
    start = time.perf_counter()
    for name in LIBRARIES:
        libraries.preload(name)
    print(f"preload {time.perf_counter() - start:.2f} s", flush=True)
    for library in ("driver", "torch") if short else ("driver", "torch", "cupy", "numba"):
        for n in (1, 16) if short else (1, 4, 16):
            print(json.dumps(wave(n, library)), flush=True)
    stop_r, stop_w = os.pipe()
    busy = []
    for _ in range(16):
        pid = os.fork()
        if pid == 0:
            _busy(stop_r)
        busy.append(pid)
    time.sleep(3.0)
    for library in ("driver", "torch") if short else ("driver", "torch", "cupy"):
        for n in (1, 16):
            row = wave(n, library)
            row["beside_busy"] = 16
            print(json.dumps(row), flush=True)
    os.write(stop_w, b"x")
    for pid in busy:
        os.waitpid(pid, 0)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
