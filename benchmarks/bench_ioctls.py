"""How many NVIDIA driver ioctls, and how long, each step of an example makes (issue 27).

A run's examples wait for one another in the driver's ioctls whatever GPU they use
(docs/performance.md), so every ioctl an example makes costs the whole host. This counts them
per operation: the health check, the reference producer's memory kinds, stream and event
handling, first in a context that holds no device memory (a new worker's), then again once the
runner's health check has anchored it; and each available library producing a small array and
consuming the reference producer's. Needs a GPU and the ioctl clock preloaded
(benchmarks/ioctl_clock, see caiconform.runner.ioctls):
  LD_PRELOAD=$PWD/benchmarks/ioctl_clock/libioctlclock.so python benchmarks/bench_ioctls.py
Prints one table: per operation, NVIDIA ioctls and microseconds per call (after a warm-up).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

from caiconform.runner import ioctls

REPEAT = 50


def measure(name: str, op: Callable[[], object], repeat: int = REPEAT) -> None:
    try:
        op()  # warm-up: lazy loading, first allocation of a pool
        before, start = ioctls.counters(), time.perf_counter()
        for _ in range(repeat):
            op()
        wall = time.perf_counter() - start
        spent = ioctls.spent(before, ioctls.counters())
    except Exception as exc:  # one operation a library cannot do must not end the table
        print(f"| {name} | - | - | - | {type(exc).__name__}: {str(exc)[:80]} |", flush=True)
        return
    print(
        f"| {name} | {spent['nv_ioctl_n'] / repeat:.1f} | {1e6 * spent['nv_ioctl_s'] / repeat:.0f} "
        f"| {1e6 * wall / repeat:.0f} | |",
        flush=True,
    )


def main() -> None:
    if ioctls.counters() is None:
        sys.exit("the ioctl clock is not preloaded (LD_PRELOAD=.../libioctlclock.so)")
    from cuda.bindings import driver

    from caiconform.adapters import registry
    from caiconform.cuda import device, memkinds
    from caiconform.runner import health
    from caiconform.spec.layout import Layout

    device.ensure_context(0)
    print("| operation | NVIDIA ioctls | their us | us per op | note |")
    print("|---|---|---|---|---|")
    # first in a context that holds no device memory, as a new worker's is
    measure("cuda.context_healthy (the check without its anchor)", device.context_healthy)

    def alloc_free(n: int) -> Callable[[], None]:
        def op() -> None:
            err, ptr = driver.cuMemAlloc(n)
            driver.cuMemFree(ptr)

        return op

    for n in (1, 4096, 1 << 20, 4 << 20, 64 << 20):
        measure(f"cuMemAlloc + cuMemFree {n} B", alloc_free(n))

    def stream() -> None:
        err, s = driver.cuStreamCreate(1)
        driver.cuStreamDestroy(s)

    measure("cuStreamCreate + cuStreamDestroy", stream)

    def event() -> None:
        err, e = driver.cuEventCreate(0)
        driver.cuEventDestroy(e)

    measure("cuEventCreate + cuEventDestroy", event)
    for kind in memkinds.MEMORY_KINDS:
        measure(
            f"memory kind {kind}: allocate 4 KiB + free",
            lambda k=kind: memkinds.allocate(k, 4096).free(),
        )
    measure(
        "memory kind vmm with a guard (adversarial)",
        lambda: memkinds.allocate("vmm", 4096, guard=1).free(),
    )

    # the runner's check anchors the context after its first call (cuda.device.anchor_context):
    # from here on the process holds device memory, as a worker does after its first example
    measure("runner.health.check, its anchor made", health.check)
    measure("cuMemAlloc + cuMemFree 4096 B, anchor made", alloc_free(4096))
    measure(
        "memory kind device: allocate 4 KiB + free, anchor made",
        lambda: memkinds.allocate("device", 4096).free(),
    )
    values = np.arange(1024, dtype=np.float32)
    layout = Layout((1024,))
    reference = registry.get("reference")
    for name in ("reference", "cupy", "torch", "jax", "numba", "numba-from-cai", "cuda.core"):
        try:
            adapter = registry.get(name)
        except Exception as exc:
            print(f"| {name} | - | - | - | {exc} |")
            continue
        if "produce" in adapter.capabilities:
            measure(
                f"{name}: produce 1024 float32 and drop it",
                lambda a=adapter: a.produce(values, layout, "<f4"),
            )
        if "consume" in adapter.capabilities:
            measure(
                f"{name}: consume the reference producer's 1024 float32",
                lambda a=adapter: a.consume(reference.produce(values, layout, "<f4")),
            )


if __name__ == "__main__":
    main()
