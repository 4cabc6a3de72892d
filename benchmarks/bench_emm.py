"""Benchmark: EMM plugin alloc+free latency, and CUDA IPC export / open / close latency.

All managers run in one process against the same context, each instance built the way Numba
builds it (``cls(context=ctx)`` then ``initialize()``), so the figures compare like with like:
Numba's own manager (which queues frees and flushes them in batches), the reference plugin in
direct and pool mode, RMM's plugin when rmm is installed, and bare cuMemAlloc+cuMemFree. One
operation is ``mem = mgr.memalloc(n); del mem`` (the drop runs the plugin's finalizer).

IPC: the exporting side times `IpcExport` (pointer lookup, synchronize, cuIpcGetMemHandle); a
persistent spawned importer times `IpcImport` (cuIpcOpenMemHandle) and `close`
(cuIpcCloseMemHandle) for each descriptor it receives. With two GPUs, also device 0 to
device 1, mapped through peer access and staged through a device-to-device copy.

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


def _interleaved(loops: dict, ops: int, repeats: int) -> dict[str, dict]:
    """Time each loop `repeats` times, round-robin, so drift hits every manager alike.

    Returns, per name, the median and minimum over the runs of the mean time of one op (µs).
    """
    for loop in loops.values():
        loop(ops // 10 or 1)
    runs: dict[str, list[float]] = {name: [] for name in loops}
    for _ in range(repeats):
        for name, loop in loops.items():
            gc.collect()
            start = time.perf_counter()
            loop(ops)
            runs[name].append((time.perf_counter() - start) / ops * 1e6)
    return {
        name: {"median_us": statistics.median(r), "min_us": min(r), "ops": ops, "repeats": repeats}
        for name, r in runs.items()
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

    def raw_loop(size: int):
        def loop(n: int) -> None:
            for _ in range(n):
                ptr = call(cu.cuMemAlloc, size)
                call(cu.cuMemFree, ptr)

        return loop

    def manager_loop(mgr, size: int):
        def loop(n: int) -> None:
            for _ in range(n):
                mem = mgr.memalloc(size)
                del mem

        return loop

    rows = []
    for size in SIZES:
        loops = {"cuMemAlloc+cuMemFree": raw_loop(size)}
        loops.update({name: manager_loop(mgr, size) for name, mgr in managers.items()})
        for name, figures in _interleaved(loops, ops, repeats).items():
            rows.append({"manager": name, "size": size, **figures})
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


def bench_cross_device(rounds: int) -> dict:
    """Device 0 exports, a spawned importer reads on device 1: mapped through peer access
    (direct) or copied device-to-device from a mapping on device 0 (staged). Figures are the
    importer's open+read+close time (µs, median); every round checks the bytes."""
    import numpy as np
    from cuda.bindings import driver as cu

    from caiconform.cuda.errors import call
    from caiconform.cuda.memory import DeviceBuffer
    from caiconform.reference.ipc import IpcExport, device_identity, read_in_child

    data = (np.arange(1 << 20, dtype=np.uint64) % 249).astype(np.uint8)
    buf = DeviceBuffer.from_host(data, 0)
    out: dict = {
        "devices": [device_identity(0), device_identity(1)],
        "peer_0_to_1": bool(
            call(cu.cuDeviceCanAccessPeer, call(cu.cuDeviceGet, 1), call(cu.cuDeviceGet, 0))
        ),
        "bytes": (1 << 20) - 256,
    }
    try:
        for path in ("direct", "staged"):
            times, errors = [], []
            for _ in range(rounds):
                export = IpcExport(buf.ptr + 256, (1 << 20) - 256, owner=buf)
                seen = read_in_child(export, device=1, path=path)
                if seen.error or not np.array_equal(seen.data, data[256:]):
                    errors.append(seen.error or "bytes differ")
                else:
                    times.append(seen.open_close_s)
            out[path] = {
                "rounds": rounds,
                "ok": len(times),
                "errors": errors,
                "open_read_close_median_us": statistics.median(times) * 1e6 if times else None,
            }
    finally:
        buf.close()
    return out


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
    cross = result.get("cross_device")
    if cross:
        lines.append(
            f"Cross-device IPC (device 0 exports {cross['bytes']} B at offset 256, a spawned "
            f"importer reads on device 1; peer access 1->0: {cross['peer_0_to_1']}):"
        )
        for path in ("direct", "staged"):
            row = cross[path]
            figure = row["open_read_close_median_us"]
            shown = f"{figure:.1f} µs" if figure is not None else "n/a"
            lines.append(
                f"- {path}: {row['ok']}/{row['rounds']} rounds with the right bytes, "
                f"open+read+close median {shown}; errors: {row['errors'] or 'none'}"
            )
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="directory for JSON and Markdown")
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ipc-rounds", type=int, default=200)
    parser.add_argument("--cross-rounds", type=int, default=5, help="per path, two GPUs only")
    args = parser.parse_args()

    from caiconform.cuda.device import device_count, device_info

    result = {
        "device": device_info(0)["name"],
        "gpu": device_info(0),
        "managers": bench_managers(args.ops, args.repeats),
        "ipc": bench_ipc(args.ipc_rounds),
    }
    if device_count() >= 2:
        result["cross_device"] = bench_cross_device(args.cross_rounds)
    text = render(result)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bench_emm.json").write_text(json.dumps(result, indent=2))
        (args.out / "bench_emm.md").write_text(text)


if __name__ == "__main__":
    main()
