"""Where a fresh worker child's first example goes (issue 11): on the H100 the first example of
each new child took ~2-2.8 s (adversarial cells of CuPy, numba, torch, cuda.cccl, cuda.core),
later ones ~0.3 ms, over 140 new children per default run. Each library in a fresh process
of its own, as a fork child would be (the library imported first, as the zygote does): the
cell's prepare (`libraries.warm`), then the first CUDA context alone, then the first two
examples of its adversarial cell, the first one profiled (cProfile, top functions by
cumulative time). Prints one JSON line per library, then the profiles.
  python3 scripts/diag_first_example.py [LIBRARY ...]
"""

from __future__ import annotations

import subprocess
import sys

CHILD = r"""
import cProfile, io, json, pstats, sys, time
lib = sys.argv[1]
t = {}
s = time.perf_counter()
from caiconform.runner import libraries, worker
from caiconform.runner.prefetch import draw_cell
import caiconform.checks.adversarial
libraries.preload(lib)
t["import_s"] = time.perf_counter() - s
drawn, _ = draw_cell("caiconform.checks.adversarial", None, lib, 11, 20)
s = time.perf_counter(); libraries.warm(lib); t["warm_s"] = time.perf_counter() - s
s = time.perf_counter()
from caiconform.cuda.device import current_device
current_device()
t["context_s"] = time.perf_counter() - s
execute = "caiconform.checks.adversarial:execute"
profile = cProfile.Profile()
runs = []
for i, params in enumerate(drawn[:6]):
    s = time.perf_counter()
    if i == 0:
        profile.enable()
    result, _ = worker.run_example(execute, params, None, lib)
    if i == 0:
        profile.disable()
    runs.append((round(time.perf_counter() - s, 4), result.outcome))
t["examples"] = runs
print(json.dumps({"library": lib, **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in t.items()}}))
out = io.StringIO()
pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(28)
print("\n".join(line[:200] for line in out.getvalue().splitlines()[:60]))
"""

LIBRARIES = ["cupy", "torch", "numba", "cuda.cccl", "cuda.core", "numba-from-cai", "pycuda"]


def main() -> None:
    for lib in sys.argv[1:] or LIBRARIES:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, lib], capture_output=True, text=True, timeout=300
        )
        print(f"== {lib} (exit {done.returncode})")
        print(done.stdout)
        if done.returncode:
            print(done.stderr[-2000:])


if __name__ == "__main__":
    main()
