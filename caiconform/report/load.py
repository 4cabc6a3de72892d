"""Reading a run directory: the journal (`results.jsonl` or `.jsonl.gz`) and `env.json`.

A journal is appended to as each example ends, so a run that was killed can leave a half-written
last line: that line is dropped with a warning. A broken line anywhere else means the file was
damaged or is not a journal, and the report refuses it with one line naming the file, the line
and what is wrong, because silently skipping results would make the matrix lie.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caiconform.results.record import record_problem
from caiconform.rundir import ENV_JSON, JOURNAL_NAMES, RunDir

__all__ = [
    "ReportInputError",
    "Run",
    "load_run",
    "read_journal",
    "read_cells",
    "confirmations_of",
]


class ReportInputError(ValueError):
    """Input a report cannot be built from; the message is one line for the user."""


@dataclass
class Run:
    """The results of one or more runs, ready for the matrix.

    `envs` maps run_id to that run's `env.json` (runs from several machines keep their own);
    `dirs` maps run_id to the directory its journal came from, so reproducer paths in records
    (relative to their run directory) can be resolved; `warnings` are non-fatal notes for the
    user (a dropped truncated line, a missing env.json); `confirmations` maps (cell, outcome,
    rule) to whether the class's first example gave the same class when run again
    (`cells.jsonl` `confirmed`; absent: not run again).
    """

    records: list[dict[str, Any]]
    envs: dict[str, dict[str, Any]] = field(default_factory=dict)
    dirs: dict[str, Path] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    confirmations: dict[tuple[str, str, str | None], bool] = field(default_factory=dict)


def confirmations_of(cells: Iterable[Mapping[str, Any]]) -> dict[tuple, bool]:
    """(cell, outcome, rule) -> reproduced, from `cells.jsonl` lines: True when any time the
    class's first example ran again it gave the same class."""
    out: dict[tuple, bool] = {}
    for cell in cells:
        for entry in cell.get("confirmed") or ():
            if not isinstance(entry, dict):
                continue
            key = (str(cell.get("cell")), str(entry.get("outcome")), entry.get("rule"))
            out[key] = out.get(key, False) or bool(entry.get("same"))
    return out


def _lines(path: Path) -> Iterator[str]:
    """The text lines of a plain or gzip journal. A gzip stream cut short (a run killed while
    compressing) ends the iteration early instead of raising; `read_journal` notes it."""
    if path.name.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            yield from fh
    else:
        with path.open("r", encoding="utf-8") as fh:
            yield from fh


def _check_record(record: Any, where: str) -> dict[str, Any]:
    problem = record_problem(record)
    if problem is not None:
        raise ReportInputError(f"{where}: {problem}")
    return record


def read_journal(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Records of one journal file, and warnings. Raises ReportInputError for a broken line
    that is not the last one, or a record without the keys the matrix needs."""
    records: list[dict[str, Any]] = []
    warnings: list[str] = []
    pending: tuple[int, str, str] | None = None  # (line number, error, text) of a broken line
    try:
        for number, line in enumerate(_lines(path), start=1):
            if not line.strip():
                continue
            if pending is not None:
                raise ReportInputError(f"{path}:{pending[0]}: not valid JSON ({pending[1]})")
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                pending = (number, exc.msg, line)
                continue
            except RecursionError:
                raise ReportInputError(f"{path}:{number}: JSON nested too deeply") from None
            records.append(_check_record(record, f"{path}:{number}"))
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        if not records:
            raise ReportInputError(f"{path}: not a readable gzip journal ({exc})") from None
        warnings.append(f"{path}: compressed journal ends early ({exc}); read {len(records)}")
    except UnicodeDecodeError as exc:
        raise ReportInputError(f"{path}: not UTF-8 text ({exc.reason})") from None
    if pending is not None:
        warnings.append(f"{path}:{pending[0]}: dropped a truncated last line ({pending[1]})")
    return _unique(records, path, warnings), warnings


def _unique(records: list[dict[str, Any]], path: Path, warnings: list[str]) -> list[dict[str, Any]]:
    """`records` with every repeat of a (run_id, seq) left out: one line written twice (a run
    killed while journaling, then resumed) is one result, not two."""
    seen: set[tuple[str, int]] = set()
    unique = []
    for record in records:
        key = (record["run_id"], record["seq"])
        if key not in seen:
            seen.add(key)
            unique.append(record)
    if len(unique) < len(records):
        repeats = len(records) - len(unique)
        warnings.append(f"{path}: {repeats} repeated line(s) (same run_id and seq) counted once")
    return unique


def _find_journal(directory: Path) -> Path:
    found = RunDir(directory).journal_found()
    if found is not None:
        return found
    raise ReportInputError(
        f"{directory}: no {' or '.join(JOURNAL_NAMES)} (is this a run directory?)"
    )


def _read_env(directory: Path) -> tuple[dict[str, Any] | None, list[str]]:
    path = RunDir(directory).env
    if not path.is_file():
        return None, [f"{directory}: no {ENV_JSON}; the environment is shown as unknown"]
    try:
        env = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReportInputError(f"{path}: not valid JSON ({exc})") from None
    except RecursionError:
        raise ReportInputError(f"{path}: JSON nested too deeply") from None
    if not isinstance(env, dict):
        raise ReportInputError(f"{path}: expected a JSON object, got {type(env).__name__}")
    return env, []


def read_cells(directory: str | Path) -> list[dict[str, Any]]:
    """The lines of a run directory's `cells.jsonl` (one per finished cell) that parse: [] when
    there is none; a truncated last line of a killed run is left out."""
    path = RunDir(directory).cells
    if not path.is_file():
        return []
    cells = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and "cell" in entry:
            cells.append(entry)
    return cells


def _read_adapters(directory: Path, warnings: list[str]) -> dict[str, Any] | None:
    """The run's `adapters.json` (each library's probe: available, reason, version), or None
    when the run has none (older runs); an unreadable one is a warning, not an error."""
    path = RunDir(directory).adapters
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        warnings.append(f"{path}: unreadable, left out ({exc})")
        return None
    if not isinstance(data, dict):
        warnings.append(f"{path}: not a JSON object, left out")
        return None
    return data


def load_run(directory: str | Path) -> Run:
    """Load one run directory. Every record keeps its fields as written; envs and dirs are keyed
    by the run_ids that occur in the journal (env.json describes them all)."""
    directory = Path(directory)
    if not directory.exists():
        raise ReportInputError(f"{directory}: no such directory")
    if not directory.is_dir():
        raise ReportInputError(f"{directory}: not a directory (give the run directory)")
    journal = _find_journal(directory)
    records, warnings = read_journal(journal)
    if not records:
        raise ReportInputError(f"{journal}: holds no results")
    env, env_warnings = _read_env(directory)
    warnings.extend(env_warnings)
    adapters = _read_adapters(directory, warnings)
    if adapters is not None:
        env = {**(env or {}), "adapters": adapters}
    run = Run(records=records, warnings=warnings)
    run.confirmations = confirmations_of(read_cells(directory))
    for run_id in dict.fromkeys(str(r["run_id"]) for r in records):
        run.dirs[run_id] = directory
        run.envs[run_id] = env if env is not None else {}
    return run
