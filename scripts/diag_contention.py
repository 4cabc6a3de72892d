"""How examples slow down when K worker processes share one GPU (issue 11).

An example that takes a few ms alone took ~20x longer in the matrix run (16 workers on one
H100). This forks K processes (as the fork server does: imports first, CUDA only in the
children), each running one cell's floor examples round and round for `SECONDS`, and prints
per mix the median example time and the examples/s of each cell's processes together; CPU
spinners beside some (is it the cores or the GPU?).
Usage: python scripts/diag_contention.py (the mixes are `MIXES`)
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time

from caiconform.runner import libraries
from caiconform.runner.worker import _prepare, run_example

SOURCE = "caiconform.runner.libraries"
LIFETIME = ("caiconform.checks.lifetime", None, "reference")
STREAMS = ("caiconform.checks.streams", "reference", "numba")
ROUNDTRIP = ("caiconform.checks.roundtrip", "reference", "numba")
#: (mix, CPU spinners): what runs side by side
MIXES = [
    ([(LIFETIME, 1)], 0),
    ([(LIFETIME, 16)], 0),
    ([(STREAMS, 1)], 0),
    ([(STREAMS, 16)], 0),
    ([(LIFETIME, 8), (STREAMS, 8)], 0),
    ([(ROUNDTRIP, 8), (STREAMS, 8)], 0),
    ([(ROUNDTRIP, 8)], 0),
    ([(LIFETIME, 8)], 8),
    ([(LIFETIME, 8)], 24),
]
SECONDS = 6.0


def _child(cell: tuple, out_dir: str, barrier_fd: int, ready_fd: int, which: int) -> None:
    import importlib

    module, producer, consumer = cell
    _prepare(module, producer, consumer, SOURCE)
    params = [f.params for f in importlib.import_module(module).floor(producer, consumer)]
    for p in params[:3]:
        run_example(f"{module}:execute", p, producer, consumer)  # warm up
    os.write(ready_fd, b"r")
    os.read(barrier_fd, 1)  # all start together
    times, i, end = [], 0, time.perf_counter() + SECONDS
    while time.perf_counter() < end:
        _, seconds = run_example(f"{module}:execute", params[i % len(params)], producer, consumer)
        times.append(seconds)
        i += 1
    # a file per child: one pipe write of more than PIPE_BUF bytes interleaves with others
    with open(os.path.join(out_dir, f"{os.getpid()}.json"), "w") as fh:
        json.dump([which, times], fh)


def _burn() -> None:
    while True:
        pass


def measure(mix: list[tuple[tuple, int]], burn: int) -> list[str]:
    """Run `count` processes of each (cell, count) of `mix` together (and `burn` CPU
    spinners); one line per cell: its examples/s (all its processes) and example times."""
    out_dir = tempfile.mkdtemp()
    brfd, bwfd = os.pipe()
    ready_r, ready_w = os.pipe()
    pids: list[tuple[int, int]] = []
    k = sum(count for _, count in mix)
    for which, (cell, count) in enumerate(mix):
        for _ in range(count):
            pid = os.fork()
            if pid == 0:
                try:
                    _child(cell, out_dir, brfd, ready_w, which)
                finally:
                    os._exit(0)
            pids.append(pid)
    burners = []
    for _ in range(burn):
        pid = os.fork()
        if pid == 0:
            _burn()
        burners.append(pid)
    os.close(ready_w)
    ready = b""
    while len(ready) < k and (chunk := os.read(ready_r, k)):  # every child warmed up
        ready += chunk
    os.write(bwfd, b"x" * k)
    for pid in pids:
        os.waitpid(pid, 0)
    for pid in burners:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    times: dict[int, list[float]] = {}
    for name in os.listdir(out_dir):
        with open(os.path.join(out_dir, name)) as fh:
            which, got = json.load(fh)
        times.setdefault(which, []).extend(got)
    mixed = " + ".join(f"{_label(c)} x{n}" for c, n in mix) + (
        f" + {burn} CPU spinners" if burn else ""
    )
    lines = []
    for which, (cell, _count) in enumerate(mix):
        got = sorted(times.get(which, []))
        if not got:
            lines.append(f"[{mixed}] {_label(cell)}: no examples (a child died)")
            continue
        n = len(got)
        lines.append(
            f"[{mixed}] {_label(cell)}: {n / SECONDS:.0f} examples/s, median "
            f"{statistics.median(got) * 1e3:.1f} ms, p90 {got[int(0.9 * n)] * 1e3:.1f} ms"
        )
    return lines


def _label(cell: tuple) -> str:
    return f"{cell[0].rsplit('.', 1)[1]}/{cell[1] or '-'}/{cell[2]}"


def main() -> None:
    for name in ("reference", "numba"):
        libraries.preload(name)
    import gc

    gc.freeze()
    for mix, burn in MIXES:
        for line in measure(mix, burn):
            print(line, flush=True)


if __name__ == "__main__":
    main()
