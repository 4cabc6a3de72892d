"""Merging runs from several machines or CI jobs into one report.

Records are identified by (run_id, seq): the same run copied twice, or a resumed run whose
journal repeats a line, counts once. Each run keeps its own environment, because a matrix built
on two machines is only readable if the reader can see which GPU and driver produced which cell.
"""

from __future__ import annotations

from collections.abc import Iterable

from caiconform.report.load import Run

__all__ = ["merge_runs"]


def merge_runs(runs: Iterable[Run]) -> Run:
    """One `Run` holding every distinct record of `runs`, first occurrence kept, in input order.

    The first run directory that brought a run_id is where that run's reproducers are looked up.
    """
    merged = Run(records=[])
    seen: set[tuple[str, str]] = set()
    duplicates = 0
    for run in runs:
        merged.warnings.extend(run.warnings)
        for run_id, env in run.envs.items():
            merged.envs.setdefault(run_id, env)
        for run_id, directory in run.dirs.items():
            merged.dirs.setdefault(run_id, directory)
        for key, same in run.confirmations.items():
            merged.confirmations[key] = merged.confirmations.get(key, False) or same
        for record in run.records:
            key = (str(record["run_id"]), str(record["seq"]))
            if key in seen:
                duplicates += 1
                continue
            seen.add(key)
            merged.records.append(record)
    if duplicates:
        merged.warnings.append(
            f"merge: dropped {duplicates} duplicate record(s) (same run_id and seq)"
        )
    return merged
