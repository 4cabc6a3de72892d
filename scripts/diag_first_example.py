"""Why the first example of a fresh worker child is slow, on the GPU (issue 11).

In the H100 matrix of 2026-11-24 (seed 11) the first example a new child ran took 3-7 s where
its cell's median was 1 ms, 186 children, 220 worker-seconds. This reproduces such a child: every
library imported and frozen as the fork server does, then per case a forked child that prepares
the cell (`worker._prepare`, as the spare does in the background), runs the case's example under
cProfile (printing where the time went) and runs it once more. The cases are the slowest first
examples of that run (`diag_first_example_cases.json`).
Usage: python scripts/diag_first_example.py [cases.json] > first-example.txt
"""

from __future__ import annotations

import cProfile
import gc
import io
import json
import os
import pstats
import sys
import time
from pathlib import Path

from caiconform.runner import libraries
from caiconform.runner.worker import _prepare, run_example

SOURCE = "caiconform.runner.libraries"
#: what the matrix's fork servers preloaded on the H100 (`fork server: preloaded ...`)
LIBRARIES = [
    "cuda.cccl",
    "cuda.core",
    "cupy",
    "jax",
    "numba",
    "numba-from-cai",
    "numba-kernel",
    "pycuda",
    "reference",
    "rmm",
    "torch",
]


def _child(case: dict) -> None:
    module, producer, consumer = case["module"], case["producer"], case["consumer"]
    began = time.perf_counter()
    _prepare(module, producer, consumer, SOURCE)
    gc.freeze()
    prepared = time.perf_counter() - began
    profile = cProfile.Profile()
    began = time.perf_counter()
    profile.enable()
    result, _ = run_example(f"{module}:execute", case["params"], producer, consumer)
    profile.disable()
    first = time.perf_counter() - began
    _, again = run_example(f"{module}:execute", case["params"], producer, consumer)
    print(
        f"== {module.rsplit('.', 1)[1]}/{producer or '-'}/{consumer}: prepare {prepared:.2f} s, "
        f"first {first:.2f} s ({result.outcome}), again {again * 1000:.1f} ms "
        f"(in the matrix: {case['first_s']:.2f} s)"
    )
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(22)
    print("\n".join(text.getvalue().splitlines()[6:]))
    sys.stdout.flush()


def main() -> None:
    path = Path(
        sys.argv[1]
        if len(sys.argv) > 1
        else Path(__file__).with_name("diag_first_example_cases.json")
    )
    cases = json.loads(path.read_text())
    began = time.perf_counter()
    for name in LIBRARIES:
        libraries.preload(name)
    gc.freeze()
    print(f"preloaded every library in {time.perf_counter() - began:.2f} s", flush=True)
    for case in cases:
        pid = os.fork()
        if pid == 0:
            try:
                _child(case)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
