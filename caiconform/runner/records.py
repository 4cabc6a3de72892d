"""The records the runner journals for its cells: one example's (`exchange_record`: the
exchange's result, its coverage labels, the consumer entry it exercised, its culprit, timings and
reproducer) and the one record of a cell that could not run (`skip_record`). What a record holds
and the shapes the report reads are `caiconform.results.record`'s."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from caiconform.adapters import selfcheck
from caiconform.adapters.entries import entry_of
from caiconform.results.record import coverage_of_params, family_skip_record
from caiconform.runner.plan import Cell
from caiconform.runner.pool import Exchange
from caiconform.runner.repro import write_repro


def skip_record(cell: Cell, reason: str) -> dict[str, Any]:
    """The one record of a cell that could not run."""
    return {
        **family_skip_record(cell.family.name, reason),
        "producer": cell.producer,
        "consumer": cell.consumer,
    }


def exchange_record(
    cell: Cell,
    params: dict,
    exchange: Exchange,
    *,
    index: int | None,
    tag: str,
    coverage: dict | None,
    run_dir: Path,
) -> dict[str, Any]:
    """The record of one example of `cell`: the exchange's result, where it ran and for how
    long; `index` its place among the floor's or the drawn examples (None: the minimal example
    of a class, `shrunk`); the floor's coverage labels (`coverage`) or, for a drawn example,
    those its params name; the consumer entry it exercised; its culprit (the result's own, or
    caiconform itself where `selfcheck.harness_culprit` says so); its timings; and, unless it
    passed, a reproducer written under `run_dir`, named by `tag`."""
    result = exchange.result
    floor = coverage is not None
    record = {
        "producer": cell.producer,
        "consumer": cell.consumer,
        "check": cell.family.name,
        "rule": result.rule,
        "outcome": result.outcome,
        "params": params,
        "message": result.message,
        "seen": result.seen,
        "expected": result.expected,
        "repro": None,
        "duration_s": round(exchange.duration_s, 6),
        "worker": exchange.worker,
        "index": index,
        "shrunk": index is None,
        "coverage": coverage if floor else coverage_of_params(params),
        "floor": floor,
        "entry": entry_of(cell.consumer, params),
    }
    if result.culprit:
        record["culprit"] = result.culprit
    harness = selfcheck.harness_culprit(record, run_dir)
    if harness is not None:
        record["culprit"] = harness
    if exchange.timing:
        record["timing"] = {k: round(v, 6) for k, v in exchange.timing.items()}
    if not result.ok:
        record["repro"] = write_repro(run_dir, cell.family.module, record, tag)
    return record
