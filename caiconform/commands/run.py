"""Run the conformance matrix: every check family over every library pair, isolated.

Each example runs in a persistent worker process, so a library that aborts, segfaults, hangs
or poisons its CUDA context costs one example (outcome crash, hang or poisoned), not the run.
Every finished example is appended to RUN_DIR/results.jsonl at once; non-pass examples get a
reproducer script in RUN_DIR/repro/, and hypothesis shrinks each kind of non-pass result to a
minimal example. A killed run continues with `--resume --out RUN_DIR`.

Cells that cannot run here (library not installed, no GPU) are skipped and listed with the
reason. The summary ends with the verdict (`caiconform.results.verdict`, docs/reports.md): FIX, UPDATE
THE BASELINE or OK, judged at `--fail-on` (default corrupts,crashes,refuses-valid) with
`--expectations FILE` (a baseline) as `caiconform report` judges it.

The verdict is preceded by a line when it alone would mislead: "no GPU: N of M cells ran" on a
machine without a GPU that skipped cells (the exit status is still the verdict's), NOTHING
TESTED when no cell ran, INCOMPLETE when a cell did not finish.

Exit status: 0 the run completed and no defect at or above `--fail-on` that no expectation
covers was found (on a machine without a GPU: of the cells that ran); 1 the run completed, but
such a defect was found or an expectation entry no longer holds; 2 bad usage (an unknown
library, check or severity, an unusable expectation file, or an entry that matches no result
although its libraries and checks ran); 3 INCOMPLETE: a cell did not finish (resume it with
--resume); 4 NOTHING TESTED: every cell was skipped here; 130 interrupted (resume it with
--resume).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from caiconform.rundir import CELLS, RunDir

__all__ = ["add_arguments", "run"]

_OUTCOME_STYLE = {
    "pass": "green",
    "fail": "red",
    "rejected": "yellow",
    "accepted-invalid": "red",
    "crash": "bold red",
    "hang": "bold red",
    "poisoned": "bold red",
    "skip": "dim",
}


DEFAULT_MAX_EXAMPLES = 100
DEFAULT_ADAPTER_SOURCE = "caiconform.runner.libraries"
#: options a resumed run does not take from the command line (it keeps its own): attribute ->
#: the option's name
_KEPT_ON_RESUME = {
    "libraries": "--libraries",
    "checks": "--checks",
    "protocol": "--protocol",
    "max_examples": "--max-examples",
    "seed": "--seed",
    "shard": "--shard",
    "no_shrink": "--no-shrink",
    "no_confirm": "--no-confirm",
    "adapter_source": "--adapter-source",
    "drawn_crash_cap": "--drawn-crash-cap",
    "saturate": "--saturate",
    "saturate_found": "--saturate-found",
    "memory_kinds": "--memory-kinds",
}


def _ignored_on_resume(args: argparse.Namespace) -> list[str]:
    """The options given with --resume that the resumed run ignores (it keeps its own)."""
    return [
        option
        for attr, option in _KEPT_ON_RESUME.items()
        if getattr(args, attr, None) not in (None, False)
    ]


def _names(value: str) -> list[str]:
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected a comma-separated list of names")
    return list(dict.fromkeys(names))


def _int_at_least(minimum: int, what: str):
    """An argparse type for integers >= `minimum`, named `what` in its error."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            number = minimum - 1
        if number < minimum:
            raise argparse.ArgumentTypeError(f"expected {what}, got {value!r}")
        return number

    return parse


_positive_int = _int_at_least(1, "a positive integer")
_count = _int_at_least(0, "an integer >= 0")


def _shard(value: str) -> tuple[int, int]:
    from caiconform.runner.schedule import parse_shard

    try:
        return parse_shard(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {value!r}") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {value!r}")
    return number


def _seconds_or_zero(value: str) -> float:
    """Seconds, where 0 means no such limit."""
    if value.strip() in ("0", "0.0"):
        return 0.0
    return _seconds(value)


def _memory_kinds(value: str) -> tuple[str, ...]:
    """Comma-separated memory kinds, each one `caiconform.cuda.memkinds` knows (no CUDA
    needed to check the names)."""
    from caiconform.cuda.memkinds import check_kind

    kinds = [k.strip() for k in value.split(",") if k.strip()]
    if not kinds:
        raise argparse.ArgumentTypeError("expected at least one memory kind")
    try:
        return tuple(dict.fromkeys(check_kind(k) for k in kinds))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _selection_arguments(parser)
    _machine_arguments(parser)
    _budget_arguments(parser)
    _process_arguments(parser)
    _verdict_arguments(parser)


def _selection_arguments(parser: argparse.ArgumentParser) -> None:
    """What the run covers: libraries, checks, protocols, examples, its directory."""
    from caiconform.spec.protocols import NAMES as PROTOCOL_NAMES

    parser.add_argument(
        "--libraries", type=_names, metavar="A,B,...", help="adapters to run (default: all)"
    )
    parser.add_argument(
        "--checks",
        type=_names,
        metavar="FAMILY,...",
        help="check families (default: all); a dotted module path names a custom family",
    )
    parser.add_argument(
        "--protocol",
        choices=(*PROTOCOL_NAMES, "all", "both"),
        help=f"the interchange protocol the families exchange over: {', '.join(PROTOCOL_NAMES)}, "
        "or all of them (all, both: the default; a family comparing protocols, agreement, runs "
        "with any of its own)",
    )
    parser.add_argument(
        "--max-examples",
        type=_positive_int,
        metavar="N",
        help=f"per cell ({DEFAULT_MAX_EXAMPLES}; on --resume, the run's)",
    )
    parser.add_argument(
        "--out", type=Path, metavar="DIR", help="run directory (default: runs/<run id>)"
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out with its own libraries, checks, examples and seed "
        "(options that would change them are ignored, and named)",
    )


def _machine_arguments(parser: argparse.ArgumentParser) -> None:
    """Where and how hard it runs: workers, shards, timeouts, GPUs, the seed, crash caps,
    memory kinds."""
    from caiconform.runner.config import DRAWN_CRASH_CAP
    from caiconform.runner.pool import HOST_WORKERS, WORKERS_PER_GPU

    parser.add_argument(
        "--workers",
        type=_positive_int,
        metavar="N",
        help="worker processes; a free one starts the next longest cell or helps a long one "
        f"(default: {WORKERS_PER_GPU} per GPU used and {HOST_WORKERS} in all, at most the CPU "
        "cores available, at least one per GPU; the cores without a GPU)",
    )
    parser.add_argument(
        "--shard",
        type=_shard,
        metavar="I/N",
        help="run only part I of N of the matrix (1 <= I <= N), for N machines or CI jobs; "
        "join them with: caiconform report RUN_DIR --merge DIR ...",
    )
    parser.add_argument(
        "--costs-from",
        type=Path,
        metavar="RUN_DIR",
        help="an earlier run whose cells.jsonl times order the cells (longest first) and "
        "balance --shard (give every shard the same one)",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        metavar="S",
        help="seconds one example may take before it counts as a hang (30; on --resume, the run's)",
    )
    parser.add_argument(
        "--gpus",
        type=_count,
        metavar="N",
        help="GPUs to spread workers over (default: detected; 0 runs only what needs no GPU)",
    )
    parser.add_argument(
        "--seed",
        type=_count,
        metavar="N",
        help="hypothesis seed of the run (on --resume, the run's)",
    )
    parser.add_argument(
        "--drawn-crash-cap",
        type=_count,
        metavar="N",
        help="drawn examples of one kind (adversarial mutation, layout kind) that may crash, "
        "hang or poison a cell's worker before the rest of that kind there is skipped "
        f"(default {DRAWN_CRASH_CAP}; 0 runs them all; on --resume, the run's)",
    )
    parser.add_argument(
        "--memory-kinds",
        type=_memory_kinds,
        metavar="KIND,...",
        help="the memory kinds examples may draw (default: every kind: "
        "device,async,async-pool,managed,host-mapped,host-registered,vmm; `device` alone "
        "draws none, as runs before the dimension; on --resume, the run's)",
    )


def _budget_arguments(parser: argparse.ArgumentParser) -> None:
    """What each cell spends: shrinking, confirming, saturation, the start, batches."""
    from caiconform.runner.config import DEFAULT_SATURATE, DEFAULT_SATURATE_FOUND

    parser.add_argument(
        "--no-shrink", action="store_true", help="keep non-pass examples as found, unshrunk"
    )
    parser.add_argument(
        "--no-confirm",
        action="store_true",
        help="do not run the first example of each non-pass class once more (the catalogue "
        "then cannot say whether a finding reproduces)",
    )
    parser.add_argument(
        "--saturate",
        type=_count,
        metavar="N",
        help="end the drawn examples of a cell that met nothing but pass and skip after N in "
        f"a row met no new class ({DEFAULT_SATURATE}; 0: run every drawn example; on "
        "--resume, the run's)",
    )
    parser.add_argument(
        "--saturate-found",
        type=_count,
        metavar="N",
        help="the same for a cell that met a failure: its drawn examples end after N in a row "
        f"met no new class ({DEFAULT_SATURATE_FOUND}; 0: run every drawn example, as runs "
        "before it did; on --resume, the run's)",
    )
    parser.add_argument(
        "--fresh-start",
        action="store_true",
        help="probe the libraries, run their self-checks, calibrate and build the floors anew "
        "instead of reading what the last run in this environment kept "
        "(CAICONFORM_START_CACHE: its directory, or off)",
    )
    parser.add_argument(
        "--shrink-budget",
        type=_seconds,
        metavar="S",
        help="seconds spent shrinking each kind of non-pass result of a cell (20; on --resume, the run's)",
    )
    parser.add_argument(
        "--shrink-patience",
        type=_seconds_or_zero,
        metavar="S",
        help="stop shrinking a kind of non-pass result once S seconds (and 10 tries) found no "
        "smaller example of it: faster, but reproducers may stay larger (default 0: only the "
        "budget stops it; on --resume, the run's)",
    )
    parser.add_argument(
        "--batch",
        type=_positive_int,
        metavar="N",
        help="examples of a cell sent to a worker in one request, so it runs the next while "
        "the last is journaled (8; 1: one at a time)",
    )


def _process_arguments(parser: argparse.ArgumentParser) -> None:
    """How the workers are made: fork servers, preloads, zygotes, builds, spares, and the
    adapter source."""
    parser.add_argument(
        "--no-fork",
        action="store_true",
        help="start every worker process cold instead of forking it from a process that "
        "imported the libraries once (crashes then cost a restart, or a spare)",
    )
    preload = parser.add_mutually_exclusive_group()
    preload.add_argument(
        "--preload",
        action="store_true",
        default=None,
        help="fork servers import every available library before their first fork, instead "
        "of each cell's libraries when a cell needs them (no children replaced mid-run); "
        "the default when the run has GPU cells",
    )
    preload.add_argument(
        "--no-preload",
        dest="preload",
        action="store_false",
        help="import each cell's libraries when a cell needs them (the default on a CPU)",
    )
    parser.add_argument(
        "--no-zygote",
        dest="zygote",
        action="store_false",
        help="with preloading fork servers on a GPU: each imports the libraries itself instead "
        "of being forked from one process that imported them once (slower to start: "
        "docs/performance.md)",
    )
    parser.add_argument("--zygote", dest="zygote", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--no-warm-builds",
        dest="warm_builds",
        action="store_false",
        help="on a GPU: leave each worker to compile cuda.cccl's builds as its cells meet "
        "them, instead of compiling them at the start in processes of their own",
    )
    parser.add_argument(
        "--no-spare",
        action="store_true",
        help="with --no-fork: no prepared spare process per worker (halves the processes; "
        "crashes cost more)",
    )
    parser.add_argument(
        "--adapter-source",
        metavar="MODULE",
        help="module providing names() and probe(name) for the libraries "
        f"(default: the adapter registry, {DEFAULT_ADAPTER_SOURCE}; on --resume, the run's)",
    )


def _verdict_arguments(parser: argparse.ArgumentParser) -> None:
    """What makes the exit status 1: the expectations and the severities that fail."""
    parser.add_argument(
        "--expectations",
        metavar="FILE",
        default=None,
        help="expectation file (YAML/TOML, a baseline): the defects it covers do not make the "
        "exit status 1; an entry that no longer holds does",
    )
    from caiconform.commands.report import add_fail_on

    add_fail_on(parser)


#: seconds a run without a terminal may go without a line before it prints its status
HEARTBEAT_S = 10.0


class _Display:
    """Live progress: a rich progress bar on a terminal (from the start, "starting" until the
    cells are planned), one plain line per cell otherwise, and then a status line whenever
    HEARTBEAT_S went by without one (the start, a long cell). Called from the cell threads,
    hence the lock."""

    def __init__(self, console: Any, config: Any) -> None:
        self.console = console
        self.config = config  # read when the run starts: --resume restores max_examples
        self.max_examples = 0
        self.lock = threading.Lock()
        self.progress = None
        self.task = None
        self.done = 0
        self.total = 0
        self.examples = 0
        self.began = time.monotonic()
        self.said = self.began  # when the last line was printed
        self.phase = "starting: probing libraries and building coverage floors"
        self.started: dict[str, float] = {}
        self.seen: dict[str, int] = {}
        self.stopped = threading.Event()
        self.heartbeat: threading.Thread | None = None

    def __enter__(self) -> _Display:
        out = self.config.out
        self.say(
            f"Run directory: {out} (if stopped, continue with: caiconform run --resume --out {out})"
        )
        if self.console.is_terminal:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            self.progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("examples"),
                TimeElapsedColumn(),
                console=self.console,
            )
            self.progress.start()
            self.task = self.progress.add_task("starting", total=None)
        else:
            self.heartbeat = threading.Thread(
                target=self._beat, name="caiconform-status", daemon=True
            )
            self.heartbeat.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        if self.heartbeat is not None:
            self.heartbeat.join()
        if self.progress is not None:
            self.progress.stop()

    def say(self, text: str, markup: bool = False) -> None:
        """Print one line (never wrapped: it may hold a command to copy) and note when."""
        self.console.print(text, markup=markup, soft_wrap=True)
        self.said = time.monotonic()

    def _beat(self) -> None:
        """Without a terminal: a status line after HEARTBEAT_S seconds without one."""
        while not self.stopped.wait(1.0):
            with self.lock:
                now = time.monotonic()
                if now - self.said < HEARTBEAT_S:
                    continue
                if self.phase == "running":
                    doing = (
                        f"{self.done} of {self.total} cells done, {self.examples} examples "
                        "journaled"
                    )
                else:
                    doing = self.phase
                self.say(f"... {doing} ({now - self.began:.0f} s)")

    def planned(self, cells: Sequence[Any], skipped: Sequence[tuple[str, str]]) -> None:
        with self.lock:
            self.total = len(cells)
            self.max_examples = self.config.max_examples
            self.phase = "running"
            self.say(_plan_line(self.config, len(cells), len(skipped)))
            if self.progress is not None:
                self.progress.update(
                    self.task, total=len(cells) * self.max_examples, description="cells"
                )

    def cell_started(self, cell: Any, already: int) -> None:
        with self.lock:
            self.started[cell.key] = time.monotonic()
            self.seen[cell.key] = already
            if self.progress is not None:
                self.progress.update(self.task, advance=already, description=cell.key)

    def example(self, cell: Any, record: dict[str, Any]) -> None:
        with self.lock:
            self.seen[cell.key] = self.seen.get(cell.key, 0) + 1
            self.examples += 1
            if self.progress is not None:
                self.progress.update(self.task, advance=1, description=cell.key)

    def cell_finished(self, cell: Any, counts: Counter) -> None:
        with self.lock:
            self.done += 1
            elapsed = time.monotonic() - self.started.pop(cell.key, time.monotonic())
            examples = self.seen.pop(cell.key, 0)
            if self.progress is not None:
                self.progress.update(self.task, advance=max(0, self.max_examples - examples))
            parts = ", ".join(
                f"[{_OUTCOME_STYLE.get(o, '')}]{n} {o}[/]" for o, n in counts.most_common()
            )
            from rich.markup import escape

            self.say(
                escape(f"[{self.done}/{self.total}] {cell.key}: ")
                + (parts or "no examples")
                + f" ({elapsed:.1f} s)",
                markup=True,
            )


def _plan_line(config: Any, to_run: int, skipped: int) -> str:
    """The plan's line: the cells to run and skipped here, led by "no GPU:" on a machine
    without one (or `--gpus 0`) that skips cells, and by "NOTHING TESTED:" when no cell can
    run here."""
    from caiconform.env import visible_gpus

    cells = f"{to_run} {_plural(to_run, 'cell')} to run, {skipped} skipped here"
    if skipped:
        cells += " (listed at the end)"
    if not to_run and skipped and not config.resume:
        cells = f"{skipped} {_plural(skipped, 'cell')}"
        return f"NOTHING TESTED: {cells} skipped, none can run here (reasons listed at the end)"
    if skipped and (config.gpus == 0 or not visible_gpus()):
        return f"no GPU: {cells}"
    return cells


def _plural(n: int, word: str) -> str:
    return word if n == 1 else f"{word}s"


def _summary(console: Any, result: Any) -> None:
    from rich.table import Table

    from caiconform.results.outcome import OUTCOMES
    from caiconform.runner.driver import summarize

    # a cell that could not run has one skip record without an example index: counted apart
    cells_skipped: Counter = Counter(
        r.get("check") or "?"
        for r in result.records
        if r["outcome"] == "skip" and r.get("index") is None and not r.get("shrunk")
    )
    table = Table(title=f"run {result.run_id}: examples by outcome; cells skipped whole")
    table.add_column("family")
    for outcome in OUTCOMES:
        table.add_column(outcome, justify="right", style=_OUTCOME_STYLE[outcome])
    table.add_column("cells skipped", justify="right", style=_OUTCOME_STYLE["skip"])
    totals: Counter = Counter()
    for family, counts in summarize(result.records).items():
        counts["skip"] -= cells_skipped[family]
        totals.update(counts)
        row = [str(counts.get(o) or "") for o in OUTCOMES]
        table.add_row(family, *row, str(cells_skipped[family] or ""))
    total_row = [f"[b]{totals.get(o) or ''}[/b]" for o in OUTCOMES]
    table.add_row("[b]all[/b]", *total_row, f"[b]{sum(cells_skipped.values()) or ''}[/b]")
    console.print(table)

    by_reason: dict[str, list[str]] = defaultdict(list)
    for key, reason in result.skipped:
        by_reason[reason].append(key)
    if by_reason:
        console.print(f"Skipped {len(result.skipped)} cells here:")
        for reason, keys in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
            cells = keys[0] if len(keys) == 1 else f"{len(keys)} cells, e.g. {keys[0]}"
            console.print(f"  {reason} ({cells})", markup=False)
    for name, reason in dropped_libraries(result).items():
        console.print(f"Library {name} dropped (no cell for it): {reason}", markup=False)
    shrunk = sum(1 for r in result.records if r.get("shrunk"))
    repro = sum(1 for r in result.records if r.get("repro"))
    console.print(
        f"{repro} reproducer scripts ({shrunk} shrunk to a minimal example) in "
        f"{RunDir(result.run_dir).repro}",
        markup=False,
    )
    for note in result.notes:
        console.print(f"note: {note}", markup=False)
    console.print(f"Results: {RunDir(result.run_dir).journal}", markup=False)
    console.print(f"Report: caiconform report {result.run_dir}", markup=False)


def checks_for(names: list[str], protocol: str) -> list[str]:
    """`names` less the families that do not exchange over `protocol` (`plan.select_protocols`);
    a UsageError when none is left."""
    from caiconform.runner.plan import load_families, select_protocols
    from caiconform.spec.protocols import PROTOCOLS, parse

    if parse(protocol) == PROTOCOLS:
        return names
    out = []
    for name in names:
        families, broken = load_families([name])
        # a broken family stays: its cells are skipped with its reason
        if broken or select_protocols(families, protocol):
            out.append(name)
    if not out:
        from caiconform.errors import UsageError

        raise UsageError(f"--protocol {protocol}: none of the checks {', '.join(names)} uses it")
    return out


def run(args: argparse.Namespace) -> int:
    from caiconform.cli import UsageError, console
    from caiconform.runner import driver
    from caiconform.runner.config import RunConfig
    from caiconform.runner.plan import default_checks

    if args.resume and args.out is None:
        raise UsageError("--resume needs --out RUN_DIR (the run to continue)")
    from caiconform.commands.report import (
        expectations_of,
        fail_on_of,
        headline_in_state,
        unmatched_exit,
        verdict_of_run,
    )

    fail_on = fail_on_of(args)
    expectations = expectations_of(args.expectations)
    run_id = None if args.out else driver.new_run_id()
    out = args.out or Path("runs") / run_id
    ignored = _ignored_on_resume(args) if args.resume else []
    config = RunConfig(
        out=out,
        run_id=run_id,
        checks=checks_for(args.checks or default_checks(), args.protocol or "both"),
        libraries=args.libraries,
        max_examples=args.max_examples or DEFAULT_MAX_EXAMPLES,
        seed=args.seed,
        workers=args.workers,
        timeout_s=args.timeout,
        gpus=args.gpus,
        shrink=not args.no_shrink,
        confirm=not args.no_confirm,
        shrink_budget_s=args.shrink_budget,
        shrink_patience_s=args.shrink_patience,
        adapter_source=args.adapter_source or DEFAULT_ADAPTER_SOURCE,
        resume=args.resume,
        spare_workers=not args.no_spare,
        fork_workers=not args.no_fork,
        preload_workers=args.preload,
        zygote=args.zygote,
        warm_builds=args.warm_builds,
        shard=args.shard,
        costs_from=args.costs_from,
        fresh_start=args.fresh_start,
    )
    if args.drawn_crash_cap is not None:
        config.drawn_crash_cap = args.drawn_crash_cap
    if args.saturate is not None:
        config.saturate = args.saturate
    if args.saturate_found is not None:
        config.saturate_found = args.saturate_found
    if args.memory_kinds is not None:
        config.memory_kinds = args.memory_kinds
    if args.batch is not None:
        config.batch = args.batch
    if args.costs_from is not None and not RunDir(args.costs_from).cells.is_file():
        raise UsageError(f"--costs-from {args.costs_from}: no {CELLS} there")
    out_console = console()
    if ignored:
        out_console.print(
            f"--resume continues the run with its own settings: ignored {', '.join(ignored)}",
            markup=False,
        )
    with _Display(out_console, config) as display:
        result = driver.run_matrix(config, display)
    if result.resumed_cells:
        out_console.print(f"resumed: {result.resumed_cells} cells were already complete")
    _summary(out_console, result)
    if result.interrupted:
        print(f"interrupted; continue with: caiconform run --resume --out {out}", file=sys.stderr)
        return 130
    if dropped_libraries(result) and not result.skipped and not result.records:
        raise UsageError("nothing ran: every library asked for was dropped (reasons above)")
    from caiconform.report.runstate import exit_status, first_line, state_of, status_of

    states = [state_of(result.run_dir, result.records)]
    line = first_line(states)
    if line is not None:
        out_console.print(line, markup=False, soft_wrap=True)
    verdict = verdict_of_run(result.run_dir, result.records, fail_on, expectations)
    headline = headline_in_state(verdict.headline(), status_of(states))
    out_console.print(headline, markup=False, soft_wrap=True)
    unmatched = unmatched_exit([status.describe() for status in verdict.unmatched])
    return unmatched or exit_status(status_of(states)) or (0 if verdict.ok else 1)


def dropped_libraries(result: Any) -> dict[str, str]:
    """name -> reason, for each library of the run's `adapters.json` that is unavailable and
    that no cell names (an entry point that failed to load has no capabilities, so no cell is
    planned for it, not even a skipped one): the summary says why each was dropped."""
    import json

    try:
        adapters = json.loads(RunDir(result.run_dir).adapters.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(adapters, dict):
        return {}
    named = {part for key, _ in result.skipped for part in str(key).split("/")[1:]}
    named |= {r.get(role) for r in result.records for role in ("producer", "consumer")}
    return {
        str(name): str(info.get("reason") or "unavailable")
        for name, info in adapters.items()
        if isinstance(info, dict) and not info.get("available") and name not in named
    }
