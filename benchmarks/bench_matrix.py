"""Where a matrix run's time goes, per example, against the cost of the exchanges themselves.

Runs the runner (`run_matrix`, as `caiconform run` does) and splits its time with the timings
the runner journals (docs/internals.md, record key `timing`, cells.jsonl `timing`/`wall_s`):

- draw:     hypothesis drawing the examples, in the parent (cells.jsonl `draw_s` / drawn);
- transfer: a request's round trip less what the worker measured (pipes, JSON, the parent's
            threads);
- exchange: the family's `execute` in the worker (`execute_s`);
- health:   the after-example health check in the worker;
- shrink:   shrinking non-pass classes (cells.jsonl `shrink_s`, over all examples);
- confirm:  running each non-pass class's first example once more (cells.jsonl `confirm_s`);
- replace:  waiting for a replacement worker process (`replace_s`) plus detecting the crash or
            hang (`lost_s`), over all examples, and per crash/hang/poisoned example;
- prepare:  importing a cell's module and libraries in a worker process (`--preload` makes
            fork servers import every library before their first fork; `--slow-imports` gives
            the synthetic libraries a one-second import, as GPU libraries have).

The physical floor is the pure exchange: the run's passing examples run again in this process
(`worker.run_example`, no worker, no journal). Reported: examples/s achieved, the floor's
examples/s on the same number of workers, and the overhead ratio of passing examples (their
per-example cost in the run over the pure exchange). Goal (issue 11): <= 3x.

On a CPU, the default is the synthetic family (`tests.synthetic.checks`) with synthetic
libraries, a slow-importing crashing one among them. On a GPU machine, name a family and a cell:

    python benchmarks/bench_matrix.py --out bench_cpu.json
    python benchmarks/bench_matrix.py --family roundtrip --producer reference \
        --consumer reference --max-examples 1000 --out bench_roundtrip.json
    python benchmarks/bench_matrix.py --family streams --producer reference --consumer cupy \
        --out bench_streams.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SYNTHETIC = "tests.synthetic.checks"
SYNTHETIC_SOURCE = "tests.synthetic.adapters"
#: the synthetic matrix: passing libraries, a failing one, and crashing ones (one slow to import)
SYNTHETIC_LIBRARIES = ["good", "pid", "wrong", "raises", "abort", "slow-abort", "poison"]
_LOST = ("crash", "hang", "poisoned")


def _mean_ms(values: list[float]) -> float:
    return 1e3 * statistics.fmean(values) if values else 0.0


def _config(args: argparse.Namespace, out: Path):
    from caiconform.runner.config import RunConfig

    if args.family is None:
        checks, libraries, source = [SYNTHETIC], SYNTHETIC_LIBRARIES, SYNTHETIC_SOURCE
        if args.slow_imports:
            libraries = [f"slow-{name}" if name != "slow-abort" else name for name in libraries]
        only = None
        hooks = [f"{SYNTHETIC}:healthy"]
    else:
        checks = [args.family]
        libraries = list(dict.fromkeys(filter(None, (args.producer, args.consumer))))
        source = args.adapter_source
        only = [f"{args.family}/{args.producer or '-'}/{args.consumer or '-'}"]
        hooks = []
    return RunConfig(
        out=out,
        checks=checks,
        libraries=libraries,
        max_examples=args.max_examples,
        seed=args.seed,
        workers=args.workers,
        timeout_s=args.timeout,
        shrink=not args.no_shrink,
        shrink_budget_s=args.shrink_budget,
        health_hooks=hooks,
        adapter_source=source,
        fork_workers=not args.no_fork,
        preload_workers=args.preload,
        only_cells=only,
    )


def _pure_exchange(records: list[dict], limit: int) -> list[float]:
    """Seconds of each passing example's `execute` run again in this process."""
    from caiconform.runner.plan import load_families
    from caiconform.runner.worker import run_example

    passing = [r for r in records if r["outcome"] == "pass" and not r.get("shrunk")][:limit]
    times: list[float] = []
    executes: dict[str, str] = {}
    for record in passing:
        check = record["check"]
        if check not in executes:
            families, _ = load_families([check if check != "synthetic" else SYNTHETIC])
            executes[check] = families[0].execute
        producer, consumer = record["producer"], record["consumer"]
        run_example(executes[check], record["params"], producer, consumer)  # warm (imports)
        result, seconds = run_example(executes[check], record["params"], producer, consumer)
        if result.outcome == "pass":
            times.append(seconds)
    return times


def _breakdown(run_dir: Path, wall: float, workers: int, floor_limit: int) -> dict[str, Any]:
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    cells = [json.loads(line) for line in (run_dir / "cells.jsonl").read_text().splitlines()]
    explored = [r for r in records if not r.get("shrunk") and r["params"]]
    n = len(explored)
    timing = [r.get("timing") or {} for r in explored]

    def total(key: str, rows: list[dict] = timing) -> float:
        return sum(t.get(key, 0.0) for t in rows)

    drawn = sum(c.get("timing", {}).get("drawn", 0) for c in cells)
    draw_s = sum(c.get("timing", {}).get("draw_s", 0.0) for c in cells)
    shrink_s = sum(c.get("timing", {}).get("shrink_s", 0.0) for c in cells)
    confirm_s = sum(c.get("timing", {}).get("confirm_s", 0.0) for c in cells)
    lost = [r for r in explored if r["outcome"] in _LOST]
    lost_timing = [r.get("timing") or {} for r in lost]
    per_example_ms = {
        "draw": 1e3 * draw_s / drawn if drawn else 0.0,
        "transfer": 1e3 * total("transfer_s") / n if n else 0.0,
        "exchange": 1e3 * total("execute_s") / n if n else 0.0,
        "health": 1e3 * total("health_s") / n if n else 0.0,
        "shrink": 1e3 * shrink_s / n if n else 0.0,
        "confirm": 1e3 * confirm_s / n if n else 0.0,
        "replace": 1e3 * (total("replace_s") + total("lost_s")) / n if n else 0.0,
        "prepare": 1e3 * total("prepare_s") / n if n else 0.0,
    }
    prepare_total_s = total("prepare_s")
    passing = [r.get("timing") or {} for r in explored if r["outcome"] == "pass"]
    passing_ms = (
        _mean_ms(
            [t.get("execute_s", 0) + t.get("health_s", 0) + t.get("transfer_s", 0) for t in passing]
        )
        + per_example_ms["draw"]
    )
    pure = _pure_exchange(explored, floor_limit)
    pure_ms = _mean_ms(pure)
    worker_s = sum(c.get("wall_s", 0.0) for c in cells)
    return {
        "wall_s": wall,
        "workers": workers,
        "cells": len(cells),
        "examples": n,
        "shrunk": sum(1 for r in records if r.get("shrunk")),
        "outcomes": dict(Counter(r["outcome"] for r in explored)),
        "examples_per_s": n / wall if wall else 0.0,
        "per_example_ms": per_example_ms,
        "lost_examples": len(lost),
        "replacement_ms_per_lost": (
            1e3 * (total("replace_s", lost_timing) + total("lost_s", lost_timing)) / len(lost)
            if lost
            else None
        ),
        "cell_wall_s_sum": worker_s,
        "prepare_s_total": prepare_total_s,
        "pure_exchange_ms": pure_ms,
        "pure_exchange_n": len(pure),
        "floor_examples_per_s": workers / (pure_ms / 1e3) if pure_ms else None,
        "passing_example_ms": passing_ms,
        "overhead_ratio": passing_ms / pure_ms if pure_ms else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", help="a check family (default: the synthetic one)")
    parser.add_argument("--producer")
    parser.add_argument("--consumer")
    parser.add_argument("--adapter-source", default="caiconform.runner.libraries")
    parser.add_argument("--max-examples", type=int, default=200)
    parser.add_argument("--workers", type=int, default=None, help="default: the cores")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--shrink-budget", type=float, default=60.0)
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--no-fork", action="store_true", help="cold-started workers + spares")
    preload = parser.add_mutually_exclusive_group()
    preload.add_argument(
        "--preload",
        action="store_true",
        default=None,
        help="fork servers import every library up front (default: as `caiconform run`, when "
        "the run has GPU cells)",
    )
    preload.add_argument("--no-preload", dest="preload", action="store_false")
    parser.add_argument(
        "--slow-imports",
        action="store_true",
        help="synthetic libraries that take a second to import, as GPU libraries do",
    )
    parser.add_argument("--floor-examples", type=int, default=500, help="pure exchanges timed")
    parser.add_argument("--run-dir", type=Path, help="keep the run here (default: temporary)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    if args.family is None:
        sys.path.insert(0, str(ROOT))  # the synthetic family and libraries live in tests/
        os.environ["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])
        )

    with tempfile.TemporaryDirectory() as tmp:
        run_dir = args.run_dir or Path(tmp) / "run"
        config = _config(args, run_dir)
        from caiconform.runner.driver import run_matrix

        started = time.perf_counter()
        result = run_matrix(config)
        wall = time.perf_counter() - started
        figures = _breakdown(run_dir, wall, int(config.workers or 1), args.floor_examples)
    figures["notes"] = result.notes
    figures["command"] = " ".join([Path(sys.argv[0]).name, *(argv or sys.argv[1:])])
    figures["machine"] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "load_avg_1m": os.getloadavg()[0],
    }
    split = figures["per_example_ms"]
    print(
        f"{figures['examples']} examples in {wall:.2f} s on {figures['workers']} workers: "
        f"{figures['examples_per_s']:.0f} examples/s ({figures['cells']} cells, "
        f"{figures['shrunk']} shrunk, {figures['lost_examples']} crash/hang/poisoned)"
    )
    print("per example (ms): " + ", ".join(f"{k} {v:.3f}" for k, v in split.items()))
    if figures["replacement_ms_per_lost"] is not None:
        print(f"per crash/hang/poisoned example: {figures['replacement_ms_per_lost']:.1f} ms")
    if figures["overhead_ratio"] is not None:
        print(
            f"pure exchange {figures['pure_exchange_ms']:.3f} ms ({figures['pure_exchange_n']} "
            f"in-process), passing example {figures['passing_example_ms']:.3f} ms in the run: "
            f"overhead {figures['overhead_ratio']:.1f}x; physical floor on "
            f"{figures['workers']} workers {figures['floor_examples_per_s']:.0f} examples/s"
        )
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
