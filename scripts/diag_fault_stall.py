"""Does a kernel's fault in one process stall every other process on the GPU (issue 11)?

In the default matrix on the H100 (2026-11-25, call 1) every slot's example stalled ~5.1 s at
once, twice, each time while a roundtrip example whose consumer is CuPy faulted with
CUDA_ERROR_MISALIGNED_ADDRESS (that example itself took 5.26 s); 44 other faults (illegal and
misaligned addresses) in the same run stalled nobody, and a run with the driver's default
hardware queues had no such stall. This keeps BUSY processes exchanging small CuPy arrays in a
loop (each notes every iteration over 0.5 s, with its wall-clock start) while one process after
another faults on purpose: a raw kernel loading a double through a pointer one byte past an
allocation's start (misaligned: one thread, or `misaligned-wide`: 1,024 blocks of 256, every
thread faulting, as a library's copy kernel over a whole array does) or at an unmapped address
(illegal). Faulting processes and
busy ones run with the driver's default queues or one (`CUDA_DEVICE_MAX_CONNECTIONS=1`, what
the one-queue families' workers get). Prints per fault its kind, queues, how long the faulting
process took from its launch to the error and to its exit, and how many busy processes stalled
over 1 s during it (and the longest stall); then the counts per setting.
Usage: python scripts/diag_fault_stall.py [REPEATS] > fault-stall.txt
(On the H100, 2026-11-25, REPEATS 3, single-thread faults only: none of 24 stalled anyone.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

BUSY = 14
KERNEL = r"""
extern "C" __global__ void load(const double* p, double* out) {
    out[0] = p[blockIdx.x * blockDim.x + threadIdx.x] + 1.0;
}
"""


def _busy(until: float) -> None:
    import cupy

    x = cupy.ones(1 << 12)
    (x + 1).sum().item()
    slow = []
    while time.time() < until:
        start = time.time()
        (x + 1).sum().item()
        took = time.time() - start
        if took > 0.5:
            slow.append([round(start, 3), round(took, 3)])
    print(json.dumps(slow))


def _fault(kind: str) -> None:
    import cupy

    kernel = cupy.RawKernel(KERNEL, "load")
    buffer = cupy.zeros(1 << 18)
    out = cupy.zeros(1)
    cupy.cuda.runtime.deviceSynchronize()
    pointer = buffer.data.ptr + 1 if kind.startswith("misaligned") else 0x1000
    grid, block = ((1024,), (256,)) if kind.endswith("wide") else ((1,), (1,))
    start = time.time()
    try:
        kernel(grid, block, (cupy.uint64(pointer), out))
        cupy.cuda.runtime.deviceSynchronize()
        error = "no error"
    except Exception as exc:  # noqa: BLE001 -- the fault is what this measures
        error = str(exc).split(":")[0]
    print(
        json.dumps({"start": start, "error_after": round(time.time() - start, 3), "error": error})
    )
    sys.stdout.flush()
    os._exit(0)  # the context is torn down by the exit, as a worker's is


def _env(queues: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)
    if queues:
        env["CUDA_DEVICE_MAX_CONNECTIONS"] = queues
    return env


def _phase(busy_queues: str | None, repeats: int) -> list[dict]:
    kinds = ("misaligned", "misaligned-wide", "illegal")
    faults = [(k, q) for _ in range(repeats) for k in kinds for q in ("1", None)]
    until = time.time() + 6 + len(faults) * 3.5
    busy = [
        subprocess.Popen(
            [sys.executable, __file__, "--busy", str(until)],
            env=_env(busy_queues),
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(BUSY)
    ]
    time.sleep(6)
    rows = []
    for kind, queues in faults:
        launched = time.time()
        done = subprocess.run(
            [sys.executable, __file__, "--fault", kind],
            env=_env(queues),
            capture_output=True,
            text=True,
        )
        ended = time.time()
        try:
            row = json.loads(done.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            row = {"start": launched, "error_after": None, "error": done.stderr[-200:]}
        row.update(kind=kind, queues=queues or "default", exit_after=round(ended - row["start"], 3))
        row["window"] = (row["start"], ended)
        rows.append(row)
        time.sleep(max(0.0, 3.0 - (time.time() - launched)))
    slow = [json.loads(p.communicate()[0] or "[]") for p in busy]
    for row in rows:
        lo, hi = row.pop("window")
        hits = [took for s in slow for start, took in s if start < hi and start + took > lo]
        row["busy_stalled"] = sum(
            1 for s in slow if any(a < hi and a + t > lo and t > 1 for a, t in s)
        )
        row["longest_stall"] = max(hits, default=0.0)
        row["busy_queues"] = busy_queues or "default"
    return rows


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    rows = []
    for busy_queues in (None, "1"):
        for row in _phase(busy_queues, repeats):
            print(json.dumps({k: v for k, v in row.items() if k != "start"}), flush=True)
            rows.append(row)
    print("== stalls over 1 s of the", BUSY, "busy processes, per setting")
    keys = sorted({(r["busy_queues"], r["kind"], r["queues"]) for r in rows})
    for key in keys:
        some = [r for r in rows if (r["busy_queues"], r["kind"], r["queues"]) == key]
        print(
            f"busy {key[0]:7s} fault {key[1]:15s} faulting queues {key[2]:7s}: "
            f"{sum(r['busy_stalled'] > 0 for r in some)} of {len(some)} faults stalled others; "
            f"longest {max(r['longest_stall'] for r in some):.2f} s; errors "
            f"{sorted({r['error'] for r in some})}"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--busy"]:
        _busy(float(sys.argv[2]))
    elif sys.argv[1:2] == ["--fault"]:
        _fault(sys.argv[2])
    else:
        main()
