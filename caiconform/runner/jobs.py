"""A cell's examples as jobs (`Job`) and the crash caps that count them by kind (`CrashCaps`).

An example that crashes, hangs or poisons its context costs a whole worker process (and a hang
a whole timeout), so once a few examples of one kind did, the rest of that kind are journaled
as skips instead of run (`FLOOR_CRASH_CAP`, `RunConfig.drawn_crash_cap`). The caps are decided
in journal order, so the journal reads the same whoever ran what (`cell.CellRun`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType

from caiconform.results.outcome import CRASH, HANG, POISONED, SKIP, Result
from caiconform.runner.pool import Exchange
from caiconform.runner.worker import taints_of

__all__ = ["FLOOR_CRASH_CAP", "Stopped", "Job", "crash_kind", "class_of", "CrashCaps"]

#: floor examples of one layout kind (or, without one, one mutation) that may end in
#: crash/hang/poisoned before the rest of that kind is skipped (see `Job.kind`)
FLOOR_CRASH_CAP = 2

_LOST = (CRASH, HANG, POISONED)


class Stopped(BaseException):
    """Raised inside a cell's task (and inside a hypothesis test) to abandon the cell once the
    run stops (a BaseException, so hypothesis lets it through instead of shrinking it)."""


def class_of(result: Result | dict) -> tuple[str, str | None]:
    """The (outcome, rule) class of a result or a record: what shrinks and re-runs are per."""
    if isinstance(result, dict):
        return result["outcome"], result.get("rule")
    return result.outcome, result.rule


@dataclass
class Job:
    """One example of a cell: its place in the cell's journal order and what it runs."""

    position: int
    #: the record's `index` (floor and drawn examples each count from 0)
    index: int
    params: dict
    key: str
    tag: str
    #: the floor's coverage labels; None for a drawn example
    coverage: dict | None = None

    #: the family's own `crash_kind(params)` for drawn examples, when it has one
    family_kind: Callable[[dict], str] | None = None

    @property
    def kind(self) -> str:
        return crash_kind(self.params, self.coverage, self.family_kind)


def crash_kind(
    params: dict, coverage: dict | None, family_kind: Callable[[dict], str] | None = None
) -> str:
    """What the crash caps count by. A floor example's (`coverage` given): the layout kind,
    or for examples with none (the adversarial floor's mutants) the rule the mutation
    breaks, so two crashes on one mutation do not skip the mutants of every other rule. A
    drawn example's: its params' `kind`, `mutation` and `rule` (adversarial's live mutations
    and mutants: a mutant's rule is the one it breaks) and layout kind, those it has; "" when
    it has none (such examples are not capped: nothing tells them apart). The rule keeps
    crashes on some rules from skipping the mutants of every other, each of which may find a
    crash group of its own. A family module's own `crash_kind(params)` (`family_kind`) names
    its drawn examples' kind instead (devices: params that name none, so that its lost
    examples are capped too)."""
    if coverage is None and family_kind is not None:
        return family_kind(params)
    if coverage is None:
        layout = params.get("layout")
        parts = [
            f"{name} {value!r}"
            for name, value in (
                ("kind", params.get("kind")),
                ("mutation", params.get("mutation")),
                ("rule", params.get("rule")),
                ("layout", layout.get("kind") if isinstance(layout, dict) else None),
            )
            if isinstance(value, str)
        ]
        return f"drawn examples of {', '.join(parts)}" if parts else ""
    if coverage.get("layout"):
        return f"layout {coverage['layout']!r}"
    if coverage.get("mutation"):
        return f"mutation {coverage['mutation']!r}"
    return "the floor"


class CrashCaps:
    """The lost examples of one cell, by kind: those finished (in any order, to skip what
    would only be capped) and those journaled (in journal order: the authoritative count).
    The cell's lock is held around every call but `costly`."""

    def __init__(self, module: ModuleType, drawn_cap: int) -> None:
        self.module = module
        self.drawn_cap = drawn_cap
        #: kind -> positions of the lost among finished examples (-1: journaled before)
        self.ran_lost: dict[str, list[int]] = {}
        self.journal_crashes: Counter = Counter()  # the same, in journal order (authoritative)

    @property
    def family_kind(self) -> Callable[[dict], str] | None:
        return getattr(self.module, "crash_kind", None)

    def resumed(self, records: Iterable[dict]) -> None:
        """`--resume`: what the journal already holds counts."""
        for record in records:
            ran = record.get("worker") is not None  # a capped record never ran
            if ran and self.costly(record["params"], Result.from_dict(record)):
                coverage = record.get("coverage") if record.get("floor") else None
                kind = crash_kind(record["params"], coverage, self.family_kind)
                self.ran_lost.setdefault(kind, []).append(-1)
                self.journal_crashes[kind] += 1

    def costly(self, params: dict, result: Result) -> bool:
        """Did the example cost its worker process: lost (crash, hang, poisoned), or one the
        family's `taints` retires (`worker._taints`)? What the crash caps count."""
        return result.outcome in _LOST or taints_of(self.module, params, result)

    def cap(self, job: Job) -> int:
        """How many lost examples of `job`'s kind skip the rest of that kind (0: none)."""
        if job.coverage is not None:
            return FLOOR_CRASH_CAP
        return self.drawn_cap if job.kind else 0

    def capped(self, job: Job, crashes: int) -> Exchange:
        what = "floor examples" if job.coverage is not None else "examples of that kind"
        return Exchange(
            Result(
                SKIP,
                message=f"not run: {job.kind} already ended {crashes} {what} "
                f"of this cell with crash/hang/poisoned or a worker it left untrusted",
            ),
            0.0,
            None,
        )

    def skips(self, job: Job) -> bool:
        """Whether `job` is not sent: lost examples of its kind, among those finished, before
        it in journal order, reached its cap. Only those: the journal caps an example by the
        ones before it (`journaled`), and a batch's examples cut off by a crash run after
        later ones, so counting those too skipped an example the journal would have had run
        (a `skip` instead of its `fail`)."""
        cap = self.cap(job)
        return bool(cap) and (
            sum(position < job.position for position in self.ran_lost.get(job.kind, ())) >= cap
        )

    def finished(self, job: Job, exchange: Exchange) -> None:
        """Count a finished example's result (in the order it arrived)."""
        if self.cap(job) and self.costly(job.params, exchange.result):
            self.ran_lost.setdefault(job.kind, []).append(job.position)

    def journaled(self, job: Job, exchange: Exchange) -> Exchange:
        """What is journaled for `job`, in journal order: its result, counted, or the skip the
        cap makes of it (a capped example that ran anyway)."""
        cap = self.cap(job)
        if cap:
            crashes = self.journal_crashes[job.kind]
            if crashes >= cap:
                return self.capped(job, crashes)
            if self.costly(job.params, exchange.result):
                self.journal_crashes[job.kind] += 1
        return exchange
