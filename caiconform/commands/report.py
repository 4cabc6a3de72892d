"""Build the report of one or more run directories: a summary that opens with what to do, and the details.

`caiconform report RUN_DIR [--out DIR] [--merge DIR ...] [--expectations FILE] [--fail-on
SEVERITIES]` turns a run directory (or several, from other machines or CI jobs) into
`matrix.json`, `findings.json` (the catalogue of non-conformances), a self-contained
`index.html`, and `matrix.md`: a summary page whose first lines are the verdict (FIX, UPDATE
THE BASELINE or OK, `caiconform.results.verdict`) and each library's defects most severe first, with
one page per library in `libraries/` (its conformance record, also as JSON and HTML, then its
defects) and the coverage, skips and environment in `details/`
(docs/reports.md). The same verdict is the first line printed, followed by each library's
failing defects, one line each.

`--fail-on` names the severities that fail (default corrupts,crashes,refuses-valid; 'all' or
'none'; docs/reports.md, "Severity"); with `--expectations FILE` a defect its entries cover is
expected, not failing, and an entry that no longer holds is an error.

When the run is incomplete (a killed run: a cell planned but not finished, examples lost from
the journal) the first line says INCOMPLETE, with the cells and the `--resume` command; when no
example ran it says NOTHING TESTED and why; on a machine without a GPU that skipped cells it
says "no GPU: N of M cells ran". matrix.md and index.html open with the same line.

Exit status: 0 written, and no defect at or above `--fail-on` that no expectation covers; 1
written, but such a defect was found or an expectation entry no longer holds; 2 bad usage (an
unknown severity), input that could not be read, or an expectation entry that matches no
result although its libraries and checks ran (one line each says why; the report is written);
3 written, but the run is INCOMPLETE (`--allow-incomplete`: the verdict's status instead); 4
written, but NOTHING was TESTED (every cell skipped).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from caiconform.report.runstate import headline_in_state
from caiconform.rundir import RunDir

__all__ = [
    "add_arguments",
    "run",
    "add_fail_on",
    "fail_on_of",
    "expectations_of",
    "verdict_of_run",
    "print_defects",
    "add_allow_incomplete",
    "announce_run_state",
    "headline_in_state",
]

#: failing defects printed per library under the headline (the rest are counted)
MAX_PRINTED = 5


def add_fail_on(parser: argparse.ArgumentParser) -> None:
    """The `--fail-on SEVERITIES` option (`report` and `run`)."""
    from caiconform.results.severity import DEFAULT_FAIL_ON, SEVERITIES

    default = ",".join(s for s in SEVERITIES if s in DEFAULT_FAIL_ON)
    parser.add_argument(
        "--fail-on",
        metavar="SEVERITIES",
        default=default,
        help=f"comma-separated severities that make the exit status 1 (default {default}; "
        f"'all' or 'none'; from {', '.join(SEVERITIES)})",
    )


def add_allow_incomplete(parser: argparse.ArgumentParser) -> None:
    """The `--allow-incomplete` option (`report`, `findings`, `baseline`)."""
    parser.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="an INCOMPLETE run (killed, or examples lost) still says so first, but does not "
        "make the exit status 3",
    )


def announce_run_state(run: Any, allow_incomplete: bool) -> int | None:
    """Say first, on standard error, what the loaded runs' state (`report.runstate`) makes of
    them, when it is not plain (INCOMPLETE, NOTHING TESTED, no GPU); returns the exit status it
    imposes (3 INCOMPLETE unless `allow_incomplete`, 4 NOTHING TESTED) or None."""
    from caiconform.report.runstate import exit_status, first_line, states_of, status_of

    states = states_of(run)
    line = first_line(states)
    if line is not None:
        print(line, file=sys.stderr)
    return exit_status(status_of(states), allow_incomplete)


def fail_on_of(args: argparse.Namespace) -> frozenset[str]:
    """The parsed `--fail-on`; UsageError (exit 2, one line) for an unknown severity."""
    from caiconform.cli import UsageError
    from caiconform.results.severity import parse_severities

    try:
        return parse_severities(args.fail_on, "--fail-on")
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def expectations_of(path: str | None) -> list[Any] | None:
    """The entries of `--expectations FILE` (None when not given); UsageError (exit 2, one
    line naming the file and entry) when the file cannot be used."""
    from caiconform.cli import UsageError
    from caiconform.results.expectations import ExpectationError, load_expectations

    if path is None:
        return None
    try:
        return load_expectations(path)
    except ExpectationError as exc:
        raise UsageError(str(exc)) from None


def verdict_of_run(
    run_dir: Path, records: list[dict[str, Any]], fail_on: frozenset[str], expectations: Any
) -> Any:
    """`caiconform.results.verdict.judge` of a finished run's records (every library judged), each
    record's library versions read from the run's env.json for the expectations."""
    from caiconform.report.matrix import version_of
    from caiconform.results.verdict import judge

    try:
        env = json.loads(RunDir(run_dir).env.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        env = {}
    envs = {str(r.get("run_id")): env if isinstance(env, dict) else {} for r in records[:1]}
    return judge(records, fail_on=fail_on, expectations=expectations, version_of=version_of(envs))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dir", metavar="RUN_DIR", help="run directory (env.json, results.jsonl)"
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="where to write the report (default: RUN_DIR)",
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
        help="expectation file (YAML/TOML, a baseline): the defects it covers do not fail; "
        "an entry that no longer holds does",
    )
    add_fail_on(parser)
    add_allow_incomplete(parser)
    parser.add_argument("--title", default=None, help="page title (default: the run IDs)")


def print_defects(
    groups: list[dict[str, Any]], statuses: list[str | None], pages: dict[str | None, str]
) -> None:
    """Under the headline: each library's failing defects, one line each, most severe first
    (`MAX_PRINTED` per library, the rest counted with the page that lists them)."""
    from caiconform.results.verdict import group_line

    by_library: dict[str | None, list[dict[str, Any]]] = {}
    for group, status in zip(groups, statuses, strict=False):
        if status == "new":
            by_library.setdefault(group.get("library"), []).append(group)
    for library, failing in by_library.items():
        for group in failing[:MAX_PRINTED]:
            condition = f"; when {group['condition']}" if group.get("condition") else ""
            print(f"  {group_line(group)}{condition}")
        if len(failing) > MAX_PRINTED:
            where = pages.get(library)
            listed = f" (listed in {where})" if where else ""
            print(
                f"  … and {len(failing) - MAX_PRINTED} more failing defect(s) of "
                f"{library or 'no single culprit'}{listed}"
            )


def run(args: argparse.Namespace) -> int:
    from caiconform.cli import UsageError
    from caiconform.report.build import write_report
    from caiconform.report.load import ReportInputError
    from caiconform.report.markdown import library_page
    from caiconform.report.runstate import exit_status

    fail_on = fail_on_of(args)
    expectations = expectations_of(args.expectations)
    try:
        written = write_report(
            [args.run_dir, *args.merge], args.out, expectations, args.title, fail_on=fail_on
        )
    except ReportInputError as exc:
        raise UsageError(str(exc)) from None
    verdict = written.verdict
    run_state = written.matrix["run_state"]
    if run_state["line"]:
        print(run_state["line"])
    print(headline_in_state(verdict["headline"], run_state["status"]))
    for error in verdict["entry_errors"]:
        print(f"  {error}")
    groups = written.matrix["catalogue"]["groups"]
    pages = {
        g.get("library"): str(written.out_dir / library_page(g.get("library"))) for g in groups
    }
    print_defects(groups, verdict["status"], pages)
    for warning in written.matrix["warnings"]:
        print(f"caiconform report: warning: {warning}", file=sys.stderr)
    summary = written.matrix["summary"]
    severities = ", ".join(f"{n} {s}" for s, n in summary["by_severity"].items())
    print(
        f"{summary['results']} results; "
        f"{summary.get('defect_findings', summary['catalogue_groups'])} defect(s), one per bug, "
        f"in {summary['catalogue_groups']} group(s)"
        + (f" ({severities})" if severities else "")
        + f"; {summary['not_exercised']} of {summary['required_combinations']} required "
        "combinations not exercised"
    )
    application = written.application
    if application is not None:
        for note in verdict["entry_notes"]:
            print(note)
        for status in application.entries:
            said = status.describe().partition(": ")[2]  # as a note above, once is enough
            noted = any(note.startswith(f"note: {said}") for note in verdict["entry_notes"])
            if status.status != "xfail" and not status.is_error and not noted:
                print(status.describe())
        print(
            f"expectations: {len(application.expected)} expected finding(s), "
            f"{len(application.unexpected)} unexpected, "
            f"{len(verdict['entry_errors'])} entry error(s)"
        )
    pages = RunDir(written.out_dir)
    print(f"wrote {pages.matrix_md} (start there), {pages.index_html}")
    state_exit = exit_status(run_state["status"], args.allow_incomplete)
    return unmatched_exit(verdict["unmatched"]) or state_exit or (0 if written.ok else 1)


def unmatched_exit(unmatched: list[str]) -> int:
    """2, after one line each on stderr, when an expectation entry matches nothing although
    its libraries and checks ran (a typo or a stale entry: bad input, the results are kept);
    0 otherwise."""
    for line in unmatched:
        print(f"caiconform: error: {line.removeprefix('error: ')}", file=sys.stderr)
    return 2 if unmatched else 0
