"""Replay a run's journal under other crash caps (issue 43: fewer process replacements).

Each example that ended its worker (crash, hang, poisoned) cost a new worker process. The
runner skips the rest of a kind once a cell has lost FLOOR_CRASH_CAP floor examples or
DRAWN_CRASH_CAP drawn ones of it (`caiconform.runner.jobs`, `runner.config`). This script cuts the journal as
tighter caps would have cut it, in journal order, and says how many deaths and examples each
saves, which raw groups (family, producer, consumer, rule, outcome of the non-pass records)
only the whole journal has, and which groups of the findings catalogue (what `caiconform
compare` judges: library, role, rule, outcome) the cut journal loses.
Usage: python scripts/simulate_crash_caps.py RUN_DIR [FLOOR_CAP,DRAWN_CAP ...]
"""

from __future__ import annotations

import collections
import gzip
import json
import sys
from pathlib import Path

from caiconform.results.catalogue import build_catalogue, compare
from caiconform.runner.config import DRAWN_CRASH_CAP
from caiconform.runner.jobs import FLOOR_CRASH_CAP, crash_kind

LOST = {"crash", "poisoned", "hang"}


def _records(run: Path) -> list[dict]:
    plain, packed = run / "results.jsonl", run / "results.jsonl.gz"
    if packed.exists() and not plain.exists():
        with gzip.open(packed, "rt") as lines:
            return [json.loads(line) for line in lines if line.strip()]
    with plain.open() as lines:
        return [json.loads(line) for line in lines if line.strip()]


def replay(
    records: list[dict], floor_cap: int, drawn_cap: int, kept_records: list | None = None
) -> tuple[int, int, set]:
    """(deaths, examples skipped, raw groups) of the journal cut by those caps; the records
    kept are appended to `kept_records` when given."""
    lost: collections.Counter = collections.Counter()
    deaths = skipped = 0
    groups = set()
    for record in records:
        if record.get("shrunk") or record.get("worker") is None:  # shrinks, capped skips
            kept = record
        else:
            floor = bool(record.get("floor"))
            kind = crash_kind(record["params"], record.get("coverage") if floor else None)
            cap = floor_cap if floor else (drawn_cap if kind else 0)
            key = (record["check"], record["producer"], record["consumer"], kind, floor)
            if cap and lost[key] >= cap:
                skipped += 1
                continue
            if record["outcome"] in LOST:
                lost[key] += 1
                deaths += 1
            kept = record
        if kept_records is not None:
            kept_records.append(kept)
        if kept["outcome"] not in ("pass", "skip"):
            groups.add(
                (
                    kept["check"],
                    kept["producer"],
                    kept["consumer"],
                    kept.get("rule"),
                    kept["outcome"],
                )
            )
    return deaths, skipped, groups


def main() -> None:
    run = Path(sys.argv[1])
    caps = [tuple(int(n) for n in arg.split(",")) for arg in sys.argv[2:]] or [(2, 3), (1, 1)]
    records = _records(run)
    deaths, _, whole = replay(records, FLOOR_CRASH_CAP, DRAWN_CRASH_CAP)
    print(
        f"{run}: {deaths} deaths, {len(whole)} raw groups under the caps "
        f"({FLOOR_CRASH_CAP}, {DRAWN_CRASH_CAP})"
    )
    catalogue = build_catalogue(records)
    for floor_cap, drawn_cap in caps:
        kept: list[dict] = []
        d, skipped, groups = replay(records, floor_cap, drawn_cap, kept)
        gone = sorted(whole - groups, key=str)
        agree = compare(catalogue, build_catalogue(kept))
        lost = [(g["library"], g["rule"] or g["input_rule"], g["outcome"]) for g in agree["only_a"]]
        print(
            f"caps ({floor_cap}, {drawn_cap}): {d} deaths, {skipped} examples unrun, "
            f"{len(gone)} raw groups lost" + (f": {gone[:5]}" if gone else "")
        )
        print(
            f"  catalogue: {agree['in_both']} of {len(catalogue['groups'])} groups kept, "
            f"{len(lost)} lost" + (f": {lost[:8]}" if lost else "")
        )


if __name__ == "__main__":
    main()
