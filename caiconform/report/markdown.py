"""The report as GitHub-flavoured Markdown, for PR comments and job summaries.

`matrix.md` is a summary page of a few hundred lines at most, whatever the run's size: it
opens with what to do (the verdict's headline, `caiconform.results.verdict`), then lists each
library's defects most severe first, one line each (those below `--fail-on` counted), then the
producer x consumer grid of `passed/tested` per check family, the scores, the coverage floor
per family, the skips grouped by reason and the environment, in short. The details are pages of
their own beside it: `libraries/<name>.md` (every defect group of that library with its
message, condition, contrast, culprit reason, rule text and reproducer), `details/coverage.md`,
`details/skips.md` (every cell of every skip reason) and `details/environment.md`. The per-pair
findings table is in matrix.json and index.html.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

from caiconform.report.conformance_pages import record_file, record_lines
from caiconform.report.matrix import SEVERITY
from caiconform.results.record import cell_key
from caiconform.results.severity import SEVERITIES
from caiconform.results.wording import (
    about_input_lines,
    folded_phrase,
    group_level,
    group_phrase,
    harness_lines,
    is_harness,
    severity_word,
    standalone_word,
)
from caiconform.rundir import MATRIX_MD
from caiconform.spec.rules import RULES, level_text

__all__ = [
    "render_markdown",
    "render_pages",
    "render_library_page",
    "library_page",
    "group_anchor",
    "cell_text",
    "percent",
    "LIBRARIES_DIR",
    "DETAILS_DIR",
]

NONE = "—"
#: where the per-library pages and the other detail pages go, beside matrix.md
LIBRARIES_DIR = "libraries"
DETAILS_DIR = "details"
DETAIL_PAGES = ("coverage", "skips", "environment")
#: the page of the groups without a single culprit
NO_CULPRIT_PAGE = "no-single-culprit"
#: groups at or above --fail-on listed per library on the summary page (the rest: counted,
#: linked to the library's page), and for all libraries together: with many libraries each
#: gets its share of `MAX_DEFECT_LINES`, at least `MIN_LINES_PER_LIBRARY`
MAX_LINES_PER_LIBRARY = 12
MAX_DEFECT_LINES = 150
MIN_LINES_PER_LIBRARY = 3
#: skip reasons listed on the summary page (the rest: counted, linked to details/skips.md)
MAX_SKIP_REASONS = 25
#: cells named per group on a library page (the rest are counted)
MAX_CELLS_SHOWN = 8
#: rows of the numba-cuda / numba-cuda-mlir table on the summary page (the rest are counted)
MAX_MIGRATION_ROWS = 40


def percent(fraction: float | None) -> str:
    return NONE if fraction is None else f"{100 * fraction:.0f}%"


def _md(value: Any) -> str:
    """A table-cell-safe rendering: one line, pipes escaped, and no raw HTML (GitHub renders
    tags in Markdown, and journal messages are data)."""
    if value is None or value == "":
        return NONE
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    text = " ".join(text.split()).replace("|", "\\|")
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _name(library: str | None) -> str:
    return NONE if library is None else library


def cell_text(cell: dict[str, Any] | None) -> str:
    """`passed/tested` plus the worst finding outcome, e.g. `7/10 crash:1`."""
    if cell is None:
        return ""
    if cell["tested"] == 0:
        return f"skip:{cell['counts'].get('skip', 0)}"
    text = f"{cell['passed']}/{cell['tested']}"
    bad = list(cell["findings"].items())
    if bad:
        outcome, n = min(bad, key=lambda item: SEVERITY.get(item[0], 9))
        text += f" {outcome}:{n}"
    return text


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _heatmaps(matrix: dict[str, Any]) -> list[str]:
    by_key = {(c["check"], c["producer"], c["consumer"]): c for c in matrix["cells"]}
    lines = ["## Matrix", "", "Cells: passed/tested (skips excluded) and the worst other outcome."]
    for check, axes in matrix["families"].items():
        lines += ["", f"### {check}", ""]
        header = ["producer \\ consumer"] + [_name(c) for c in axes["consumers"]]
        rows = [
            [f"**{_name(p)}**"] + [cell_text(by_key.get((check, p, c))) for c in axes["consumers"]]
            for p in axes["producers"]
        ]
        lines += _table(header, rows)
    return lines


def _protocols(matrix: dict[str, Any]) -> list[str]:
    from caiconform.report import protocols

    return protocols.render(matrix)


def _scores(matrix: dict[str, Any]) -> list[str]:
    rows = []
    for library, roles in matrix["scores"].items():
        row = [library]
        for role in ("producer", "consumer"):
            score = roles[role]
            row.append(
                f"{percent(score['score'])} ({score['passed']}/{score['tested']})"
                if score["tested"]
                else NONE
            )
        rows.append(row)
    return ["## Scores", "", *_table(["library", "as producer", "as consumer"], rows)]


def _expectations(matrix: dict[str, Any]) -> list[str]:
    statuses = matrix.get("expectations")
    if not statuses:
        return []
    rows = [
        [
            f"{s['entry']['source']}:{s['entry']['index']}",
            _md(s["entry"]["rule"]),
            f"{s['entry']['producer']} → {s['entry']['consumer']}",
            ("**" + s["status"] + "**") if s["error"] else s["status"],
            str(s["covered"]),
            _md(s["entry"]["reason"]),
        ]
        for s in statuses
    ]
    header = ["entry", "rule", "pair", "status", "covered", "reason"]
    return ["## Expectations", "", *_table(header, rows), ""]


def _flatten(env: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Nested env objects as dotted keys, so they fit a two-column table."""
    items: list[tuple[str, Any]] = []
    for key, value in env.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            items += _flatten(value, name + ".")
        else:
            items.append((name, value))
    return items


def _again(reproduced: bool | None) -> str:
    return NONE if reproduced is None else ("yes" if reproduced else "no")


def _rule_of(group: dict[str, Any]) -> str | None:
    """A group's rule, or for a record without one the rule its input breaks."""
    if group.get("rule") or not group.get("input_rule"):
        return group.get("rule")
    return f"(given a dict that breaks {group['input_rule']})"


# --- the summary page: what to do first ---------------------------------------------------------


def library_page(library: str | None) -> str:
    """The page (relative to matrix.md) that lists `library`'s defects; None: the groups
    without a single culprit."""
    return f"{LIBRARIES_DIR}/{record_file(library or NO_CULPRIT_PAGE, '.md')}"


def group_anchor(index: int) -> str:
    """The anchor of catalogue group `index` (0-based) on its library's page."""
    return f"g{index + 1}"


def _status(matrix: dict[str, Any], index: int) -> str | None:
    statuses = (matrix.get("verdict") or {}).get("status") or []
    return statuses[index] if index < len(statuses) else None


def _fail_on(matrix: dict[str, Any]) -> str:
    chosen = (matrix.get("verdict") or {}).get("fail_on")
    return ",".join(chosen) if chosen else "none"


def _severity_counts(groups: Iterable[dict[str, Any]]) -> str:
    counts = Counter(str(g.get("severity")) for g in groups)
    return ", ".join(f"{counts[s]} {s}" for s in SEVERITIES if counts.get(s))


def _by_library(matrix: dict[str, Any]) -> dict[str | None, list[tuple[int, dict[str, Any]]]]:
    """library (None: no single culprit, last) -> [(catalogue index, group)], most severe
    first (the catalogue's own order)."""
    catalogue = matrix.get("catalogue") or {"groups": []}
    out: dict[str | None, list[tuple[int, dict[str, Any]]]] = {}
    for index, group in enumerate(catalogue["groups"]):
        # no defect of a library's: `_about_input` and `_harness` list them
        # a group folded into another is one more rule of its lead's bug: listed with it
        if not group.get("about_input") and not is_harness(group) and not group.get("folded_into"):
            out.setdefault(group.get("library"), []).append((index, group))
    return dict(sorted(out.items(), key=lambda kv: (kv[0] is None, kv[0] or "")))


def _what(group: dict[str, Any]) -> str:
    """`**severity** role rule (level, outcome, N example(s))`, or for a group whose input
    broke a rule `**severity** given a dict that breaks RULE (level), the consumer crashed (N
    example(s))` (`results.wording`), Markdown-safe."""
    return f"**{severity_word(group)}** {_md(group_phrase(group, library=False))}"


_STATUS_WORDS = {
    "new": "failing",
    "expected": "expected (covered by the expectations)",
    "below": "below --fail-on (reported, not failing)",
}


def _group_line(group: dict[str, Any], status: str | None, href: str) -> str:
    condition = f"; when {_md(group['condition'])}" if group.get("condition") else ""
    mark = " · expected" if status == "expected" else ""
    standalone = standalone_word(group)
    mark += f" · {standalone}" if standalone else ""
    return f"- {_what(group)}{condition}{mark} — [details]({href})"


def _harness(matrix: dict[str, Any]) -> list[str]:
    """The groups whose cause is caiconform's own code, before every library's defects: what a
    run says about a library is only as good as the adapter that drove it."""
    lines = harness_lines((matrix.get("catalogue") or {}).get("groups") or [])
    if not lines:
        return []
    return [
        "## caiconform's own defects (harness, charged to no library)",
        "",
        "An adapter made or read other memory than its library's own API would "
        "(`caiconform.adapters.selfcheck`, `selfcheck.json`): the examples of that slice are "
        "filed here, never against the library. File these against caiconform.",
        "",
        *(f"- {_md(line)}" for line in lines),
        "",
    ]


def _about_input(matrix: dict[str, Any]) -> list[str]:
    """The groups that are information about their input, apart from every defect: what a
    consumer did with a dict breaking a rule the dict cannot show (docs/reports.md)."""
    lines = about_input_lines((matrix.get("catalogue") or {}).get("groups") or [])
    if not lines:
        return []
    return [
        "## About the inputs (no library's defect)",
        "",
        "Dicts that break a rule the dict cannot show (memory a consumer cannot check from the "
        "dict, a handle that is no stream): what a consumer did with them is the input's doing, "
        "the producer's obligation, and fails no one.",
        "",
        *(f"- {_md(line)}" for line in lines),
    ]


def _migration(matrix: dict[str, Any]) -> list[str]:
    """numba-cuda beside numba-cuda-mlir (`report.migration`): the defect groups of a twin cell
    pair present with one implementation only; shown only when both ran a pair."""
    rows = matrix.get("migration")
    if rows is None:
        return []
    lines = [
        "## numba-cuda and numba-cuda-mlir",
        "",
        "Cells that differ only by the Numba implementation, both run: the defects found with "
        "one and not the other, what moving between them changes.",
        "",
    ]
    if not rows:
        return [*lines, "None: both implementations showed the same defects in every pair."]
    table = [
        [
            _md(r["only_in"]),
            _md(r["numba_cell"]),
            _md(r["mlir_cell"]),
            _md(r["library"]),
            _md(r["role"]),
            _md(r["rule"] or r["input_rule"]),
            _md(r["level_text"]),
            _md(r["outcome"]),
        ]
        for r in rows[:MAX_MIGRATION_ROWS]
    ]
    header = ["only with", "numba-cuda cell", "numba-cuda-mlir cell", "library", "role"]
    lines += _table([*header, "rule", "level", "outcome"], table)
    if len(rows) > MAX_MIGRATION_ROWS:
        lines.append(f"\n… and {len(rows) - MAX_MIGRATION_ROWS} more (matrix.json `migration`)")
    return lines


def _defects(matrix: dict[str, Any]) -> list[str]:
    by_library = _by_library(matrix)
    lines = ["## Defects by library, most severe first", ""]
    if not by_library:
        return [*lines, "None: every result passed, was skipped, or was a correct rejection."]
    fail_on = _fail_on(matrix)
    share = MAX_DEFECT_LINES // len(by_library)
    per_library = max(MIN_LINES_PER_LIBRARY, min(MAX_LINES_PER_LIBRARY, share))
    for library, groups in by_library.items():
        page = library_page(library)
        failing = [(i, g) for i, g in groups if _status(matrix, i) == "new"]
        at_threshold = [(i, g) for i, g in groups if _status(matrix, i) in ("new", "expected")]
        below = [g for i, g in groups if _status(matrix, i) not in ("new", "expected")]
        version = next((g.get("version") for _, g in groups if g.get("version")), None)
        title = _md(library) if library else "No single culprit"
        lines += [
            f"### {title}" + (f" {_md(version)}" if version else ""),
            "",
            f"{len(groups)} defect(s) ({_severity_counts(g for _, g in groups)}); "
            f"**{len(failing)} failing** at --fail-on {fail_on} — [all, with details]({page})",
            "",
        ]
        for index, group in at_threshold[:per_library]:
            href = f"{page}#{group_anchor(index)}"
            lines.append(_group_line(group, _status(matrix, index), href))
        more = len(at_threshold) - per_library
        if more > 0:
            lines.append(f"- … and {more} more at or above --fail-on: [{page}]({page})")
        if below:
            lines.append(
                f"- not failing (below --fail-on): {_severity_counts(below)} — [{page}]({page})"
            )
        lines.append("")
    return lines


def _header(matrix: dict[str, Any], title: str) -> list[str]:
    summary = matrix["summary"]
    verdict = matrix.get("verdict") or {}
    outcomes = ", ".join(_outcome(o, n, summary) for o, n in summary["outcomes"].items())
    by_severity = summary.get("by_severity") or {}
    severities = ", ".join(f"{n} {s}" for s, n in by_severity.items())
    groups = summary.get("catalogue_groups", 0)
    found = summary.get("defect_findings", groups)
    counts = (
        f"{summary['results']} results ({outcomes}); pass fraction "
        f"{percent(summary['pass_fraction'])}; {found} defect(s), one per bug, in {groups} "
        "group(s) (one library, role, rule and outcome each)"
        + (f"; by severity: {severities}" if severities else "")
    )
    counts += f"; {summary.get('failing_groups', 0)} failing at --fail-on {_fail_on(matrix)}"
    if summary.get("ambiguous_groups"):
        counts += f"; {summary['ambiguous_groups']} without a single culprit"
    if matrix.get("expectations") is not None:
        errors = len(verdict.get("entry_errors") or [])
        counts += f"; {errors} expectation entry error(s)"
    lines = [f"# {title}", ""]
    run_state = (matrix.get("run_state") or {}).get("line")
    if run_state:
        lines += [f"**{_md(run_state)}**", ""]
    if verdict.get("headline"):
        lines += [f"**{_md(verdict['headline'])}**", ""]
    entries = [*(verdict.get("entry_errors") or []), *(verdict.get("entry_notes") or [])]
    lines += [f"- {_md(entry)}" for entry in entries]
    if entries:
        lines.append("")
    pages = [
        f"[{_md(lib) if lib else 'no single culprit'}]({library_page(lib)})"
        for lib in _by_library(matrix)
    ]
    details = [f"[{name}]({DETAILS_DIR}/{name}.md)" for name in DETAIL_PAGES]
    lines += [counts + ".", ""]
    lines += _saturation_line(summary)
    if pages:
        lines += ["Details per library: " + " · ".join(pages) + "; " + ", ".join(details) + ".", ""]
    else:
        lines += ["Details: " + ", ".join(details) + ".", ""]
    for warning in matrix["warnings"]:
        lines.append(f"> warning: {_md(warning)}")
    if matrix["warnings"]:
        lines.append("")
    return lines


def _outcome(outcome: str, n: int, summary: dict[str, Any]) -> str:
    """`skip N (E examples, C cells skipped whole)`: a cell that could not run journals one
    skip record, which is no example."""
    cells = summary.get("cells_skipped") or 0
    if outcome != "skip" or not cells:
        return f"{outcome} {n}"
    return f"skip {n} ({n - cells} example(s), {cells} cell(s) skipped whole)"


def _coverage_summary(matrix: dict[str, Any]) -> list[str]:
    coverage = matrix.get("coverage")
    if not coverage or not coverage["cells"]:
        return []
    summary = coverage["summary"]
    families: dict[str, Counter[str]] = defaultdict(Counter)
    for key, c in coverage["cells"].items():
        tally = families[key.split("/")[0]]
        tally["cells"] += 1
        for field in ("planned", "exercised", "passed", "not_passed", "skipped"):
            tally[field] += c[field]
        tally["short"] += c["exercised"] < c["planned"]
    rows = [
        [family, *(str(t[f]) for f in ("cells", "planned", "exercised", "passed", "not_passed"))]
        + [str(t["skipped"]), str(t["short"])]
        for family, t in families.items()
    ]
    header = ["family", "cells", "required", "exercised", "passed", "not passed", "skipped"]
    return [
        "## Coverage floor",
        "",
        f"{summary['required']} required combinations in {summary['cells']} cells; "
        f"{summary['exercised']} exercised, **{summary['not_exercised']} not exercised** "
        f"(skipped with a reason, or never reached). Per cell, with what was not exercised and "
        f"why: [{DETAILS_DIR}/coverage.md]({DETAILS_DIR}/coverage.md).",
        "",
        *_table([*header, "cells short"], rows),
    ]


def _saturation_line(summary: dict[str, Any]) -> list[str]:
    """What the run did not draw: cells whose draws met no new class for long enough end them
    early (`caiconform run --saturate`, and `--saturate-found` for a cell that met a
    failure)."""
    cells = summary.get("saturated_cells") or 0
    if not cells:
        return []
    unrun = summary.get("unrun_examples") or 0
    found = summary.get("saturated_found_cells") or 0
    if not found:
        return [
            f"{cells} cell(s) that met nothing but pass and skip ended their draws early "
            f"(`--saturate`): {unrun} drawn example(s) not run.",
            "",
        ]
    return [
        f"{cells} cell(s) ended their draws early, {found} of them after meeting a failure "
        f"(`--saturate`, `--saturate-found`): {unrun} drawn example(s) not run.",
        "",
    ]


def _skips_summary(matrix: dict[str, Any]) -> list[str]:
    reasons = matrix.get("skip_reasons") or []
    if not reasons:
        return []
    total = sum(r["count"] for r in reasons)
    cells = len({c for r in reasons for c in r["cells"]})
    rows = [
        [
            _md(r["reason"]),
            str(r["count"]),
            r["cells"][0] if len(r["cells"]) == 1 else f"{len(r['cells'])}, e.g. {r['cells'][0]}",
        ]
        for r in reasons[:MAX_SKIP_REASONS]
    ]
    lines = [
        "## Skipped, by reason",
        "",
        f"{total} skipped result(s) in {cells} cell(s), for {len(reasons)} reason(s); every "
        f"cell of each reason: [{DETAILS_DIR}/skips.md]({DETAILS_DIR}/skips.md).",
        "",
        *_table(["reason", "results", "cells"], rows),
    ]
    rest = reasons[MAX_SKIP_REASONS:]
    if rest:
        lines += [
            "",
            f"… and {len(rest)} more reason(s) ({sum(r['count'] for r in rest)} results), "
            f"listed in [{DETAILS_DIR}/skips.md]({DETAILS_DIR}/skips.md).",
        ]
    return lines


def _environment_summary(matrix: dict[str, Any]) -> list[str]:
    rows = []
    for run_id, run in matrix["runs"].items():
        env = run["env"] or {}
        gpu = env.get("gpu") or {}
        devices = Counter(d.get("name", "?") for d in gpu.get("devices") or [])
        named = ", ".join(f"{n}× {name}" if n > 1 else name for name, n in devices.items())
        python = (env.get("python") or {}).get("version")
        adapters = env.get("adapters") or {}
        versions = ", ".join(
            f"{name} {info.get('version')}"
            for name, info in adapters.items()
            if isinstance(info, dict) and info.get("version")
        )
        rows.append(
            [
                f"`{run_id}`",
                str(run["results"]),
                _md(named or gpu.get("reason") or ("unknown" if not env else "no GPU")),
                _md(gpu.get("driver_version")),
                _md(python),
                _md(versions),
            ]
        )
    header = ["run", "results", "GPU", "driver", "Python", "libraries"]
    return [
        "## Environment",
        "",
        *_table(header, rows),
        "",
        f"Every recorded key: [{DETAILS_DIR}/environment.md]({DETAILS_DIR}/environment.md).",
    ]


def render_markdown(matrix: dict[str, Any], title: str = "caiconform report") -> str:
    """The whole `matrix.md` text: a summary page that opens with what to do (the verdict's
    headline, then each library's defects most severe first), then the heatmaps, scores,
    coverage, skips and environment in short; the details are in the pages of
    `render_pages`."""
    lines = _header(matrix, title)
    for section in (
        _harness,
        _defects,
        _about_input,
        _migration,
        _heatmaps,
        _protocols,
        _scores,
        _coverage_summary,
        _expectations,
    ):
        part = section(matrix)
        if part:
            lines += [*part, ""]
    for section in (_skips_summary, _environment_summary):
        part = section(matrix)
        if part:
            lines += [*part, ""]
    return "\n".join(lines).rstrip() + "\n"


# --- the detail pages ---------------------------------------------------------------------------


def _rule_line(rule_id: str | None) -> str | None:
    rule = RULES.get(rule_id or "")
    if rule is None:
        return None
    return (
        f"`{rule.id}` ({_md(level_text(rule))}, {rule.side.value} side, {rule.spec_file} § "
        f"{rule.section}): {_md(rule.text)}"
    )


def _repro_link(href: str | None) -> str:
    """A reproducer link from a page one folder below matrix.md."""
    if not href:
        return "none written"
    target = href if href.startswith("/") else f"../{href}"
    return f"[{_md(href)}]({quote(target)})"


def _group_details(matrix: dict[str, Any], index: int, number: int, group: dict) -> list[str]:
    status = _status(matrix, index)
    role = group.get("role")
    library = group.get("library")
    cells = group.get("cells") or []
    shown = ", ".join(f"`{c}`" for c in cells[:MAX_CELLS_SHOWN])
    if len(cells) > MAX_CELLS_SHOWN:
        shown += f" and {len(cells) - MAX_CELLS_SHOWN} more"
    repro = group.get("reproducer") or {}
    lines = [
        f'### <a id="{group_anchor(index)}"></a>{number}. {_what(group)}',
        "",
        f"- **status**: {_STATUS_WORDS.get(status or '', status or NONE)}",
        f"- **seen**: {len(cells)} cell(s) ({', '.join(group.get('checks') or [])}): {shown}; "
        f"reproduced when run again: {_again(group.get('reproduced'))}",
        f"- **message**: {_md(group.get('message'))}",
    ]
    if group.get("condition"):
        lines.append(f"- **condition**: {_md(group['condition'])}")
    if group.get("contrast"):
        lines.append(f"- **contrast**: {_md(group['contrast'])}")
    who = library or "no single culprit"
    lines.append(f"- **why {_md(who)}**: {_md(group.get('why'))}")
    if group.get("bound"):
        lines.append(
            f"- **severity bounded** (harm seen: {group.get('harm')}): {_md(group['bound'])}"
        )
    folded = folded_phrase(group)
    if folded:
        lines.append(f"- **one bug**: {_md(folded)}")
    triage = group.get("triage")
    if triage:
        lines.append(f"- **triage** ({triage['verdict']}): {_md(triage['reason'])}")
    if group.get("rule"):
        text = _rule_line(group["rule"])
        if group.get("rule_implied"):
            text = (
                f"{text} (the result names no rule: filed under the rule the {role or 'failing'}"
                " side had to honour)"
            )
        lines.append(f"- **rule**: {text or _md(group['rule'])}")
    if group.get("input_rule"):
        lines.append(
            f"- **the input breaks**: {_rule_line(group['input_rule']) or group['input_rule']}"
        )
    shrunk = " (hypothesis's minimal example)" if repro.get("shrunk") else ""
    lines += [
        f"- **reproducer**: {_repro_link(repro.get('href'))}{shrunk}; cell `{repro.get('cell')}`;"
        f" params `{_md(repro.get('params'))}`",
        "",
    ]
    return lines


def render_library_page(
    matrix: dict[str, Any],
    library: str | None,
    groups: list[tuple[int, dict[str, Any]]],
    record: dict[str, Any] | None = None,
) -> str:
    """One library's page: its conformance record (`report.conformance`), whose findings table
    links each defect below, or without one an index table of its defects most severe first;
    then each defect group with its message, condition, contrast, culprit reason, rule and
    reproducer."""
    name = _md(library) if library else "No single culprit"
    failing = sum(_status(matrix, i) == "new" for i, _ in groups)
    counts = (
        f"{_severity_counts(g for _, g in groups)}; **{failing} failing** at --fail-on "
        f"{_fail_on(matrix)}."
    )
    if record is not None:
        lines = record_lines(record, group_anchor)
        if groups:
            lines += [f"## Each defect, most severe first ({len(groups)})", "", counts, ""]
    else:
        lines = [
            f"# {name}: {len(groups)} defect(s), most severe first",
            "",
            f"[Back to the summary](../matrix.md). {counts}",
            "",
            *_defect_index(matrix, groups),
            "",
        ]
    for number, (index, group) in enumerate(groups, 1):
        lines += _group_details(matrix, index, number, group)
    return "\n".join(lines).rstrip() + "\n"


def _defect_index(matrix: dict[str, Any], groups: list[tuple[int, dict[str, Any]]]) -> list[str]:
    """A library page's table of its defects, linked to their details."""
    rows = [
        [
            f"[{number}](#{group_anchor(index)})",
            str(g.get("severity")),
            _md(g.get("role")),
            _md(_rule_of(g)),
            _md(group_level(g)),
            str(g.get("outcome")),
            str(g.get("count")),
            {"new": "**failing**", "expected": "expected", "below": "below"}.get(
                _status(matrix, index) or "", NONE
            ),
        ]
        for number, (index, g) in enumerate(groups, 1)
    ]
    header = ["#", "severity", "role", "rule", "level", "outcome", "n", "status"]
    return _table(header, rows)


def _coverage_page(matrix: dict[str, Any]) -> str:
    lines = ["# Coverage floor, per cell", "", "[Back to the summary](../matrix.md).", ""]
    coverage = matrix.get("coverage")
    if not coverage or not coverage["cells"]:
        return "\n".join([*lines, "No coverage-floor records in this run."]) + "\n"
    rows = [
        [
            key,
            str(c["planned"]),
            str(c["exercised"]),
            str(c["passed"]),
            str(c["not_passed"]),
            str(c["skipped"]),
            _md("; ".join(f"{s['count']}: {s['reason']}" for s in c["skips"][:3])),
        ]
        for key, c in coverage["cells"].items()
    ]
    header = ["cell", "required", "exercised", "passed", "not passed", "skipped", "why skipped"]
    lines += _table(header, rows)
    for key, c in coverage["cells"].items():
        if not c["problems"] and not c["skips"]:
            continue
        detail = [[_md(p["combination"]), p["outcome"], _md(p["rule"])] for p in c["problems"]] + [
            [
                _md("; ".join(s["combinations"][:8]) + (" …" if s["count"] > 8 else "")),
                f"skip ({s['count']})",
                _md(s["reason"]),
            ]
            for s in c["skips"]
        ]
        lines += [
            "",
            f"## {_md(key)}",
            "",
            *_table(["combination", "outcome", "rule or reason"], detail),
        ]
    return "\n".join(lines).rstrip() + "\n"


def _skips_page(matrix: dict[str, Any]) -> str:
    lines = ["# Skipped, by reason", "", "[Back to the summary](../matrix.md).", ""]
    reasons = matrix.get("skip_reasons") or []
    if not reasons:
        return "\n".join([*lines, "Nothing was skipped."]) + "\n"
    per_cell = Counter()
    for s in matrix["skips"]:
        per_cell[(s["reason"], cell_key(s))] += s["count"]
    for r in reasons:
        cells = ", ".join(f"`{c}` ({per_cell[(r['reason'], c)]})" for c in r["cells"])
        lines += [
            f"## {_md(r['reason'])}",
            "",
            f"{r['count']} result(s) in {len(r['cells'])} cell(s): {cells}",
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def _environment_page(matrix: dict[str, Any]) -> str:
    lines = ["# Environment", "", "[Back to the summary](../matrix.md).", ""]
    for run_id, run in matrix["runs"].items():
        lines += [f"## Run `{run_id}` ({run['results']} results)", ""]
        env = run["env"]
        if not env:
            lines += ["No env.json was recorded.", ""]
            continue
        rows = [[_md(key), _md(value)] for key, value in _flatten(env)]
        lines += [*_table(["key", "value"], rows), ""]
    return "\n".join(lines).rstrip() + "\n"


def render_pages(
    matrix: dict[str, Any],
    title: str = "caiconform report",
    records: Mapping[str, dict[str, Any]] | None = None,
) -> dict[str, str]:
    """Every Markdown page of a report, by path relative to the report directory: `matrix.md`
    (the summary), `libraries/<name>.md` (one per library of `records`, its conformance record
    then its defects; one per other library with defects, and one for the groups without a
    single culprit), `details/coverage.md`, `details/skips.md` and `details/environment.md`."""
    records = records or {}
    pages = {MATRIX_MD: render_markdown(matrix, title)}
    by_library = _by_library(matrix)
    for library in sorted({*records, *by_library}, key=lambda name: (name is None, name or "")):
        pages[library_page(library)] = render_library_page(
            matrix, library, by_library.get(library, []), records.get(library)
        )
    pages[f"{DETAILS_DIR}/coverage.md"] = _coverage_page(matrix)
    pages[f"{DETAILS_DIR}/skips.md"] = _skips_page(matrix)
    pages[f"{DETAILS_DIR}/environment.md"] = _environment_page(matrix)
    return pages
