"""Run the matrix: hypothesis draws examples in the parent, workers run them, the journal keeps
every result.

Each cell is driven in two steps, both seeded from the run's seed and the cell's key so they see
the same examples in the same order (and nothing else: `draws.seed_only_draws` keeps the modules
a process has imported out of hypothesis's draws):

1. *explore*: `max_examples` examples, no shrinking; every one is run in the cell's worker and
   journaled. The test function never fails, so every example is tried and counted.
2. *shrink*: for each (outcome, rule) class other than pass/skip that explore met, hypothesis runs
   again and fails on that class. The explore examples replay from a cache (no worker call) up
   to the first of the class; hypothesis then shrinks it, running each candidate in the worker,
   and the minimal example is journaled with `"shrunk": true` and a reproducer. A time budget per
   class bounds the cost (a hang costs a whole timeout per try): past it, untried candidates
   count as uninteresting and hypothesis settles on the smallest found so far.

`--resume` uses the same replay: a partial cell's journaled examples fill the cache, so hypothesis
walks through them without rerunning or rejournaling them and continues where the run stopped.

Cells run in parallel, one thread per worker slot; each thread drives its own hypothesis engine
(thread-safe since hypothesis 6.136; with an older one, cells run one at a time).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import secrets
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

import hypothesis
from hypothesis import Phase, given, seed

from caiconform.adapters import selfcheck
from caiconform.adapters.entries import entry_of
from caiconform.env import visible_gpus
from caiconform.results.expectations import is_correct_rejection
from caiconform.results.outcome import CRASH, HANG, OUTCOMES, PASS, POISONED, SKIP, Result
from caiconform.results.record import coverage_of_params, family_skip_record
from caiconform.runner.calibrate import SPIN_ENV, SPIN_FILE, SPIN_FILE_ENV
from caiconform.runner.draws import hypothesis_settings, seed_only_draws
from caiconform.runner.forkserver import QUEUES_ENV, queues_for
from caiconform.runner.journal import Journal, JournalError
from caiconform.runner.libraries import LibraryInfo
from caiconform.runner.plan import Cell, UsageError, load_families, plan_cells
from caiconform.runner.pool import (
    Exchange,
    Worker,
    WorkerPool,
    choose_workers,
    forks_here,
)
from caiconform.runner.pool import default_workers as _default_workers
from caiconform.runner.prefetch import MIN_CELLS, Prefetch, draw_cell, processes_for
from caiconform.runner.protocol import canonical
from caiconform.runner.repro import write_repro
from caiconform.runner.resolve import resolve
from caiconform.runner.schedule import (
    Scheduler,
    estimate_cost,
    load_history,
    shard_cells,
    start_order,
    wide_threads,
)
from caiconform.runner.startup import Startup, save_run_meta
from caiconform.runner.worker import taints_of
from caiconform.runner.zygote import Zygote

__all__ = [
    "RunConfig",
    "RunResult",
    "Listener",
    "run_matrix",
    "summarize",
    "skip_record",
    "default_workers",
    "UsageError",
]

DEFAULT_TIMEOUT_S = 30.0
#: seconds of shrinking per (outcome, rule) class; classes the floor met are not shrunk at all
DEFAULT_SHRINK_BUDGET_S = 20.0
#: `--shrink-patience S`: a class's shrink also stops once S seconds, and
#: SHRINK_PATIENCE_EXCHANGES exchanges, brought no smaller example of it; 0 (the default): the
#: budget alone. Measured on the H100 (2026-11-25, seed 11,
#: reports/2026-11-25-h100-prepare-shrink): 5 s cut the matrix's shrinking from 179 to
#: 114-116 s of the slots' time, but cuda.cccl's classes (a kernel build per dtype, seconds
#: per exchange) found their first smaller example only after 14-40 exchanges and 13-18 s, and
#: kept drawn 2- and 4-d examples instead of 1-d int8 ones, with seconds alone and with 10
#: exchanges as well: a reproducer for a maintainer is worth more than the ~4 s of wall saved
DEFAULT_SHRINK_PATIENCE_S = 0.0
SHRINK_PATIENCE_EXCHANGES = 10
#: floor examples of one layout kind (or, without one, one mutation) that may end in
#: crash/hang/poisoned before the rest of that kind is skipped (see `_Job.kind`)
FLOOR_CRASH_CAP = 2
#: drawn examples of one kind (params `kind`, `mutation`, `rule`, layout kind: `crash_kind`)
#: that may end in crash/hang/poisoned (or leave their worker untrusted) in a cell before the
#: rest of that kind there is skipped. Each such example costs a fresh process (on the H100
#: 2-3 s: a CUDA context and the library's first exchange); seed 11's default matrix had 92
#: drawn ones, 55 of them after the third of their kind (simulated on that run's journal), and
#: runs with the cap kept every finding group (reports/2026-11-25-h100-crashes)
#: (`RunConfig.drawn_crash_cap`, `--drawn-crash-cap`; 0 runs them all)
DRAWN_CRASH_CAP = 3
#: how long a thread of the run's parent may hold the GIL while others wait for it (Python's
#: default is 5 ms). Each example's answer is read by a cell thread that needs the GIL, while
#: other threads shrink with hypothesis or journal records: on the H100 at 1,000 examples per
#: cell the parent held its GIL 44 % of the time and the examples' round trips outside the
#: workers took 801 of the workers' 2,424 s (2026-11-25). SWITCH_INTERVAL_ENV overrides it
#: (seconds), to measure it
SWITCH_INTERVAL_S = 0.0005
SWITCH_INTERVAL_ENV = "CAICONFORM_SWITCH_INTERVAL_S"
#: a cell's examples sent to a worker in one request (`Worker.run_many`, `RunConfig.batch`):
#: the worker runs the next while the parent reads, judges and journals the last, instead of
#: waiting for the round trip (on the H100, 2026-11-25, seed 11: 2.8 ms of transfer and 1.7
#: ms of the parent's turnaround per example, against 0.3 ms for the 20,853 examples an
#: adapter skips). A batch is at most a quarter of what the cell has left (BATCH_SHARE), so
#: helpers still share a cell's last examples
DEFAULT_BATCH = 8
BATCH_SHARE = 4
#: saved settings a resumed run takes from the command line when given there
_OVERRIDABLE = ("timeout_s", "shrink_budget_s", "shrink_patience_s")
_THREAD_SAFE_HYPOTHESIS = (6, 136)
_LOST = (CRASH, HANG, POISONED)


@dataclass
class RunConfig:
    """Settings of one run. Those that change which examples a run draws (`checks`,
    `libraries`, `max_examples`, `seed`) are saved in `run.json` and reused by `resume`."""

    out: Path
    checks: list[str]
    libraries: list[str] | None = None
    max_examples: int = 100
    seed: int | None = None
    #: cell threads, one worker slot each; None: `default_workers` (WORKERS_PER_GPU per GPU,
    #: at most the cores; the cores without a GPU)
    workers: int | None = None
    #: None: the resumed run's value, else DEFAULT_TIMEOUT_S
    timeout_s: float | None = None
    gpus: int | None = None
    shrink: bool = True
    #: None: the resumed run's value, else DEFAULT_SHRINK_BUDGET_S
    shrink_budget_s: float | None = None
    #: None: the resumed run's value, else DEFAULT_SHRINK_PATIENCE_S (0: no patience limit)
    shrink_patience_s: float | None = None
    health_hooks: Sequence[str] = ()
    adapter_source: str = "caiconform.runner.libraries"
    resume: bool = False
    run_id: str | None = None
    #: drawn examples of one kind that may be lost in a cell before the rest of that kind is
    #: skipped (DRAWN_CRASH_CAP; 0: no cap)
    drawn_crash_cap: int = DRAWN_CRASH_CAP
    #: keep a prepared spare process per worker slot (see `Worker`)
    spare_workers: bool = True
    #: calibrate the streams spin on this machine when streams cells run on a GPU
    calibrate_spin: bool = True
    #: each worker slot is a fork server (`forkserver.py`): libraries imported once, a crashed
    #: worker replaced by a fork (Linux; spare_workers then applies to nothing)
    fork_workers: bool = True
    #: fork servers import the run's check modules and available libraries before their first
    #: fork (`forkserver.PRELOAD_ENV`) instead of as cells need them: no children replaced
    #: when a cell brings a new library, but every worker pays every import up front. None:
    #: when the run has GPU cells (the H100, 2026-11-23, seed 11 of the default matrix:
    #: 176.5 s with, 273.7 s without, the same finding groups); on a CPU with one-second
    #: synthetic imports and few cells per worker it is 1.20x slower (bench_matrix.py)
    preload_workers: bool | None = None
    #: with fork servers that preload and start with the run (`_starts_early`): fork them from
    #: one process that imported the libraries once (`runner.zygote`) instead of each importing
    #: them itself (the H100, 2026-11-24, seed 11 on fresh machines: 107.1 and 118.0 s with, the
    #: start 8.5-10.1 s; 125.3 s without, the start 14.9 s, its 16 servers importing for 13.2 s
    #: each; the same 302 finding groups)
    zygote: bool = True
    #: on a GPU, compile at the run's start, in processes of their own, what each worker
    #: process would otherwise compile for itself (the adapter source's `builds`: cuda.cccl's
    #: builds per element type)
    warm_builds: bool = True
    #: draw cells' examples in spawned processes ahead of the cells (`prefetch.py`); None:
    #: when the matrix has at least `prefetch.MIN_CELLS` cells to run
    prefetch_draws: bool | None = None
    #: run the first example of each non-pass class of a cell once more, and say in
    #: cells.jsonl `confirmed` whether it gave the same class (`_CellRun.run_confirm`)
    confirm: bool = True
    #: (I, N): run only shard I of N of the matrix (`schedule.shard_cells`)
    shard: tuple[int, int] | None = None
    #: an earlier run directory whose cells.jsonl informs the cost estimates
    costs_from: Path | None = None
    #: run only the cells with these keys ("family/producer/consumer"; benchmarks)
    only_cells: Sequence[str] | None = None
    #: examples per request to a worker (DEFAULT_BATCH; 1: one at a time)
    batch: int = DEFAULT_BATCH
    #: the memory kinds examples may draw (`caiconform.cuda.memkinds`); None: those
    #: `checks._memory.KINDS_ENV` names, else every kind; a resumed run keeps its own
    memory_kinds: Sequence[str] | None = None

    def saved(self) -> dict[str, Any]:
        return {
            "checks": self.checks,
            "libraries": self.libraries,
            "max_examples": self.max_examples,
            "seed": self.seed,
            "shrink": self.shrink,
            "confirm": self.confirm,
            "adapter_source": self.adapter_source,
            "timeout_s": self.timeout_s,
            "shrink_budget_s": self.shrink_budget_s,
            "shrink_patience_s": self.shrink_patience_s,
            "shard": list(self.shard) if self.shard is not None else None,
            "drawn_crash_cap": self.drawn_crash_cap,
            "memory_kinds": list(self.memory_kinds) if self.memory_kinds is not None else None,
        }


@dataclass
class RunResult:
    """What a finished (or interrupted) run leaves: where, and its records."""

    run_id: str
    run_dir: Path
    records: list[dict[str, Any]]
    skipped: list[tuple[str, str]]
    interrupted: bool = False
    resumed_cells: int = 0
    notes: list[str] = field(default_factory=list)


class Listener(Protocol):
    """Progress callbacks; called from the cell threads, so implementations must be
    thread-safe."""

    def planned(self, cells: Sequence[Cell], skipped: Sequence[tuple[str, str]]) -> None: ...
    def cell_started(self, cell: Cell, already: int) -> None: ...
    def example(self, cell: Cell, record: dict[str, Any]) -> None: ...
    def cell_finished(self, cell: Cell, counts: Counter) -> None: ...


class _Stopped(BaseException):
    """Raised inside a hypothesis test to abandon the cell (a BaseException, so hypothesis lets
    it through instead of shrinking it)."""


class _Found(Exception):
    """Raised inside the shrink test when an example lands in the class being shrunk."""

    def __init__(self, params: dict, exchange: Exchange) -> None:
        super().__init__(params)
        self.params = params
        self.exchange = exchange


#: threads that may work on one cell needing several GPUs at once, each with a worker that sees
#: every GPU (a fork server importing every library, and its children's contexts on each GPU)
WIDE_HELPERS = 4


def _cell_seed(run_seed: int, key: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{run_seed}/{key}".encode()).digest()[:8], "little")


def _class_of(result: Result | dict) -> tuple[str, str | None]:
    if isinstance(result, dict):
        return result["outcome"], result.get("rule")
    return result.outcome, result.rule


_settings = hypothesis_settings


@dataclass
class _Job:
    """One example of a cell: its place in the cell's journal order and what it runs."""

    position: int
    #: the record's `index` (floor and drawn examples each count from 0)
    index: int
    params: dict
    key: str
    tag: str
    #: the floor's coverage labels; None for a drawn example
    coverage: dict | None = None

    #: the family's own `crash_kind(params)` for drawn examples, when it has one
    family_kind: Callable[[dict], str] | None = None

    @property
    def kind(self) -> str:
        return crash_kind(self.params, self.coverage, self.family_kind)


def crash_kind(
    params: dict, coverage: dict | None, family_kind: Callable[[dict], str] | None = None
) -> str:
    """What the crash caps count by. A floor example's (`coverage` given): the layout kind,
    or for examples with none (the adversarial floor's mutants) the rule the mutation
    breaks, so two crashes on one mutation do not skip the mutants of every other rule. A
    drawn example's: its params' `kind`, `mutation` and `rule` (adversarial's live mutations
    and mutants: a mutant's rule is the one it breaks) and layout kind, those it has; "" when
    it has none (such examples are not capped: nothing tells them apart). Without the rule,
    a cell's mutants were one kind: at 1,000 examples three crashes on some rules skipped
    the mutants of every other, and five single-example crash groups were not found. A
    family module's own `crash_kind(params)` (`family_kind`) names its drawn examples' kind
    instead (devices: params that name none, whose lost examples were never capped)."""
    if coverage is None and family_kind is not None:
        return family_kind(params)
    if coverage is None:
        layout = params.get("layout")
        parts = [
            f"{name} {value!r}"
            for name, value in (
                ("kind", params.get("kind")),
                ("mutation", params.get("mutation")),
                ("rule", params.get("rule")),
                ("layout", layout.get("kind") if isinstance(layout, dict) else None),
            )
            if isinstance(value, str)
        ]
        return f"drawn examples of {', '.join(parts)}" if parts else ""
    if coverage.get("layout"):
        return f"layout {coverage['layout']!r}"
    if coverage.get("mutation"):
        return f"mutation {coverage['mutation']!r}"
    return "the floor"


class _CellRun:
    """One cell: its examples (the floor's, then hypothesis's draws), run by whichever threads
    take them and journaled in order; then one shrink per non-pass class.

    The examples are independent, so `take()` hands them to any thread that asks (the
    scheduler's) and `_flush` journals the finished prefix in index order: the journal, and
    so `--resume`, read the same whoever ran what. The crash caps are decided in that order
    too (a capped example that ran anyway is journaled as the skip it would have been).
    """

    def __init__(
        self,
        cell: Cell,
        journal: Journal,
        config: RunConfig,
        listener: Listener | None,
        stop: threading.Event,
        cost: float = 1.0,
        changed: Callable[[], None] = lambda: None,
        notes: list[str] | None = None,
        prefetch: Prefetch | None = None,
    ) -> None:
        self.cell = cell
        self.prefetch = prefetch
        #: the floor's jobs run while the drawn ones are still being drawn
        self.drawing = False
        self.journal = journal
        self.config = config
        self.listener = listener
        self.stop = stop
        self.cost = cost
        self.changed = changed
        self.notes = notes if notes is not None else []
        #: other threads may run this cell's examples
        self.splittable = True
        #: a cell that needs several GPUs runs on workers that see them all, one per thread
        #: (`_drive`), on at most WIDE_HELPERS threads at once
        self.wide = cell.gpus >= 2
        self.helpers_cap = WIDE_HELPERS if self.wide else None
        #: the hardware queues its workers' contexts are made with (`forkserver.queues_for`):
        #: the scheduler keeps a thread on cells of one kind, since a change costs new workers
        self.queues = queues_for(cell.family.module)
        self.seed = _cell_seed(int(config.seed or 0), cell.key)
        self.cache: dict[str, dict] = {}  # params key -> record (or unjournaled shrink attempt)
        self.explored: list[dict] = []
        self.shrunk_classes: set[tuple[str, str | None]] = set()
        self.floor_planned = 0
        for record in journal.records_of(cell.family.name, cell.producer, cell.consumer):
            if record.get("shrunk"):
                self.shrunk_classes.add(_class_of(record))
            elif record.get("index") is not None:
                self.cache[canonical(record["params"])] = record
                self.explored.append(record)
        self.lock = threading.Lock()
        self.strategy: Any = None
        self.jobs: list[_Job] = []
        self.dispatched = 0
        #: jobs handed out in a batch that ended before them (its process lost): next out
        self.returned: list[_Job] = []
        self.results: dict[int, Exchange] = {}
        self.journaled = 0
        #: kind -> positions of the lost among finished examples (-1: journaled before)
        self.ran_lost: dict[str, list[int]] = {}
        self.journal_crashes: Counter = Counter()  # the same, in journal order (authoritative)
        for record in self.explored:  # `--resume`: what the journal already holds counts
            ran = record.get("worker") is not None  # a capped record never ran
            if ran and self._costly(record["params"], Result.from_dict(record)):
                coverage = record.get("coverage") if record.get("floor") else None
                kind = crash_kind(record["params"], coverage, self._family_kind)
                self.ran_lost.setdefault(kind, []).append(-1)
                self.journal_crashes[kind] += 1
        self.draw_error: str | None = None
        #: classes to shrink, queued as their first drawn example is journaled (`_note`)
        self.targets: list[tuple[str, str | None]] = []
        #: the first record of each non-pass class, to run once more (`run_confirm`)
        self.confirms: list[dict] = []
        #: explored records `_note` has looked at; the classes it met (floor's, queued to
        #: shrink, queued to run again)
        self.noted = 0
        self.floor_classes: set[tuple[str, str | None]] = set()
        self.queued_classes: set[tuple[str, str | None]] = set()
        self.confirm_classes: set[tuple[str, str | None]] = set()
        #: what running them again gave: cells.jsonl `confirmed`
        self.confirmed: list[dict] = []
        #: how each class's shrink went: cells.jsonl `shrinks`
        self.shrinks: list[dict] = []
        self.shrinking = 0
        self.state = "new"  # -> "running" -> "shrinking" -> "done" | "broken"
        self.started = 0.0
        self.timing: Counter = Counter()

    # -- what the scheduler asks ---------------------------------------------------------
    def finished(self) -> bool:
        return self.state in ("done", "broken")

    def remaining(self) -> float:
        """Estimated seconds of work not yet handed out."""
        if self.state == "new":
            return self.cost
        if self.state not in ("running", "shrinking"):
            return 0.0
        # a class's shrinking runs up to its budget, on one thread: on the H100 a cell's classes
        # left to shrink were its last minute, ended by one thread while others began new cells
        per_example = self.cost / max(1, len(self.jobs))
        budget = self.config.shrink_budget_s or DEFAULT_SHRINK_BUDGET_S
        left = len(self.targets) * budget / 2 + len(self.confirms) * per_example
        if self.state == "running":
            left += self._undispatched() * per_example
        return left

    def _undispatched(self) -> int:
        return len(self.jobs) - self.dispatched + len(self.returned)

    def take(self) -> tuple | None:
        """The next task of this cell for any thread: a class to shrink, a batch of examples
        (`_batch`), or an example to run again."""
        with self.lock:
            if self.state not in ("running", "shrinking"):
                return None
            # classes to shrink first, while the cell's examples still run: each is one long
            # task on one thread (up to the shrink budget); begun once the cell's examples
            # had all run, the shrink of adversarial/-/pycuda's poisoned class was the run's
            # last 8 s on the H100 (2026-11-25). The re-runs are short and fill in
            if self.targets:
                self.shrinking += 1
                return ("shrink", self, self.targets.pop(0))
            if self.state == "running" and self._undispatched():
                return ("examples", self, self._batch())
            if self.confirms:
                self.shrinking += 1
                return ("confirm", self, self.confirms.pop(0))
            return None

    def _batch(self) -> list[_Job]:
        """The next examples to hand out (the lock held): those returned first, then the
        undispatched, up to `config.batch` and a BATCH_SHARE-th of what is left."""
        left = self._undispatched()
        size = max(1, min(self.config.batch, -(-left // BATCH_SHARE)))
        batch = self.returned[:size]
        del self.returned[:size]
        more = min(size - len(batch), len(self.jobs) - self.dispatched)
        batch += self.jobs[self.dispatched : self.dispatched + more]
        self.dispatched += more
        return batch

    # -- one example --------------------------------------------------------------------
    def _exchange(self, params: dict, worker: Worker) -> Exchange:
        return next(self._exchanges([params], worker))

    def _journal(
        self,
        params: dict,
        exchange: Exchange,
        index: int | None,
        tag: str,
        coverage: dict | None = None,
    ) -> dict:
        result = exchange.result
        floor = coverage is not None
        record = {
            "producer": self.cell.producer,
            "consumer": self.cell.consumer,
            "check": self.cell.family.name,
            "rule": result.rule,
            "outcome": result.outcome,
            "params": params,
            "message": result.message,
            "seen": result.seen,
            "expected": result.expected,
            "repro": None,
            "duration_s": round(exchange.duration_s, 6),
            "worker": exchange.worker,
            "index": index,
            "shrunk": index is None,
            "coverage": coverage if floor else coverage_of_params(params),
            "floor": floor,
            "entry": entry_of(self.cell.consumer, params),
        }
        if result.culprit:
            record["culprit"] = result.culprit
        harness = selfcheck.harness_culprit(record, self.journal.run_dir)
        if harness is not None:
            record["culprit"] = harness
        if exchange.timing:
            record["timing"] = {k: round(v, 6) for k, v in exchange.timing.items()}
        if not result.ok:
            record["repro"] = write_repro(
                self.journal.run_dir, self.cell.family.module, record, tag
            )
        return self.journal.record(record)

    @property
    def _family_kind(self) -> Callable[[dict], str] | None:
        return getattr(self.cell.family.module, "crash_kind", None)

    def _costly(self, params: dict, result: Result) -> bool:
        """Did the example cost its worker process: lost (crash, hang, poisoned), or one the
        family's `taints` retires (`worker._taints`)? What the crash caps count."""
        return result.outcome in _LOST or taints_of(self.cell.family.module, params, result)

    def _cap(self, job: _Job) -> int:
        """How many lost examples of `job`'s kind skip the rest of that kind (0: none)."""
        if job.coverage is not None:
            return FLOOR_CRASH_CAP
        return self.config.drawn_crash_cap if job.kind else 0

    def _capped(self, job: _Job, crashes: int) -> Exchange:
        what = "floor examples" if job.coverage is not None else "examples of that kind"
        return Exchange(
            Result(
                SKIP,
                message=f"not run: {job.kind} already ended {crashes} {what} "
                f"of this cell with crash/hang/poisoned or a worker it left untrusted",
            ),
            0.0,
            None,
        )

    # -- the steps ----------------------------------------------------------------------
    def floor_examples(self) -> list[Any]:
        """The family's coverage floor for this cell ([] when it declares none), memory kinds
        spread over it (`checks._memory`)."""
        from caiconform.checks._memory import floor_of

        return floor_of(self.cell.family.module, self.cell.producer, self.cell.consumer)

    def start(self) -> None:
        """Plan the cell: its floor, then its drawn examples (drawn here, in the parent,
        seed-only), less those already journaled (`--resume`) or met before in the cell. A
        floor example of the same params as a drawn one is run once, as the floor's."""
        self.started = time.monotonic()
        if self.listener is not None:
            self.listener.cell_started(self.cell, len(self.explored))
        family = self.cell.family
        try:
            from caiconform.checks._memory import examples_of

            self.strategy = examples_of(family.module, self.cell.producer, self.cell.consumer)
            floor = self.floor_examples()
        except Exception as exc:
            self.journal.record(
                skip_record(self.cell, f"examples() failed: {type(exc).__name__}: {exc}")
            )
            self._finish(Counter({SKIP: 1}))
            return
        self.floor_planned = len(floor)
        jobs: list[_Job] = []
        seen = set(self.cache)
        for i, example in enumerate(floor):
            key = canonical(example.params)
            if key in seen:
                continue
            seen.add(key)
            jobs.append(_Job(len(jobs), i, example.params, key, f"floor-{i:04d}", example.coverage))
        # the floor's examples go to the workers at once; the drawn ones follow when drawn
        with self.lock:
            self.jobs = jobs
            self.drawing = True
            self.state = "running"
        self.changed()
        began = time.perf_counter()
        fetched = self.prefetch.take(self.cell.key) if self.prefetch is not None else None
        if fetched is None:  # drawn here, by the function the pool runs
            cell = self.cell
            fetched = draw_cell(
                cell.family.module.__name__,
                cell.producer,
                cell.consumer,
                self.seed,
                self.config.max_examples,
            )
        else:
            self.timing["prefetched"] += len(fetched[0])
        drawn, error = fetched
        self.timing["draw_s"] += time.perf_counter() - began
        self.timing["drawn"] += len(drawn)
        if error is not None:  # hypothesis could not draw (Unsatisfiable, a strategy bug)
            self.draw_error = f"examples could not be drawn: {error}"
        more: list[_Job] = []
        for i, params in enumerate(drawn):
            key = canonical(params)
            if key in seen:
                continue
            seen.add(key)
            more.append(
                _Job(len(jobs) + len(more), i, params, key, f"{i:04d}", None, self._family_kind)
            )
        with self.lock:
            self.jobs.extend(more)
            self.drawing = False
        self._flush()

    def run_jobs(self, jobs: Sequence[_Job], worker: Worker) -> None:
        """Run a batch of the cell's examples on `worker` in one request, each result kept
        (and the finished prefix journaled) as it arrives. Those of a kind the crash caps
        now skip are not sent; those after an example that cost its process were not run and
        go back to the cell, to be handed out again (and the caps asked again) first."""
        if self.stop.is_set():
            raise _Stopped
        send: list[_Job] = []
        for job in jobs:
            cap = self._cap(job)
            if cap and self._lost_before(job) >= cap:
                self._keep(job, self._capped(job, cap))
            else:
                send.append(job)
        ran = 0
        for exchange in self._exchanges([job.params for job in send], worker):
            self._keep(send[ran], exchange)
            ran += 1
            if self.stop.is_set():
                break
        if ran < len(send):
            with self.lock:
                self.returned[:0] = send[ran:]
            self.changed()

    def _lost_before(self, job: _Job) -> int:
        """Lost examples of `job`'s kind, among those finished, before it in journal order.
        Only those: the journal caps an example by the ones before it (`_flush`), and a
        batch's examples cut off by a crash run after later ones, so counting those too
        skipped an example the journal would have had run (a `skip` instead of its `fail`)."""
        with self.lock:
            return sum(position < job.position for position in self.ran_lost.get(job.kind, ()))

    def _keep(self, job: _Job, exchange: Exchange) -> None:
        """One example's result: counted for the crash caps, journaled in order."""
        with self.lock:
            if self._cap(job) and self._costly(job.params, exchange.result):
                self.ran_lost.setdefault(job.kind, []).append(job.position)
            self.results[job.position] = exchange
        self._flush()

    def _exchanges(self, params: Sequence[dict], worker: Worker) -> Iterator[Exchange]:
        return worker.run_many(
            self.cell.family.execute,
            params,
            self.cell.producer,
            self.cell.consumer,
            timeout=self.config.timeout_s,
            module=self.cell.family.module.__name__,
            source=self.config.adapter_source,
        )

    def _flush(self) -> None:
        """Journal the finished examples that come next in order (one thread at a time:
        the cell lock is held while journaling, so records keep the cell's order)."""
        with self.lock:
            if self.state != "running":
                return
            while self.journaled < len(self.jobs) and self.journaled in self.results:
                job = self.jobs[self.journaled]
                exchange = self.results.pop(self.journaled)
                cap = self._cap(job)
                if cap:
                    crashes = self.journal_crashes[job.kind]
                    if crashes >= cap:
                        exchange = self._capped(job, crashes)
                    elif self._costly(job.params, exchange.result):
                        self.journal_crashes[job.kind] += 1
                record = self._journal(job.params, exchange, job.index, job.tag, job.coverage)
                self.cache[job.key] = record
                self.explored.append(record)
                self.journaled += 1
                if self.listener is not None:
                    self.listener.example(self.cell, record)
            self._note()
            if self.journaled < len(self.jobs) or self.drawing:
                return
            if self.draw_error is not None:
                self.journal.record(skip_record(self.cell, self.draw_error))
                self._finish(Counter(r["outcome"] for r in self.explored) + Counter({SKIP: 1}))
            elif self.state == "running":
                self.state = "shrinking"
                if not self.targets and not self.confirms and not self.shrinking:
                    self._finish(Counter(r["outcome"] for r in self.explored))
        self.changed()

    def _note(self) -> None:
        """Queue, for the records journaled since the last call (the lock held), the classes
        to shrink and the examples to run again, as soon as they are known: once the cell's
        examples are drawn (a draw error means neither) and, for a drawn example, every
        example before it journaled (hypothesis's shrink replays them from `cache` to meet
        the class). A class to shrink is one of a drawn example's, not pass or skip, and not
        met by the floor: the floor's examples keep theirs as the reproducer (the floor's
        arrays are already small, adversarial's mutants hypothesis's minimal ones, and
        shrinking them again cost the cell's longest phase). Those already shrunk (journaled
        before a `--resume`) are not queued again. A correct rejection (invalid input refused,
        `expectations.is_correct_rejection`) is neither shrunk nor run again: it is the
        consumer doing its job, no finding to reproduce (on the H100, 2026-11-25, 4 classes
        and 18 s of shrinking, 267 of 760 re-runs)."""
        if self.drawing or self.draw_error is not None:
            return
        for record in self.explored[self.noted :]:
            cls = _class_of(record)
            floor = bool(record.get("floor"))
            if floor:
                self.floor_classes.add(cls)
            if is_correct_rejection(record):
                continue
            if (
                self.config.shrink
                and not floor
                and record["outcome"] not in (PASS, SKIP)
                and cls not in self.floor_classes
                and cls not in self.shrunk_classes
                and cls not in self.queued_classes
            ):
                self.queued_classes.add(cls)
                self.targets.append(cls)
            if (
                self.config.confirm
                and record["outcome"] in _CONFIRMED
                and cls not in self.confirm_classes
            ):
                self.confirm_classes.add(cls)
                self.confirms.append(record)
        self.noted = len(self.explored)

    def run_shrink(self, target: tuple[str, str | None], worker: Worker) -> None:
        began = time.perf_counter()
        try:
            self.shrink(self.strategy, target, worker)
        finally:
            self._task_done("shrink_s", began)

    def run_confirm(self, record: dict, worker: Worker) -> None:
        """Run a class's first example once more (a fresh child when the first crashed or
        poisoned its process): a finding whose example gives another result the second time
        is not one to send a maintainer as it stands (the catalogue says `reproduced`)."""
        began = time.perf_counter()
        try:
            if self.stop.is_set():
                raise _Stopped
            again = self._exchange(record["params"], worker).result
            outcome, rule = _class_of(record)
            with self.lock:
                self.confirmed.append(
                    {
                        "outcome": outcome,
                        "rule": rule,
                        "index": record.get("index"),
                        "floor": bool(record.get("floor")),
                        "again": again.outcome,
                        "again_rule": again.rule,
                        "same": _class_of(again) == (outcome, rule),
                    }
                )
        finally:
            self._task_done("confirm_s", began)

    def _task_done(self, timer: str, began: float) -> None:
        with self.lock:
            self.timing[timer] += time.perf_counter() - began
            self.shrinking -= 1
            last = (
                self.state == "shrinking"
                and not self.targets
                and not self.confirms
                and not self.shrinking
            )
            if last:
                self._finish(Counter(r["outcome"] for r in self.explored))
        self.changed()

    def shrink(self, strategy, target: tuple[str, str | None], worker: Worker) -> dict | None:
        began = time.monotonic()
        deadline = began + self.config.shrink_budget_s
        patience = self.config.shrink_patience_s or 0.0
        # (when, after how many exchanges) an example of the class was last met: patience
        # counts from there (before the first, the drawn examples are replayed to meet it)
        met: list[tuple[float, int]] = []
        attempts: dict[str, Exchange] = {}
        # cells.jsonl `shrinks`: how a class's budget was spent (exchanges run, when each
        # smaller example of the class was found: `found_s` the last, None when none was;
        # whether the budget or the patience ran out)
        log: dict[str, Any] = {
            "outcome": target[0],
            "rule": target[1],
            "exchanges": 0,
            "found_s": None,
            "found_at": [],
        }

        @_settings(self.config.max_examples, (Phase.generate, Phase.shrink))
        @seed(self.seed)
        @given(strategy)
        def shrink_one(params: dict) -> None:
            if self.stop.is_set():
                raise _Stopped
            key = canonical(params)
            exchange = attempts.get(key)
            if exchange is None and key in self.cache:
                record = self.cache[key]
                exchange = Exchange(
                    Result.from_dict(record), record["duration_s"], record["worker"]
                )
            if exchange is None:
                now = time.monotonic()
                if now > deadline:
                    log["budget_out"] = True
                    return
                if (
                    patience
                    and met
                    and now - met[-1][0] > patience
                    and log["exchanges"] - met[-1][1] >= SHRINK_PATIENCE_EXCHANGES
                ):
                    log["patience_out"] = True
                    return
                exchange = attempts[key] = self._exchange(params, worker)
                log["exchanges"] += 1
                if _class_of(exchange.result) == target:  # a smaller example of the class
                    log["found_s"] = round(time.monotonic() - began, 3)
                    log["found_at"].append(log["found_s"])
            if _class_of(exchange.result) == target:
                met.append((time.monotonic(), log["exchanges"]))
                raise _Found(params, exchange)

        try:
            with seed_only_draws():
                shrink_one()
        except _Found as found:
            tag = "min-" + "-".join(filter(None, target))
            return self._journal(found.params, found.exchange, None, tag)
        except hypothesis.errors.HypothesisException:
            return None
        finally:
            log["spent_s"] = round(time.monotonic() - began, 3)
            with self.lock:
                self.shrinks.append(log)
        return None

    def _finish(self, counts: Counter) -> None:
        """The cell is complete: its `cells.jsonl` line (with its wall time, for `--costs-from`
        of a later run) and the listener's call."""
        self.state = "done"
        timing = {k: round(v, 6) if isinstance(v, float) else v for k, v in self.timing.items()}
        self.journal.cell_done(
            self.cell.key,
            counts=dict(counts),
            floor_planned=self.floor_planned,
            wall_s=round(time.monotonic() - self.started, 3),
            timing=timing,
            **({"confirmed": self.confirmed} if self.confirmed else {}),
            **({"shrinks": self.shrinks} if self.shrinks else {}),
        )
        if self.listener is not None:
            self.listener.cell_finished(self.cell, counts)

    def fail(self, exc: BaseException) -> None:
        """A runner bug stopped the cell: leave it unfinished for --resume."""
        with self.lock:
            if self.state != "broken":
                self.notes.append(f"cell {self.cell.key} stopped by {type(exc).__name__}: {exc}")
            self.state = "broken"
        self.changed()

    def run_task(self, task: tuple, worker: Worker) -> None:
        """Run one task `take()` handed out: an example, a re-run or a class to shrink."""
        kind, job = task[0], task[2]
        if kind == "examples":
            self.run_jobs(job, worker)
        elif kind == "confirm":
            self.run_confirm(job, worker)
        else:
            self.run_shrink(job, worker)


#: outcomes whose class is run once more: a hang is not (it would cost the timeout again), nor a
#: floor example the crash cap skipped
_CONFIRMED = frozenset(OUTCOMES) - {PASS, SKIP, HANG}


def skip_record(cell: Cell, reason: str) -> dict[str, Any]:
    """The one record of a cell that could not run."""
    return {
        **family_skip_record(cell.family.name, reason),
        "producer": cell.producer,
        "consumer": cell.consumer,
    }


# -- the run --------------------------------------------------------------------------------
def new_run_id() -> str:
    """A run ID: the UTC start time and a short random suffix."""
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def _resumed_run_id(config: RunConfig) -> str:
    """Reopen a run for `--resume`: its saved settings replace those in `config`."""
    meta_path = config.out / "run.json"
    if not meta_path.exists():
        raise UsageError(f"nothing to resume in {config.out} (no run.json)")
    try:
        meta = json.loads(meta_path.read_text())
        settings = meta["settings"]
        for key, value in settings.items():
            if key in _OVERRIDABLE and getattr(config, key) is not None:
                continue  # given again on the command line: the new value wins
            setattr(config, key, value)
        if "drawn_crash_cap" not in settings:  # a run from before the cap ran every example
            config.drawn_crash_cap = 0
        if "memory_kinds" not in settings:  # a run from before the dimension drew none
            config.memory_kinds = ("device",)
        if config.shard is not None:
            config.shard = tuple(config.shard)
        return meta["run_id"]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"{meta_path} is not a caiconform run file: {exc}") from None


def _fill_defaults(config: RunConfig) -> None:
    from caiconform.checks._memory import allowed_kinds
    from caiconform.cuda.memkinds import check_kind

    try:
        if config.memory_kinds is None:
            config.memory_kinds = allowed_kinds()
        config.memory_kinds = tuple(check_kind(k) for k in config.memory_kinds)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if config.timeout_s is None:
        config.timeout_s = DEFAULT_TIMEOUT_S
    if config.shrink_budget_s is None:
        config.shrink_budget_s = DEFAULT_SHRINK_BUDGET_S
    if config.shrink_patience_s is None:
        config.shrink_patience_s = DEFAULT_SHRINK_PATIENCE_S


def _new_run(config: RunConfig) -> str:
    """Create the run directory and its `run.json`; returns the new run_id."""
    if (config.out / "results.jsonl").exists():
        raise UsageError(f"{config.out} already holds a run; use --resume or another --out")
    try:
        (config.out / "repro").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the run directory {config.out}: {exc}") from None
    if config.seed is None:
        config.seed = secrets.randbits(32)
    meta = {
        "run_id": config.run_id or new_run_id(),
        "created": time.time(),
        "settings": config.saved(),
    }
    (config.out / "run.json").write_text(json.dumps(meta, indent=1) + "\n")
    return meta["run_id"]


def default_workers(gpus: int = 0) -> int:
    """The worker slots of a run that does not say: `pool.default_workers` (WORKERS_PER_GPU
    per GPU, at most the cores this process may run on, at least one per GPU; one per core
    without a GPU)."""
    return _default_workers(gpus)


def _gpu_ids(requested: int | None) -> tuple[list[str], str]:
    """(GPU ids to spread workers over, why there are none)."""
    found = visible_gpus()
    if requested is None:
        return found, "" if found else "no NVIDIA GPU visible"
    if requested == 0:
        return [], "--gpus 0"
    if found:
        return found[:requested], ""
    return [str(i) for i in range(requested)], ""


#: what each library's probe said, beside env.json (which lists distributions): the adapter's
#: own version string, so a stated compatibility shim ("0.30.4+shim(...)") reaches the report
ADAPTERS_FILE = "adapters.json"


def _write_adapters(out: Path, infos: dict[str, LibraryInfo]) -> None:
    data = {
        name: {"available": info.available, "reason": info.reason, "version": info.version}
        for name, info in infos.items()
    }
    (out / ADAPTERS_FILE).write_text(json.dumps(data, indent=1) + "\n")


def _preload_everywhere(
    pool: WorkerPool, config: RunConfig, modules: Sequence[str], libraries: Sequence[str]
) -> None:
    """Have every fork-server worker import the run's check modules and libraries before its
    first fork (`forkserver.PRELOAD_ENV`): on the H100 (2026-11-23) workers spent 1,372 of
    2,905 worker-seconds preparing cells, most of it children replaced after a cell brought a
    new import and re-initialising every library seen before. Read when a slot's server
    starts (or restarts)."""
    from caiconform.runner.forkserver import PRELOAD_ENV

    spec = json.dumps(
        {"modules": list(modules), "libraries": list(libraries), "source": config.adapter_source}
    )
    for worker in pool.workers:
        worker.env[PRELOAD_ENV] = spec


def _starts_early(config: RunConfig, families: Sequence[Any], gpu_ids: Sequence[str]) -> bool:
    """Whether the slots' fork servers start before the probes, importing every library asked
    for: fork servers that preload (`--preload`, by default when a GPU is visible and a family
    needs one), and no `--shard` or `--cells` that could leave most slots without a cell."""
    preload = config.preload_workers
    if preload is None:
        preload = bool(gpu_ids) and any(f.needs_gpu for f in families)
    return (
        config.fork_workers
        and preload
        and config.shard is None
        and config.only_cells is None
        and _hypothesis_threads_ok()
    )


def _start_zygote(pool: WorkerPool, config: RunConfig) -> Zygote:
    """Start the zygote with a slot's environment (it never touches a GPU: each server it
    forks gets its own slot's) and give it to every slot, whose fork servers it then forks
    (`runner.zygote`)."""
    env = pool.workers[0]._environment()
    log_dir = config.out / "workers"
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / "zygote.log", "ab") as log:
        zygote = Zygote(env, log)
    for worker in pool.workers:
        worker.zygote = zygote
    return zygote


def _start_threads(
    scheduler: Scheduler,
    pool: WorkerPool,
    gpu_ids: Sequence[str],
    config: RunConfig,
    ready: threading.Event,
    wanted: int,
) -> list[threading.Thread]:
    """Start up to `wanted` cell threads (one per worker slot); each starts its worker and
    waits for `ready` (the schedule) before it takes work."""
    count = min(len(pool.workers), wanted)
    if not _hypothesis_threads_ok():
        count = min(1, count)
    threads = [
        threading.Thread(
            target=_drive,
            args=(scheduler, pool.workers[i], gpu_ids, config, ready),
            name=f"cell-driver-{i}",
            daemon=True,
        )
        for i in range(count)
    ]
    for thread in threads:
        thread.start()
    return threads


def _hypothesis_threads_ok() -> bool:
    return tuple(hypothesis.__version_info__[:2]) >= _THREAD_SAFE_HYPOTHESIS


def run_matrix(config: RunConfig, listener: Listener | None = None) -> RunResult:
    """Run (or resume) the matrix described by `config`. Raises UsageError for an unknown
    check or library; everything an example does becomes a record instead."""
    run_id = _resumed_run_id(config) if config.resume else None
    _fill_defaults(config)
    with _memory_kinds_drawn(config.memory_kinds or ()):
        return _run(config, listener, run_id)


@contextlib.contextmanager
def _memory_kinds_drawn(kinds: Sequence[str]) -> Iterator[None]:
    """`kinds` as the kinds this process and the ones it starts draw (`KINDS_ENV`: the floors
    and the prefetching processes read it), the caller's setting back afterwards."""
    from caiconform.checks._memory import KINDS_ENV

    before = os.environ.get(KINDS_ENV)
    os.environ[KINDS_ENV] = ",".join(kinds)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(KINDS_ENV, None)
        else:
            os.environ[KINDS_ENV] = before


def _run(config: RunConfig, listener: Listener | None, run_id: str | None) -> RunResult:
    """`run_matrix` once the settings are whole (a resumed run's read back, defaults filled)."""
    families, broken = load_families(config.checks)
    try:
        source_names: Callable[[], list[str]] = resolve(f"{config.adapter_source}:names")
        known = list(source_names())
    except (ImportError, AttributeError, ValueError) as exc:
        raise UsageError(f"adapter source {config.adapter_source!r} unusable: {exc}") from None
    requested = config.libraries if config.libraries is not None else known
    unknown = [name for name in requested if name not in known]
    if unknown:
        raise UsageError(f"unknown library {unknown[0]!r} (known: {', '.join(known)})")
    run_id = run_id or _new_run(config)
    times_at_start = os.times()
    gpu_ids, no_gpu_reason = _gpu_ids(config.gpus)
    try:
        journal = Journal(config.out, run_id)
    except JournalError as exc:
        raise UsageError(f"cannot resume: {exc} (the journal is damaged)") from None
    startup = Startup(
        config.out,
        calibrate=config.calibrate_spin
        and bool(gpu_ids)
        and any(f.name == "streams" and f.needs_gpu for f in families),
    )
    startup.begin(
        warm=[
            functools.partial(f.module.floor, None, None)
            for f in families
            if callable(getattr(f.module, "floor", None)) and not hasattr(f.module, "seed_floor")
        ],
        floors=[f.module.__name__ for f in families if hasattr(f.module, "seed_floor")],
        builds=_builds(config, requested, gpu_ids),
    )
    choice = choose_workers(config.workers, gpu_ids)
    config.workers = choice.count
    with contextlib.suppress(OSError, ValueError):
        save_run_meta(config.out, workers=choice.to_json())
    pool = WorkerPool(
        max(1, config.workers),
        gpu_ids=gpu_ids,
        health_hooks=config.health_hooks,
        log_dir=config.out / "workers",
        spare=config.spare_workers,
        fork=config.fork_workers,
    )
    stop = threading.Event()
    result = RunResult(run_id, config.out, journal.results.records, [])
    if journal.damaged:
        result.notes.append(f"dropped {journal.damaged} truncated journal line(s)")
    prefetch: Prefetch | None = None
    scheduler = Scheduler([], stop, wide_threads=wide_threads(len(gpu_ids)))
    ready = threading.Event()
    threads: list[threading.Thread] = []
    spin_file: Path | None = None
    zygote: Zygote | None = None
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(_switch_interval())
    try:
        if _starts_early(config, families, gpu_ids):
            # the fork servers import every library asked for while the probes find which are
            # available: on the H100 the probes took 9.4-9.8 s and each fork server's imports
            # 8-11.7 s after them (the first example 20-21 s after the start). A server that
            # dies importing a library the probes then find unusable is restarted, with the
            # available ones only, by its first example
            spin_file = config.out / "workers" / SPIN_FILE
            spin_file.unlink(missing_ok=True)
            modules = sorted({f.module.__name__ for f in families})
            _preload_everywhere(pool, config, modules, sorted(requested))
            for worker in pool.workers:
                worker.env[SPIN_FILE_ENV] = str(spin_file)
            if config.zygote:
                zygote = _start_zygote(pool, config)
            threads = _start_threads(scheduler, pool, gpu_ids, config, ready, len(pool.workers))
        infos = startup.probe(config.adapter_source, requested, max(1, config.workers))
        _write_adapters(config.out, infos)
        result.notes.extend(selfcheck.save_and_tell(config.out, infos))
        cells, skipped = plan_cells(families, infos, len(gpu_ids), no_gpu_reason)
        preload = config.preload_workers
        if preload is None:
            preload = any(c.gpus for c in cells)
        if config.fork_workers and preload:
            _preload_everywhere(
                pool,
                config,
                sorted({c.family.module.__name__ for c in cells}),
                sorted(name for name, info in infos.items() if info.available),
            )
        if config.only_cells is not None:
            cells = [c for c in cells if c.key in config.only_cells]
            skipped = [(c, why) for c, why in skipped if c.key in config.only_cells]
        done = journal.finished_cells()
        if config.calibrate_spin and any(
            c.family.name == "streams" and c.gpus and c.key not in done for c in cells
        ):
            _apply_spin(startup.calibration(), pool, result.notes, spin_file)
        if not threads:
            # the cell threads start their workers now, while the coverage floors (which the
            # schedule's costs need) are still being built: a fork server's imports took
            # 8-10 s on the H100, and used to begin only once the start was over
            # (2026-11-24: the first example ran 24 s after the run began)
            wanted = len([c for c in cells if c.key not in done])
            threads = _start_threads(scheduler, pool, gpu_ids, config, ready, wanted)
        startup.wait_floors()
        costs = _cell_costs(config, [*cells, *(c for c, _ in skipped)])
        if config.shard is not None:
            mine = shard_cells(costs, config.shard)
            cells = [c for c in cells if c.key in mine]
            skipped = [(c, why) for c, why in skipped if c.key in mine]
            if config.shard[0] != 1:
                broken = []  # a family that cannot be imported is reported by shard 1 alone
        startup.finish()
        result.resumed_cells = sum(c.key in done for c in cells)
        result.skipped = [(f"{b.name}/*", b.reason) for b in broken]
        result.skipped += [(c.key, why) for c, why in skipped]
        # the cells this run owes (`report.runstate`: a cell of the plan without its
        # cells.jsonl entry makes the run INCOMPLETE, whether or not it ever started)
        with contextlib.suppress(OSError, ValueError):
            save_run_meta(
                config.out,
                plan={
                    "cells": sorted(c.key for c in cells),
                    "skipped": sorted(key for key, _ in result.skipped),
                },
            )
        for family in broken:
            if f"{family.name}/*" not in done:
                skip = family_skip_record(family.name, family.reason)
                journal.skip_cell(f"{family.name}/*", skip, family.reason)
        if listener is not None:
            listener.planned([c for c in cells if c.key not in done], result.skipped)
        for cell, reason in skipped:
            if cell.key not in done:
                journal.skip_cell(cell.key, skip_record(cell, reason), reason)
        to_run = [c for c in cells if c.key not in done]
        _save_queues(config, to_run)
        wanted = config.prefetch_draws
        if wanted or (wanted is None and len(to_run) >= MIN_CELLS):
            prefetch = Prefetch(processes_for(len(pool.workers)))
        runs = [
            _CellRun(
                cell,
                journal,
                config,
                listener,
                stop,
                cost=costs[cell.key],
                changed=scheduler.changed,
                notes=result.notes,
                prefetch=prefetch,
            )
            for cell in to_run
        ]
        scheduler.pending = start_order(runs)
        if prefetch is not None:
            prefetch.submit(
                (r.cell.key, r.cell.family.module.__name__, r.cell.producer, r.cell.consumer)
                + (r.seed, config.max_examples)
                for r in scheduler.pending
            )
        ready.set()
        try:
            for thread in threads:
                while thread.is_alive():
                    thread.join(timeout=0.2)
        except KeyboardInterrupt:
            stop.set()
            result.interrupted = True
            for thread in threads:
                thread.join(timeout=config.timeout_s + 5)
    finally:
        stop.set()  # threads still waiting for a schedule that will not come (an error) leave
        if prefetch is not None:
            prefetch.close()
        pool.close()
        if zygote is not None:
            zygote.close()
        journal.close()
        startup.save_builds()
        _save_parent_times(config.out, times_at_start)
        sys.setswitchinterval(switch_interval)
    return result


def _builds(
    config: RunConfig, requested: Sequence[str], gpu_ids: Sequence[str]
) -> list[tuple[str, dict[str, Any]]]:
    """The adapter source's `builds` for the libraries asked for, on a GPU and unless
    `config.warm_builds` is off; none from a source without `builds`."""
    if not (config.warm_builds and gpu_ids):
        return []
    try:
        builds = resolve(f"{config.adapter_source}:builds")
    except (ImportError, AttributeError, ValueError):
        return []
    return list(builds(list(requested)))


def _switch_interval() -> float:
    """The GIL switch interval the run's parent uses (SWITCH_INTERVAL_S, or SWITCH_INTERVAL_ENV's
    seconds when set to a positive number)."""
    try:
        seconds = float(os.environ.get(SWITCH_INTERVAL_ENV, ""))
    except ValueError:
        return SWITCH_INTERVAL_S
    return seconds if seconds > 0 else SWITCH_INTERVAL_S


def _save_queues(config: RunConfig, cells: Sequence[Cell]) -> None:
    """Record in run.json `queues` the families whose forked workers make their CUDA contexts
    with one hardware queue in this run (`forkserver.queues_for`), and the user's own
    `CUDA_DEVICE_MAX_CONNECTIONS`: a reader of the run can tell how its contexts were made."""
    single = {c.family.name for c in cells if queues_for(c.family.module) == "1"}
    entry = {
        "single_queue": sorted(single) if config.fork_workers and forks_here() else [],
        QUEUES_ENV: os.environ.get(QUEUES_ENV),
    }
    with contextlib.suppress(OSError, ValueError):
        save_run_meta(config.out, queues=entry)


def _save_parent_times(out: Path, start: os.times_result) -> None:
    """Record in run.json `parent` the cores this process (every cell thread, the journal,
    the schedule) used while the run went on: a parent near one core's worth of CPU per second
    of wall is bound by its own GIL, not by the workers (issue 11)."""
    end = os.times()
    parent = {
        "cpu_user_s": round(end.user - start.user, 3),
        "cpu_system_s": round(end.system - start.system, 3),
        "wall_s": round(end.elapsed - start.elapsed, 3),
    }
    with contextlib.suppress(OSError, ValueError):
        save_run_meta(out, parent=parent)


def _apply_spin(
    calibration: dict[str, Any] | None,
    pool: WorkerPool,
    notes: list[str],
    spin_file: Path | None = None,
) -> None:
    """Give the run's streams spin (`startup.Startup.calibration`, measured once per run in a
    worker that sees every GPU, or a resumed run's) to every worker slot: in their
    environment before any starts, or written to `spin_file` (which the slots started early
    read, `adapters._staging.spin_us`) before any example runs."""
    calibration = calibration or {"spin_us": None, "reason": "not measured"}
    spin = calibration.get("spin_us")
    if not spin:
        notes.append(f"streams spin not calibrated ({calibration.get('reason')}); fixed spins")
        return
    if spin_file is not None:
        partial = spin_file.with_suffix(".partial")
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(str(spin))
        partial.replace(spin_file)
        return
    for slot in pool.workers:
        slot.env[SPIN_ENV] = str(spin)


def _cell_costs(config: RunConfig, cells: Sequence[Cell]) -> dict[str, float]:
    """Estimated seconds of each cell (`schedule.estimate_cost`): its floor plus max_examples
    examples, informed by `config.costs_from` (an earlier run's cells.jsonl) when given."""
    history = load_history(config.costs_from) if config.costs_from is not None else None
    costs = {}
    for cell in cells:
        floor = getattr(cell.family.module, "floor", None)
        try:
            floor_size = len(floor(cell.producer, cell.consumer)) if floor else 0
        except Exception:  # the cell's run reports it
            floor_size = 0
        costs[cell.key] = estimate_cost(
            cell.family.name,
            cell.libraries,
            floor_size + config.max_examples,
            history,
            cell.key,
        )
    return costs


def _drive(
    scheduler: Scheduler,
    worker: Worker,
    gpu_ids: Sequence[str],
    config: RunConfig,
    ready: threading.Event | None = None,
) -> None:
    """One cell thread: start its worker, wait for the schedule (`ready`), then take tasks
    (start a cell, run one of a cell's examples, shrink one of its classes) until none are
    left, each on this thread's worker; a task of a cell that needs several GPUs runs on a
    second worker of this thread's that sees them all (`_wide_worker`, made when first needed)."""
    me = scheduler.thread()
    wide: Worker | None = None
    try:
        if ready is not None:
            if worker.fork:  # a plain worker starts with the first cell it is given
                worker.start()
            while not ready.wait(0.2):
                if scheduler.stop.is_set():
                    return
        while (task := scheduler.next(me)) is not None:
            kind, cell = task[0], task[1]
            try:
                if kind == "start":
                    cell.start()
                    continue
                target = worker
                if cell.wide and len(gpu_ids) > 1:
                    wide = wide or _wide_worker(worker, config, gpu_ids)
                    target = wide
                cell.run_task(task, target)
            except _Stopped:
                return
            except Exception as exc:  # a runner bug: leave the cell unfinished for --resume
                cell.fail(exc)
    finally:
        worker.close()  # in this thread: a worker dies with the thread that started it
        if wide is not None:
            wide.close()


def _wide_worker(slot: Worker, config: RunConfig, gpu_ids: Sequence[str] = ()) -> Worker:
    """A worker for cells that need several GPUs: the slot's settings but every GPU visible: a
    fork server (with the slot's preload) and a spare, as the slot has. Its device 0 is the
    slot's own GPU (`CUDA_VISIBLE_DEVICES` the slot's first, then the others of `gpu_ids`), so
    the devices family's consumers (device 0 current) run on every GPU, not all on the first,
    where a consumer's faulting kernel held up the other processes. Without them every
    poisoned context cost a cold start of a process importing every library (nvidia-h200-x2,
    2026-11-24: the devices cells of cuda.cccl, numba-kernel and PyCUDA, mostly poisoned
    examples, ran 57-83 s for 20 examples); with them, but each cell whole on one worker, those
    three still had not ended at the 258 s cap, 105 s after every other cell."""
    env = {k: v for k, v in slot.env.items() if k != "CUDA_VISIBLE_DEVICES"}
    own = slot.env.get("CUDA_VISIBLE_DEVICES")
    if own is not None and own in gpu_ids:
        env["CUDA_VISIBLE_DEVICES"] = ",".join([own, *(g for g in gpu_ids if g != own)])
    wide = Worker(
        slot.slot,
        env=env,
        health_hooks=slot.health_hooks,
        log_path=config.out / "workers" / f"worker-{slot.slot}-all-gpus.log",
        spare=config.spare_workers,
        fork=config.fork_workers,
    )
    wide.zygote = slot.zygote
    return wide


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, Counter]:
    """Outcome counts per family over explore records and cell skips (shrunk records are
    reproducers of classes already counted)."""
    table: dict[str, Counter] = {}
    for record in records:
        if record.get("shrunk"):
            continue
        table.setdefault(record.get("check") or "?", Counter())[record["outcome"]] += 1
    return table
