"""Coverage tables: which required (coverage-floor) combinations each cell exercised.

Every cell's floor (`caiconform.checks._floor`) journals one record per required combination,
`"floor": true` with its `coverage` labels (layout kind, dtype class, byte order, stream
scenario, ...). A combination is *exercised* when its record's outcome is anything but `skip`;
a skipped one is listed with the library's reason. `cells.jsonl` says how many floor examples
each cell planned (`floor_planned`), so a cell stopped part-way counts the combinations it never
reached as not exercised too.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from caiconform.results.outcome import PASS, SKIP
from caiconform.results.record import LABELS, cell_key

__all__ = ["build_coverage", "combination", "planned_from_dirs", "saturation_from_dirs"]


def combination(coverage: Mapping[str, Any]) -> str:
    """One combination as text: "layout=C dtype=float32 order=< scenario=none"."""
    return " ".join(f"{k}={coverage[k]}" for k in LABELS if k in coverage)


def build_coverage(
    records: Iterable[Mapping[str, Any]], planned: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """Per cell: planned / exercised / passed / not-passed / skipped floor combinations, the
    skipped ones grouped by reason, the not-passed ones with their outcome; and the run's total
    of required combinations not exercised. `planned` maps cell keys to `floor_planned`."""
    planned = dict(planned or {})
    by_cell: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("floor") and not r.get("shrunk"):
            by_cell[cell_key(r)].append(r)
    cells = {}
    for key in sorted(set(by_cell) | set(planned)):
        rows = by_cell.get(key, [])
        outcomes = Counter(r.get("outcome") for r in rows)
        reasons: dict[str, list[str]] = defaultdict(list)
        problems = []
        for r in rows:
            cov = r.get("coverage") or {}
            if r.get("outcome") == SKIP:
                reasons[str(r.get("message") or "no reason given")].append(combination(cov))
            elif r.get("outcome") != PASS:
                problems.append(
                    {
                        "combination": combination(cov),
                        "outcome": r.get("outcome"),
                        "rule": r.get("rule"),
                    }
                )
        total = max(planned.get(key, 0), len(rows))
        exercised = len(rows) - outcomes[SKIP]
        cells[key] = {
            "planned": total,
            "exercised": exercised,
            "passed": outcomes[PASS],
            "not_passed": exercised - outcomes[PASS],
            "skipped": outcomes[SKIP],
            "never_reached": total - len(rows),
            "labels": {
                label: sorted(
                    {
                        str((r.get("coverage") or {})[label])
                        for r in rows
                        if label in (r.get("coverage") or {})
                    }
                )
                for label in LABELS
                if any(label in (r.get("coverage") or {}) for r in rows)
            },
            "skips": [
                {"reason": reason, "count": len(combos), "combinations": combos[:50]}
                for reason, combos in sorted(reasons.items(), key=lambda kv: -len(kv[1]))
            ],
            "problems": problems[:200],
        }
    planned_total = sum(c["planned"] for c in cells.values())
    exercised_total = sum(c["exercised"] for c in cells.values())
    return {
        "cells": cells,
        "summary": {
            "cells": len(cells),
            "required": planned_total,
            "exercised": exercised_total,
            "not_exercised": planned_total - exercised_total,
        },
    }


def planned_from_dirs(dirs: Mapping[str, Any]) -> dict[str, int]:
    """`floor_planned` per cell key from the `cells.jsonl` of each run directory (runs from
    before the floor have none: {})."""
    from caiconform.report.load import read_cells

    planned: dict[str, int] = {}
    for directory in dirs.values():
        for entry in read_cells(directory):
            if isinstance(entry.get("floor_planned"), int):
                planned[str(entry["cell"])] = entry["floor_planned"]
    return planned


def saturation_from_dirs(dirs: Mapping[str, Any]) -> tuple[int, int, int]:
    """(cells, drawn examples left unrun, cells among them that had met a failure) of the
    cells whose draws ended early (`cells.jsonl` `saturated`, `RunConfig.saturate` and
    `saturate_found`): what a report says the run did not draw, beside what its floor did not
    exercise."""
    from caiconform.report.load import read_cells

    cells = unrun = found = 0
    for directory in dict.fromkeys(dirs.values()):
        for entry in read_cells(directory):
            saturated = entry.get("saturated")
            if isinstance(saturated, dict) and isinstance(saturated.get("unrun"), int):
                cells += 1
                unrun += saturated["unrun"]
                found += bool(saturated.get("found"))
    return cells, unrun, found
