"""Replay a run's journal under other saturation limits (issue 43: examples that cannot find
anything new).

A cell's drawn examples end once LIMIT of them in a row met no (outcome, rule) class the cell had
not met (`caiconform.runner.saturation`): `saturate` for a cell that met nothing but pass and
skip, `saturate_found` for one that met a failure. This script feeds each cell's records, in
journal order, to that same `Saturation` under the limits given, leaves the rest of the cell's
drawn examples unrun where it would have cut, and says how many examples (and how many seconds
of their `duration_s`) each limit leaves unrun and which raw groups (family, producer, consumer,
rule, outcome of the non-pass records) only the whole journal has, with the severity of the
finding catalogue's group when the run directory has a findings.json. A journal already cut by
the run's own limits replays only tighter ones faithfully.
Usage: python scripts/simulate_saturation.py RUN_DIR [PASS_LIMIT,FOUND_LIMIT ...]
"""

from __future__ import annotations

import collections
import importlib
import json
import sys
import types
from pathlib import Path

from caiconform.runner.config import DEFAULT_SATURATE, DEFAULT_SATURATE_FOUND
from caiconform.runner.jobs import class_of
from caiconform.runner.saturation import Saturation

sys.path.insert(0, str(Path(__file__).resolve().parent))
from simulate_crash_caps import _records  # noqa: E402  (the journal, plain or packed)

#: a family whose module does not import here: it saturates (the default)
_PLAIN = types.SimpleNamespace(SATURATES=True)


def _family(name: str) -> object:
    try:
        return importlib.import_module(f"caiconform.checks.{name}")
    except ImportError:
        return _PLAIN


def _group(record: dict) -> tuple:
    return (
        record["check"],
        record.get("producer"),
        record.get("consumer"),
        record.get("rule"),
        record["outcome"],
    )


def replay(records: list[dict], limit: int, limit_found: int) -> tuple[int, float, set]:
    """(drawn examples left unrun, their seconds, raw groups kept) of the journal cut as
    saturation under those limits would have cut each cell."""
    cells: dict[tuple, list[dict]] = collections.defaultdict(list)
    shrunk: dict[tuple, list[dict]] = collections.defaultdict(list)
    groups = set()
    for record in records:
        key = (record["check"], record.get("producer"), record.get("consumer"))
        if record.get("shrunk"):  # kept only where the replay still meets the class shrunk
            shrunk[key].append(record)
            continue
        if record.get("floor") is None:  # a cell's skip: kept
            if record["outcome"] not in ("pass", "skip"):
                groups.add(_group(record))
            continue
        cells[key].append(record)
    unrun, seconds = 0, 0.0
    modules: dict[str, object] = {}
    for key in sorted({*cells, *shrunk}, key=str):
        journal = cells.get(key, [])
        module = modules.setdefault(key[0], _family(key[0]))
        journal.sort(key=lambda r: r.get("seq", 0))
        saturation = Saturation(limit, module, limit_found)  # type: ignore[arg-type]
        jobs = [types.SimpleNamespace(coverage=r.get("coverage") if r.get("floor") else None)
                for r in journal]  # fmt: skip
        cut = False
        met: set = set()
        for index, record in enumerate(journal):
            if cut and not record.get("floor"):
                unrun += 1
                seconds += float(record.get("duration_s") or 0.0)
                continue
            saturation.count(record)
            met.add(class_of(record))
            if record["outcome"] not in ("pass", "skip"):
                groups.add(_group(record))
            cut = cut or saturation.cuts(jobs, index + 1, drawing=False)
        # a class's shrink follows from its drawn example: a class the replay never met in
        # the cell is not shrunk, and what its shrink journaled is lost with it
        for record in shrunk.get(key, []):
            if record["outcome"] not in ("pass", "skip") and class_of(record) in met:
                groups.add(_group(record))
    return unrun, seconds, groups


def _severities(run: Path) -> dict[tuple, str]:
    """(family, producer, consumer, rule, outcome) -> the catalogue group's severity."""
    path = run / "findings.json"
    if not path.is_file():
        return {}
    found: dict[tuple, str] = {}
    for group in json.loads(path.read_text()).get("groups") or []:
        rule = group.get("rule") or group.get("input_rule")
        for cell in group.get("cells") or []:
            check, producer, consumer = cell.split("/")
            key = (
                check,
                None if producer == "-" else producer,
                None if consumer == "-" else consumer,
            )
            outcome = group.get("outcome")
            found[(*key, rule, outcome)] = group.get("severity") or "-"
            if outcome == "rejected-valid":  # the journal's outcome of a valid input refused
                found[(*key, rule, "rejected")] = group.get("severity") or "-"
    return found


def main() -> None:
    run = Path(sys.argv[1])
    limits = [tuple(int(n) for n in arg.split(",")) for arg in sys.argv[2:]] or [
        (DEFAULT_SATURATE, DEFAULT_SATURATE_FOUND),
        (DEFAULT_SATURATE, 20),
    ]
    records = _records(run)
    drawn = sum(1 for r in records if r.get("floor") is False)
    _, _, whole = replay(records, 0, 0)
    severity = _severities(run)
    print(f"{run}: {drawn} drawn examples, {len(whole)} raw groups")
    for limit, limit_found in limits:
        unrun, seconds, groups = replay(records, limit, limit_found)
        gone = sorted(whole - groups, key=str)
        said = [f"{g} ({severity.get(g, 'no catalogue group')})" for g in gone]
        print(
            f"limits ({limit}, {limit_found}): {unrun} drawn examples unrun, {seconds:.0f} s of "
            f"their execution, {len(gone)} raw groups lost" + (f": {said}" if said else "")
        )


if __name__ == "__main__":
    main()
