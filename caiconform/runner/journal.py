"""The run's journal: `results.jsonl` (one record per finished example) and `cells.jsonl` (one
line per finished cell), appended as things finish, so a killed run loses at most the example
that was running: a line is the kernel's once its one `write` returns, whatever then happens
to the process. Flushing it to the disk (fdatasync) guards against the machine going down: a
cell's line is flushed, after its records, before `cell_done` returns; the example records,
thousands a minute, are flushed by the first record written `RECORD_SYNC_S` or more after the
last flush (group commit by time: one flush for all written since), by a cell's end and when
the journal closes, so the machine going down loses only records written since the last
flush, which `--resume` runs again (what a flush per record cost: docs/performance.md).

A run killed in the middle of a write leaves a truncated last line; reading drops it and cuts
it off the file, so the file stays one JSON object per line. Records are read back on `--resume`
to skip finished cells and to replay finished examples of a partial cell. A broken line anywhere
else, or a record the report could not place, means the file was damaged: opening it raises
`JournalError` naming the file and line, as `caiconform report` would refuse it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from caiconform.results.record import cell_key, record_problem
from caiconform.rundir import RunDir
from caiconform.runner.protocol import jsonable

__all__ = ["RECORD_SYNC_S", "JsonlFile", "Journal", "JournalError", "utc_now"]

#: the longest an example's record waits for its flush to the disk (seconds): only the machine
#: going down loses what was written since (a killed process loses nothing written)
RECORD_SYNC_S = 0.25


class JournalError(ValueError):
    """A journal file damaged past its last line; the message names the file and the line."""


def _cell_problem(entry: Any) -> str | None:
    """Why a `cells.jsonl` line cannot be a finished cell, or None."""
    if not isinstance(entry, dict):
        return f"expected a JSON object, got {type(entry).__name__}"
    if not isinstance(entry.get("cell"), str):
        return "no cell key (a string)"
    return None


def utc_now() -> str:
    """The current time, ISO 8601 in UTC with milliseconds (the journal's `time`)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class JsonlFile:
    """An append-only JSON-lines file, safe to append to from several threads.

    On open, a truncated last line (no newline, or one that does not parse) is cut off the
    file and counted in `damaged`; `records` holds the lines before it. A line that does not
    parse before the last one, or one `problem(record)` finds fault with (it returns why, or
    None), raises JournalError.
    """

    def __init__(self, path: Path, problem: Callable[[Any], str | None] | None = None) -> None:
        self.path = path
        self.records: list[dict[str, Any]] = []
        self.damaged = 0
        self._problem = problem
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._written = 0  # lines written by this object
        self._synced = 0  # of which known to be on disk
        self._flushed_at = float("-inf")  # time.monotonic() of the last flush
        self._load()
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def _load(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        complete = data.rfind(b"\n") + 1
        if complete < len(data):
            self.damaged += 1
        broken: tuple[int, int, str] | None = None  # (line number, its offset, the error)
        offset = 0
        for number, line in enumerate(data[:complete].splitlines(keepends=True), start=1):
            start, offset = offset, offset + len(line)
            if not line.strip():
                continue
            if broken is not None:
                raise JournalError(f"{self.path}:{broken[0]}: not valid JSON ({broken[2]})")
            try:
                record = json.loads(line)
            except (ValueError, RecursionError) as exc:
                broken = (number, start, getattr(exc, "msg", type(exc).__name__))
                continue
            problem = self._problem(record) if self._problem is not None else None
            if problem is not None:
                raise JournalError(f"{self.path}:{number}: {problem}")
            if isinstance(record, dict):
                self.records.append(record)
        if broken is not None:  # the last line: a write cut short
            self.damaged += 1
            complete = broken[1]
        if complete < len(data):
            with open(self.path, "r+b") as fh:
                fh.truncate(complete)

    def write(self, record: dict[str, Any]) -> int:
        """Write one record as one line (one `write` call on an O_APPEND file); returns the
        line's number for `sync`."""
        line = (json.dumps(record, default=jsonable, separators=(",", ":")) + "\n").encode()
        with self._lock:
            os.write(self._fd, line)
            self.records.append(record)
            self._written += 1
            return self._written

    def sync(self, upto: int, within: float = 0.0) -> None:
        """Return once line `upto` is on disk; with `within`, once it is or a flush made less
        than `within` seconds ago leaves it to the next one (or to `close`). Threads syncing at
        once share one flush (group commit): a thread that finds its line already covered by
        another's flush skips its own."""
        with self._sync_lock:
            if self._synced >= upto:
                return
            if within and time.monotonic() - self._flushed_at < within:
                return
            self._flush()

    def _flush(self) -> None:
        """Flush every line written so far (the caller holds the sync lock)."""
        with self._lock:
            target = self._written
        # fdatasync: the appended bytes and the new file size reach the disk (what a reader
        # after a crash needs), without the mtime update fsync also writes
        (getattr(os, "fdatasync", None) or os.fsync)(self._fd)
        self._synced = target
        self._flushed_at = time.monotonic()

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        """Write one record, then flush it to disk before returning."""
        self.sync(self.write(record))
        return record

    def flush(self) -> None:
        """Flush what a `sync` with `within` left (nothing when every line is on disk)."""
        with self._sync_lock:
            if self._synced < self._written:
                self._flush()

    def close(self) -> None:
        self.flush()
        os.close(self._fd)


class Journal:
    """`results.jsonl` and `cells.jsonl` of one run directory.

    `record()` stamps `run_id`, the next `seq` and `time` on a result record and appends it;
    `seq` continues after the largest one already in the file, so a resumed run never reuses one.
    """

    def __init__(self, run_dir: Path, run_id: str) -> None:
        self.run_dir = run_dir
        self.run_id = run_id
        run_dir.mkdir(parents=True, exist_ok=True)
        self.results = JsonlFile(RunDir(run_dir).journal, record_problem)
        self.cells = JsonlFile(RunDir(run_dir).cells, _cell_problem)
        self._seq_lock = threading.Lock()
        self._seq = max((r["seq"] for r in self.results.records), default=-1)
        self.started = time.monotonic()

    @property
    def damaged(self) -> int:
        return self.results.damaged + self.cells.damaged

    def record(self, record: dict[str, Any]) -> dict[str, Any]:
        """Append one example's record (fields per docs/internals.md); returns it stamped."""
        with self._seq_lock:  # held over the write, so lines are in `seq` order
            self._seq += 1
            stamped = {"run_id": self.run_id, "seq": self._seq, **record, "time": utc_now()}
            line = self.results.write(stamped)
        self.results.sync(line, within=RECORD_SYNC_S)
        return stamped

    def finished_cells(self) -> set[str]:
        """Keys of the cells already complete: a `cells.jsonl` entry (a cell run again after a
        resume: its last), and in `results.jsonl` every example its `counts` name. A finished
        cell whose journal lost lines (a truncated last line) is not complete: `--resume` runs
        it again, its journaled examples replayed, so exactly the lost ones run."""
        journaled = Counter(cell_key(r) for r in self.results.records if not r.get("shrunk"))
        done: set[str] = set()
        for entry in self.cells.records:
            key = entry["cell"]
            counts = entry.get("counts")
            expected = (
                sum(n for n in counts.values() if type(n) is int) if isinstance(counts, dict) else 0
            )
            if journaled[key] >= expected:
                done.add(key)
            else:
                done.discard(key)
        return done

    def cell_done(self, key: str, **summary: Any) -> None:
        """The cell's line, after its records are on disk (a line naming counts the records
        do not reach would make `--resume` run the cell again)."""
        self.results.flush()
        self.cells.append({"cell": key, **summary, "time": utc_now()})

    def skip_cell(self, key: str, record: dict[str, Any], reason: str) -> None:
        """Journal the one skip `record` of a cell that cannot run, and the cell as done. A run
        killed between the two left the record already written: it is not written again."""
        written = self.records_of(record["check"], record["producer"], record["consumer"])
        if not any(r.get("outcome") == record["outcome"] for r in written):
            self.record(record)
        self.cell_done(key, skipped=reason)

    def records_of(self, check: str, producer: str | None, consumer: str | None) -> list[dict]:
        """The records already journaled for one cell."""
        return [
            r
            for r in self.results.records
            if r.get("check") == check
            and r.get("producer") == producer
            and r.get("consumer") == consumer
        ]

    def close(self) -> None:
        self.results.close()
        self.cells.close()
