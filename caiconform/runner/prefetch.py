"""Cells' examples drawn in other processes, ahead of the cells that run them.

The parent's cell threads share one GIL, and drawn in the parent, hypothesis drawing a cell's
examples (`draws.draw_examples`) takes most of it while that cell's workers have nothing to run
(docs/performance.md: 71 % of the parent's GIL samples in a default matrix). A
cell's draws depend only on its family, producer, consumer, seed and example count
(`draws.seed_only_draws` keeps imported modules out of them), so a few spawned processes draw
them, in the order the cells will start, and a cell takes its list when it starts. A cell whose
list cannot come from the pool (the pool broke, the params do not pickle) draws for itself in
the parent: the same examples either way (tests/test_prefetch.py).

The pool's processes are started, and import what drawing needs (hypothesis, the run's check
modules), as soon as the pool is made: a run makes it at its start, beside the library probes
(`driver`), so the first cells, one per slot, wait only for their own draws once the plan is
known, not for processes to spawn and import first (docs/performance.md, "Figures behind the
code").
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from caiconform.draws import draw_examples

__all__ = ["Prefetch", "draw_cell", "processes_for"]

#: a matrix with fewer cells than this draws in the parent (the pool's start costs more)
MIN_CELLS = 32


def draw_cell(
    module: str, producer: str | None, consumer: str | None, seed: int, max_examples: int
) -> tuple[list[Any], str | None]:
    """(examples, error): the cell's drawn examples, as `draws.draw_examples` gives them in the
    parent; `error` is what stopped hypothesis early, formatted."""
    from caiconform.checks._memory import examples_of

    strategy = examples_of(importlib.import_module(module), producer, consumer)
    drawn, error = draw_examples(strategy, seed, max_examples)
    return drawn, None if error is None else f"{type(error).__name__}: {error}"


def processes_for(workers: int) -> int:
    """A quarter of the cores (at least 1, at most 8): the workers need the rest."""
    return max(1, min(8, (os.cpu_count() or workers) // 4))


def _ready(modules: tuple[str, ...]) -> None:
    """A pool process's start: import what its draws need (hypothesis comes with this module),
    the check modules `modules` among it; one that fails to import fails its cell's draw, which
    the parent then makes itself."""
    for name in ("caiconform.checks._memory", *modules):
        with contextlib.suppress(Exception):
            importlib.import_module(name)


def _nothing() -> None:
    return None


class Prefetch:
    """Draws submitted cells in a pool of spawned processes (spawn: the parent has threads and
    pipes to workers, which a fork would copy), each started at once and importing `modules`
    (the run's check modules) before it draws."""

    def __init__(self, processes: int, modules: Sequence[str] = ()) -> None:
        self._pool = ProcessPoolExecutor(
            processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_ready,
            initargs=(tuple(modules),),
        )
        self._futures: dict[str, Future] = {}
        # the pool spawns a process for each task submitted while none is idle: these start
        # every process now, not when the first cells' draws are submitted
        for _ in range(processes):
            self._pool.submit(_nothing)

    def submit(self, cells: Iterable[tuple[str, str, str | None, str | None, int, int]]) -> None:
        """cells: (key, module, producer, consumer, seed, max_examples), in start order."""
        for key, module, producer, consumer, seed, max_examples in cells:
            self._futures[key] = self._pool.submit(
                draw_cell, module, producer, consumer, seed, max_examples
            )

    def take(self, key: str) -> tuple[list[Any], str | None] | None:
        """The cell's draws (waiting for them), or None when the pool could not give them."""
        future = self._futures.pop(key, None)
        if future is None:
            return None
        try:
            return future.result()
        except Exception:  # a broken pool or unpicklable params: the cell draws itself
            return None

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
