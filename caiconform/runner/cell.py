"""One cell's life (`CellRun`): its examples (the coverage floor's, then hypothesis's draws)
handed to whichever cell threads take them, journaled in order with the crash caps applied, then
each non-pass class shrunk and its first example run again.

Each cell is driven in two steps, both seeded from the run's seed and the cell's key so they see
the same examples in the same order (and nothing else: `draws.seed_only_draws` keeps the modules
a process has imported out of hypothesis's draws):

1. *explore*: `max_examples` examples, no shrinking; every one is run in a worker and journaled.
   The test function never fails, so every example is tried and counted.
2. *shrink*: for each (outcome, rule) class other than pass/skip that explore met, hypothesis runs
   again and fails on that class. The explore examples replay from a cache (no worker call) up
   to the first of the class; hypothesis then shrinks it, running each candidate in the worker,
   and the minimal example is journaled with `"shrunk": true` and a reproducer. A time budget per
   class bounds the cost (a hang costs a whole timeout per try): past it, untried candidates
   count as uninteresting and hypothesis settles on the smallest found so far.

`--resume` uses the same replay: a partial cell's journaled examples fill the cache, so hypothesis
walks through them without rerunning or rejournaling them and continues where the run stopped.

`CellRun` coordinates the phases, each in a module of its own, under the cell's lock: the jobs
and the crash caps (`jobs`), handing them out (`dispatch`), saturation (`saturation`), the
shrinks and re-runs queued (`followup`), one class's shrink (`shrink`) and what the cell
writes to the journal (`celljournal`).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from caiconform.results.outcome import SKIP
from caiconform.runner.celljournal import CellJournal
from caiconform.runner.config import DEFAULT_SHRINK_BUDGET_S, Listener, RunConfig
from caiconform.runner.dispatch import Dispatch, draw, new_jobs
from caiconform.runner.followup import FollowUps
from caiconform.runner.forkserver import queues_for
from caiconform.runner.jobs import CrashCaps, Job, Stopped
from caiconform.runner.journal import Journal
from caiconform.runner.plan import Cell
from caiconform.runner.pool import Exchange, Worker
from caiconform.runner.prefetch import Prefetch
from caiconform.runner.protocol import canonical
from caiconform.runner.saturation import Saturation
from caiconform.runner.shrink import Shrink

__all__ = ["CellRun", "cell_seed", "WIDE_HELPERS"]

#: threads that may work on one cell needing several GPUs at once, each with a worker that sees
#: every GPU (a fork server importing every library, and its children's contexts on each GPU)
WIDE_HELPERS = 4


def cell_seed(run_seed: int, key: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{run_seed}/{key}".encode()).digest()[:8], "little")


class CellRun:
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
        self.config = config
        #: what the cell writes to the journal
        self.lines = CellJournal(cell, journal, listener)
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
        self.seed = cell_seed(int(config.seed or 0), cell.key)
        module = cell.family.module
        records = journal.records_of(cell.family.name, cell.producer, cell.consumer)
        #: the cell's explored records in journal order (`--resume`: those journaled before)
        self.explored = [r for r in records if not r.get("shrunk") and r.get("index") is not None]
        self.cache: dict[str, dict] = {}  # params key -> explored record
        for record in self.explored:
            self.cache[canonical(record["params"])] = record
        self.floor_planned = 0
        self.lock = threading.Lock()
        self.strategy: Any = None
        self.dispatch = Dispatch()
        self.caps = CrashCaps(module, config.drawn_crash_cap)
        self.caps.resumed(self.explored)
        self.saturation = Saturation(config.saturate, module, config.saturate_found)
        for record in self.explored:
            self.saturation.count(record)
        self.draw_error: str | None = None
        self.followups = FollowUps(config.shrink, config.confirm, records)
        self.state = "new"  # -> "running" -> "shrinking" -> "done" | "broken"
        self.timing: Counter = Counter()

    @property
    def saturated(self) -> dict[str, int] | None:
        """What saturation left unrun (cells.jsonl `saturated`), None when it cut nothing."""
        return self.saturation.saturated

    # -- what the scheduler asks ---------------------------------------------------------
    def finished(self) -> bool:
        return self.state in ("done", "broken")

    def remaining(self) -> float:
        """Estimated seconds of work not yet handed out."""
        if self.state == "new":
            return self.cost
        if self.state not in ("running", "shrinking"):
            return 0.0
        # a class's shrinking runs up to its budget, on one thread: a cell's classes left to
        # shrink are its tail, ended by one thread while others begin new cells
        per_example = self.cost / max(1, len(self.dispatch.jobs))
        budget = self.config.shrink_budget_s or DEFAULT_SHRINK_BUDGET_S
        follow = self.followups
        left = len(follow.targets) * budget / 2 + len(follow.confirms) * per_example
        if self.state == "running":
            left += self.dispatch.undispatched() * per_example
        return left

    def take(self) -> tuple | None:
        """The next task of this cell for any thread: a class to shrink, a batch of examples
        (`Dispatch.batch`), or an example to run again."""
        with self.lock:
            if self.state not in ("running", "shrinking"):
                return None
            follow = self.followups
            # classes to shrink first, while the cell's examples still run: each is one long
            # task on one thread (up to the shrink budget), which begun after the cell's last
            # example would end the run late. The re-runs are short and fill in
            if follow.targets:
                follow.running += 1
                return ("shrink", self, follow.targets.pop(0))
            if self.state == "running" and self.dispatch.undispatched():
                return ("examples", self, self.dispatch.batch(self.config.batch))
            if follow.confirms:
                follow.running += 1
                return ("confirm", self, follow.confirms.pop(0))
            return None

    def run_task(self, task: tuple, worker: Worker) -> None:
        """Run one task `take()` handed out: an example, a re-run or a class to shrink."""
        kind, job = task[0], task[2]
        if kind == "examples":
            self.run_jobs(job, worker)
        elif kind == "confirm":
            self.run_confirm(job, worker)
        else:
            self.run_shrink(job, worker)

    # -- one example --------------------------------------------------------------------
    def _exchange(self, params: dict, worker: Worker) -> Exchange:
        return next(self._exchanges([params], worker))

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
        self.lines.begin(len(self.explored))
        cell = self.cell
        try:
            from caiconform.checks._memory import examples_of

            self.strategy = examples_of(cell.family.module, cell.producer, cell.consumer)
            floor = self.floor_examples()
        except Exception as exc:
            self.lines.skip(f"examples() failed: {type(exc).__name__}: {exc}")
            self._finish(Counter({SKIP: 1}))
            return
        self.floor_planned = len(floor)
        seen = set(self.cache)
        jobs = new_jobs(((example.params, example.coverage) for example in floor), seen, 0, True)
        # the floor's examples go to the workers at once; the drawn ones follow when drawn
        with self.lock:
            self.dispatch.jobs = jobs
            self.drawing = True
            self.state = "running"
        self.changed()
        drawn, error = draw(cell, self.seed, self.config.max_examples, self.prefetch, self.timing)
        if error is not None:  # hypothesis could not draw (Unsatisfiable, a strategy bug)
            self.draw_error = f"examples could not be drawn: {error}"
        more = new_jobs(((p, None) for p in drawn), seen, len(jobs), False, self.caps.family_kind)
        with self.lock:
            self.dispatch.jobs.extend(more)
            self.drawing = False
        self._flush()

    def run_jobs(self, jobs: Sequence[Job], worker: Worker) -> None:
        """Run a batch of the cell's examples on `worker` in one request, each result kept
        (and the finished prefix journaled) as it arrives. Those of a kind the crash caps
        now skip are not sent; those after an example that cost its process were not run and
        go back to the cell, to be handed out again (and the caps asked again) first."""
        if self.stop.is_set():
            raise Stopped
        send: list[Job] = []
        for job in jobs:
            with self.lock:
                skipped = self.caps.skips(job)
            if skipped:
                self._keep(job, self.caps.capped(job, self.caps.cap(job)))
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
                self.dispatch.give_back(send[ran:])
            self.changed()

    def _keep(self, job: Job, exchange: Exchange) -> None:
        """One example's result: counted for the crash caps, journaled in order."""
        with self.lock:
            self.caps.finished(job, exchange)
            self.dispatch.keep(job, exchange)
        self._flush()

    def _flush(self) -> None:
        """Journal the finished examples that come next in order (one thread at a time:
        the cell lock is held while journaling, so records keep the cell's order)."""
        with self.lock:
            if self.state != "running":
                return
            self._saturate()
            while (finished := self.dispatch.next_finished()) is not None:
                job, exchange = finished
                exchange = self.caps.journaled(job, exchange)
                record = self.lines.example(job.params, exchange, job.index, job.tag, job.coverage)
                self.cache[job.key] = record
                self.explored.append(record)
                self.dispatch.journaled += 1
                self.saturation.count(record)
                self._saturate()
                self.lines.explored(record)
            # the shrinks and re-runs are queued once the cell's examples are drawn (a draw
            # error means neither) and, for a drawn example, every example before it
            # journaled (hypothesis's shrink replays them from `cache` to meet the class)
            if not self.drawing and self.draw_error is None:
                self.followups.note(self.explored)
            if not self.dispatch.all_journaled() or self.drawing:
                return
            if self.draw_error is not None:
                self.lines.skip(self.draw_error)
                self._finish(Counter(r["outcome"] for r in self.explored) + Counter({SKIP: 1}))
            elif self.state == "running":
                self.state = "shrinking"
                if not self.followups.pending():
                    self._finish(Counter(r["outcome"] for r in self.explored))
        self.changed()

    def _saturate(self) -> None:
        """Leave the cell's unjournaled drawn examples unrun once saturation says so (the lock
        held). The cut is made in journal order, so the journal is the same whoever ran what;
        examples already running end unjournaled."""
        dispatch = self.dispatch
        if self.saturation.cuts(dispatch.jobs, dispatch.journaled, self.drawing):
            dispatch.cut()

    def run_shrink(self, target: tuple[str, str | None], worker: Worker) -> None:
        began = time.perf_counter()
        try:
            self.shrink(self.strategy, target, worker)
        finally:
            self._task_done("shrink_s", began)

    def shrink(self, strategy, target: tuple[str, str | None], worker: Worker) -> dict | None:
        """Shrink one class (`shrink.Shrink`): its minimal example journaled (with a
        reproducer), or None; how the budget was spent goes to cells.jsonl `shrinks`."""
        config = self.config
        shrink = Shrink(
            target,
            self.seed,
            config.max_examples,
            config.shrink_budget_s,
            config.shrink_patience_s or 0.0,
            self.stop,
            self.cache,
            lambda params: self._exchange(params, worker),
        )
        tag = "min-" + "-".join(filter(None, target))
        try:
            return shrink.run(
                strategy, lambda params, found: self.lines.example(params, found, None, tag)
            )
        finally:
            with self.lock:
                self.followups.shrinks.append(shrink.log)

    def run_confirm(self, record: dict, worker: Worker) -> None:
        """Run a class's first example once more (a fresh child when the first crashed or
        poisoned its process): a finding whose example gives another result the second time
        is not one to send a maintainer as it stands (the catalogue says `reproduced`)."""
        began = time.perf_counter()
        try:
            if self.stop.is_set():
                raise Stopped
            again = self._exchange(record["params"], worker).result
            with self.lock:
                self.followups.confirmation(record, again)
        finally:
            self._task_done("confirm_s", began)

    def _task_done(self, timer: str, began: float) -> None:
        with self.lock:
            self.timing[timer] += time.perf_counter() - began
            self.followups.running -= 1
            if self.state == "shrinking" and not self.followups.pending():
                self._finish(Counter(r["outcome"] for r in self.explored))
        self.changed()

    def _finish(self, counts: Counter) -> None:
        """The cell is complete: its `cells.jsonl` line and the listener's call."""
        self.state = "done"
        follow = self.followups
        self.lines.done(
            counts,
            self.floor_planned,
            self.timing,
            confirmed=follow.confirmed,
            shrinks=follow.shrinks,
            saturated=self.saturated,
        )

    def fail(self, exc: BaseException) -> None:
        """A runner bug stopped the cell: leave it unfinished for --resume."""
        with self.lock:
            if self.state != "broken":
                self.notes.append(f"cell {self.cell.key} stopped by {type(exc).__name__}: {exc}")
            self.state = "broken"
        self.changed()
