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
reproduces (a last `BUG:` line, exit 1), does not (`OK:`, exit 0), gave no verdict (no line, or
one its exit status, a timeout or a signal contradicts), has none, or could not run here (a
library it imports is missing, or no GPU): such a group keeps its earlier verification. It
writes each group's verification into RUN_DIR/findings.json (`standalone`, as `caiconform
report` does), prints a line per group and the headline, reproducing groups first, and, when a
script could not run here, a last line `NOT VERIFIED: ...`. Every later `caiconform findings`
reads verify.json: issue texts lead with groups that reproduce and mark the others UNCONFIRMED
(or not verified). `--upstream DIR` writes one Markdown file per library, one section per
defect, for its tracker (`caiconform.report.upstream`); defects of caiconform's own code or with
no single culprit are left out. A group that a known upstream report covers (the table
`caiconform/report/known_reports.toml`) links it in the issue text, the list, the index and the
pack.

A run that is INCOMPLETE or tested NOTHING is said first, on standard error (as `caiconform
report` says it).

Exit status: 0 (also when nothing matches: it says so), 2 for unreadable input, an unknown
library or an unknown severity, a group without examples, an unwritable directory; 3 the run is
INCOMPLETE (`--allow-incomplete`: 0), 4 NOTHING was TESTED, 5 `--verify` could not run a script
here: NOT VERIFIED (`--allow-not-run`: 0).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from caiconform.rundir import RunDir

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
        "refuses-valid, departs, accepts-invalid, portability; 'all')",
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
        "--allow-not-run",
        action="store_true",
        help="--verify: a script that could not run here (a library missing, no GPU) is still "
        "said NOT VERIFIED, but does not make the exit status 5",
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
    from caiconform.results.severity import parse_severities
    from caiconform.results.verification import lead_order
    from caiconform.results.wording import issue_filename

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
        _annotate_releases(groups, run_dir, run_data)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not chosen:
        print("no findings match")
        return state_exit
    defects = [g for g in chosen if g.get("severity") in (severities or _DEFECTS)]
    if args.verify:
        verified = _verify(args, defects, run_dir)
        state_exit = state_exit or verified
        if not (args.list or args.out or args.upstream):
            return state_exit
    chosen = lead_order(chosen)
    if args.upstream:
        _upstream(args, defects, run_data)
        if not (args.list or args.out):
            return state_exit
    if args.list:
        from caiconform.results.wording import group_level, severity_word

        for g in chosen:
            rule = g.get("rule") or f"(given a dict that breaks {g.get('input_rule')})"
            status = (g.get("standalone") or g.get("standalone_not_run") or {}).get(
                "standalone"
            ) or "-"
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


def _annotate_releases(groups: list[dict[str, Any]], run_dir: Path, run_data: Any) -> None:
    """Date each group by the charts in the run directory (`caiconform releases --annotate`),
    as `caiconform report` does; nothing without one."""
    from caiconform.report.releases import annotate_since, load_charts
    from caiconform.results.expectations import env_versions, lookup_version

    charts = load_charts(run_dir)
    if not charts:
        return
    versions = env_versions(next(iter(run_data.envs.values()), {}) or {})
    annotate_since(
        groups, charts, {c["library"]: lookup_version(versions, c["library"]) for c in charts}
    )


#: the severities a standalone reproducer is owed: at or above refuses-valid
_DEFECTS = frozenset({"corrupts", "crashes", "refuses-valid"})


def _marks(group: dict[str, Any]) -> str:
    """What an index or summary line adds about a group: reproduces or UNCONFIRMED, and a known
    upstream report."""
    from caiconform.results.verification import REPRODUCES
    from caiconform.results.wording import known_line

    marks = []
    entry = group.get("standalone")
    if entry:
        reproduces = entry.get("standalone") == REPRODUCES
        marks.append("reproduces standalone" if reproduces else "UNCONFIRMED")
    elif group.get("standalone_not_run"):
        marks.append("not verified (not run here)")
    known = known_line(group)
    if known:
        marks.append(known)
    return "".join(f" — {m}" for m in marks)


#: the exit status of a verification that could not run a script here (`--allow-not-run`: 0)
NOT_VERIFIED_EXIT = 5


def _verify(args: argparse.Namespace, defects: list[dict[str, Any]], run_dir: Path) -> int:
    """Run the standalone reproducers of `defects`, print a line per group as it ends, the
    totals and the headline, write their verification into findings.json; the exit status:
    NOT_VERIFIED_EXIT when a script could not run here (unless `--allow-not-run`), else 0."""
    from caiconform.cli import UsageError
    from caiconform.report import verify
    from caiconform.results.verdict import group_line
    from caiconform.results.verification import DOES_NOT, NO_VERDICT, NONE, REPRODUCES, STATUSES

    if not defects:
        print("no finding at or above refuses-valid to verify")
        return 0

    def progress(done: int, total: int, group: dict[str, Any], entry: dict[str, Any]) -> None:
        kept = entry.get("kept")
        keeps = (
            f"; keeps the verification of {kept.get('at') or 'an earlier run'}: "
            f"{kept['standalone']}"
            if kept
            else ""
        )
        print(
            f"[{done}/{total}] {entry['standalone']}: {group_line(group)}: {entry.get('detail')}"
            f" ({entry.get('seconds')} s){keeps}",
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
    _write_findings(run_dir, verification)
    entries = verification["groups"]
    keys = [verify.standalone_key(g) for g in defects]
    not_run = [k for k in keys if k in verification["not_run_here"]]
    ran = [entries[k]["standalone"] for k in keys if k not in verification["not_run_here"]]
    counts = {s: ran.count(s) for s in STATUSES}
    print(
        f"verified {len(defects)} finding(s) in {verification['seconds']} s, {args.jobs} at a "
        f"time: {counts[REPRODUCES]} reproduce, {counts[DOES_NOT]} do not, "
        f"{counts[NO_VERDICT]} gave no verdict, {counts[NONE]} have no standalone "
        f"reproducer, {len(not_run)} not run here; {RunDir(run_dir).verify}"
    )
    headline = _headline(args.library, defects)
    if not not_run:
        print(headline)
        return 0
    if headline.startswith("FIX:"):  # what verify.json records; never an OK it cannot back
        print(headline)
    print(_not_verified(args.library, defects, verification))
    return 0 if args.allow_not_run else NOT_VERIFIED_EXIT


#: a status as a count of groups says it
_PLURAL = {
    "reproduces": "reproduce",
    "does not": "do not",
    "no verdict": "gave no verdict",
    "none": "have no script",
}


def _not_verified(
    library: str | None, defects: list[dict[str, Any]], verification: dict[str, Any]
) -> str:
    """The line of a verification that could not run some scripts here: how many, why, and how
    many keep an earlier verification (what verify.json still says of them)."""
    from caiconform.report.verify import standalone_key
    from caiconform.results.verification import NOT_RUN, STATUSES

    not_run = verification["not_run_here"]
    ours = [standalone_key(g) for g in defects if standalone_key(g) in not_run]
    why: dict[str, int] = {}
    for key in ours:
        reason = "library missing" if "library missing" in not_run[key] else "no GPU"
        why[reason] = why.get(reason, 0) + 1
    kept = [verification["groups"][k]["standalone"] for k in ours]
    kept = [s for s in kept if s != NOT_RUN]
    said = ", ".join(f"{kept.count(s)} {_PLURAL.get(s, s)}" for s in STATUSES if kept.count(s))
    keeps = (
        f"; verify.json keeps the earlier verification of {len(kept)} of them ({said})"
        if kept
        else "; verify.json has no earlier verification of them"
    )
    return (
        f"NOT VERIFIED: {library or 'the matrix'}: {len(ours)} of {len(defects)} finding(s) "
        f"could not run here ({', '.join(f'{n} {w}' for w, n in sorted(why.items()))}){keeps}; "
        "run `caiconform findings RUN --verify` where their libraries and a GPU are"
    )


def _write_findings(run_dir: Path, verification: dict[str, Any]) -> None:
    """Set each group of `run_dir/findings.json` (when there is one) to its verification, as
    `caiconform report` does (`verify.annotate`): the file agrees with verify.json."""
    from caiconform.cli import UsageError
    from caiconform.report.verify import annotate

    path = RunDir(run_dir).findings
    if not path.exists():
        return
    try:
        catalogue = json.loads(path.read_text(encoding="utf-8"))
        annotate(catalogue["groups"], verification)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        temporary.write_text(
            json.dumps(catalogue, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        os.replace(temporary, path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{path}: cannot record the verification in it: {exc}") from None


def _headline(library: str | None, defects: list[dict[str, Any]]) -> str:
    """What to do, reproducing defects first: FIX the first of those that reproduce standalone,
    else OK, then how many are unconfirmed, how many not verified and how many are already
    reported upstream."""
    from caiconform.results.verdict import group_line
    from caiconform.results.verification import REPRODUCES

    who = library or "the matrix"
    statuses = [(g.get("standalone") or {}).get("standalone") for g in defects]
    confirmed = [g for g, s in zip(defects, statuses, strict=True) if s == REPRODUCES]
    unverified = statuses.count(None)
    unconfirmed = len(defects) - len(confirmed) - unverified
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
    if unverified:
        parts.append(f"{unverified} not verified")
    known = sum(bool(g.get("known_reports")) for g in defects)
    if known:
        parts.append(f"{known} already reported upstream")
    return "; ".join(parts)


def _upstream(args: argparse.Namespace, defects: list[dict[str, Any]], run_data: Any) -> None:
    """Write the upstream pack of `defects` into `args.upstream` and say what it holds."""
    from pathlib import Path

    from caiconform.cli import UsageError
    from caiconform.report.upstream import fileable, refuted, write_pack
    from caiconform.results.verification import REPRODUCES

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
    unconfirmed = sum(fileable(g) and refuted(g) for g in defects)
    if unconfirmed:
        tail += (
            f"; {unconfirmed} defect(s) whose standalone script ran and did not reproduce them "
            "left out (no reproducer, no report)"
        )
    print(f"wrote the upstream pack to {out}: {', '.join(parts) or 'no library'}{tail}")
