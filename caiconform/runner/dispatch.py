"""A cell's examples handed out (`Dispatch`): drawn (`draw`), made jobs in journal order
(`new_jobs`), given in batches to whichever thread asks, and their results kept until every
example before them is journaled.

The examples are independent, so any thread may run any of them; the journal, and so
`--resume`, read the same whoever ran what because `cell.CellRun` journals only the finished
prefix, in order (`next_finished`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from caiconform.runner.config import BATCH_SHARE
from caiconform.runner.jobs import Job
from caiconform.runner.plan import Cell
from caiconform.runner.pool import Exchange
from caiconform.runner.prefetch import Prefetch, draw_cell
from caiconform.runner.protocol import canonical

__all__ = ["Dispatch", "new_jobs", "draw"]


def new_jobs(
    examples: Iterable[tuple[dict, dict | None]],
    seen: set[str],
    first: int,
    floor: bool,
    family_kind: Callable[[dict], str] | None = None,
) -> list[Job]:
    """Jobs for `examples` ((params, coverage) pairs, the floor's or the drawn ones), from
    position `first` on, less those of params already in `seen` (journaled before a
    `--resume`, or met before in the cell), which is updated."""
    jobs: list[Job] = []
    for i, (params, coverage) in enumerate(examples):
        key = canonical(params)
        if key in seen:
            continue
        seen.add(key)
        tag = f"floor-{i:04d}" if floor else f"{i:04d}"
        jobs.append(Job(first + len(jobs), i, params, key, tag, coverage, family_kind))
    return jobs


def draw(
    cell: Cell, seed: int, max_examples: int, prefetch: Prefetch | None, timing: Counter
) -> tuple[list[dict], str | None]:
    """The cell's drawn examples and why drawing stopped short (None: it did not): from
    `prefetch` when it drew them, else drawn here by the function the pool runs; `timing`
    gets `draw_s`, `drawn` and `prefetched`."""
    began = time.perf_counter()
    fetched = prefetch.take(cell.key) if prefetch is not None else None
    if fetched is None:
        fetched = draw_cell(
            cell.family.module.__name__, cell.producer, cell.consumer, seed, max_examples
        )
    else:
        timing["prefetched"] += len(fetched[0])
    drawn, error = fetched
    timing["draw_s"] += time.perf_counter() - began
    timing["drawn"] += len(drawn)
    return drawn, error


class Dispatch:
    """A cell's jobs in journal order: how many were handed out, those handed back, the
    results not yet journaled, and how many are journaled. The cell's lock is held around
    every call."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.dispatched = 0
        #: jobs handed out in a batch that ended before them (its process lost): next out
        self.returned: list[Job] = []
        self.results: dict[int, Exchange] = {}
        self.journaled = 0

    def undispatched(self) -> int:
        return len(self.jobs) - self.dispatched + len(self.returned)

    def batch(self, most: int) -> list[Job]:
        """The next examples to hand out: those returned first, then the undispatched, up to
        `most` and a BATCH_SHARE-th of what is left."""
        left = self.undispatched()
        size = max(1, min(most, -(-left // BATCH_SHARE)))
        batch = self.returned[:size]
        del self.returned[:size]
        more = min(size - len(batch), len(self.jobs) - self.dispatched)
        batch += self.jobs[self.dispatched : self.dispatched + more]
        self.dispatched += more
        return batch

    def give_back(self, jobs: Sequence[Job]) -> None:
        """Jobs of a batch that ended before them, handed out first again; those a saturation
        left unrun are not run later either."""
        self.returned[:0] = [job for job in jobs if job.position < len(self.jobs)]

    def keep(self, job: Job, exchange: Exchange) -> None:
        """A finished job's result, until it is journaled (not one a saturation left unrun)."""
        if job.position < len(self.jobs):
            self.results[job.position] = exchange

    def next_finished(self) -> tuple[Job, Exchange] | None:
        """The next job in journal order and its result, when it has finished."""
        if self.journaled < len(self.jobs) and self.journaled in self.results:
            return self.jobs[self.journaled], self.results.pop(self.journaled)
        return None

    def all_journaled(self) -> bool:
        return self.journaled >= len(self.jobs)

    def cut(self) -> None:
        """Leave every job not yet journaled unrun (saturation): those running end
        unjournaled."""
        del self.jobs[self.journaled :]
        self.dispatched = min(self.dispatched, len(self.jobs))
        self.returned = [job for job in self.returned if job.position < len(self.jobs)]
        for position in [p for p in self.results if p >= len(self.jobs)]:
            del self.results[position]
