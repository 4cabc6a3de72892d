"""The run's start: probing libraries one after another in one worker against side by side
(`runner.startup.probe_all`), in one run on the same libraries.

A heavy GPU library takes seconds to import; the runner probes every library before it can
plan (`startup.Startup`). On a CPU the synthetic adapter source stands in: its `slow-*`
libraries take `SLOW_IMPORT_S` (1 s) to "import" in a process, like torch or JAX. Reported: the
seconds of each way and their ratio. The GPU figure is in the run's `run.json` `startup`
(docs/performance.md, 2026-11-24: probes of 12 libraries in 9.1 s side by side).

Usage: python benchmarks/bench_startup.py [--processes 8] [--out bench_startup.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "tests.synthetic.adapters"


def _timed(names: list[str], processes: int) -> float:
    from caiconform.runner.startup import probe_all

    started = time.perf_counter()
    infos = probe_all(SOURCE, names, processes)
    took = time.perf_counter() - started
    broken = [name for name, info in infos.items() if not info.available]
    if broken:
        raise SystemExit(f"bench_startup: probes failed for {', '.join(broken)}")
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.synthetic.adapters import SLOW_IMPORT_S, names

    slow = [name for name in names() if name.startswith("slow-")]
    sequential = _timed(slow, 1)
    parallel = _timed(slow, args.processes)
    result = {
        "libraries": len(slow),
        "import_s_each": SLOW_IMPORT_S,
        "processes": args.processes,
        "one_worker_s": round(sequential, 3),
        "side_by_side_s": round(parallel, 3),
        "speedup": round(sequential / parallel, 2),
    }
    print(
        f"{len(slow)} libraries of {SLOW_IMPORT_S:g} s: one worker {sequential:.2f} s, "
        f"{args.processes} side by side {parallel:.2f} s ({result['speedup']}x)"
    )
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
