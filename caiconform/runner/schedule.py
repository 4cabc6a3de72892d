"""Which cell runs when and where: cost estimates, longest-first order, shards, and the task
queue the cell threads share.

The wall time of a matrix is set by its longest cells, so cells start longest first (by
`estimate_cost`), and once no new cell is worth starting a free thread *helps* a cell still
running: it takes that cell's next undispatched example (the examples of a cell are independent
and are journaled in index order whoever ran them) or one of its shrink classes (each class is
shrunk sequentially, but classes are independent).

`shard_cells` splits a matrix over N machines or CI jobs: a greedy longest-first partition by
the static estimate, over every cell the families and library names give (runnable here or
not), so every shard computes the same split whatever is installed where.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from caiconform.rundir import RunDir

__all__ = [
    "LIBRARY_START_S",
    "FAMILY_EXAMPLE_S",
    "estimate_cost",
    "load_history",
    "parse_shard",
    "shard_cells",
    "Scheduler",
    "CellWork",
    "start_order",
    "WIDE_THREADS_PER_GPU",
    "wide_threads",
]

#: seconds a worker takes to start a library (import, CUDA context, first kernels), measured on
#: a GPU machine (docs/performance.md, "Figures behind the code"); libraries not listed count
#: DEFAULT_START_S
LIBRARY_START_S = {
    "torch": 3.0,
    "jax": 3.0,
    "cupy": 1.5,
    "numba": 1.5,
    "numba-from-cai": 1.5,
    "numba-kernel": 1.5,
    # numba-cuda-mlir's adapters: their cheapest cells start as numba-cuda's do
    "numba-mlir": 1.5,
    "numba-mlir-from-cai": 1.5,
    "numba-mlir-kernel": 1.5,
    "warp": 2.0,
    # cuda.compute compiles its transform for each dtype once per run (the builds are shared
    # on disk, adapters/_cccl_builds.py), and a cuda.cccl cell's first examples wait for those
    # compiles: the term keeps its cells starting early, as in the runs the estimates come from
    "cuda.cccl": 20.0,
}
DEFAULT_START_S = 0.5
#: seconds of cell wall per example of a family: a default matrix's cells.jsonl `wall_s` over
#: its results (docs/performance.md, "Figures behind the code"). Adversarial cells cost most
#: (crashes, poisoned contexts, shrinking, re-runs): estimated like the others, they would start
#: after the streams cells and the longest of them would end the run well after the rest
FAMILY_EXAMPLE_S = {
    "adversarial": 0.11,
    "streams": 0.055,
    "mask": 0.03,
    "roundtrip": 0.02,
    "versions": 0.02,
    "readonly": 0.016,
    # not measured: taken as readonly's (one plain array, a write, a read back)
    "aliasing": 0.016,
    "lifetime": 0.012,
    "schema": 0.012,
    "zero_size": 0.007,
    "agreement": 0.005,
    # the DLPack families, measured the same way (docs/performance.md)
    "dlpack_adversarial": 0.083,
    "dlpack_lifetime": 0.008,
    "dlpack_roundtrip": 0.008,
    "dlpack_copy": 0.004,
    "dlpack_streams": 0.004,
    "dlpack_versions": 0.002,
}
DEFAULT_EXAMPLE_S = 0.01
#: threads per GPU of the run that may take tasks of cells needing several GPUs (`Scheduler`
#: `wide_threads`): the devices family's cells, 4 helpers each (`cell.WIDE_HELPERS`), on
#: every thread that helped them made a fork server seeing every GPU per thread
WIDE_THREADS_PER_GPU = 4


def wide_threads(gpus: int) -> int:
    """The run's cap on threads taking wide cells' tasks: WIDE_THREADS_PER_GPU per GPU."""
    return WIDE_THREADS_PER_GPU * max(1, gpus)


def estimate_cost(
    family: str,
    libraries: Sequence[str],
    examples: int,
    history: Mapping[str, float] | None = None,
    key: str | None = None,
) -> float:
    """Estimated seconds of one cell: its examples (floor + max_examples) at the family's cost
    per example, plus starting its libraries. With `history` (cell key -> seconds per example,
    from an earlier run: `load_history`), the cell's own measured cost per example replaces the
    family's, which carries what the estimate cannot know: crashes, hangs, slow libraries."""
    start = sum(LIBRARY_START_S.get(name, DEFAULT_START_S) for name in libraries)
    per_example = FAMILY_EXAMPLE_S.get(family, DEFAULT_EXAMPLE_S)
    if history is not None and key is not None and key in history:
        per_example = history[key]
    return start + examples * per_example


def load_history(run_dir: Path) -> dict[str, float]:
    """Cell key -> measured seconds per example, from an earlier run's `cells.jsonl` (its
    `wall_s` over its number of examples). Raises ValueError when the file cannot be read."""
    path = RunDir(run_dir).cells
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None
    history = {}
    for line in lines:
        try:
            cell = json.loads(line)
        except ValueError:
            continue
        if not isinstance(cell, dict) or "wall_s" not in cell:
            continue
        examples = sum((cell.get("counts") or {}).values())
        if examples:
            history[str(cell["cell"])] = float(cell["wall_s"]) / examples
    return history


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` -> (I, N) with 1 <= I <= N; ValueError otherwise."""
    index, sep, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i = n = 0
    if not sep or n < 1 or not 1 <= i <= n:
        raise ValueError(f"expected I/N with 1 <= I <= N, got {text!r}")
    return i, n


def shard_cells(costs: Mapping[str, float], shard: tuple[int, int]) -> set[str]:
    """The cell keys shard (I, N) runs: cells sorted by cost (then key), each given to the
    least loaded shard so far (the lowest-numbered on a tie). Deterministic in `costs`."""
    index, count = shard
    loads = [0.0] * count
    mine = set()
    for key in sorted(costs, key=lambda k: (-costs[k], k)):
        target = min(range(count), key=lambda s: (loads[s], s))
        loads[target] += costs[key]
        if target == index - 1:
            mine.add(key)
    return mine


class CellWork(Protocol):
    """What the scheduler reads of a cell being run (`cell.CellRun`): these and nothing else."""

    #: estimated seconds of the whole cell (`estimate_cost`): the start order, and whether a
    #: thread starts it or helps a running cell instead
    cost: float
    #: whether other threads may take this cell's examples (False: a cell with its own worker)
    splittable: bool
    #: at most this many threads on the cell at once (None: no limit)
    helpers_cap: int | None
    #: the hardware queues its workers' CUDA contexts are made with (`forkserver.queues_for`;
    #: None: the default)
    queues: str | None
    #: whether it needs several GPUs (its tasks run on workers that see them all, taken by at
    #: most `wide_threads` threads)
    wide: bool

    def remaining(self) -> float:
        """Estimated seconds of its work not yet handed out."""
        ...

    def take(self) -> Any | None:
        """Its next task for any thread, or None when it has none to hand out now."""
        ...

    def finished(self) -> bool:
        """Whether it is done (or broken): the scheduler then drops it."""
        ...


def start_order(cells: Iterable[CellWork]) -> list[CellWork]:
    """The order cells start in: those that cannot be split, or only over a few threads, first
    (a cell on workers that see every GPU: few threads can help it, so started late and run
    whole on one worker it would end long after every other cell), then longest first."""
    return sorted(cells, key=lambda c: (c.splittable and c.helpers_cap is None, -c.cost))


class _Thread:
    """A cell thread as the scheduler sees it: the cell it works on."""

    def __init__(self) -> None:
        self.cell: CellWork | None = None


class Scheduler:
    """The queue of work the cell threads share.

    `next(thread)` hands out, in this order: the next task of the thread's own cell; a new cell
    (longest first among those whose workers want the hardware queues of the thread's last
    cell, `queues`, while any is left: a change replaces the slot's forked workers, each a
    prepare of about 2 s for the new worker's context, and plain longest-first order changes
    kind dozens of times in a run) unless a running cell's remaining work per
    helper is larger than that whole cell (it is then on the critical path, and the thread
    helps it instead); any task of a running cell (those of the thread's queues first). A new
    cell comes as the task `("start", cell)`: the thread prepares it (draws its examples) and
    takes its tasks from then on. It blocks while every cell left is being prepared or its last
    tasks run elsewhere (they may yet open shrink tasks), and returns None when nothing is left
    or `stop` is set.

    `wide_threads`: at most this many threads ever take tasks of cells that need several GPUs
    (`wide`; None: any). Each such thread keeps a second fork server whose children make a
    context on every GPU (`driver._wide_worker`); with every thread free to help, a run on two
    GPUs made one per thread, and their faulting consumers held up the GPUs' other processes.
    """

    def __init__(
        self,
        cells: Iterable[CellWork],
        stop: threading.Event,
        wide_threads: int | None = None,
    ) -> None:
        self.pending = start_order(cells)
        self.active: list[CellWork] = []
        self.stop = stop
        self.cond = threading.Condition()
        self._helpers: dict[int, int] = {}
        self.wide_threads = wide_threads
        #: the threads that have taken a wide cell's task
        self._wide: set[int] = set()

    def _may_take(self, me: _Thread, cell: CellWork) -> bool:
        """Whether `me` may take tasks of `cell`: any cell, except a wide one once
        `wide_threads` other threads have taken wide cells' tasks."""
        if not cell.wide or self.wide_threads is None:
            return True
        return id(me) in self._wide or len(self._wide) < self.wide_threads

    def thread(self) -> _Thread:
        return _Thread()

    def _attach(self, me: _Thread, cell: CellWork | None) -> None:
        if me.cell is not None:
            self._helpers[id(me.cell)] -= 1
        me.cell = cell
        if cell is not None:
            self._helpers[id(cell)] = self._helpers.get(id(cell), 0) + 1
            if cell.wide:
                self._wide.add(id(me))

    def _pick(self, me: _Thread) -> Any | None:
        own = me.cell
        if own is not None and not own.finished():
            task = own.take()
            if task is not None:
                return task
            if not own.splittable:
                return None  # wait for its own last tasks
        self.active = [c for c in self.active if not c.finished()]
        helpable = [
            c
            for c in self.active
            if c.splittable
            and c.remaining() > 0
            and (c.helpers_cap is None or self._helpers.get(id(c), 0) < c.helpers_cap)
            and self._may_take(me, c)
        ]
        best = max(
            helpable,
            key=lambda c: c.remaining() / (self._helpers.get(id(c), 0) + 1),
            default=None,
        )
        share = 0.0 if best is None else best.remaining() / (self._helpers.get(id(best), 0) + 1)
        mine = own.queues if own is not None else None
        allowed = [c for c in self.pending if self._may_take(me, c)]
        start = next((c for c in allowed if own is None or c.queues == mine), None)
        if allowed and start is None:
            start = allowed[0]
        if start is not None and not (best is not None and share > start.cost):
            self.pending.remove(start)
            self.active.append(start)
            self._attach(me, start)
            return ("start", start)

        def other_kind(cell: CellWork) -> bool:
            return own is not None and cell.queues != mine

        for cell in sorted(helpable, key=lambda c: (other_kind(c), -c.remaining())):
            task = cell.take()
            if task is not None:
                self._attach(me, cell)
                return task
        return None

    def next(self, me: _Thread) -> Any | None:
        with self.cond:
            while not self.stop.is_set():
                task = self._pick(me)
                if task is not None:
                    return task
                if not self.pending and all(c.finished() for c in self.active):
                    self._attach(me, None)
                    self.cond.notify_all()
                    return None
                self.cond.wait(0.2)
            return None

    def changed(self) -> None:
        """Wake threads waiting for work (a cell was prepared, finished its examples, ...)."""
        with self.cond:
            self.cond.notify_all()
