"""Where a kernel consumer's later examples spend their time (issue 43: numba-kernel's and
numba-mlir-kernel's examples over 50 ms that are not a new child's first, about 40 s of slot
time in a default run, even on a machine whose disk cache holds every copy kernel).

For each library given (default: numba-kernel, numba-mlir-kernel), three processes run one
after another, each forked from a host that imported the library (no CUDA, as a fork server):
`cold` with a numba cache folder of its own, empty (every signature compiled), then
`warm` twice reading that folder (a run's later child, its dispatchers empty). Each runs the
same roundtrip examples reference -> library, one per (typestr, layout) below, and reports
each example's time, the dispatchers' cache hits and misses, and in the second `warm`
process the functions that took the most cumulative time (cProfile). Run on a GPU machine
with the checkout on PYTHONPATH:
    python scripts/diag_kernel_hits.py [NAME ...] > kernel-hits.jsonl
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import sys
import tempfile
import time

DEFAULT = ("numba-kernel", "numba-mlir-kernel")
TYPESTRS = ("<f4", "<f8", "<i4", "<i8", "|u1", "|b1", "<c8", "<f2", "<i2", "<u4")


def _layouts() -> list[dict]:
    from caiconform.spec.layout import Layout

    return [Layout(shape).to_dict() for shape in ((3, 4), (12,), (), (2, 3, 4))]


def _strided(layout: dict, itemsize: int) -> dict:
    """A Fortran-ordered twin of a 2-d C layout (explicit strides), else the layout itself."""
    shape = tuple(layout["shape"])
    if len(shape) != 2:
        return layout
    return layout | {"strides": [itemsize, itemsize * shape[0]], "kind": "F"}


def _child(name: str, mode: str, write: int) -> None:
    import numpy as np

    from caiconform.checks import roundtrip
    from caiconform.runner import libraries

    steps = {}
    began = time.perf_counter()
    libraries.warm("reference")
    steps["warm reference"] = round(time.perf_counter() - began, 4)
    began = time.perf_counter()
    libraries.warm(name)
    steps["warm " + name] = round(time.perf_counter() - began, 4)
    examples = []
    for typestr in TYPESTRS:
        for base in _layouts():
            for layout in (base, _strided(base, np.dtype(typestr).itemsize)):
                examples.append({"typestr": typestr, "layout": layout, "seed": 0})
    examples = list({json.dumps(e, sort_keys=True): e for e in examples}.values())
    profile = cProfile.Profile() if mode == "warm-profiled" else None
    times, outcomes = [], {}
    for params in examples:
        began = time.perf_counter()
        if profile:
            profile.enable()
        result = roundtrip.execute(params, "reference", name)
        if profile:
            profile.disable()
        times.append(round(time.perf_counter() - began, 4))
        outcome = getattr(result, "outcome", str(result))
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    answer = {
        "library": name,
        "mode": mode,
        "steps": steps,
        "examples": len(examples),
        "sum_s": round(sum(times), 3),
        "over_50ms": sum(t > 0.05 for t in times),
        "median_s": sorted(times)[len(times) // 2],
        "max_s": max(times),
        "outcomes": outcomes,
        "dispatchers": _dispatcher_counts(name),
    }
    if profile:
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(40)
        answer["profile"] = text.getvalue()[-12000:]
    os.write(write, json.dumps(answer).encode())


def _dispatcher_counts(name: str) -> dict:
    from caiconform.adapters import numba_adapter, numba_impls

    impl = "numba-cuda-mlir" if "mlir" in name else numba_impls.DEFAULT
    counts = {}
    try:
        for rank, kernel in numba_adapter._copy_kernels(impl).items():
            stats = getattr(kernel, "stats", None)
            counts[rank] = {
                "hits": sum(getattr(stats, "cache_hits", {}).values()) if stats else None,
                "misses": sum(getattr(stats, "cache_misses", {}).values()) if stats else None,
                "overloads": len(getattr(kernel, "overloads", {})),
            }
    except Exception as exc:  # noqa: BLE001 - a diagnosis reports what it could not read
        counts["error"] = f"{type(exc).__name__}: {exc}"[:200]
    return counts


def _run(name: str, mode: str) -> dict:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            _child(name, mode, write)
            os._exit(0)
        except BaseException as exc:  # noqa: BLE001 - the child's error is the diagnosis
            os.write(
                write,
                json.dumps(
                    {"library": name, "mode": mode, "error": f"{type(exc).__name__}: {exc}"[:400]}
                ).encode(),
            )
            os._exit(1)
    os.close(write)
    began = time.perf_counter()
    data = b""
    while chunk := os.read(read, 1 << 20):
        data += chunk
    os.close(read)
    _, status = os.waitpid(pid, 0)
    row = json.loads(data) if data else {"library": name, "mode": mode, "error": f"status {status}"}
    row["wall_s"] = round(time.perf_counter() - began, 3)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(DEFAULT))
    args = parser.parse_args(argv)
    import importlib

    from caiconform.diskcache import cache_dir
    from caiconform.runner import libraries

    importlib.import_module("caiconform.checks.roundtrip")
    libraries.preload("reference")
    for name in args.names:
        libraries.preload(name)
    os.environ["CAICONFORM_NUMBA_CACHE"] = tempfile.mkdtemp(prefix="diag-kernel-hits-")
    folder = cache_dir("CAICONFORM_NUMBA_CACHE", "numba")
    for name in args.names:
        for mode in ("cold", "warm", "warm-profiled"):
            print(json.dumps(_run(name, mode)), flush=True)
    shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
