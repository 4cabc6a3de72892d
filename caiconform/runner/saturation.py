"""Saturation (`RunConfig.saturate`): when a cell's drawn examples stop meeting new classes.

A cell whose drawn examples met nothing but pass and skip, and `saturate` of them in a row no
class it had not met before, is unlikely to meet one in the rest of its draws: those are left
unrun (cells.jsonl `saturated`, docs/performance.md). A cell that met a failure has a limit of
its own, `saturate_found` (cells.jsonl `saturated` then says `found`). `Saturation` counts in
journal order
(`cell.CellRun` feeds it each record as it is journaled), so the cut is the same whoever ran
what.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

from caiconform.results.outcome import PASS, SKIP
from caiconform.runner.jobs import Job, class_of

__all__ = ["Saturation"]


class Saturation:
    """One cell's count towards saturation: the classes met so far in journal order, the drawn
    examples journaled since the last new one, and what was left unrun."""

    def __init__(self, limit: int | None, module: ModuleType, limit_found: int = 0) -> None:
        self.limit = limit
        #: the limit once a class other than pass and skip was met (0: every draw runs)
        self.limit_found = limit_found
        self.module = module
        self.met_classes: set[tuple[str, str | None]] = set()
        self.quiet = 0
        #: a class other than pass and skip met: `limit_found` decides
        self.found = False
        #: cells.jsonl `saturated`: the cut, once made
        self.saturated: dict[str, int] | None = None

    def count(self, record: dict) -> None:
        """Count a journaled record towards saturation: a floor example's class is met; a
        drawn example's either is new (the count starts again) or adds one to it. A class
        other than pass and skip, floor or drawn, puts the cell under `limit_found`."""
        cls = class_of(record)
        if cls[0] not in (PASS, SKIP):
            self.found = True
        if record.get("floor"):
            self.met_classes.add(cls)
        elif cls in self.met_classes:
            self.quiet += 1
        else:
            self.met_classes.add(cls)
            self.quiet = 0

    def cuts(self, jobs: Sequence[Job], journaled: int, drawing: bool) -> bool:
        """Whether the cell's examples after its first `journaled` of `jobs` are to be left
        unrun now (the cut is then recorded): once `limit` drawn ones in a row met no new
        class (`limit_found` in a cell that met a class but pass and skip), its draws complete
        (`drawing` False) and none of those left a floor example (the floor runs whole)."""
        limit = self.limit_found if self.found else self.limit
        if (
            not limit
            or self.quiet < limit
            or drawing
            or self.saturated is not None
            or not getattr(self.module, "SATURATES", True)
        ):
            return False
        left = jobs[journaled:]
        if any(job.coverage is not None for job in left):
            return False
        self.saturated = {"quiet": limit, "unrun": len(left)}
        if self.found:
            self.saturated["found"] = True
        return True
