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
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import hypothesis
from hypothesis import Phase, given, seed

from caiconform.draws import hypothesis_settings, seed_only_draws
from caiconform.results.expectations import is_correct_rejection
from caiconform.results.outcome import CRASH, HANG, OUTCOMES, PASS, POISONED, SKIP, Result
from caiconform.runner.config import BATCH_SHARE, DEFAULT_SHRINK_BUDGET_S, Listener, RunConfig
from caiconform.runner.forkserver import queues_for
from caiconform.runner.journal import Journal
from caiconform.runner.plan import Cell
from caiconform.runner.pool import Exchange, Worker
from caiconform.runner.prefetch import Prefetch, draw_cell
from caiconform.runner.protocol import canonical
from caiconform.runner.records import exchange_record, skip_record
from caiconform.runner.worker import taints_of

#: exchanges that must also have brought no smaller example of a class before
#: `RunConfig.shrink_patience_s` stops its shrink
SHRINK_PATIENCE_EXCHANGES = 10

#: floor examples of one layout kind (or, without one, one mutation) that may end in
#: crash/hang/poisoned before the rest of that kind is skipped (see `_Job.kind`)
FLOOR_CRASH_CAP = 2

_LOST = (CRASH, HANG, POISONED)


class Stopped(BaseException):
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


def cell_seed(run_seed: int, key: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{run_seed}/{key}".encode()).digest()[:8], "little")


def _class_of(result: Result | dict) -> tuple[str, str | None]:
    if isinstance(result, dict):
        return result["outcome"], result.get("rule")
    return result.outcome, result.rule


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
    it has none (such examples are not capped: nothing tells them apart). The rule keeps
    crashes on some rules from skipping the mutants of every other, each of which may find a
    crash group of its own. A family module's own `crash_kind(params)` (`family_kind`) names
    its drawn examples' kind instead (devices: params that name none, so that its lost
    examples are capped too)."""
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
        self.seed = cell_seed(int(config.seed or 0), cell.key)
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
        #: saturation (`RunConfig.saturate`): the classes met so far in journal order, the
        #: drawn examples journaled since the last new one, and what was left unrun
        self.met_classes: set[tuple[str, str | None]] = set()
        self.quiet = 0
        #: a class other than pass and skip met: the cell runs every drawn example
        self.found = False
        self.saturated: dict[str, int] | None = None
        for record in self.explored:
            self._count_quiet(record)
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
        # a class's shrinking runs up to its budget, on one thread: a cell's classes left to
        # shrink are its tail, ended by one thread while others begin new cells
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
            # task on one thread (up to the shrink budget), which begun after the cell's last
            # example would end the run late. The re-runs are short and fill in
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
        record = exchange_record(
            self.cell,
            params,
            exchange,
            index=index,
            tag=tag,
            coverage=coverage,
            run_dir=self.journal.run_dir,
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

    def _count_quiet(self, record: dict) -> None:
        """Count a journaled record towards saturation: a floor example's class is met; a
        drawn example's either is new (the count starts again) or adds one to it. A class
        other than pass and skip, floor or drawn, and the cell runs all its draws: its
        failures' other variants and rarer failures are met in the rest (measured on a
        published run: a cell cut after its first failure lost two MUST-level groups of one
        example each; docs/performance.md)."""
        cls = _class_of(record)
        if cls[0] not in (PASS, SKIP):
            self.found = True
        if record.get("floor"):
            self.met_classes.add(cls)
        elif cls in self.met_classes:
            self.quiet += 1
        else:
            self.met_classes.add(cls)
            self.quiet = 0

    def _saturate(self) -> None:
        """Leave the cell's unjournaled drawn examples unrun once `config.saturate` drawn ones
        in a row met no new class, in a cell that met no class but pass and skip (the lock
        held). The cut is made in journal order, so the journal is the same whoever ran what;
        examples already running end unjournaled."""
        limit = self.config.saturate
        if (
            not limit
            or self.quiet < limit
            or self.found
            or self.drawing
            or self.saturated is not None
            or not getattr(self.cell.family.module, "SATURATES", True)
        ):
            return
        left = self.jobs[self.journaled :]
        if any(job.coverage is not None for job in left):
            return  # the floor runs whole
        self.saturated = {"quiet": limit, "unrun": len(left)}
        del self.jobs[self.journaled :]
        self.dispatched = min(self.dispatched, len(self.jobs))
        self.returned = [job for job in self.returned if job.position < len(self.jobs)]
        for position in [p for p in self.results if p >= len(self.jobs)]:
            del self.results[position]

    def run_jobs(self, jobs: Sequence[_Job], worker: Worker) -> None:
        """Run a batch of the cell's examples on `worker` in one request, each result kept
        (and the finished prefix journaled) as it arrives. Those of a kind the crash caps
        now skip are not sent; those after an example that cost its process were not run and
        go back to the cell, to be handed out again (and the caps asked again) first."""
        if self.stop.is_set():
            raise Stopped
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
            with self.lock:  # those a saturation left unrun are not run later either
                self.returned[:0] = [job for job in send[ran:] if job.position < len(self.jobs)]
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
            if job.position < len(self.jobs):  # not one a saturation left unrun
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
            self._saturate()
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
                self._count_quiet(record)
                self._saturate()
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
        consumer doing its job, no finding to reproduce."""
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
                raise Stopped
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

        @hypothesis_settings(self.config.max_examples, (Phase.generate, Phase.shrink))
        @seed(self.seed)
        @given(strategy)
        def shrink_one(params: dict) -> None:
            if self.stop.is_set():
                raise Stopped
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
            **({"saturated": self.saturated} if self.saturated else {}),
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
