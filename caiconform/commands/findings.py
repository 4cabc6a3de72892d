"""Turn a run's findings into bug reports for the libraries at fault.

`caiconform findings RUN_DIR [--library NAME] [--level LEVEL] [--severity SEVERITIES] [--out
DIR] [--list]` builds the run's catalogue of non-conformances (`caiconform.results.catalogue`,
as `caiconform report` writes to findings.json) and renders each group as the Markdown text of
an issue for its library (`caiconform.report.issues`): its severity and the harm it does, the
rule's words and section, what happened and when, how often, why that library, versions, and
the reproducer script inline. Groups come per library, most severe first. Without `--out` the
texts go to standard output; with it, one file per group plus `index.md`. `--list` prints one
tab-separated line per group instead: severity, library, role, rule, level, outcome, examples.

`--verify` writes each group's standalone reproducer (numpy and the exchange's libraries only)
to RUN_DIR/standalone/ and runs it in a fresh process where caiconform cannot be imported,
`--jobs` at a time, each under `--timeout` seconds (`caiconform.report.verify`); only groups at
or above refuses-valid (or those of `--severity`). It records in RUN_DIR/verify.json whether each
reproduces (`BUG:`, exit 1), does not (`OK:`, a timeout, a signal, another exit) or has none,
and prints a line per group and the headline, reproducing groups first. Every later `caiconform
findings` reads verify.json: issue texts lead with groups that reproduce and mark the others
UNCONFIRMED. `--upstream DIR` writes one Markdown file per library, one section per defect, for
its tracker (`caiconform.report.upstream`); defects of caiconform's own code or with no single
culprit are left out. A group that a known upstream report covers (the table
`caiconform/report/known_reports.toml`) links it in the issue text, the list, the index and the
pack.

A run that is INCOMPLETE or tested NOTHING is said first, on standard error (as `caiconform
report` says it).

Exit status: 0 (also when nothing matches: it says so), 2 for unreadable input, an unknown
library or an unknown severity, a group without examples, an unwritable directory; 3 the run is
INCOMPLETE (`--allow-incomplete`: 0), 4 NOTHING was TESTED.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from caiconform.commands.report import add_allow_incomplete
    from caiconform.report.issues import LEVEL_ORDER
    from caiconform.report.verify import DEFAULT_JOBS, DEFAULT_TIMEOUT_S

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
    add_allow_incomplete(parser)
    parser.add_argument(
        "--verify",
        action="store_true",
        help="run each defect's standalone reproducer in a fresh process without caiconform "
        "and record whether it reproduces (RUN_DIR/verify.json)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=DEFAULT_JOBS,
        metavar="N",
        help=f"--verify: scripts run at once (default {DEFAULT_JOBS}; each may hold a CUDA "
        "context)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"--verify: seconds one script may run (default {DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--upstream",
        metavar="DIR",
        help="write one Markdown file per library, one section per defect, for its tracker",
    )


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from caiconform.cli import UsageError
    from caiconform.commands._groups import catalogue_groups, library_groups
    from caiconform.commands.report import announce_run_state
    from caiconform.report import upstream, verify
    from caiconform.report.issues import render_issue, select_groups
    from caiconform.report.wording import issue_filename
    from caiconform.results.severity import parse_severities

    try:
        severities = (
            parse_severities(args.severity, "--severity") if args.severity is not None else None
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    run_data, groups = catalogue_groups([args.run_dir, *args.merge])
    state_exit = announce_run_state(run_data, args.allow_incomplete) or 0
    groups = library_groups(groups, args.library, run_data.records)
    chosen = select_groups(groups, args.library, args.level, severities)
    run_dir = Path(args.run_dir)
    try:
        verify.annotate(groups, verify.load_verification(run_dir), run_dir)
        upstream.annotate_known(groups, upstream.known_reports())
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not chosen:
        print("no findings match")
        return state_exit
    defects = [g for g in chosen if g.get("severity") in (severities or _DEFECTS)]
    if args.verify:
        _verify(args, defects, run_dir)
        if not (args.list or args.out or args.upstream):
            return state_exit
    chosen = verify.lead_order(chosen)
    if args.upstream:
        _upstream(args, defects, run_data)
        if not (args.list or args.out):
            return state_exit
    if args.list:
        from caiconform.report.wording import group_level, severity_word

        for g in chosen:
            rule = g.get("rule") or f"(given a dict that breaks {g.get('input_rule')})"
            status = (g.get("standalone") or {}).get("standalone") or "-"
            known = " ".join(k["url"] for k in g.get("known_reports") or []) or "-"
            print(
                f"{severity_word(g)}\t{g.get('library') or '?'}\t{g.get('role')}\t{rule}\t"
                f"{group_level(g)}\t{g.get('outcome')}\t{g.get('count')}\t{status}\t{known}"
            )
        return state_exit
    texts = [(issue_filename(g), render_issue(g, run_data.envs, run_data.dirs)) for g in chosen]
    if args.out is None:
        print("\n---\n\n".join(text for _, text in texts), end="")
        return state_exit
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        index = ["# Findings", ""]
        for (name, text), group in zip(texts, chosen, strict=True):
            (out / name).write_text(text, encoding="utf-8")
            index.append(
                f"- {group.get('severity')}: [{text.splitlines()[0][3:]}]({name}) — "
                f"{group.get('count')} example(s){_marks(group)}"
            )
        (out / "index.md").write_text("\n".join(index) + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None
    print(f"wrote {len(texts)} finding(s) and index.md to {out}")
    return state_exit


#: the severities a standalone reproducer is owed: at or above refuses-valid
_DEFECTS = frozenset({"corrupts", "crashes", "refuses-valid"})


def _marks(group: dict[str, Any]) -> str:
    """What an index or summary line adds about a group: reproduces or UNCONFIRMED, and a known
    upstream report."""
    from caiconform.report.verify import REPRODUCES
    from caiconform.report.wording import known_line

    marks = []
    entry = group.get("standalone")
    if entry:
        reproduces = entry.get("standalone") == REPRODUCES
        marks.append("reproduces standalone" if reproduces else "UNCONFIRMED")
    known = known_line(group)
    if known:
        marks.append(known)
    return "".join(f" — {m}" for m in marks)


def _verify(args: argparse.Namespace, defects: list[dict[str, Any]], run_dir: Path) -> None:
    """Run the standalone reproducers of `defects`, print a line per group as it ends, the
    summary and the headline."""
    from caiconform.cli import UsageError
    from caiconform.report import verify
    from caiconform.results.verdict import group_line

    if not defects:
        print("no finding at or above refuses-valid to verify")
        return

    def progress(done: int, total: int, group: dict[str, Any], entry: dict[str, Any]) -> None:
        print(
            f"[{done}/{total}] {entry['standalone']}: {group_line(group)}: {entry.get('detail')}"
            f" ({entry.get('seconds')} s)",
            flush=True,
        )

    try:
        generate = verify.generator(required=True)
        assert generate is not None
        verification = verify.verify_groups(
            defects, run_dir, generate, args.jobs, args.timeout, progress
        )
    except verify.VerifyInputError as exc:
        raise UsageError(str(exc)) from None
    verify.annotate(defects, verification, run_dir)
    ours = [g["standalone"] for g in defects]
    counts = {s: sum(e["standalone"] == s for e in ours) for s in verify.STATUSES}
    print(
        f"verified {len(defects)} finding(s) in {verification['seconds']} s, {args.jobs} at a "
        f"time: {counts[verify.REPRODUCES]} reproduce, {counts[verify.DOES_NOT]} do not, "
        f"{counts[verify.NONE]} have no standalone reproducer; {run_dir / verify.VERIFY_FILE}"
    )
    print(_headline(args.library, defects))


def _headline(library: str | None, defects: list[dict[str, Any]]) -> str:
    """What to do, reproducing defects first: FIX the first of those that reproduce standalone,
    else OK, then how many are unconfirmed and how many are already reported upstream."""
    from caiconform.report.verify import REPRODUCES
    from caiconform.results.verdict import group_line

    who = library or "the matrix"
    confirmed = [g for g in defects if (g.get("standalone") or {}).get("standalone") == REPRODUCES]
    unconfirmed = len(defects) - len(confirmed)
    if confirmed:
        more = f" and {len(confirmed) - 1} more" if len(confirmed) > 1 else ""
        parts = [
            f"FIX: {who}: {len(confirmed)} defect(s) reproduce standalone "
            f"({group_line(confirmed[0])}{more})"
        ]
    else:
        parts = [f"OK: {who}: no defect reproduces standalone"]
    if unconfirmed:
        parts.append(f"{unconfirmed} unconfirmed (no standalone reproduction)")
    known = sum(bool(g.get("known_reports")) for g in defects)
    if known:
        parts.append(f"{known} already reported upstream")
    return "; ".join(parts)


def _upstream(args: argparse.Namespace, defects: list[dict[str, Any]], run_data: Any) -> None:
    """Write the upstream pack of `defects` into `args.upstream` and say what it holds."""
    from pathlib import Path

    from caiconform.cli import UsageError
    from caiconform.report.upstream import fileable, write_pack
    from caiconform.report.verify import REPRODUCES

    out = Path(args.upstream)
    try:
        written = write_pack(defects, run_data.envs, run_data.dirs, out)
    except OSError as exc:
        raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None
    parts = []
    for library, chosen in written.items():
        reproduce = sum((g.get("standalone") or {}).get("standalone") == REPRODUCES for g in chosen)
        known = sum(bool(g.get("known_reports")) for g in chosen)
        parts.append(
            f"{library}.md ({len(chosen)} defect(s), {reproduce} reproduce standalone, "
            f"{known} already reported)"
        )
    left = sum(not fileable(g) for g in defects)
    tail = (
        f"; {left} defect(s) of caiconform's own code or with no single culprit left out"
        if left
        else ""
    )
    print(f"wrote the upstream pack to {out}: {', '.join(parts) or 'no library'}{tail}")
