"""Which CUDA driver calls get slower as processes are added, whatever the GPU count (issue 27).

A default run's examples take twice as long with 32 workers over two GPUs as with 16 on one,
while the host's CPUs stay 60 % idle: the workers wait for something the whole host shares. This
measures the candidates one at a time: P processes (each pinned to GPU i % G through
CUDA_VISIBLE_DEVICES) repeat one driver operation for a fixed time, all at once (a barrier
starts each operation), and the total operations per second is printed per (P, G). An operation
whose total rate does not grow from (16, 1) to (32, 2) is serialised host-wide (the kernel
driver's locks), not by a GPU; one that grows is not the limit.

Usage (on a GPU machine): python benchmarks/bench_driver_contention.py [--seconds 1.5]
[--configs 1x1,8x1,16x1,16x2,32x1,32x2] > contention.txt
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time
from collections.abc import Callable

import numpy as np

#: operation name -> what it does, in the words of the table
OPERATIONS = {
    "alloc_free_1B": "cuMemAlloc(1) + cuMemFree",
    "alloc_free_1MiB": "cuMemAlloc(1 MiB) + cuMemFree",
    "pool_alloc_free_1MiB": "cuMemAllocAsync(1 MiB) + cuMemFreeAsync, pool kept, sync",
    "ctx_sync": "cuCtxSynchronize (idle context)",
    "memset_sync": "cuMemsetD8Async(4 KiB) + cuStreamSynchronize",
    "dtoh_4KiB": "cuMemcpyDtoH 4 KiB to pageable memory",
    "stream_create_destroy": "cuStreamCreate(non-blocking) + cuStreamDestroy",
    "event_create_destroy": "cuEventCreate + cuEventDestroy",
    "host_alloc_free_64KiB": "cuMemHostAlloc(64 KiB) + cuMemFreeHost",
    "pointer_attrs": "cuPointerGetAttributes (3 attributes)",
    "ctx_create_destroy": "cuCtxCreate + cuCtxDestroy (a context as a new worker makes)",
}


def _check(result: tuple) -> object:
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise RuntimeError(f"CUDA error {err}")
    return rest[0] if len(rest) == 1 else rest


def _operations() -> dict[str, Callable[[], None]]:
    """The operations on this process's first visible GPU, set up once (context, buffers)."""
    from cuda.bindings import driver as d

    _check(d.cuInit(0))
    dev = _check(d.cuDeviceGet(0))
    ctx = _check(d.cuDevicePrimaryCtxRetain(dev))
    _check(d.cuCtxSetCurrent(ctx))
    stream = _check(d.cuStreamCreate(d.CUstream_flags.CU_STREAM_NON_BLOCKING))
    pool = _check(d.cuDeviceGetDefaultMemPool(dev))
    threshold = d.cuuint64_t(2**62)
    _check(
        d.cuMemPoolSetAttribute(
            pool, d.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, threshold
        )
    )
    buf = _check(d.cuMemAlloc(1 << 20))
    host = np.empty(4096, dtype=np.uint8)
    attrs = [
        d.CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        d.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        d.CUpointer_attribute.CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    ]

    def alloc_free(n: int) -> Callable[[], None]:
        def op() -> None:
            _check(d.cuMemFree(_check(d.cuMemAlloc(n))))

        return op

    def pool_alloc_free() -> None:
        ptr = _check(d.cuMemAllocAsync(1 << 20, stream))
        _check(d.cuMemFreeAsync(ptr, stream))
        _check(d.cuStreamSynchronize(stream))

    def memset_sync() -> None:
        _check(d.cuMemsetD8Async(buf, 1, 4096, stream))
        _check(d.cuStreamSynchronize(stream))

    def stream_cd() -> None:
        s = _check(d.cuStreamCreate(d.CUstream_flags.CU_STREAM_NON_BLOCKING))
        _check(d.cuStreamDestroy(s))

    def event_cd() -> None:
        _check(d.cuEventDestroy(_check(d.cuEventCreate(0))))

    def host_alloc() -> None:
        _check(d.cuMemFreeHost(_check(d.cuMemHostAlloc(1 << 16, 0))))

    def ctx_cd() -> None:
        fresh = _check(d.cuCtxCreate(None, 0, dev))
        _check(d.cuCtxDestroy(fresh))
        _check(d.cuCtxSetCurrent(ctx))

    return {
        "ctx_create_destroy": ctx_cd,
        "alloc_free_1B": alloc_free(1),
        "alloc_free_1MiB": alloc_free(1 << 20),
        "pool_alloc_free_1MiB": pool_alloc_free,
        "ctx_sync": lambda: _check(d.cuCtxSynchronize()),
        "memset_sync": memset_sync,
        "dtoh_4KiB": lambda: _check(d.cuMemcpyDtoH(host.ctypes.data, buf, 4096)),
        "stream_create_destroy": stream_cd,
        "event_create_destroy": event_cd,
        "host_alloc_free_64KiB": host_alloc,
        "pointer_attrs": lambda: _check(d.cuPointerGetAttributes(len(attrs), attrs, buf)),
    }


def _worker(gpu: str, names: list[str], seconds: float, barrier, results) -> None:
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    ops = _operations()
    counts = {}
    for name in names:
        op = ops[name]
        try:
            op()  # warm
        except Exception as exc:  # measured as failed; the others still meet at the barrier
            print(f"{name} on GPU {gpu}: {type(exc).__name__}: {exc}", file=sys.stderr)
            op = None
        barrier.wait()
        end = time.perf_counter() + seconds
        n = 0
        while op is not None and time.perf_counter() < end:
            op()
            n += 1
        counts[name] = n
    results.put(counts)


def measure(processes: int, gpus: int, names: list[str], seconds: float) -> dict[str, float]:
    """Total operations per second of `processes` processes over `gpus` GPUs, per operation."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(processes)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(str(i % gpus), names, seconds, barrier, results))
        for i in range(processes)
    ]
    for p in procs:
        p.start()
    totals = dict.fromkeys(names, 0)
    for _ in procs:
        for name, n in results.get(timeout=600).items():
            totals[name] += n
    for p in procs:
        p.join()
    return {name: totals[name] / seconds for name in names}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.5)
    parser.add_argument("--configs", default="1x1,8x1,16x1,16x2,32x1,32x2")
    parser.add_argument("--operations", default=",".join(OPERATIONS))
    args = parser.parse_args(argv)
    names = [n for n in args.operations.split(",") if n]
    unknown = [n for n in names if n not in OPERATIONS]
    if unknown:
        parser.error(f"unknown operation(s): {', '.join(unknown)}; known: {', '.join(OPERATIONS)}")
    configs = [tuple(int(v) for v in c.split("x")) for c in args.configs.split(",")]
    rows = {}
    for processes, gpus in configs:
        started = time.perf_counter()
        rows[(processes, gpus)] = measure(processes, gpus, names, args.seconds)
        print(
            f"# {processes} processes on {gpus} GPU(s): {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
    head = ["operation"] + [f"{p}p/{g}gpu" for p, g in configs]
    print("ops per second, all processes together (per process in brackets)")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name in names:
        cells = [f"{rows[(p, g)][name]:,.0f} ({rows[(p, g)][name] / p:,.0f})" for p, g in configs]
        print(f"| {name}: {OPERATIONS[name]} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
