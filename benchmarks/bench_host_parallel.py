"""What the host itself gives P processes at once, without a GPU (issue 27): a run's workers
slow one another host-wide, so first measure the host's own parallel capacity.

- cpu: each process counts in a Python loop for 1.5 s (iterations per second);
- touch: each process fills 256 MiB it has just allocated, twice (GB/s): the GPU machines are
  Firecracker VMs whose memory is backed as it is first touched, so the first round may pay
  the hypervisor and the second not.

Usage: python benchmarks/bench_host_parallel.py [P ...]   (default 1 2 4 8 16 32)
Prints one table: per P, the rate of all processes together and per process.
"""

from __future__ import annotations

import multiprocessing as mp
import sys
import time

MIB = 256


def _cpu(barrier, queue) -> None:
    barrier.wait()
    n, end = 0, time.perf_counter() + 1.5
    while time.perf_counter() < end:
        for _ in range(1000):
            n += 1
    queue.put(n / 1.5)


def _touch(barrier, queue) -> None:
    import numpy as np

    rates = []
    for _ in range(2):
        barrier.wait()
        s = time.perf_counter()
        a = np.ones(MIB << 17)  # 8-byte elements: MIB MiB, written as allocated
        rates.append(a.nbytes / (time.perf_counter() - s) / 1e9)
        del a
    queue.put(rates)


def _measure(target, p: int) -> list:
    ctx = mp.get_context("fork")
    barrier, queue = ctx.Barrier(p), ctx.Queue()
    procs = [ctx.Process(target=target, args=(barrier, queue)) for _ in range(p)]
    for proc in procs:
        proc.start()
    got = [queue.get() for _ in procs]
    for proc in procs:
        proc.join()
    return got


def main() -> None:
    counts = [int(a) for a in sys.argv[1:]] or [1, 2, 4, 8, 16, 32]
    print(
        "| P | cpu: M loop iterations/s, all (each) | touch 1st: GB/s all (each) "
        "| touch 2nd: GB/s all (each) |"
    )
    print("|---|---|---|---|")
    for p in counts:
        cpu = _measure(_cpu, p)
        touch = _measure(_touch, p)
        first = [t[0] for t in touch]
        second = [t[1] for t in touch]
        print(
            f"| {p} | {sum(cpu) / 1e6:.1f} ({sum(cpu) / p / 1e6:.1f}) "
            f"| {sum(first):.1f} ({sum(first) / p:.2f}) "
            f"| {sum(second):.1f} ({sum(second) / p:.2f}) |",
            flush=True,
        )


if __name__ == "__main__":
    main()
