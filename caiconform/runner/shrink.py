"""One class's shrink (`Shrink`): hypothesis run again on a cell's strategy, failing on the class,
so that it shrinks the class's first drawn example to a minimal one.

The explore's examples replay from the cell's cache (no worker call) up to the first of the
class; each candidate after that is run in the worker. A time budget bounds the cost (a hang
costs a whole timeout per try): past it, untried candidates count as uninteresting and
hypothesis settles on the smallest found so far; `patience_s` ends it sooner once no smaller
example came for that long (and SHRINK_PATIENCE_EXCHANGES exchanges).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import hypothesis
from hypothesis import Phase, given, seed

from caiconform.draws import hypothesis_settings, seed_only_draws
from caiconform.results.outcome import Result
from caiconform.runner.jobs import Stopped, class_of
from caiconform.runner.pool import Exchange
from caiconform.runner.protocol import canonical

__all__ = ["SHRINK_PATIENCE_EXCHANGES", "Shrink"]

#: exchanges that must also have brought no smaller example of a class before
#: `RunConfig.shrink_patience_s` stops its shrink
SHRINK_PATIENCE_EXCHANGES = 10


class _Found(Exception):
    """Raised inside the shrink test when an example lands in the class being shrunk."""

    def __init__(self, params: dict, exchange: Exchange) -> None:
        super().__init__(params)
        self.params = params
        self.exchange = exchange


@dataclass
class Shrink:
    """The shrink of one (outcome, rule) class of a cell: `run` gives the minimal example
    found; `log` says how the budget was spent (cells.jsonl `shrinks`: exchanges run, when
    each smaller example of the class was found: `found_s` the last, None when none was;
    whether the budget or the patience ran out; `spent_s`)."""

    target: tuple[str, str | None]
    #: the cell's seed: the shrink meets the explore's examples in the same order
    seed: int
    max_examples: int
    budget_s: float
    patience_s: float
    stop: threading.Event
    #: params key -> the cell's journaled record: replayed, not run again
    cache: Mapping[str, dict]
    #: runs one candidate in the worker
    exchange: Callable[[dict], Exchange]
    log: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.log = {
            "outcome": self.target[0],
            "rule": self.target[1],
            "exchanges": 0,
            "found_s": None,
            "found_at": [],
        }

    def run(self, strategy: Any, keep: Callable[[dict, Exchange], dict]) -> dict | None:
        """What `keep` (journaling it) makes of the minimal example of the class hypothesis
        found and its exchange; None when it found none (or gave up)."""
        began = time.monotonic()
        test = self._test(strategy, began)
        try:
            with seed_only_draws():
                test()
        except _Found as found:
            return keep(found.params, found.exchange)
        except hypothesis.errors.HypothesisException:
            return None
        finally:
            self.log["spent_s"] = round(time.monotonic() - began, 3)
        return None

    def _test(self, strategy: Any, began: float) -> Callable[[], None]:
        log, attempts = self.log, {}
        deadline = began + self.budget_s
        # (when, after how many exchanges) an example of the class was last met: patience
        # counts from there (before the first, the drawn examples are replayed to meet it)
        met: list[tuple[float, int]] = []

        @hypothesis_settings(self.max_examples, (Phase.generate, Phase.shrink))
        @seed(self.seed)
        @given(strategy)
        def shrink_one(params: dict) -> None:
            if self.stop.is_set():
                raise Stopped
            key = canonical(params)
            exchange = attempts.get(key)
            if exchange is None and key in self.cache:
                record = self.cache[key]
                exchange = Exchange(
                    Result.from_dict(record), record["duration_s"], record["worker"]
                )
            if exchange is None:
                now = time.monotonic()
                if now > deadline:
                    log["budget_out"] = True
                    return
                if (
                    self.patience_s
                    and met
                    and now - met[-1][0] > self.patience_s
                    and log["exchanges"] - met[-1][1] >= SHRINK_PATIENCE_EXCHANGES
                ):
                    log["patience_out"] = True
                    return
                exchange = attempts[key] = self.exchange(params)
                log["exchanges"] += 1
                if class_of(exchange.result) == self.target:  # a smaller example of the class
                    log["found_s"] = round(time.monotonic() - began, 3)
                    log["found_at"].append(log["found_s"])
            if class_of(exchange.result) == self.target:
                met.append((time.monotonic(), log["exchanges"]))
                raise _Found(params, exchange)

        return shrink_one
