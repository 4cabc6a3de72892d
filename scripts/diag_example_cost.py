"""Where one example's time goes inside a worker, on the GPU (issue 11).

Reproduces a preloaded fork-server child in one process: every available library imported
(`libraries.preload`) and frozen (`gc.freeze`, as the fork server does before forking), then
cells prepared as the child would. For each cell: the size of the collector's heap and the time
of one `gc.collect()`, the median time of the cell's first floor examples through
`worker.run_example`, and a cProfile of a few of them; then the same after `gc.freeze()` of
what the preparing made. Usage: python scripts/diag_example_cost.py > diag.txt
"""

from __future__ import annotations

import cProfile
import gc
import io
import pstats
import statistics
import sys
import time

from caiconform.runner import libraries
from caiconform.runner.worker import _prepare, run_example

SOURCE = "caiconform.runner.libraries"
CELLS = [
    ("caiconform.checks.lifetime", None, "reference"),
    ("caiconform.checks.lifetime", None, "numba"),
    ("caiconform.checks.streams", "reference", "numba"),
    ("caiconform.checks.streams", "jax", "torch"),
    ("caiconform.checks.streams", "pycuda", "cuda.cccl"),
    ("caiconform.checks.roundtrip", "reference", "torch"),
    ("caiconform.checks.adversarial", None, "cuda.cccl"),
    ("caiconform.checks.mask", None, "cuda.cccl"),
]
N = 12


def _gc_cost() -> tuple[int, float]:
    started = time.perf_counter()
    gc.collect()
    return len(gc.get_objects()), time.perf_counter() - started


def _examples(module: str, producer, consumer) -> list[dict]:
    import importlib

    family = importlib.import_module(module)
    return [f.params for f in family.floor(producer, consumer)][:N]


def _time(module: str, producer, consumer, params: list[dict]) -> list[float]:
    out = []
    for p in params:
        result, seconds = run_example(f"{module}:execute", p, producer, consumer)
        out.append(seconds)
    return out


def main() -> None:
    started = time.perf_counter()
    for name in libraries.names():
        try:
            libraries.preload(name)
        except Exception as exc:
            print(f"preload {name}: {exc}")
    print(f"preloaded in {time.perf_counter() - started:.1f} s; heap {_gc_cost()}")
    gc.freeze()
    print(f"frozen ({gc.get_freeze_count()}): heap {_gc_cost()}")
    for module, producer, consumer in CELLS:
        label = f"{module.rsplit('.', 1)[1]}/{producer or '-'}/{consumer}"
        t = time.perf_counter()
        _prepare(module, producer, consumer, SOURCE)
        prep = time.perf_counter() - t
        params = _examples(module, producer, consumer)
        first = _time(module, producer, consumer, params[:1])
        objs, gcs = _gc_cost()
        times = _time(module, producer, consumer, params)
        print(
            f"{label}: prepare {prep:.2f} s, first example {first[0] * 1e3:.0f} ms; heap {objs} "
            f"objects, gc.collect {gcs * 1e3:.1f} ms; median example {statistics.median(times) * 1e3:.1f} ms"
        )
        prof = cProfile.Profile()
        prof.enable()
        _time(module, producer, consumer, params[:4])
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(18)
        print("\n".join(text.getvalue().splitlines()[6:30]))
        gc.freeze()
        objs, gcs = _gc_cost()
        times = _time(module, producer, consumer, params)
        print(
            f"{label} after gc.freeze: heap {objs}, gc.collect {gcs * 1e3:.1f} ms; median "
            f"example {statistics.median(times) * 1e3:.1f} ms"
        )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
