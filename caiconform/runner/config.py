"""The settings of one run (`RunConfig`), what a run gives back (`RunResult`) and the progress
callbacks it makes (`Listener`); how a resumed run's saved settings (`run.json`) and the defaults
complete a configuration (`resumed_run_id`, `fill_defaults`)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from caiconform.errors import UsageError
from caiconform.rundir import RUN_JSON, RunDir
from caiconform.runner.plan import Cell

DEFAULT_TIMEOUT_S = 30.0

#: seconds of shrinking per (outcome, rule) class; classes the floor met are not shrunk at all
DEFAULT_SHRINK_BUDGET_S = 20.0

#: `--shrink-patience S`: a class's shrink also stops once S seconds, and
#: SHRINK_PATIENCE_EXCHANGES exchanges, brought no smaller example of it; 0 (the default): the
#: budget alone: classes whose exchanges take seconds each (cuda.cccl's: a kernel build per
#: dtype) find their first smaller example late, and a patience keeps their large drawn
#: examples, while a small reproducer is worth more to a maintainer than the few seconds saved
#: (docs/performance.md, "Figures behind the code")
DEFAULT_SHRINK_PATIENCE_S = 0.0

#: drawn examples of one kind (params `kind`, `mutation`, `rule`, layout kind: `crash_kind`)
#: that may end in crash/hang/poisoned (or leave their worker untrusted) in a cell before the
#: rest of that kind there is skipped. Each such example costs a fresh process (a CUDA context
#: and the library's first exchange), and a run's journal replayed with one per kind kept
#: every group of its findings catalogue, the floor's own examples (capped apart) covering
#: each kind's rule (docs/performance.md, "Figures behind the code")
#: (`RunConfig.drawn_crash_cap`, `--drawn-crash-cap`; 0 runs them all)
DRAWN_CRASH_CAP = 1

#: drawn examples of a cell in a row, in journal order, that met no (outcome, rule) class the
#: cell had not met (its floor's included), in a cell that met nothing but pass and skip, before
#: the cell's other drawn examples are left unrun: a cell that has only passed for that many
#: examples in a row rarely fails in the rest (a cell that failed has its own limit,
#: DEFAULT_SATURATE_FOUND, below). Families whose draws are each a different input
#: (adversarial's mutants: `SATURATES = False`) run all of theirs. Decided in journal order, so
#: the journal is the same however the cell is split (`RunConfig.saturate`, `--saturate`; 0
#: runs every drawn example; docs/performance.md)
DEFAULT_SATURATE = 20

#: the same for a cell that met a failure (`RunConfig.saturate_found`, `--saturate-found`; 0
#: runs every drawn example of such a cell): drawn examples in a row that met no (outcome,
#: rule) class the cell had not met, its failures' included. Larger than DEFAULT_SATURATE: a
#: failing cell's rarer failures come later than a passing cell's first one. Families whose
#: draws are each their own input (`SATURATES = False`) run every one. What each limit leaves
#: unrun and loses, replayed on a run's journal (`scripts/simulate_saturation.py`), and why
#: not 30 (two refuses-valid findings met after 38 and 48 quiet draws): docs/performance.md.
DEFAULT_SATURATE_FOUND = 50

#: a cell's examples sent to a worker in one request (`Worker.run_many`, `RunConfig.batch`):
#: the worker runs the next while the parent reads, judges and journals the last, instead of
#: waiting for the round trip (the transfer and the parent's turnaround take longer than
#: many examples: docs/performance.md, "Figures behind the code")
DEFAULT_BATCH = 8
#: a batch is at most this fraction (1/BATCH_SHARE) of what the cell has left, so helpers
#: still share a cell's last examples
BATCH_SHARE = 4

#: saved settings a resumed run takes from the command line when given there
_OVERRIDABLE = ("timeout_s", "shrink_budget_s", "shrink_patience_s")


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
    #: drawn examples in a row without a new class that end a cell's draws (DEFAULT_SATURATE;
    #: 0: every drawn example runs)
    saturate: int = DEFAULT_SATURATE
    #: the same for a cell that met a class other than pass and skip (DEFAULT_SATURATE_FOUND;
    #: 0: such a cell runs every drawn example)
    saturate_found: int = DEFAULT_SATURATE_FOUND
    #: keep a prepared spare process per worker slot (see `Worker`)
    spare_workers: bool = True
    #: calibrate the streams spin on this machine when streams cells run on a GPU
    calibrate_spin: bool = True
    #: measure the start anew (probes, self-checks, calibration, floors) instead of reading
    #: what the last run in this environment kept (`runner.startcache`); kept either way
    fresh_start: bool = False
    #: each worker slot is a fork server (`forkserver.py`): libraries imported once, a crashed
    #: worker replaced by a fork (Linux; spare_workers then applies to nothing)
    fork_workers: bool = True
    #: fork servers import the run's check modules and available libraries before their first
    #: fork (`forkserver.PRELOAD_ENV`) instead of as cells need them: no children replaced
    #: when a cell brings a new library, but every worker pays every import up front. None:
    #: when the run has GPU cells, where it is faster; on a CPU with one-second synthetic
    #: imports and few cells per worker it is slower (bench_matrix.py; docs/performance.md,
    #: "Figures behind the code")
    preload_workers: bool | None = None
    #: with fork servers that preload and start with the run (`_starts_early`): fork them from
    #: one process that imported the libraries once (`runner.zygote`) instead of each importing
    #: them itself (a shorter start, the same finding groups: docs/performance.md, "Figures
    #: behind the code")
    zygote: bool = True
    #: on a GPU, compile at the run's start, in processes of their own, what each worker
    #: process would otherwise compile for itself (the adapter source's `builds`: cuda.cccl's
    #: builds per element type)
    warm_builds: bool = True
    #: draw cells' examples in spawned processes ahead of the cells (`prefetch.py`); None:
    #: when the matrix has at least `prefetch.MIN_CELLS` cells to run
    prefetch_draws: bool | None = None
    #: run the first example of each non-pass class of a cell once more, and say in
    #: cells.jsonl `confirmed` whether it gave the same class (`CellRun.run_confirm`)
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
            "saturate": self.saturate,
            "saturate_found": self.saturate_found,
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


def resumed_run_id(config: RunConfig) -> str:
    """Reopen a run for `--resume`: its saved settings replace those in `config`."""
    meta_path = RunDir(config.out).run_json
    if not meta_path.exists():
        raise UsageError(f"nothing to resume in {config.out} (no {RUN_JSON})")
    try:
        meta = json.loads(meta_path.read_text())
        settings = meta["settings"]
        for key, value in settings.items():
            if key in _OVERRIDABLE and getattr(config, key) is not None:
                continue  # given again on the command line: the new value wins
            setattr(config, key, value)
        if "drawn_crash_cap" not in settings:  # a run from before the cap ran every example
            config.drawn_crash_cap = 0
        if "saturate" not in settings:  # a run from before saturation ran every example
            config.saturate = 0
        if "saturate_found" not in settings:  # before it, a cell that failed ran every draw
            config.saturate_found = 0
        if "memory_kinds" not in settings:  # a run from before the dimension drew none
            config.memory_kinds = ("device",)
        if config.shard is not None:
            config.shard = tuple(config.shard)
        return meta["run_id"]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"{meta_path} is not a caiconform run file: {exc}") from None


def fill_defaults(config: RunConfig) -> None:
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
