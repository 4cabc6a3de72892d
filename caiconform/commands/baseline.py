"""Freeze a run's findings so later runs are red only for new ones: run `caiconform baseline
RUN_DIR -o cai-expectations.yaml`, replace each entry's TODO reason, commit the file, and
give it to later runs (`--expectations`, or `--cai-expectations` in the pytest plugin).

`caiconform baseline RUN_DIR [--merge DIR ...] -o cai-expectations.yaml [--library NAME]
[--fail-on SEVERITIES]` writes one entry per finding group of the run's catalogue at or above
`--fail-on` (default: corrupts, crashes, refuses-valid), each with its failure mode pinned
and a reason to fill in; with `--library`, only the groups whose culprit is that library (a
library that ran clean gets an empty baseline, saying so). Runs given that file (`caiconform
run|report --expectations`, the pytest plugin's `--cai-expectations`) are red only for a new
group, a new failure mode of a baselined one, or an entry whose finding no longer happens.
A baseline of an INCOMPLETE run would miss the groups of what did not run: it is not written
(the first line says INCOMPLETE, exit 3) unless `--allow-incomplete`; a run that tested
NOTHING gives an empty baseline, said first, exit 4.
Exit status: 0 written, 2 unreadable input, a library not in the runs, an unknown severity,
or a file that cannot be written; 3 not written, the run is INCOMPLETE; 4 NOTHING TESTED.
"""

from __future__ import annotations

import argparse

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from caiconform.commands.report import add_allow_incomplete

    add_allow_incomplete(parser)
    parser.add_argument("run_dir", metavar="RUN_DIR", help="run directory (results.jsonl)")
    parser.add_argument(
        "--merge", metavar="DIR", nargs="+", action="extend", default=[], help="more runs"
    )
    parser.add_argument(
        "-o", "--out", metavar="FILE", required=True, help="the expectation file to write (.yaml)"
    )
    parser.add_argument("--library", metavar="NAME", help="only this library's own groups")
    parser.add_argument(
        "--fail-on",
        metavar="SEVERITIES",
        default=None,
        help="comma-separated severities whose groups are written (default: corrupts,crashes,"
        "refuses-valid; 'all' writes every group)",
    )


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from caiconform.cli import UsageError
    from caiconform.commands._groups import catalogue_groups, library_groups
    from caiconform.commands.report import announce_run_state
    from caiconform.report.runstate import EXIT_INCOMPLETE
    from caiconform.results.baseline import BaselineError, write_baseline
    from caiconform.results.severity import DEFAULT_FAIL_ON, parse_severities
    from caiconform.runner.journal import utc_now

    if Path(args.out).suffix.lower() not in (".yaml", ".yml"):
        raise UsageError(f"-o {args.out}: a baseline is written as YAML (.yaml or .yml)")
    try:
        fail_on = DEFAULT_FAIL_ON if args.fail_on is None else parse_severities(args.fail_on)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    run_data, groups = catalogue_groups([args.run_dir, *args.merge])
    state_exit = announce_run_state(run_data, args.allow_incomplete) or 0
    if state_exit == EXIT_INCOMPLETE:
        print(f"{args.out} not written (--allow-incomplete writes it)", file=sys.stderr)
        return state_exit
    groups = library_groups(groups, args.library, run_data.records)
    chosen = [g for g in groups if g.get("severity") in fail_on]
    source = ", ".join(str(d) for d in [args.run_dir, *args.merge])
    try:
        written = write_baseline(
            chosen, args.out, date=utc_now()[:10], source=source, records=run_data.records
        )
    except BaselineError as exc:
        raise UsageError(str(exc)) from None
    left = len(groups) - len(chosen)
    print(
        f"wrote {written} expectation(s) to {args.out} ({left} group(s) below --fail-on left out); "
        "fill in each reason, commit the file, and pass it as --expectations / "
        "--cai-expectations"
    )
    return state_exit
