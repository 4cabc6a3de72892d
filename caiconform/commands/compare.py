"""Compare the findings catalogues of two runs: are the same non-conformances found?

`caiconform compare RUN_A RUN_B [--json] [--min-overlap F]` builds each run's catalogue
(`caiconform.results.catalogue`: groups of library x role x rule x outcome class) and prints the
groups found in both, those found in one only, the overlap |A and B| / |A or B| and whether
every MUST-level group is in both. Two runs with different seeds on one machine should agree
(issue: stability). Exit status: 0 when every MUST-level group is in both runs and the overlap
reaches `--min-overlap` (default 0.95); 1 otherwise; 2 when a run cannot be read.

`--common-cells` compares only the cells both runs finished and ran (their `cells.jsonl` lines,
less the cells skipped whole and those whose journal lost lines): two runs cut short by a time
limit, or shards of different sizes, are then judged on the same ground; the cells left out are
counted in the output.

A run directory that is INCOMPLETE (`report.runstate`: a killed run) is not compared whole: the
first line says INCOMPLETE with its `--resume` command, only the cells both runs finished are
compared (as `--common-cells`), and the exit status is 3.
"""

from __future__ import annotations

import argparse
import json

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_a", metavar="RUN_A", help="a run directory (or a findings.json)")
    parser.add_argument("run_b", metavar="RUN_B", help="another run directory")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument(
        "--min-overlap",
        type=float,
        default=0.95,
        metavar="F",
        help="overlap below which the exit status is 1 (default 0.95)",
    )
    parser.add_argument(
        "--common-cells",
        action="store_true",
        help="compare only the cells both runs finished (runs cut short, shards)",
    )


def _catalogue(path: str, cells: set[str] | None = None) -> dict:
    """The catalogue of a run directory (of its records in `cells` only, when given) or a
    findings.json as written."""
    from pathlib import Path

    from caiconform.cli import UsageError
    from caiconform.report.load import ReportInputError, load_run
    from caiconform.results.catalogue import build_catalogue
    from caiconform.results.record import cell_key

    target = Path(path)
    if target.is_file():
        try:
            data = json.loads(target.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            raise UsageError(f"{target}: not a findings.json ({exc})") from None
        if not isinstance(data, dict) or "groups" not in data:
            raise UsageError(f"{target}: not a findings.json (no 'groups')")
        return data
    try:
        run = load_run(target)
    except ReportInputError as exc:
        raise UsageError(str(exc)) from None
    records = run.records if cells is None else [r for r in run.records if cell_key(r) in cells]
    return build_catalogue(records, run.envs, run.confirmations)


def _incomplete_lines(paths: tuple[str, str]) -> list[str]:
    """The INCOMPLETE line (`report.runstate.first_line`) of each run directory that is."""
    from pathlib import Path

    from caiconform.report.runstate import first_line, state_of, status_of

    lines = []
    for name, path in zip("AB", paths, strict=True):
        if Path(path).is_dir():
            states = [state_of(path)]
            if status_of(states) == "incomplete":
                lines.append(f"{name}: {first_line(states)}")
    return lines


def _line(group: dict) -> str:
    from caiconform.spec.rules import level_text

    again = "; not reproduced when run again" if group.get("reproduced") is False else ""
    rule = group["rule"] or group.get("input_rule")
    return (
        f"  {group['library']} {group['role']} "
        f"{group['rule'] or 'input:' + str(group.get('input_rule'))} {group['outcome']} "
        f"({level_text(rule, group['level'], quote=False)}, {group['count']} example(s){again})"
    )


def run(args: argparse.Namespace) -> int:
    from caiconform.cli import UsageError
    from caiconform.results.catalogue import compare

    if not 0.0 <= args.min_overlap <= 1.0:
        raise UsageError(f"--min-overlap must be between 0 and 1, got {args.min_overlap}")
    from pathlib import Path

    from caiconform.report.runstate import EXIT_INCOMPLETE, finished_cells

    incomplete = _incomplete_lines((args.run_a, args.run_b))
    both_dirs = all(Path(path).is_dir() for path in (args.run_a, args.run_b))
    common = None
    if args.common_cells or (incomplete and both_dirs):
        for path in (args.run_a, args.run_b):
            if not Path(path).is_dir():
                raise UsageError(f"{path}: --common-cells needs run directories")
        done_a, done_b = finished_cells(args.run_a), finished_cells(args.run_b)
        common = done_a & done_b
        if not common and incomplete:
            for line in incomplete:
                print(line)
            print("INCOMPLETE: the two runs finished no cell in common: nothing compared")
            return EXIT_INCOMPLETE
        if not common:
            raise UsageError("--common-cells: the two runs finished no cell in common")
    a, b = _catalogue(args.run_a, common), _catalogue(args.run_b, common)
    result = compare(a, b)
    result["runs"] = {"a": a.get("runs"), "b": b.get("runs")}
    if common is not None:
        result["common_cells"] = {
            "compared": len(common),
            "only_a": len(done_a - common),
            "only_b": len(done_b - common),
        }
    ok = result["must_in_both"] and result["overlap"] >= args.min_overlap
    result["ok"] = ok
    result["incomplete"] = incomplete
    status = EXIT_INCOMPLETE if incomplete else 0 if ok else 1
    if args.json:
        print(json.dumps(result, indent=1))
        return status
    for line in incomplete:
        print(line)
    if common is not None:
        cells = result["common_cells"]
        print(
            f"cells both runs finished: {cells['compared']} (left out: {cells['only_a']} "
            f"finished only in A, {cells['only_b']} only in B)"
        )
    unreproduced = result["must_missing_unreproduced"]
    print(
        ("INCOMPLETE (only the cells both runs finished): " if incomplete else "")
        + f"{result['in_both']} group(s) in both, {len(result['only_a'])} only in A, "
        f"{len(result['only_b'])} only in B: overlap {result['overlap']:.1%}; "
        f"MUST-level groups in both: {'yes' if result['must_in_both'] else 'no'} "
        f"({result['must_groups']} MUST-level group(s)"
        + (f"; {unreproduced} of those in one run only did not reproduce" if unreproduced else "")
        + ")"
    )
    for title, groups in (("only in A", result["only_a"]), ("only in B", result["only_b"])):
        if groups:
            print(f"{title}:")
            for group in groups:
                print(_line(group))
    return status
