"""On-device verification bandwidth of a large strided array, against a device-to-device copy.

The array is every other row of a 2-d float64 allocation (rows of 64 KiB), so its logical size
is half the allocation; `--gib` sets the logical size (default 8 GiB, allocation 16 GiB). In one
run, on one stream, timed with CUDA events (one warm-up, median of `--repeats`):

- copy:     cuMemcpyDtoDAsync of the same number of bytes (contiguous): the reference
- verify:   the checksum kernel reading the strided view (what the consumer runs on big arrays)
- fill:     the producer's fill kernel writing the strided view from a contiguous staging buffer
- gather:   the consumer's gather kernel, strided view -> contiguous buffer

Bandwidths are logical bytes / time (GB/s = 1e9 B/s); ratios are against the copy. The checksum
of the filled view must equal the checksum of the staging buffer, or the run fails.

Usage: python benchmarks/bench_verify.py [--gib 8] [--repeats 7] [--out bench.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
from collections.abc import Callable
from importlib import metadata

ROW_ELEMS = 8192
ITEMSIZE = 8


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in ("cuda-core", "cuda-bindings", "numpy", "hypothesis", "pytest"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def _time(stream: int, op: Callable[[], None], repeats: int) -> list[float]:
    """Milliseconds per run of `op` on `stream`, after one warm-up run."""
    from caiconform.cuda.streams import OwnedEvent, elapsed_ms

    op()
    times = []
    for _ in range(repeats):
        start = OwnedEvent(timing=True).record(stream)
        op()
        end = OwnedEvent(timing=True).record(stream)
        end.synchronize()
        times.append(elapsed_ms(start, end))
    return times


def run(gib: float, repeats: int) -> dict:
    import numpy as np
    from cuda.bindings import driver

    from caiconform.cuda import device_info, ensure_context, kernels
    from caiconform.cuda.errors import call
    from caiconform.cuda.memory import DeviceBuffer, copy_from_host, memset
    from caiconform.cuda.streams import OwnedStream

    ensure_context(0)
    row_bytes = ROW_ELEMS * ITEMSIZE
    rows = int(gib * 2**30) // row_bytes
    logical = rows * row_bytes
    shape, strides = (rows, ROW_ELEMS), (2 * row_bytes, ITEMSIZE)
    owned = OwnedStream()  # held for the whole run: collecting it destroys the stream
    stream = owned.handle

    base = DeviceBuffer(2 * logical)
    staging = DeviceBuffer(logical)
    target = DeviceBuffer(logical)
    one_row = DeviceBuffer(row_bytes)
    sums = DeviceBuffer(32)
    pattern = np.arange(ROW_ELEMS, dtype="<u8") * np.uint64(0x9E3779B1) + np.uint64(1)
    copy_from_host(one_row.ptr, pattern)
    # staging: every row a copy of the pattern row (gather with a zero row stride)
    kernels.gather(staging.ptr, one_row.ptr, shape, (0, ITEMSIZE), ITEMSIZE, stream=stream)

    def copy() -> None:
        call(
            driver.cuMemcpyDtoDAsync,
            driver.CUdeviceptr(target.ptr),
            driver.CUdeviceptr(base.ptr),
            logical,
            driver.CUstream(stream),
        )

    def verify() -> None:
        kernels.checksum(sums.ptr, base.ptr, shape, strides, ITEMSIZE, stream=stream)

    def fill() -> None:
        kernels.fill(base.ptr, staging.ptr, shape, strides, ITEMSIZE, stream=stream)

    def gather() -> None:
        kernels.gather(target.ptr, base.ptr, shape, strides, ITEMSIZE, stream=stream)

    results: dict[str, dict] = {}
    for name, op in (("copy", copy), ("fill", fill), ("verify", verify), ("gather", gather)):
        times = _time(stream, op, repeats)
        median = statistics.median(times)
        results[name] = {
            "median_ms": round(median, 3),
            "times_ms": [round(t, 3) for t in times],
            "GBps": round(logical / (median / 1e3) / 1e9, 1),
        }

    # correctness: the filled strided view sums like the contiguous staging it came from
    memset(sums.ptr, 0, 32, stream=stream)
    kernels.fill(base.ptr, staging.ptr, shape, strides, ITEMSIZE, stream=stream)
    kernels.checksum(sums.ptr, base.ptr, shape, strides, ITEMSIZE, stream=stream)
    kernels.checksum(sums.ptr + 16, staging.ptr, (rows * ROW_ELEMS,), (ITEMSIZE,), ITEMSIZE,
                     stream=stream)  # fmt: skip
    got = sums.to_host(stream=stream).view("<u8")
    checksums_match = bool(got[0] == got[2] and got[1] == got[3])

    copy_bw = results["copy"]["GBps"]
    return {
        "benchmark": "bench_verify",
        "logical_bytes": logical,
        "allocation_bytes": 2 * logical,
        "layout": {"shape": list(shape), "strides": list(strides), "itemsize": ITEMSIZE},
        "index_bits": kernels.index_bits(rows * ROW_ELEMS),
        "repeats": repeats,
        "results": results,
        "ratios_vs_copy": {
            name: round(results[name]["GBps"] / copy_bw, 3) for name in ("verify", "fill", "gather")
        },
        "checksums_match": checksums_match,
        "device": device_info(0),
        "versions": _versions(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=8.0, help="logical GiB of the strided view")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", help="write the JSON result here too")
    args = parser.parse_args(argv)
    if args.gib <= 0 or args.repeats < 1:
        print("bench_verify: --gib must be > 0 and --repeats >= 1", file=sys.stderr)
        return 2
    from caiconform.cuda import gpu_available

    ok, why = gpu_available()
    if not ok:
        print(f"bench_verify: no GPU here: {why}", file=sys.stderr)
        return 2
    result = run(args.gib, args.repeats)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
    return 0 if result["checksums_match"] else 1


if __name__ == "__main__":
    sys.exit(main())
