"""Turn a run's findings into bug reports for the libraries at fault.

`caiconform findings RUN_DIR [--library NAME] [--level LEVEL] [--severity SEVERITIES] [--out
DIR] [--list]` builds the run's catalogue of non-conformances (`caiconform.report.catalogue`,
as `caiconform report` writes to findings.json) and renders each group as the Markdown text of
an issue for its library (`caiconform.report.issues`): its severity and the harm it does, the
rule's words and section, what happened and when, how often, why that library, versions, and
the reproducer script inline. Groups come per library, most severe first. Without `--out` the
texts go to standard output; with it, one file per group plus `index.md`. `--list` prints one
tab-separated line per group instead: severity, library, role, rule, level, outcome, examples.
Exit status: 0 (also when nothing matches: it says so), 2 for unreadable input, an unknown
library or an unknown severity.
"""

from __future__ import annotations

import argparse

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from caiconform.report.issues import LEVEL_ORDER

    parser.add_argument("run_dir", metavar="RUN_DIR", help="run directory (results.jsonl)")
    parser.add_argument(
        "--merge", metavar="DIR", nargs="+", action="extend", default=[], help="more runs"
    )
    parser.add_argument("--library", metavar="NAME", help="only the findings of this library")
    parser.add_argument(
        "--level",
        choices=LEVEL_ORDER,
        help="only findings at this level or above (MUST > SHOULD > PORTABILITY > MAY)",
    )
    parser.add_argument(
        "--severity",
        metavar="SEVERITIES",
        help="only findings of these severities, comma-separated (corrupts, crashes, "
        "refuses-valid, accepts-invalid, portability; 'all')",
    )
    parser.add_argument("--out", metavar="DIR", help="write one Markdown file per finding here")
    parser.add_argument("--list", action="store_true", help="one line per finding")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from caiconform.cli import UsageError
    from caiconform.commands._groups import catalogue_groups, library_groups
    from caiconform.report.issues import issue_filename, render_issue, select_groups
    from caiconform.severity import parse_severities

    try:
        severities = (
            parse_severities(args.severity, "--severity") if args.severity is not None else None
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    run_data, groups = catalogue_groups([args.run_dir, *args.merge])
    groups = library_groups(groups, args.library, run_data.records)
    chosen = select_groups(groups, args.library, args.level, severities)
    if not chosen:
        print("no findings match")
        return 0
    if args.list:
        for g in chosen:
            rule = g.get("rule") or f"(input breaks {g.get('input_rule')})"
            print(
                f"{g.get('severity')}\t{g.get('library') or '?'}\t{g.get('role')}\t{rule}\t"
                f"{g.get('level')}\t{g.get('outcome')}\t{g.get('count')}"
            )
        return 0
    texts = [(issue_filename(g), render_issue(g, run_data.envs, run_data.dirs)) for g in chosen]
    if args.out is None:
        print("\n---\n\n".join(text for _, text in texts), end="")
        return 0
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        index = ["# Findings", ""]
        for (name, text), group in zip(texts, chosen, strict=True):
            (out / name).write_text(text, encoding="utf-8")
            index.append(
                f"- {group.get('severity')}: [{text.splitlines()[0][3:]}]({name}) — "
                f"{group.get('count')} example(s)"
            )
        (out / "index.md").write_text("\n".join(index) + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None
    print(f"wrote {len(texts)} finding(s) and index.md to {out}")
    return 0
