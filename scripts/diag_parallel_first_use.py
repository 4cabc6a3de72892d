"""Whether new worker children can pay a library's first use side by side (issue 43: a run's
~220 new children spend ~105 s of slot time in their first examples, and one warmed spare per
slot only moved that cost into waiting for it, because a cell's deaths come back to back).

Several spares warming at once would help only if their first uses overlap: if the time is
each process's own CPU, N children take about as long as one; if it is a turn in the NVIDIA
driver that every process waits for, N take about N times as long. For each library (default:
the consumers that lose the most children in the default matrix), in a process of its own that
stands in for a fork server (`libraries.preload` of reference and the library, the roundtrip
family imported, no CUDA), N children are forked at once for each N given; each prepares as a
run's child does (`libraries.warm` of reference and the library) and runs one roundtrip example
reference -> library (float32, C layout). Prints one JSON object per library and N: the wall
time from the first fork to the last child's end, each child's steps, and the ratio of that
wall time to N=1's. Run on a GPU machine with the checkout on PYTHONPATH:
    python scripts/diag_parallel_first_use.py [--n 1,2,4,8] [NAME ...] > parallel.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

DEFAULT = ("numba", "numba-mlir", "cupy", "torch", "cuda.cccl", "pycuda")


def _child(name: str, write: int) -> None:
    from caiconform.checks import roundtrip
    from caiconform.runner import libraries
    from caiconform.spec.layout import Layout

    steps: dict[str, float] = {}
    for step, work in (
        ("warm reference", lambda: libraries.warm("reference")),
        (f"warm {name}", lambda: libraries.warm(name)),
        (
            "first example",
            lambda: roundtrip.execute(
                {"typestr": "<f4", "layout": Layout((3, 4)).to_dict(), "seed": 0},
                "reference",
                name,
            ),
        ),
    ):
        began = time.perf_counter()
        value = work()
        steps[step] = round(time.perf_counter() - began, 4)
    outcome = getattr(value, "outcome", None)
    os.write(write, json.dumps({"s": steps, "outcome": outcome}).encode())


def _fork(name: str) -> tuple[int, int]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            _child(name, write)
            os._exit(0)
        except BaseException as exc:  # noqa: BLE001 - the child's error is the diagnosis
            os.write(write, json.dumps({"error": f"{type(exc).__name__}: {exc}"[:300]}).encode())
            os._exit(1)
    os.close(write)
    return pid, read


def _collect(pid: int, read: int) -> dict:
    data = b""
    while chunk := os.read(read, 1 << 20):
        data += chunk
    os.close(read)
    _, status = os.waitpid(pid, 0)
    return json.loads(data) if data else {"error": f"child ended with status {status}"}


def at_once(name: str, count: int) -> dict:
    """`count` children forked at once for `name`; the wall time until the last has ended."""
    began = time.perf_counter()
    children = [_fork(name) for _ in range(count)]
    answers = [_collect(pid, read) for pid, read in children]
    return {"wall_s": round(time.perf_counter() - began, 3), "children": answers}


def one(name: str, counts: list[int]) -> list[dict]:
    import importlib

    from caiconform.runner import libraries

    importlib.import_module("caiconform.checks.roundtrip")
    libraries.preload("reference")
    libraries.preload(name)
    at_once(name, 1)  # the host's files in the page cache, as a run's later children find them
    rows, single = [], None
    for count in counts:
        row = {"library": name, "n": count, **at_once(name, count)}
        single = row["wall_s"] if count == 1 else single
        if single:
            row["ratio_to_one"] = round(row["wall_s"] / single, 2)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(DEFAULT))
    parser.add_argument("--n", default="1,2,4,8", help="children forked at once, comma-separated")
    args = parser.parse_args(argv)
    try:
        counts = sorted({int(part) for part in args.n.split(",") if part.strip()})
    except ValueError:
        print(f"--n takes comma-separated counts, not {args.n!r}", file=sys.stderr)
        return 2
    if not counts or counts[0] < 1:
        print("--n needs counts of at least 1", file=sys.stderr)
        return 2
    for name in args.names:
        # each library in a host of its own: what one imports must not reach the next's host
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                rows = one(name, counts)
            except BaseException as exc:  # noqa: BLE001 - reported as the library's row
                rows = [{"library": name, "error": f"{type(exc).__name__}: {exc}"[:300]}]
            os.write(write, json.dumps(rows).encode())
            os._exit(0)
        os.close(write)
        rows = _collect(pid, read)
        if isinstance(rows, dict):  # the host died before it answered
            rows = [{"library": name, **rows}]
        for row in rows:
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
