"""One cell's lines in the run's journal (`CellJournal`): each example's record (with its
reproducer), the skip record of a cell that could not draw or run, and, once the cell is
complete, its `cells.jsonl` line; the listener is told of each.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from caiconform.runner.config import Listener
from caiconform.runner.journal import Journal
from caiconform.runner.plan import Cell
from caiconform.runner.pool import Exchange
from caiconform.runner.records import exchange_record, skip_record

__all__ = ["CellJournal"]


class CellJournal:
    """What one cell writes to `journal`, and when it began (its cells.jsonl `wall_s`)."""

    def __init__(self, cell: Cell, journal: Journal, listener: Listener | None) -> None:
        self.cell = cell
        self.journal = journal
        self.listener = listener
        self.started = 0.0

    def begin(self, explored: int) -> None:
        """The cell starts, `explored` of its examples journaled before (`--resume`)."""
        self.started = time.monotonic()
        if self.listener is not None:
            self.listener.cell_started(self.cell, explored)

    def example(
        self,
        params: dict,
        exchange: Exchange,
        index: int | None,
        tag: str,
        coverage: dict | None = None,
    ) -> dict:
        """Journal one example (`index` None: a class's minimal example); its record."""
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

    def explored(self, record: dict) -> None:
        """An explored example was journaled: the listener is told."""
        if self.listener is not None:
            self.listener.example(self.cell, record)

    def skip(self, reason: str) -> None:
        """Journal the cell's skip record: it could not run, or not draw all its examples."""
        self.journal.record(skip_record(self.cell, reason))

    def done(self, counts: Counter, floor_planned: int, timing: Counter, **entries: Any) -> None:
        """The cell is complete: its `cells.jsonl` line (with its wall time, for `--costs-from`
        of a later run, and the `entries` given that are not empty) and the listener's call."""
        self.journal.cell_done(
            self.cell.key,
            counts=dict(counts),
            floor_planned=floor_planned,
            wall_s=round(time.monotonic() - self.started, 3),
            timing={k: round(v, 6) if isinstance(v, float) else v for k, v in timing.items()},
            **{name: value for name, value in entries.items() if value},
        )
        if self.listener is not None:
            self.listener.cell_finished(self.cell, counts)
