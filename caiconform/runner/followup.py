"""What follows a cell's examples (`FollowUps`): the classes to shrink and the first example of
each non-pass class to run once more, queued as soon as each is known, and what they gave
(cells.jsonl `confirmed` and `shrinks`).

Both run while the cell's other examples still do (`cell.CellRun.take` hands them out first):
a class's shrink is one long task on one thread, which begun after the cell's last example
would end the run late.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from caiconform.results.catalogue import lost_on_input_alone
from caiconform.results.expectations import is_correct_rejection
from caiconform.results.outcome import HANG, OUTCOMES, PASS, SKIP, Result
from caiconform.runner.jobs import class_of

__all__ = ["FollowUps"]

#: outcomes whose class is run once more: a hang is not (it would cost the timeout again), nor a
#: floor example the crash cap skipped
_CONFIRMED = frozenset(OUTCOMES) - {PASS, SKIP, HANG}


class FollowUps:
    """One cell's shrinks and re-runs: those queued, those running, and what they gave. The
    cell's lock is held around every call."""

    def __init__(self, shrink: bool, confirm: bool, records: Iterable[dict]) -> None:
        self.shrink = shrink
        self.confirm = confirm
        #: classes already shrunk (journaled before a `--resume`): not queued again
        self.shrunk_classes = {class_of(r) for r in records if r.get("shrunk")}
        #: classes to shrink, queued as their first drawn example is journaled (`note`)
        self.targets: list[tuple[str, str | None]] = []
        #: the first record of each non-pass class, to run once more (`cell.run_confirm`)
        self.confirms: list[dict] = []
        #: explored records `note` has looked at; the classes it met (floor's, queued to
        #: shrink, queued to run again)
        self.noted = 0
        self.floor_classes: set[tuple[str, str | None]] = set()
        self.queued_classes: set[tuple[str, str | None]] = set()
        self.confirm_classes: set[tuple[str, str | None]] = set()
        #: what running them again gave: cells.jsonl `confirmed`
        self.confirmed: list[dict] = []
        #: how each class's shrink went: cells.jsonl `shrinks`
        self.shrinks: list[dict] = []
        #: shrinks and re-runs handed out and not yet done
        self.running = 0

    def queued(self) -> bool:
        return bool(self.targets or self.confirms)

    def pending(self) -> bool:
        """Whether any is queued or running: the cell is not done before."""
        return self.queued() or bool(self.running)

    def note(self, explored: Sequence[dict]) -> None:
        """Queue, for the records of `explored` since the last call, the classes to shrink and
        the examples to run again. A class to shrink is one of a drawn example's, not pass or
        skip, and not met by the floor: the floor's examples keep theirs as the reproducer
        (the floor's arrays are already small, adversarial's mutants hypothesis's minimal
        ones, and shrinking them again cost the cell's longest phase). Those already shrunk
        (journaled before a `--resume`) are not queued again. A correct rejection (invalid
        input refused, `expectations.is_correct_rejection`) is neither shrunk nor run again:
        it is the consumer doing its job, no finding to reproduce. Nor is a consumer's crash
        or poisoned context on a dict that breaks a producer's rule, in a cell without a
        producer library (`catalogue.lost_on_input_alone`): running it again costs another
        process, and its group ranks at most accepts-invalid, below what a run fails on by
        default, so its `reproduced` stays unknown (docs/performance.md, "Figures behind the
        code")."""
        for record in explored[self.noted :]:
            cls = class_of(record)
            floor = bool(record.get("floor"))
            if floor:
                self.floor_classes.add(cls)
            if is_correct_rejection(record):
                continue
            if (
                self.shrink
                and not floor
                and record["outcome"] not in (PASS, SKIP)
                and cls not in self.floor_classes
                and cls not in self.shrunk_classes
                and cls not in self.queued_classes
            ):
                self.queued_classes.add(cls)
                self.targets.append(cls)
            if (
                self.confirm
                and record["outcome"] in _CONFIRMED
                and cls not in self.confirm_classes
                and not lost_on_input_alone(record)
            ):
                self.confirm_classes.add(cls)
                self.confirms.append(record)
        self.noted = len(explored)

    def confirmation(self, record: dict, again: Result) -> None:
        """Keep what running `record`'s example once more gave (cells.jsonl `confirmed`)."""
        outcome, rule = class_of(record)
        self.confirmed.append(
            {
                "outcome": outcome,
                "rule": rule,
                "index": record.get("index"),
                "floor": bool(record.get("floor")),
                "again": again.outcome,
                "again_rule": again.rule,
                "same": class_of(again) == (outcome, rule),
            }
        )
