"""Benchmark: EMM plugin alloc+free latency, and CUDA IPC export / open / close latency.

All managers run in one process against the same context, each instance built the way Numba
builds it (``cls(context=ctx)`` then ``initialize()``), so the figures compare like with like:
Numba's own manager (which queues frees and flushes them in batches), the reference plugin in
direct and pool mode, RMM's plugin when rmm is installed, and bare cuMemAlloc+cuMemFree. One
operation is ``mem = mgr.memalloc(n); del mem`` (the drop runs the plugin's finalizer).

IPC: the exporting side times `IpcExport` (pointer lookup, synchronize, cuIpcGetMemHandle); a
persistent spawned importer times `IpcImport` (cuIpcOpenMemHandle) and `close`
(cuIpcCloseMemHandle) for each descriptor it receives.

Usage: ``python benchmarks/bench_emm.py --out DIR`` writes DIR/bench_emm.json and
DIR/bench_emm.md and prints the table. Needs a GPU and numba-cuda.
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import statistics
import time
from pathlib import Path

SIZES = (256, 64 << 10, 1 << 20)


def _per_op(fn, ops: int, repeats: int) -> dict:
    """Median and min over `repeats` of the mean time of one op in a loop of `ops` (µs)."""
    fn(ops // 10 or 1)
    runs = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        fn(ops)
        runs.append((time.perf_counter() - start) / ops * 1e6)
    return {
        "median_us": statistics.median(runs),
        "min_us": min(runs),
        "ops": ops,
        "repeats": repeats,
    }


def bench_managers(ops: int, repeats: int) -> list[dict]:
    from cuda.bindings import driver as cu
    from numba import cuda
    from numba.cuda.cudadrv.driver import NumbaCUDAMemoryManager

    from caiconform.cuda.errors import call
    from caiconform.reference.emm import ReferenceDirectManager, ReferencePoolManager
    from caiconform.reference.tracking import AllocationLog

    ctx = cuda.current_context()
    managers = {
        "numba-default": NumbaCUDAMemoryManager(context=ctx),
        "reference-direct": ReferenceDirectManager(context=ctx, log=AllocationLog()),
        "reference-pool": ReferencePoolManager(context=ctx, log=AllocationLog()),
    }
    try:
        from rmm.allocators.numba import RMMNumbaManager

        managers["rmm"] = RMMNumbaManager(context=ctx)
    except ImportError:
        pass
    for mgr in managers.values():
        mgr.initialize()

    rows = []
    for size in SIZES:

        def raw(n: int, size: int = size) -> None:
            for _ in range(n):
                ptr = call(cu.cuMemAlloc, size)
                call(cu.cuMemFree, ptr)

        rows.append({"manager": "cuMemAlloc+cuMemFree", "size": size, **_per_op(raw, ops, repeats)})
        for name, mgr in managers.items():

            def loop(n: int, mgr=mgr, size: int = size) -> None:
                for _ in range(n):
                    mem = mgr.memalloc(size)
                    del mem

            rows.append({"manager": name, "size": size, **_per_op(loop, ops, repeats)})
    for mgr in managers.values():
        mgr.reset()
    return rows


def _importer_loop(conn) -> None:
    from caiconform.reference.ipc import IpcImport

    while True:
        descriptor = conn.recv()
        if descriptor is None:
            break
        start = time.perf_counter()
        opened = IpcImport(descriptor)
        mid = time.perf_counter()
        opened.close()
        end = time.perf_counter()
        conn.send((mid - start, end - mid))
    conn.close()


def bench_ipc(count: int) -> dict:
    from caiconform.cuda.memory import DeviceBuffer
    from caiconform.reference.ipc import IpcExport

    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_importer_loop, args=(child,))
    proc.start()
    buf = DeviceBuffer(1 << 20)
    export_s, open_s, close_s = [], [], []
    try:
        for i in range(count + 5):
            start = time.perf_counter()
            export = IpcExport(buf.ptr + 4096, 4096, owner=buf)
            elapsed = time.perf_counter() - start
            parent.send(export.descriptor)
            opened, closed = parent.recv()
            if i >= 5:
                export_s.append(elapsed)
                open_s.append(opened)
                close_s.append(closed)
        parent.send(None)
    finally:
        proc.join(30)
        buf.close()

    def med(xs: list[float]) -> float:
        return statistics.median(xs) * 1e6

    return {
        "count": count,
        "export_median_us": med(export_s),
        "open_median_us": med(open_s),
        "close_median_us": med(close_s),
        "export_open_close_median_us": med(
            [a + b + c for a, b, c in zip(export_s, open_s, close_s, strict=True)]
        ),
    }


def render(result: dict) -> str:
    lines = [
        f"# EMM benchmark ({result['device']})",
        "",
        "One op = `mem = mgr.memalloc(size); del mem` (µs per op, median of "
        f"{result['managers'][0]['repeats']} runs of {result['managers'][0]['ops']} ops).",
        "",
        "| manager | size (B) | median µs | min µs |",
        "|---|---:|---:|---:|",
    ]
    for row in result["managers"]:
        lines.append(
            f"| {row['manager']} | {row['size']} | {row['median_us']:.2f} | {row['min_us']:.2f} |"
        )
    ipc = result["ipc"]
    lines += [
        "",
        f"IPC (4 KiB at offset 4096 of a 1 MiB allocation, {ipc['count']} rounds, median µs): "
        f"export {ipc['export_median_us']:.1f}, open {ipc['open_median_us']:.1f}, "
        f"close {ipc['close_median_us']:.1f}, export+open+close "
        f"{ipc['export_open_close_median_us']:.1f}.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="directory for JSON and Markdown")
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ipc-rounds", type=int, default=200)
    args = parser.parse_args()

    from caiconform.cuda.device import device_info

    result = {
        "device": device_info(0)["name"],
        "gpu": device_info(0),
        "managers": bench_managers(args.ops, args.repeats),
        "ipc": bench_ipc(args.ipc_rounds),
    }
    text = render(result)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bench_emm.json").write_text(json.dumps(result, indent=2))
        (args.out / "bench_emm.md").write_text(text)


if __name__ == "__main__":
    main()
