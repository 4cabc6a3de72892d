"""Build the report of one or more run directories: matrix.json, matrix.md, index.html and
findings.json (the catalogue of non-conformances, `caiconform.report.catalogue`).

`caiconform report RUN_DIR [--out DIR] [--merge DIR ...] [--expectations FILE]` turns a run directory (or several, from other machines or CI jobs) into `matrix.json`,
`matrix.md` and a self-contained `index.html`. Exit status: 0 written; 1 written, but the
results do not match `--expectations` (an unexpected finding, an expected failure that passed,
an entry that matched nothing); 2 the input could not be read (one line says why).
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dir", metavar="RUN_DIR", help="run directory (env.json, results.jsonl)"
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="where to write matrix.json, matrix.md and index.html (default: RUN_DIR)",
    )
    parser.add_argument(
        "--merge",
        metavar="DIR",
        nargs="+",
        action="extend",
        default=[],
        help="more run directories to merge in (results deduplicated by run_id and seq)",
    )
    parser.add_argument(
        "--expectations",
        metavar="FILE",
        default=None,
        help="expectation file (YAML/TOML); exit 1 when the results do not match it",
    )
    parser.add_argument("--title", default=None, help="page title (default: the run IDs)")


def run(args: argparse.Namespace) -> int:
    from caiconform.cli import UsageError
    from caiconform.expectations import ExpectationError, load_expectations
    from caiconform.report.build import write_report
    from caiconform.report.load import ReportInputError

    try:
        expectations = (
            load_expectations(args.expectations) if args.expectations is not None else None
        )
        written = write_report([args.run_dir, *args.merge], args.out, expectations, args.title)
    except (ReportInputError, ExpectationError) as exc:
        raise UsageError(str(exc)) from None
    for warning in written.matrix["warnings"]:
        print(f"caiconform report: warning: {warning}", file=sys.stderr)
    summary = written.matrix["summary"]
    print(
        f"wrote {', '.join(str(p) for p in written.files)}: {summary['results']} results, "
        f"{summary['finding_groups']} finding group(s), {summary['catalogue_groups']} "
        f"non-conformance group(s); {summary['not_exercised']} of "
        f"{summary['required_combinations']} required combinations not exercised"
    )
    application = written.application
    if application is None:
        return 0
    for status in application.entries:
        if status.status != "xfail":
            print(status.describe())
    print(
        f"expectations: {len(application.expected)} expected finding(s), "
        f"{len(application.unexpected)} unexpected, "
        f"{len(application.entry_errors)} entry error(s)"
    )
    return 0 if application.ok else 1
