"""List the rule catalogue: every normative statement of the CAI and EMM texts, with its ID.

Filters combine: --level MUST --side producer --version 2 lists the MUST rules binding
producers that apply to CAI version 2 (EMM rules have no CAI version, so --version hides them);
--derived keeps the rules that are caiconform's reading of their sentence (`Rule.derived`).
Output: a table, --json (a list of rule objects) or --markdown (a table for documents). Each
shows the sentence the rule stands on and its level as `level_text` says it ("MUST, derived").
`--derived --markdown` writes the table of docs/derived-rules.md.

--coverage [RUN_DIR]: for each rule, the check families and EMM checks that exercise it (read
from the code, `caiconform.spec.rule_coverage`) or the reason it cannot be checked; with a run
directory (its results.jsonl or .jsonl.gz), how many examples exercised it and how many
findings named it. `--coverage --markdown` writes docs/coverage.md. Exit status 1 when a MUST
or SHOULD rule is neither exercised nor reasoned.
"""

from __future__ import annotations

import argparse
import json
import sys

from caiconform.cli import UsageError, parse_cai_version
from caiconform.cli import console as cli_console
from caiconform.spec.rules import RULES, Level, Rule, Side, level_text

__all__ = ["add_arguments", "run", "select", "versions_text", "derived_markdown"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print a JSON list of rules")
    output.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument(
        "--level", metavar="L", help="only this level: MUST, SHOULD, MAY, PORTABILITY"
    )
    parser.add_argument(
        "--side",
        metavar="S",
        help="only rules binding this side: " + ", ".join(s.value for s in Side),
    )
    parser.add_argument(
        "--version", metavar="N", help="only rules that apply to CAI version N (0-3)"
    )
    parser.add_argument(
        "--derived",
        action="store_true",
        help="only rules derived by caiconform from a sentence without a word of their level",
    )
    parser.add_argument(
        "--coverage",
        nargs="?",
        const="",
        default=None,
        metavar="RUN_DIR",
        help="the checks exercising each rule (and a run's example counts), or why none can",
    )


def select(level: str | None, side: str | None, version: str | None) -> list[Rule]:
    """The catalogue's rules passing the filters, in catalogue order; UsageError names a bad
    filter value."""
    rules = list(RULES.values())
    if level is not None:
        try:
            wanted_level = Level(level.upper())
        except ValueError:
            raise UsageError(
                f"--level must be one of {', '.join(x.value for x in Level)}, got {level!r}"
            ) from None
        rules = [r for r in rules if r.level is wanted_level]
    if side is not None:
        try:
            wanted_side = Side(side.lower())
        except ValueError:
            raise UsageError(
                f"--side must be one of {', '.join(x.value for x in Side)}, got {side!r}"
            ) from None
        rules = [r for r in rules if r.side is wanted_side]
    wanted_version = parse_cai_version(version)
    if wanted_version is not None:
        rules = [r for r in rules if wanted_version in r.versions]
    return rules


def versions_text(rule: Rule) -> str:
    """'0-3', '3', or 'EMM' for rules of the EMM interface (which has no CAI version)."""
    if not rule.versions:
        return "EMM"
    lo, hi = rule.versions[0], rule.versions[-1]
    return str(lo) if lo == hi else f"{lo}-{hi}"


def run(args: argparse.Namespace) -> int:
    rules = select(args.level, args.side, args.version)
    if args.derived:
        rules = [r for r in rules if r.derived]
    if args.coverage is not None:
        return _coverage(args, {r.id for r in rules})
    if args.json:
        json.dump([r.to_dict() for r in rules], sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.markdown:
        sys.stdout.write(derived_markdown(rules) if args.derived else _markdown(rules))
    else:
        _print_table(rules)
    return 0


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _markdown(rules: list[Rule]) -> str:
    lines = [
        "| ID | Level | Versions | Side | Section | Text | Sentence |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rules:
        lines.append(
            f"| `{r.id}` | {level_text(r, quote=False)} | {versions_text(r)} | {r.side.value} | "
            f"{r.section} | {_cell(r.text)} | {_cell(r.quote)} |"
        )
    return "\n".join(lines) + "\n"


def derived_markdown(rules: list[Rule]) -> str:
    """The derived rules as docs/derived-rules.md lists them: ID, the level they are ranked
    at, the sentence they stand on (its spec file), and caiconform's reading of it."""
    lines = [
        "| ID | Ranked as | Spec | The sentence | caiconform's reading |",
        "|---|---|---|---|---|",
    ]
    for r in rules:
        if r.derived:
            lines.append(
                f"| `{r.id}` | {r.level.value} | {r.spec_file} | {_cell(r.quote)} | "
                f"{_cell(r.text)} |"
            )
    return "\n".join(lines) + "\n"


def _print_table(rules: list[Rule]) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"{len(rules)} rule(s)")
    table.add_column("ID", no_wrap=True)
    table.add_column("Level", no_wrap=True)
    table.add_column("Versions", no_wrap=True)
    table.add_column("Side", no_wrap=True)
    table.add_column("Section", overflow="fold")
    table.add_column("Text", overflow="fold")
    table.add_column("Sentence", overflow="fold")
    for r in rules:
        table.add_row(
            Text(r.id),
            Text(level_text(r, quote=False)),
            versions_text(r),
            r.side.value,
            Text(r.section),
            Text(r.text),
            Text(r.quote),
        )
    cli_console().print(table)


def _coverage(args: argparse.Namespace, wanted: set[str]) -> int:
    from caiconform.spec import rule_coverage as cov

    run_dir = args.coverage or None
    try:
        entries = cov.coverage(run_dir)
    except (FileNotFoundError, cov.CorruptJournal) as exc:
        raise UsageError(str(exc)) from None
    gaps = cov.must_should_gaps(entries)
    entries = [e for e in entries if e.rule.id in wanted]
    if args.json:
        json.dump([e.to_dict() for e in entries], sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.markdown:
        sys.stdout.write(cov.to_markdown(entries, run_dir))
    else:
        _print_coverage(entries, cov.summary(entries))
    if gaps:
        print(
            f"MUST/SHOULD rules neither exercised nor reasoned: {', '.join(gaps)}", file=sys.stderr
        )
    return 1 if gaps else 0


def _print_coverage(entries, counts) -> None:
    from rich.table import Table
    from rich.text import Text

    with_counts = any(e.examples is not None for e in entries)
    table = Table(title=f"rule coverage: {len(entries)} rule(s)")
    for column in ("ID", "Level", "Status", "Checked by"):
        table.add_column(column, overflow="fold")
    if with_counts:
        table.add_column("Examples", justify="right")
        table.add_column("Findings", justify="right")
    table.add_column("Reason", overflow="fold")
    for e in entries:
        row = [
            Text(e.rule.id),
            Text(level_text(e.rule, quote=False)),
            e.status,
            Text(", ".join(e.checks)),
        ]
        if with_counts:
            row += [str(e.examples), str(e.findings)]
        table.add_row(*row, Text(e.reason))
    console = cli_console()
    console.print(table)
    for level, by_status in counts.items():
        parts = ", ".join(f"{n} {status}" for status, n in sorted(by_status.items()))
        console.print(f"{level}: {parts}", markup=False)
