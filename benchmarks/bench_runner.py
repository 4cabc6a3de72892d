"""What isolation costs: exchanges per second in-process, in a persistent worker, and in a fresh
process per exchange, all in one run on the same exchanges.

Exchanges (each an `execute(params, producer, consumer) -> Result`, run through the same
classification the runner uses):

- trivial: returns `pass` at once, so the persistent-worker figure is the runner's own overhead
  (request, JSON both ways, classification, health check);
- numpy:   a small exchange of real work: a producer builds a 4096-element float32 array and its
  interface dict, the dict is validated with `caiconform.validate`, the consumer reads the data
  back through `__array_interface__` and compares it (numpy is imported in the worker, as an
  adapter would import its library);
- family:  with `--family F --producer P --consumer C`, examples drawn from a real check family
  (e.g. roundtrip on a GPU), the exchange the design's "isolated <= 10x in-process" target is
  about.

Fresh process per exchange starts a new worker, runs one exchange and stops it, which is what an
unpooled design pays; targets: persistent >= 20x faster than fresh, isolated <= 10x in-process.

Replacement: the time from a crashing example (os.abort) to the end of the next numpy exchange,
with a cold restart (the new worker imports numpy and caiconform first) against a prepared spare
process (`Worker(spare=True)`), crashes `--gap` seconds apart as if other examples ran between.

Usage: python benchmarks/bench_runner.py [--exchanges 2000] [--fresh 20] [--out bench.json]
       [--family roundtrip --producer reference --consumer reference]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from caiconform.results.outcome import FAIL, PASS, Result

MODULE = Path(__file__).stem


def prepare(producer: str | None, consumer: str | None) -> None:
    """Check-family hook run once per worker: import what the exchanges use."""
    import numpy  # noqa: F401

    import caiconform.spec.validate  # noqa: F401


def crash(params: dict, producer: str | None, consumer: str | None) -> Result:
    """An exchange that takes the worker down."""
    os.abort()


def trivial(params: dict, producer: str | None, consumer: str | None) -> Result:
    """The cheapest possible exchange."""
    return Result(PASS)


class _Exported:
    def __init__(self, array: Any) -> None:
        self._array = array
        self.__array_interface__ = array.__array_interface__


def numpy_exchange(params: dict, producer: str | None, consumer: str | None) -> Result:
    """Produce an array and its interface dict, validate the dict, consume and compare."""
    import numpy as np

    import caiconform

    values = np.arange(params["n"], dtype=np.float32) * np.float32(params["scale"])
    exported = _Exported(values)
    interface = {**exported.__array_interface__, "version": 3, "stream": None}
    interface.pop("descr", None)
    report = caiconform.validate(interface)
    if not report.ok:
        return Result(FAIL, rule=report.errors[0].rule, message=report.errors[0].message)
    seen = np.asarray(exported)
    if not np.array_equal(seen, values):
        return Result(FAIL, message="consumer read different values")
    return Result(PASS)


def _per_second(seconds: list[float]) -> float:
    return len(seconds) / sum(seconds)


def _median_us(seconds: list[float]) -> float:
    return statistics.median(seconds) * 1e6


def _in_process(execute: str, examples: list[dict], n: int, producer, consumer) -> list[float]:
    from caiconform.runner.worker import run_example

    times = []
    for i in range(n):
        start = time.perf_counter()
        result, _ = run_example(execute, examples[i % len(examples)], producer, consumer)
        times.append(time.perf_counter() - start)
        assert result.outcome in (PASS, "skip"), result
    return times


def _persistent(execute: str, examples: list[dict], n: int, producer, consumer) -> list[float]:
    from caiconform.runner.pool import Worker

    worker = Worker(0)
    try:
        worker.run(execute, examples[0], producer, consumer, timeout=600)  # imports, context
        times = []
        for i in range(n):
            start = time.perf_counter()
            exchange = worker.run(
                execute, examples[i % len(examples)], producer, consumer, timeout=600
            )
            times.append(time.perf_counter() - start)
            assert exchange.result.outcome in (PASS, "skip"), exchange.result
        assert worker.starts == 1, "the worker was replaced during the benchmark"
        return times
    finally:
        worker.close()


def _fresh(execute: str, examples: list[dict], n: int, producer, consumer) -> list[float]:
    from caiconform.runner.pool import Worker

    times = []
    for i in range(n):
        start = time.perf_counter()
        worker = Worker(0)
        exchange = worker.run(execute, examples[i % len(examples)], producer, consumer, timeout=600)
        worker.close()
        times.append(time.perf_counter() - start)
        assert exchange.result.outcome in (PASS, "skip"), exchange.result
    return times


def _replacement(spare: bool, crashes: int, gap: float) -> list[float]:
    """Seconds from a crash to the end of the next exchange, `crashes` times."""
    from caiconform.runner.pool import Worker

    worker = Worker(0, spare=spare)
    params = {"n": 4096, "scale": 1}
    run = {"timeout": 600, "module": MODULE}
    try:
        worker.run(f"{MODULE}:numpy_exchange", params, None, None, **run)
        times = []
        for _ in range(crashes):
            time.sleep(gap)
            start = time.perf_counter()
            lost = worker.run(f"{MODULE}:crash", {}, None, None, **run)
            after = worker.run(f"{MODULE}:numpy_exchange", params, None, None, **run)
            times.append(time.perf_counter() - start)
            assert lost.result.outcome == "crash" and after.result.outcome == PASS
        return times
    finally:
        worker.close()


def _family_examples(family: str, producer: str | None, consumer: str | None, k: int):
    """(execute, `k` examples) of a check family, drawn as a run draws them (fixed seed)."""
    from hypothesis import Phase, given, seed

    from caiconform.draws import hypothesis_settings
    from caiconform.runner.plan import load_families

    families, broken = load_families([family])
    if broken:
        raise SystemExit(f"bench_runner: {broken[0]}")
    drawn: list[dict] = []

    @hypothesis_settings(k, (Phase.generate,))
    @seed(0)
    @given(families[0].module.examples(producer, consumer))
    def draw(params: dict) -> None:
        drawn.append(params)

    draw()
    return families[0].execute, drawn


def _measure(
    name: str,
    execute: str,
    examples: list[dict],
    args: argparse.Namespace,
    producer: str | None = None,
    consumer: str | None = None,
) -> dict[str, Any]:
    modes: dict[str, Callable[..., list[float]]] = {
        "in_process": _in_process,
        "persistent": _persistent,
        "fresh": _fresh,
    }
    row: dict[str, Any] = {"exchange": name}
    for mode, fn in modes.items():
        n = args.fresh if mode == "fresh" else args.exchanges
        times = fn(execute, examples, n, producer, consumer)
        row[mode] = {"n": n, "per_s": _per_second(times), "median_us": _median_us(times)}
    row["fresh_over_persistent"] = row["fresh"]["median_us"] / row["persistent"]["median_us"]
    row["persistent_over_in_process"] = (
        row["persistent"]["median_us"] / row["in_process"]["median_us"]
    )
    row["overhead_us"] = row["persistent"]["median_us"] - row["in_process"]["median_us"]
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exchanges", type=int, default=2000)
    parser.add_argument("--fresh", type=int, default=20)
    parser.add_argument("--family", help="also time examples of this check family")
    parser.add_argument("--producer")
    parser.add_argument("--consumer")
    parser.add_argument("--crashes", type=int, default=10, help="replacements to time")
    parser.add_argument("--gap", type=float, default=0.5, help="seconds between crashes")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args(argv)

    rows = [
        _measure("trivial", f"{MODULE}:trivial", [{}], args),
        _measure(
            "numpy", f"{MODULE}:numpy_exchange", [{"n": 4096, "scale": s} for s in (1, 2, 3)], args
        ),
    ]
    if args.family:
        execute, examples = _family_examples(args.family, args.producer, args.consumer, 50)
        rows.append(
            _measure(
                f"{args.family} {args.producer}->{args.consumer}",
                execute,
                examples,
                args,
                args.producer,
                args.consumer,
            )
        )
    print(
        f"{'exchange':28} {'in-process':>12} {'persistent':>12} {'fresh':>12}"
        f" {'fresh/pers':>10} {'pers/in-proc':>12} {'overhead':>10}"
    )
    for row in rows:
        print(
            f"{row['exchange']:28} {row['in_process']['median_us']:10.1f}us"
            f" {row['persistent']['median_us']:10.1f}us {row['fresh']['median_us'] / 1e3:10.1f}ms"
            f" {row['fresh_over_persistent']:9.0f}x {row['persistent_over_in_process']:11.1f}x"
            f" {row['overhead_us']:8.1f}us"
        )
    print(
        "(medians; fresh = a new worker process per exchange; overhead = persistent - in-process)"
    )
    replacement = {
        mode: _median_us(_replacement(mode == "spare", args.crashes, args.gap)) / 1e3
        for mode in ("cold", "spare")
    }
    print(
        f"replacing a crashed worker (crash + next numpy exchange, median of {args.crashes}, "
        f"{args.gap:g} s apart): cold restart {replacement['cold']:.1f} ms, "
        f"prepared spare {replacement['spare']:.1f} ms"
    )
    if args.out:
        machine = {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpu_count": os.cpu_count(),
            "load_avg_1m": os.getloadavg()[0],
        }
        figures = {"machine": machine, "rows": rows, "replacement_ms": replacement}
        args.out.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
