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

import hashlib
import json
import queue
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

import hypothesis
from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings

from caiconform.env import visible_gpus
from caiconform.runner.draws import seed_only_draws
from caiconform.runner.journal import Journal
from caiconform.runner.libraries import LibraryInfo
from caiconform.runner.outcome import CRASH, HANG, PASS, POISONED, SKIP, Result
from caiconform.runner.plan import Cell, UsageError, load_families, plan_cells
from caiconform.runner.pool import Exchange, Worker, WorkerLost, WorkerPool
from caiconform.runner.protocol import canonical
from caiconform.runner.repro import write_repro
from caiconform.runner.resolve import resolve

__all__ = [
    "RunConfig",
    "RunResult",
    "Listener",
    "run_matrix",
    "summarize",
    "skip_record",
    "UsageError",
]

#: how long probing one library (importing it) may take in a worker
PROBE_TIMEOUT_S = 300.0
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_SHRINK_BUDGET_S = 60.0
#: floor examples of one layout kind that may end in crash/hang/poisoned before the rest of
#: that kind is skipped (see `_CellRun.run_floor`)
FLOOR_CRASH_CAP = 2
#: saved settings a resumed run takes from the command line when given there
_OVERRIDABLE = ("timeout_s", "shrink_budget_s")
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
    workers: int = 2
    #: None: the resumed run's value, else DEFAULT_TIMEOUT_S
    timeout_s: float | None = None
    gpus: int | None = None
    shrink: bool = True
    #: None: the resumed run's value, else DEFAULT_SHRINK_BUDGET_S
    shrink_budget_s: float | None = None
    health_hooks: Sequence[str] = ()
    adapter_source: str = "caiconform.runner.libraries"
    resume: bool = False
    run_id: str | None = None
    #: keep a prepared spare process per worker slot (see `Worker`)
    spare_workers: bool = True

    def saved(self) -> dict[str, Any]:
        return {
            "checks": self.checks,
            "libraries": self.libraries,
            "max_examples": self.max_examples,
            "seed": self.seed,
            "shrink": self.shrink,
            "adapter_source": self.adapter_source,
            "timeout_s": self.timeout_s,
            "shrink_budget_s": self.shrink_budget_s,
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


def coverage_of_params(params: dict) -> dict[str, str]:
    """Coverage labels (layout kind, dtype class, byte order, stream scenario) read from a drawn
    example's params, for the report's coverage tables; only the labels the params name."""
    from caiconform.spec.dtypes import byte_order, dtype_class

    out: dict[str, str] = {}
    typestr = params.get("typestr")
    if isinstance(typestr, str):
        out["dtype"], out["order"] = dtype_class(typestr), byte_order(typestr)
    layout = params.get("layout")
    shape = layout.get("shape") if isinstance(layout, dict) else params.get("shape")
    if isinstance(layout, dict):
        out["layout"] = str(layout.get("kind", "C"))
        if out["layout"] == "C" and layout.get("strides") is not None:
            out["layout"] = "C-strides"
    if isinstance(shape, list):
        if not shape:
            out["layout"] = "0d"
        elif 0 in shape:
            out["layout"] = "zero-size"
        else:
            out.setdefault("layout", "C")
    scenario = params.get("stream_scenario")
    out["scenario"] = scenario if isinstance(scenario, str) else "none"
    return out


def _cell_seed(run_seed: int, key: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{run_seed}/{key}".encode()).digest()[:8], "little")


def _class_of(result: Result | dict) -> tuple[str, str | None]:
    if isinstance(result, dict):
        return result["outcome"], result.get("rule")
    return result.outcome, result.rule


def _settings(max_examples: int, phases: tuple[Phase, ...]) -> settings:
    return settings(
        max_examples=max_examples,
        database=None,
        deadline=None,
        phases=phases,
        derandomize=False,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        print_blob=False,
    )


class _CellRun:
    """Drives one cell on one worker."""

    def __init__(
        self,
        cell: Cell,
        worker: Worker,
        journal: Journal,
        config: RunConfig,
        listener: Listener | None,
        stop: threading.Event,
    ) -> None:
        self.cell = cell
        self.worker = worker
        self.journal = journal
        self.config = config
        self.listener = listener
        self.stop = stop
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

    # -- one example --------------------------------------------------------------------
    def _exchange(self, params: dict) -> Exchange:
        return self.worker.run(
            self.cell.family.execute,
            params,
            self.cell.producer,
            self.cell.consumer,
            timeout=self.config.timeout_s,
            module=self.cell.family.module.__name__,
            source=self.config.adapter_source,
        )

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
        }
        if not result.ok:
            record["repro"] = write_repro(
                self.journal.run_dir, self.cell.family.module, record, tag
            )
        return self.journal.record(record)

    # -- the three steps -----------------------------------------------------------------
    def run_floor(self, examples: Sequence[Any]) -> None:
        """Run the cell's coverage floor (`checks._floor`): every example, in order, each
        journaled with its coverage labels and `"floor": true`. After FLOOR_CRASH_CAP crashes
        (or hangs, or poisoned contexts) on one layout kind, the rest of that kind's examples
        are journaled as skips saying so rather than run: one root cause should not cost a
        cold worker start per dtype."""
        crashes: Counter = Counter()
        for i, example in enumerate(examples):
            if self.stop.is_set():
                raise _Stopped
            params = example.params
            key = canonical(params)
            if key in self.cache:
                continue
            kind = example.coverage.get("layout", "")
            if crashes[kind] >= FLOOR_CRASH_CAP:
                exchange = Exchange(
                    Result(
                        SKIP,
                        message=f"not run: layout {kind!r} already ended {crashes[kind]} floor "
                        f"examples of this cell with crash/hang/poisoned",
                    ),
                    0.0,
                    None,
                )
            else:
                exchange = self._exchange(params)
                if exchange.result.outcome in _LOST:
                    crashes[kind] += 1
            record = self._journal(params, exchange, i, f"floor-{i:04d}", example.coverage)
            self.cache[key] = record
            self.explored.append(record)
            if self.listener is not None:
                self.listener.example(self.cell, record)

    def explore(self, strategy) -> None:
        index = 0

        @_settings(self.config.max_examples, (Phase.generate,))
        @seed(self.seed)
        @given(strategy)
        def explore_one(params: dict) -> None:
            nonlocal index
            if self.stop.is_set():
                raise _Stopped
            key = canonical(params)
            index += 1
            if key in self.cache:
                return
            record = self._journal(params, self._exchange(params), index - 1, f"{index - 1:04d}")
            self.cache[key] = record
            self.explored.append(record)
            if self.listener is not None:
                self.listener.example(self.cell, record)

        with seed_only_draws():
            explore_one()

    def shrink(self, strategy, target: tuple[str, str | None]) -> dict | None:
        deadline = time.monotonic() + self.config.shrink_budget_s
        attempts: dict[str, Exchange] = {}

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
                if time.monotonic() > deadline:
                    return
                exchange = attempts[key] = self._exchange(params)
            if _class_of(exchange.result) == target:
                raise _Found(params, exchange)

        try:
            with seed_only_draws():
                shrink_one()
        except _Found as found:
            tag = "min-" + "-".join(filter(None, target))
            return self._journal(found.params, found.exchange, None, tag)
        except hypothesis.errors.HypothesisException:
            return None
        return None

    def floor_examples(self) -> list[Any]:
        """The family's coverage floor for this cell ([] when it declares none)."""
        floor = getattr(self.cell.family.module, "floor", None)
        return list(floor(self.cell.producer, self.cell.consumer)) if floor else []

    def run(self) -> Counter:
        family = self.cell.family
        try:
            strategy = family.module.examples(self.cell.producer, self.cell.consumer)
            floor = self.floor_examples()
        except Exception as exc:
            self._journal_skip(f"examples() failed: {type(exc).__name__}: {exc}")
            return Counter({SKIP: 1})
        self.floor_planned = len(floor)
        self.run_floor(floor)
        try:
            self.explore(strategy)
        except Exception as exc:  # hypothesis could not draw (Unsatisfiable, a strategy bug)
            self._journal_skip(f"examples could not be drawn: {type(exc).__name__}: {exc}")
            return Counter(r["outcome"] for r in self.explored) + Counter({SKIP: 1})
        if self.config.shrink:
            # a class met only in the floor keeps its floor example as the reproducer (the
            # floor's arrays are already small, and random draws may never meet the class)
            classes = dict.fromkeys(
                _class_of(r)
                for r in self.explored
                if r["outcome"] not in (PASS, SKIP) and not r.get("floor")
            )
            for target in classes:
                if target not in self.shrunk_classes:
                    self.shrink(strategy, target)
        return Counter(r["outcome"] for r in self.explored)

    def _journal_skip(self, reason: str) -> None:
        self.journal.record(skip_record(self.cell, reason))


def skip_record(cell: Cell, reason: str) -> dict[str, Any]:
    """The one record of a cell that could not run."""
    return {
        **family_skip_record(cell.family.name, reason),
        "producer": cell.producer,
        "consumer": cell.consumer,
    }


def family_skip_record(family: str, reason: str) -> dict[str, Any]:
    """The one record of a family whose module could not be imported."""
    return {
        "producer": None,
        "consumer": None,
        "check": family,
        "rule": None,
        "outcome": SKIP,
        "params": {},
        "message": reason,
        "seen": None,
        "expected": None,
        "repro": None,
        "duration_s": 0.0,
        "worker": None,
        "index": None,
        "shrunk": False,
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
        for key, value in meta["settings"].items():
            if key in _OVERRIDABLE and getattr(config, key) is not None:
                continue  # given again on the command line: the new value wins
            setattr(config, key, value)
        return meta["run_id"]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"{meta_path} is not a caiconform run file: {exc}") from None


def _fill_defaults(config: RunConfig) -> None:
    if config.timeout_s is None:
        config.timeout_s = DEFAULT_TIMEOUT_S
    if config.shrink_budget_s is None:
        config.shrink_budget_s = DEFAULT_SHRINK_BUDGET_S


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


def _probe(worker: Worker, source: str, names: Sequence[str]) -> dict[str, LibraryInfo]:
    """Ask a worker about each library, one call each, so a library whose import crashes or
    hangs is marked unavailable with that reason and the others are still probed."""
    infos = {}
    for name in names:
        try:
            data = worker.call(f"{source}:probe", PROBE_TIMEOUT_S, name=name)
            infos[name] = LibraryInfo.from_dict(data)
        except (WorkerLost, RuntimeError) as exc:
            infos[name] = LibraryInfo(name, False, f"probing it failed: {exc}")
    return infos


def _capture_env(out: Path) -> None:
    if (out / "env.json").exists():
        return
    worker = Worker(-1)  # sees every GPU, unlike the pool's pinned slots
    try:
        env = worker.call("caiconform.env:capture", PROBE_TIMEOUT_S)
    except (WorkerLost, RuntimeError) as exc:
        env = {"error": f"environment capture failed: {exc}"}
    finally:
        worker.close()
    (out / "env.json").write_text(json.dumps(env, indent=1) + "\n")


def _hypothesis_threads_ok() -> bool:
    return tuple(hypothesis.__version_info__[:2]) >= _THREAD_SAFE_HYPOTHESIS


def run_matrix(config: RunConfig, listener: Listener | None = None) -> RunResult:
    """Run (or resume) the matrix described by `config`. Raises UsageError for an unknown
    check or library; everything an example does becomes a record instead."""
    run_id = _resumed_run_id(config) if config.resume else None
    _fill_defaults(config)
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
    gpu_ids, no_gpu_reason = _gpu_ids(config.gpus)
    journal = Journal(config.out, run_id)
    _capture_env(config.out)
    pool = WorkerPool(
        max(1, config.workers),
        gpu_ids=gpu_ids,
        health_hooks=config.health_hooks,
        log_dir=config.out / "workers",
        spare=config.spare_workers,
    )
    stop = threading.Event()
    result = RunResult(run_id, config.out, journal.results.records, [])
    if journal.damaged:
        result.notes.append(f"dropped {journal.damaged} truncated journal line(s)")
    try:
        infos = _probe(pool.workers[0], config.adapter_source, requested)
        cells, skipped = plan_cells(families, infos, len(gpu_ids), no_gpu_reason)
        done = journal.finished_cells()
        result.resumed_cells = sum(c.key in done for c in cells)
        result.skipped = [(f"{b.name}/*", b.reason) for b in broken]
        result.skipped += [(c.key, why) for c, why in skipped]
        for family in broken:
            if f"{family.name}/*" not in done:
                journal.record(family_skip_record(family.name, family.reason))
                journal.cell_done(f"{family.name}/*", skipped=family.reason)
        if listener is not None:
            listener.planned([c for c in cells if c.key not in done], result.skipped)
        for cell, reason in skipped:
            if cell.key not in done:
                journal.record(skip_record(cell, reason))
                journal.cell_done(cell.key, skipped=reason)
        todo: queue.Queue[Cell] = queue.Queue()
        for cell in cells:
            if cell.key not in done:
                todo.put(cell)
        threads_n = min(len(pool.workers), todo.qsize()) if _hypothesis_threads_ok() else 1
        threads = [
            threading.Thread(
                target=_drive,
                args=(
                    todo,
                    pool.workers[i],
                    gpu_ids,
                    journal,
                    config,
                    listener,
                    stop,
                    result.notes,
                ),
                name=f"cell-driver-{i}",
                daemon=True,
            )
            for i in range(threads_n)
        ]
        for thread in threads:
            thread.start()
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
        pool.close()
        journal.close()
    return result


def _drive(
    todo: queue.Queue[Cell],
    worker: Worker,
    gpu_ids: Sequence[str],
    journal: Journal,
    config: RunConfig,
    listener: Listener | None,
    stop: threading.Event,
    notes: list[str],
) -> None:
    """One cell thread: take cells until none are left, each on this thread's worker (or, for
    a cell that needs several GPUs, on a worker of its own that sees them all)."""
    try:
        while not stop.is_set():
            try:
                cell = todo.get_nowait()
            except queue.Empty:
                return
            own = cell.gpus >= 2 and len(gpu_ids) > 1
            cell_worker = (
                Worker(
                    worker.slot,
                    health_hooks=worker.health_hooks,
                    log_path=config.out / "workers" / f"worker-{worker.slot}-all-gpus.log",
                )
                if own
                else worker
            )
            cell_run = _CellRun(cell, cell_worker, journal, config, listener, stop)
            if listener is not None:
                listener.cell_started(cell, len(cell_run.explored))
            try:
                counts = cell_run.run()
            except _Stopped:
                return
            except Exception as exc:  # a runner bug: leave the cell unfinished for --resume
                notes.append(f"cell {cell.key} stopped by {type(exc).__name__}: {exc}")
                continue
            finally:
                if own:
                    cell_worker.close()
            journal.cell_done(cell.key, counts=dict(counts), floor_planned=cell_run.floor_planned)
            if listener is not None:
                listener.cell_finished(cell, counts)
    finally:
        worker.close()  # in this thread: a worker dies with the thread that started it


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, Counter]:
    """Outcome counts per family over explore records and cell skips (shrunk records are
    reproducers of classes already counted)."""
    table: dict[str, Counter] = {}
    for record in records:
        if record.get("shrunk"):
            continue
        table.setdefault(record.get("check") or "?", Counter())[record["outcome"]] += 1
    return table
