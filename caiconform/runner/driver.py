"""The session: `run_matrix` opens (or resumes) a run directory, starts the worker slots, the
library probes and the startup work, plans and orders the cells, and drives them with one thread
per worker slot (`_drive`) until none is left; each thread drives its own hypothesis engine
(thread-safe since hypothesis 6.136; with an older one, cells run one at a time).

One cell's life is `runner.cell`, the run's settings and result `runner.config`, the records it
journals `runner.records`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import hypothesis

from caiconform.adapters import selfcheck
from caiconform.env import visible_gpus
from caiconform.errors import UsageError
from caiconform.results.record import family_skip_record
from caiconform.rundir import RunDir
from caiconform.runner.calibrate import SPIN_ENV, SPIN_FILE, SPIN_FILE_ENV
from caiconform.runner.cell import CellRun
from caiconform.runner.config import Listener, RunConfig, RunResult, fill_defaults, resumed_run_id
from caiconform.runner.forkserver import QUEUES_ENV, queues_for
from caiconform.runner.jobs import Stopped
from caiconform.runner.journal import Journal, JournalError
from caiconform.runner.libraries import LibraryInfo
from caiconform.runner.plan import BrokenFamily, Cell, Family, load_families, plan_cells
from caiconform.runner.pool import Worker, WorkerPool, choose_workers, forks_here
from caiconform.runner.pool import default_workers as _default_workers
from caiconform.runner.prefetch import MIN_CELLS, Prefetch, processes_for
from caiconform.runner.records import skip_record
from caiconform.runner.resolve import resolve
from caiconform.runner.schedule import (
    Scheduler,
    estimate_cost,
    load_history,
    shard_cells,
    start_order,
    wide_threads,
)
from caiconform.runner.startcache import StartCache
from caiconform.runner.startup import Startup, save_run_meta
from caiconform.runner.zygote import Zygote

#: how long a thread of the run's parent may hold the GIL while others wait for it (Python's
#: default is 5 ms). Each example's answer is read by a cell thread that needs the GIL, while
#: other threads shrink with hypothesis or journal records, so a long interval keeps answers
#: waiting outside the workers (docs/performance.md, "Figures behind the code").
#: SWITCH_INTERVAL_ENV overrides it (seconds), to measure it
SWITCH_INTERVAL_S = 0.0005

SWITCH_INTERVAL_ENV = "CAICONFORM_SWITCH_INTERVAL_S"

_THREAD_SAFE_HYPOTHESIS = (6, 136)


# -- the run --------------------------------------------------------------------------------
def new_run_id() -> str:
    """A run ID: the UTC start time and a short random suffix."""
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def _new_run(config: RunConfig) -> str:
    """Create the run directory and its `run.json`; returns the new run_id."""
    if RunDir(config.out).journal.exists():
        raise UsageError(f"{config.out} already holds a run; use --resume or another --out")
    try:
        RunDir(config.out).repro.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the run directory {config.out}: {exc}") from None
    if config.seed is None:
        config.seed = secrets.randbits(32)
    meta = {
        "run_id": config.run_id or new_run_id(),
        "created": time.time(),
        "settings": config.saved(),
    }
    RunDir(config.out).run_json.write_text(json.dumps(meta, indent=1) + "\n")
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


def _write_adapters(out: Path, infos: dict[str, LibraryInfo]) -> None:
    """What each library's probe said, beside env.json (which lists distributions): the
    adapter's own version string, so a stated compatibility shim ("0.30.4+shim(...)") reaches
    the report."""
    data = {
        name: {"available": info.available, "reason": info.reason, "version": info.version}
        for name, info in infos.items()
    }
    RunDir(out).adapters.write_text(json.dumps(data, indent=1) + "\n")


def _preload_everywhere(
    pool: WorkerPool, config: RunConfig, modules: Sequence[str], libraries: Sequence[str]
) -> None:
    """Have every fork-server worker import the run's check modules and libraries before its
    first fork (`forkserver.PRELOAD_ENV`), so no child is replaced because a cell brought a
    new import (a replacement initialises every library it had seen again). Read when a
    slot's server starts (or restarts)."""
    from caiconform.runner.forkserver import PRELOAD_ENV

    spec = json.dumps(
        {"modules": list(modules), "libraries": list(libraries), "source": config.adapter_source}
    )
    for worker in pool.workers:
        worker.env[PRELOAD_ENV] = spec


def _starts_early(config: RunConfig, families: Sequence[Any], gpu_ids: Sequence[str]) -> bool:
    """Whether the slots' fork servers start before the probes, importing every library asked
    for: fork servers that preload (`--preload`, by default when a GPU is visible and a family
    needs one), and no `--shard`, nor `--cells` fewer than the slots, that could leave most
    slots without a cell (the pytest plugin's run names its cells, dozens of them: started
    after the probes, its servers' imports made a fresh machine's first example wait,
    docs/performance.md)."""
    preload = config.preload_workers
    if preload is None:
        preload = bool(gpu_ids) and any(f.needs_gpu for f in families)
    cells = config.only_cells
    return bool(
        config.fork_workers
        and preload
        and config.shard is None
        and (cells is None or len(cells) >= max(1, config.workers or 1))
        and _hypothesis_threads_ok()
    )


def _start_zygote(pool: WorkerPool, config: RunConfig) -> Zygote:
    """Start the zygote with a slot's environment (it never touches a GPU: each server it
    forks gets its own slot's) and give it to every slot, whose fork servers it then forks
    (`runner.zygote`)."""
    env = pool.workers[0]._environment()
    log_dir = RunDir(config.out).workers
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
    run_id = resumed_run_id(config) if config.resume else None
    fill_defaults(config)
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
    requested = _libraries_asked(config)
    run_id = run_id or _new_run(config)
    times_at_start = os.times()
    gpu_ids, no_gpu_reason = _gpu_ids(config.gpus)
    try:
        journal = Journal(config.out, run_id)
    except JournalError as exc:
        raise UsageError(f"cannot resume: {exc} (the journal is damaged)") from None
    startup = _begin_startup(config, families, requested, gpu_ids)
    pool = _worker_pool(config, gpu_ids)
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
            spin_file, zygote = _prepare_early_start(config, families, requested, pool)
            threads = _start_threads(scheduler, pool, gpu_ids, config, ready, len(pool.workers))
            if _prefetch_likely(config):  # its processes start beside the probes
                prefetch = _prefetch(pool, families)
        infos = startup.probe(config.adapter_source, requested, max(1, config.workers))
        _write_adapters(config.out, infos)
        result.notes.extend(selfcheck.save_and_tell(config.out, infos))
        cells, skipped = _plan(config, families, infos, pool, len(gpu_ids), no_gpu_reason)
        done = journal.finished_cells()
        if config.calibrate_spin and any(
            c.family.name == "streams" and c.gpus and c.key not in done for c in cells
        ):
            _apply_spin(startup.calibration(), pool, result.notes, spin_file)
        if not threads:
            # the cell threads start their workers now, while the coverage floors (which the
            # schedule's costs need) are still being built, so the fork servers' imports
            # overlap the rest of the start
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
        _record_plan(config, journal, listener, result, cells, skipped, broken, done)
        to_run = [c for c in cells if c.key not in done]
        _save_queues(config, to_run)
        wanted = config.prefetch_draws
        if wanted or (wanted is None and len(to_run) >= MIN_CELLS):
            prefetch = prefetch or _prefetch(pool, families)
        elif prefetch is not None:  # started early for a plan that turned out small
            prefetch.close()
            prefetch = None
        runs = [
            CellRun(
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
        _wait_for_threads(threads, stop, result, config.timeout_s)
        result.notes.extend(_saturation_note(runs, config.saturate, config.saturate_found))
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


def _prefetch_likely(config: RunConfig) -> bool:
    """Whether the run is likely to draw in a pool (`prefetch_draws`, else a plan of at least
    `MIN_CELLS` cells): a run that names fewer cells (the pytest plugin's) starts none early."""
    if config.prefetch_draws is not None:
        return config.prefetch_draws
    return config.only_cells is None or len(config.only_cells) >= MIN_CELLS


def _prefetch(pool: WorkerPool, families: Sequence[Family]) -> Prefetch:
    """The pool that draws the cells' examples ahead of them (`runner.prefetch`), its processes
    started now and importing the run's check modules."""
    return Prefetch(processes_for(len(pool.workers)), sorted({f.module.__name__ for f in families}))


def _saturation_note(runs: Sequence[CellRun], limit: int, limit_found: int) -> list[str]:
    """What saturation (`RunConfig.saturate`, `saturate_found`) left unrun, a line for the
    cells that met nothing but pass and skip and one for those that met a failure, when it
    left any."""
    cut = [r.saturated for r in runs if r.saturated]
    notes = []
    passing = [entry for entry in cut if not entry.get("found")]
    failing = [entry for entry in cut if entry.get("found")]
    if passing:
        notes.append(
            f"{len(passing)} cell(s) that met nothing but pass and skip ended their draws after "
            f"{limit} in a row met no new class: {sum(e['unrun'] for e in passing)} drawn "
            "examples left unrun (--saturate 0 runs them)"
        )
    if failing:
        notes.append(
            f"{len(failing)} cell(s) that met a failure ended their draws after {limit_found} "
            f"in a row met no new class: {sum(e['unrun'] for e in failing)} drawn examples left "
            "unrun (--saturate-found 0 runs them)"
        )
    return notes


def _libraries_asked(config: RunConfig) -> list[str]:
    """The libraries the run asks for: `config.libraries`, else every one the adapter source
    names. UsageError when the source cannot name them or does not know one asked for."""
    try:
        source_names: Callable[[], list[str]] = resolve(f"{config.adapter_source}:names")
        known = list(source_names())
    except (ImportError, AttributeError, ValueError) as exc:
        raise UsageError(f"adapter source {config.adapter_source!r} unusable: {exc}") from None
    requested = config.libraries if config.libraries is not None else known
    unknown = [name for name in requested if name not in known]
    if unknown:
        raise UsageError(f"unknown library {unknown[0]!r} (known: {', '.join(known)})")
    return requested


def _begin_startup(
    config: RunConfig, families: Sequence[Family], requested: Sequence[str], gpu_ids: Sequence[str]
) -> Startup:
    """Begin the run's start side by side (`runner.startup`): the library probes, the spin
    calibration when streams cells may run on a GPU, the families' coverage floors and the
    libraries' builds."""
    startup = Startup(
        config.out,
        calibrate=config.calibrate_spin
        and bool(gpu_ids)
        and any(f.name == "streams" and f.needs_gpu for f in families),
        cache=StartCache.for_run(
            [config.adapter_source, *requested, *gpu_ids], fresh=config.fresh_start
        ),
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
    return startup


def _worker_pool(config: RunConfig, gpu_ids: Sequence[str]) -> WorkerPool:
    """The run's worker slots: as many as `config.workers` or the default's rule gives
    (`pool.choose_workers`, recorded in run.json `workers`), spread over `gpu_ids`."""
    choice = choose_workers(config.workers, gpu_ids)
    config.workers = choice.count
    with contextlib.suppress(OSError, ValueError):
        save_run_meta(config.out, workers=choice.to_json())
    return WorkerPool(
        max(1, config.workers),
        gpu_ids=gpu_ids,
        health_hooks=config.health_hooks,
        log_dir=RunDir(config.out).workers,
        spare=config.spare_workers,
        fork=config.fork_workers,
    )


def _prepare_early_start(
    config: RunConfig, families: Sequence[Family], requested: Sequence[str], pool: WorkerPool
) -> tuple[Path, Zygote | None]:
    """Make the slots' fork servers import every library asked for while the probes find which
    are available (`_starts_early`): each slot preloads the run's check modules and libraries
    and reads the streams spin from a file written once it is known (returned); with
    `config.zygote`, the zygote that forks the servers (returned). A server that dies importing
    a library the probes then find unusable is restarted, with the available ones only, by its
    first example."""
    spin_file = RunDir(config.out).workers / SPIN_FILE
    spin_file.unlink(missing_ok=True)
    modules = sorted({f.module.__name__ for f in families})
    _preload_everywhere(pool, config, modules, sorted(requested))
    for worker in pool.workers:
        worker.env[SPIN_FILE_ENV] = str(spin_file)
    zygote = _start_zygote(pool, config) if config.zygote else None
    return spin_file, zygote


def _plan(
    config: RunConfig,
    families: Sequence[Family],
    infos: dict[str, LibraryInfo],
    pool: WorkerPool,
    gpus: int,
    no_gpu_reason: str,
) -> tuple[list[Cell], list[tuple[Cell, str]]]:
    """The cells to run and those skipped here (`plan.plan_cells`), narrowed to
    `config.only_cells` when given; fork servers that preload are told the modules and the
    available libraries those cells need."""
    cells, skipped = plan_cells(families, infos, gpus, no_gpu_reason)
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
    return cells, skipped


def _record_plan(
    config: RunConfig,
    journal: Journal,
    listener: Listener | None,
    result: RunResult,
    cells: Sequence[Cell],
    skipped: Sequence[tuple[Cell, str]],
    broken: Sequence[BrokenFamily],
    done: set[str],
) -> None:
    """What the run owes and what it skips: `result.skipped`, run.json `plan` (the cells of the
    plan, `report.runstate`: one without its cells.jsonl entry makes the run INCOMPLETE,
    whether or not it ever started), the skip records of families that cannot be imported and
    of cells skipped here (those not journaled before), and the listener's `planned`."""
    result.skipped = [(f"{b.name}/*", b.reason) for b in broken]
    result.skipped += [(c.key, why) for c, why in skipped]
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


def _wait_for_threads(
    threads: Sequence[threading.Thread], stop: threading.Event, result: RunResult, timeout_s: float
) -> None:
    """Wait for the cell threads to run out of work; on Ctrl-C, stop them (each leaves after
    its current example, at most `timeout_s` later) and mark the run interrupted."""
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(timeout=0.2)
    except KeyboardInterrupt:
        stop.set()
        result.interrupted = True
        for thread in threads:
            thread.join(timeout=timeout_s + 5)


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
    of wall is bound by its own GIL, not by the workers."""
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
            except Stopped:
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
    where a consumer's faulting kernel held up the other processes. Without a fork server and
    a spare, every poisoned context cost a cold start of a process importing every library;
    such cells' tasks are spread over up to WIDE_HELPERS threads, not run whole on one worker
    (docs/performance.md, "Figures behind the code")."""
    env = {k: v for k, v in slot.env.items() if k != "CUDA_VISIBLE_DEVICES"}
    own = slot.env.get("CUDA_VISIBLE_DEVICES")
    if own is not None and own in gpu_ids:
        env["CUDA_VISIBLE_DEVICES"] = ",".join([own, *(g for g in gpu_ids if g != own)])
    wide = Worker(
        slot.slot,
        env=env,
        health_hooks=slot.health_hooks,
        log_path=RunDir(config.out).workers / f"worker-{slot.slot}-all-gpus.log",
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
