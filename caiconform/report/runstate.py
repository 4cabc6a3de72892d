"""Whether a run directory holds a whole run, and what it tested: the line every summary opens
with when the verdict alone would mislead (docs/reports.md).

A run directory with a plan or a cells.jsonl is INCOMPLETE when a cell it planned (run.json `plan`) has no completion entry in
cells.jsonl, when a cell has records but no completion entry (killed mid-cell), when a finished
cell's journal holds fewer examples than its completion entry counts (lost lines). It is
NOTHING TESTED when no example of any cell ran; a merge of `--shard I/N` runs is INCOMPLETE while
a shard is missing, or when its shards were run with different settings (seed, max-examples,
checks, libraries: their partitions of the matrix differ, so cells fall in no shard); one shard
judged alone says it is one shard of N; and it says "no GPU" when
the machine had none (env.json `gpu`) and cells were skipped. The reader acts on these before
the verdict: an OK over half a run, or over nothing, is not an OK.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caiconform.rundir import RunDir

__all__ = [
    "RunState",
    "Unfinished",
    "state_of",
    "states_of",
    "first_line",
    "status_of",
    "exit_status",
    "as_json",
    "headline_in_state",
    "missing_shards",
    "finished_cells",
    "differing_settings",
    "EXIT_INCOMPLETE",
    "EXIT_NOTHING_TESTED",
]

#: exit status of a command whose run is incomplete (unless told to allow it)
EXIT_INCOMPLETE = 3
#: exit status of a command whose run tested nothing: no example of any cell ran
EXIT_NOTHING_TESTED = 4
#: cells a line names before it counts the rest
_NAMED = 3
#: run.json settings that decide a shard's cells and examples: shards merged must agree on them
#: (`--protocol` is folded into `checks`)
MATRIX_SETTINGS = (
    "checks",
    "libraries",
    "max_examples",
    "seed",
    "adapter_source",
    "memory_kinds",
    "saturate",
    "saturate_found",
)


@dataclass(frozen=True)
class Unfinished:
    """A cell without its whole journal: `journaled` examples are there; `expected` is the
    count its completion entry gives (None: the cell never finished)."""

    cell: str
    journaled: int
    expected: int | None = None

    def describe(self) -> str:
        if self.expected is not None:
            return f"{self.cell} lost {self.expected - self.journaled} of {self.expected} examples"
        if self.journaled:
            examples = "example" if self.journaled == 1 else "examples"
            return f"{self.cell} stopped after {self.journaled} {examples}"
        return f"{self.cell} not started"


@dataclass
class RunState:
    """What one run directory holds: its cells, which ran, which are unfinished."""

    run_dir: Path
    #: cells of the run: planned, or seen in the journal when there is no plan
    cells: int = 0
    #: cells that ran at least one example that was not a skip
    ran: int = 0
    unfinished: list[Unfinished] = field(default_factory=list)
    #: examples known to be missing (lost lines, drawn examples of unfinished cells not run)
    missing: int = 0
    #: why the machine had no GPU (env.json), when it had none
    no_gpu: str | None = None
    #: skip reasons, most common first (for NOTHING TESTED)
    skip_reasons: list[tuple[str, int]] = field(default_factory=list)
    #: (I, N) of a `--shard I/N` run (run.json settings), None for a whole run
    shard: tuple[int, int] | None = None
    #: the run.json settings of MATRIX_SETTINGS (what a merge of shards must agree on)
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def incomplete(self) -> bool:
        return bool(self.unfinished)

    @property
    def resume(self) -> str:
        return f"caiconform run --resume --out {self.run_dir}"


def missing_shards(states: Sequence[RunState]) -> list[str]:
    """The shards (`I/N`) of a merge of sharded runs that none of `states` holds: a merge of two
    of three shards covers two thirds of the matrix, however whole each of them is. One shard
    judged alone (its own run's report) misses nothing: it judges its own cells."""
    seen: dict[int, set[int]] = {}
    for state in states:
        if state.shard is not None:
            index, count = state.shard
            seen.setdefault(count, set()).add(index)
    if len(states) < 2:
        return []
    return [
        f"{i}/{count}"
        for count, indices in sorted(seen.items())
        for i in range(1, count + 1)
        if i not in indices
    ]


def differing_settings(states: Sequence[RunState]) -> list[str]:
    """What the shards of a merge disagree on, one `name (value in shard I/N, ...)` each: the
    shard count, or a setting of MATRIX_SETTINGS. Shards of different settings split different
    matrices (the split weighs each cell's examples), so some cells are in none of them."""
    shards = [s for s in states if s.shard is not None]
    if len(states) < 2 or not shards:
        return []
    differ = []
    counts = {s.shard[1] for s in shards if s.shard is not None}
    if len(counts) > 1:
        differ.append(f"shard count ({', '.join(f'{n}' for n in sorted(counts))})")
    for name in MATRIX_SETTINGS:
        values = {json.dumps(s.settings.get(name), sort_keys=True): s for s in shards}
        if len(values) > 1:
            seen = ", ".join(
                f"{_cut(value, 40)} in {_shard_name(state)}" for value, state in values.items()
            )
            differ.append(f"{name} ({seen})")
    return differ


def _shard_name(state: RunState) -> str:
    return f"shard {state.shard[0]}/{state.shard[1]}" if state.shard else str(state.run_dir)


def status_of(states: Sequence[RunState]) -> str:
    """`incomplete`, `nothing-tested`, `one-shard` (a `--shard I/N` run judged alone: the
    verdict is about its cells only), `no-gpu` (cells skipped on a machine without one) or
    `complete`."""
    if any(s.incomplete for s in states) or missing_shards(states) or differing_settings(states):
        return "incomplete"
    if not any(s.ran for s in states):
        return "nothing-tested"
    if len(states) == 1 and states[0].shard is not None and states[0].shard[1] > 1:
        return "one-shard"
    if all(s.no_gpu is not None for s in states) and sum(s.ran for s in states) < sum(
        s.cells for s in states
    ):
        return "no-gpu"
    return "complete"


def first_line(states: Sequence[RunState]) -> str | None:
    """The line a summary opens with, or None when the run is whole and tested with a GPU."""
    status = status_of(states)
    cells = sum(s.cells for s in states)
    ran = sum(s.ran for s in states)
    if status == "incomplete" and differing_settings(states):
        return (
            "INCOMPLETE: the shards merged were run with different settings, so cells of the "
            f"matrix are in none of them: {'; '.join(differing_settings(states))}; run every "
            "shard with the same options (caiconform run --shard I/N), then merge again"
        )
    if status == "incomplete":
        unfinished = [u for s in states for u in s.unfinished]
        named = "; ".join(u.describe() for u in unfinished[:_NAMED])
        if len(unfinished) > _NAMED:
            named += f"; and {len(unfinished) - _NAMED} more"
        missing = sum(s.missing for s in states)
        parts = [f"{len(unfinished)} of {cells} cells unfinished ({named})"] if unfinished else []
        absent = missing_shards(states)
        if absent:
            parts.insert(0, f"shard(s) {', '.join(absent)} not among the runs merged")
            if not unfinished:  # every merged shard whole: run the absent ones
                return (
                    f"INCOMPLETE: {', '.join(parts)}; run them with caiconform run --shard "
                    f"{absent[0]} (the same options), then merge again"
                )
        if missing:
            parts.append(f"about {missing} examples missing")
        resume = " and ".join(s.resume for s in states if s.incomplete)
        return f"INCOMPLETE: {', '.join(parts)}; continue with: {resume}"
    if status == "nothing-tested":
        reasons: Counter = Counter()
        for state in states:
            reasons.update(dict(state.skip_reasons))
        why = "; ".join(f"{_cut(reason)} ({n} {_cells(n)})" for reason, n in reasons.most_common(2))
        gpu = " (no GPU here)" if any(s.no_gpu is not None for s in states) else ""
        return f"NOTHING TESTED: {cells} {_cells(cells)} skipped, none ran{gpu}: {why}"
    if status == "one-shard":
        index, count = states[0].shard or (1, 1)
        gpu = f"; no GPU: {ran} of {cells} cells ran" if states[0].no_gpu is not None else ""
        return (
            f"ONE SHARD: shard {index}/{count} of the matrix, judged alone ({cells} "
            f"{_cells(cells)}{gpu}); the other shards' cells are not judged here: merge them "
            f"with caiconform report {states[0].run_dir} --merge DIR ..."
        )
    if status == "no-gpu":
        return f"no GPU: {ran} of {cells} cells ran; the others were skipped (reasons listed)"
    return None


def _cells(n: int) -> str:
    return "cell" if n == 1 else "cells"


#: characters of a skip reason the NOTHING TESTED line quotes
_REASON_CHARS = 120


def _cut(reason: str, chars: int = _REASON_CHARS) -> str:
    return reason if len(reason) <= chars else reason[: chars - 3] + "..."


def exit_status(status: str, allow_incomplete: bool = False) -> int | None:
    """For a run of `status` (`status_of`): EXIT_INCOMPLETE for an incomplete run (unless
    `allow_incomplete`), EXIT_NOTHING_TESTED for one that tested nothing, None when the verdict
    decides."""
    if status == "incomplete" and not allow_incomplete:
        return EXIT_INCOMPLETE
    if status == "nothing-tested":
        return EXIT_NOTHING_TESTED
    return None


def as_json(states: Sequence[RunState]) -> dict[str, Any]:
    """matrix.json's `run_state`: the status, the first line (None when there is none), the
    cells that ran of all, and the unfinished ones."""
    return {
        "status": status_of(states),
        "line": first_line(states),
        "cells": sum(s.cells for s in states),
        "ran": sum(s.ran for s in states),
        "unfinished": [u.describe() for s in states for u in s.unfinished],
        "missing_examples": sum(s.missing for s in states),
    }


def finished_cells(run_dir: str | Path) -> set[str]:
    """The cells a run directory finished and ran: a `cells.jsonl` entry (its last) that is not a
    skip of the whole cell, with every example its counts name still in the journal. What two
    runs are compared on (`caiconform compare --common-cells`) and what a release's run is said
    to have covered (`report.releases`). A copy of a run directory without its journal (a
    published chart's runs) is judged on its cells.jsonl alone."""
    from caiconform.report.load import read_cells

    last = {str(entry["cell"]): entry for entry in read_cells(run_dir)}
    journal = RunDir(run_dir).journal_found() is not None
    unfinished = {u.cell for u in state_of(run_dir).unfinished} if journal else set()
    return {
        cell
        for cell, entry in last.items()
        if cell not in unfinished and entry.get("skipped") is None and not _only_skips(entry)
    }


def _only_skips(entry: Mapping[str, Any]) -> bool:
    counts = entry.get("counts")
    return isinstance(counts, dict) and bool(counts) and set(counts) == {"skip"}


def state_of(run_dir: str | Path, records: Iterable[Mapping[str, Any]] | None = None) -> RunState:
    """The state of one run directory; `records` are its journal's records when already read
    (else they are read here)."""
    from caiconform.report.load import read_cells
    from caiconform.results.record import cell_key

    directory = Path(run_dir)
    meta = _json_object(RunDir(directory).run_json)
    if records is None:
        records = _journal_records(directory)
    journaled: Counter = Counter()
    drawn: Counter = Counter()
    floor: Counter = Counter()
    ran: set[str] = set()
    skipped_whole: dict[str, str] = {}
    for record in records:
        key = cell_key(record)
        if record.get("producer") is None and record.get("consumer") is None:
            key = f"{record.get('check')}/*" if record.get("index") is None else key
        if record.get("shrunk"):
            continue
        journaled[key] += 1
        if record.get("index") is not None:
            (floor if record.get("floor") else drawn)[key] += 1
        if record.get("outcome") != "skip":
            ran.add(key)
        elif record.get("index") is None:
            skipped_whole[key] = str(record.get("message") or "skipped")
    finished: dict[str, Mapping[str, Any]] = {}
    for entry in read_cells(directory):
        finished[str(entry["cell"])] = entry  # a cell run again after a resume: its last entry
    plan = meta.get("plan") if isinstance(meta.get("plan"), dict) else None
    settings = meta.get("settings") if isinstance(meta.get("settings"), dict) else {}
    max_examples = settings.get("max_examples")
    planned: list[str] = []
    skipped_planned: set[str] = set()
    if plan is not None:
        skipped_planned = {str(k) for k in plan.get("skipped") or []}
        planned = [str(k) for k in [*(plan.get("cells") or []), *skipped_planned]]
    keys = list(dict.fromkeys([*planned, *journaled, *finished]))
    shard = settings.get("shard")
    state = RunState(directory, cells=len(keys), ran=len(ran))
    if isinstance(shard, list) and len(shard) == 2 and all(isinstance(n, int) for n in shard):
        state.shard = (shard[0], shard[1])
    state.settings = {name: settings.get(name) for name in MATRIX_SETTINGS}
    # a journal alone (no plan, no cells.jsonl: written by hand, or by another tool) cannot say
    # which cells it owes
    judged = keys if plan is not None or RunDir(directory).cells.is_file() else []
    owed = _examples_per_cell(finished, drawn, floor, journaled)
    for key in judged:
        entry = finished.get(key)
        if entry is None:
            state.unfinished.append(Unfinished(key, journaled[key]))
            if key in skipped_planned:  # a cell that cannot run owes its one skip record
                state.missing += max(0, 1 - journaled[key])
            elif key.split("/")[0] in owed:
                drawn_owed, floor_owed = owed[key.split("/")[0]]
                state.missing += max(0, drawn_owed - drawn[key]) + max(0, floor_owed - floor[key])
            elif isinstance(max_examples, int):
                state.missing += max(0, max_examples - drawn[key])
            continue
        counts = entry.get("counts")
        if isinstance(counts, dict):
            expected = sum(n for n in counts.values() if isinstance(n, int))
            if journaled[key] < expected:
                state.unfinished.append(Unfinished(key, journaled[key], expected))
                state.missing += expected - journaled[key]
    gpu = _json_object(RunDir(directory).env).get("gpu")
    if isinstance(gpu, dict) and not gpu.get("available", True) and len(ran) < len(keys):
        state.no_gpu = str(gpu.get("reason") or "none found")
    state.skip_reasons = Counter(
        reason for key, reason in skipped_whole.items() if key not in ran
    ).most_common()
    return state


def _examples_per_cell(
    finished: Mapping[str, Mapping[str, Any]],
    drawn: Counter,
    floor: Counter,
    journaled: Counter,
) -> dict[str, tuple[int, int]]:
    """family -> (drawn, floor) examples a cell of it runs, the mean over its cells that finished
    whole: what an unfinished cell of the family owes. A cell runs fewer drawn examples than
    max-examples (duplicate draws run once) and its floor besides, so max-examples alone is no
    estimate; shrunk records are not examples of the cell (they are not counted here)."""
    runs: dict[str, list[tuple[int, int]]] = {}
    for key, entry in finished.items():
        counts = entry.get("counts")
        if entry.get("skipped") is not None or not isinstance(counts, dict):
            continue
        if journaled[key] < sum(n for n in counts.values() if isinstance(n, int)):
            continue  # lost lines: its journal undercounts it
        runs.setdefault(key.split("/")[0], []).append((drawn[key], floor[key]))
    return {
        family: (
            round(sum(d for d, _ in cells) / len(cells)),
            round(sum(f for _, f in cells) / len(cells)),
        )
        for family, cells in runs.items()
    }


def states_of(run: Any) -> list[RunState]:
    """The state of each run directory a loaded `report.load.Run` came from, judged on its
    records."""
    by_dir: dict[Path, list[Mapping[str, Any]]] = {}
    for record in run.records:
        directory = run.dirs.get(str(record.get("run_id")))
        if directory is not None:
            by_dir.setdefault(Path(directory), []).append(record)
    return [state_of(directory, records) for directory, records in by_dir.items()]


def _json_object(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _journal_records(directory: Path) -> list[dict[str, Any]]:
    from caiconform.report.load import ReportInputError, _find_journal, read_journal

    try:
        records, _ = read_journal(_find_journal(directory))
    except ReportInputError:
        return []
    return records


def headline_in_state(headline: str, status: str) -> str:
    """The verdict's headline as a run of `status` (`report.runstate.status_of`) prints it: over
    an INCOMPLETE run, or one that tested NOTHING, no `OK` line (an OK over half a run, or over
    nothing, is not an OK): the state's own word instead. FIX and UPDATE THE BASELINE stand."""
    if not headline.startswith("OK: "):
        return headline
    if status == "incomplete":
        return "INCOMPLETE: " + headline.removeprefix("OK: ").replace(
            "no failing defect", "no failing defect in the cells that ran (not an OK)", 1
        )
    if status == "nothing-tested":
        return "NOTHING TESTED: no verdict: no example ran"
    return headline
