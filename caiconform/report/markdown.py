"""`matrix.md`: the matrix as GitHub-flavoured Markdown, for PR comments and job summaries.

Same content as the HTML page, as tables: per check family a producer x consumer grid of
`passed/tested`, the scores, the findings with rule IDs and reproducer links, the rules cited,
the skips and the environment of each run.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from caiconform.report.matrix import SEVERITY

__all__ = ["render_markdown", "cell_text", "percent"]

NONE = "—"


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


def _findings(matrix: dict[str, Any]) -> list[str]:
    findings = matrix["findings"]
    if not findings:
        return ["## Findings", "", "None: every result passed or was skipped."]
    rows = []
    for f in findings:
        rule = (
            f"[{f['rule']}](#{f['rule'].lower()})"
            if f["rule"] in matrix["rules"]
            else _md(f["rule"])
        )
        repro = ", ".join(f"[{i + 1}]({quote(href)})" for i, href in enumerate(f["repros"]))
        expected = f["expectation"]["reason"] if f["expectation"] else ""
        rows.append(
            [
                rule,
                _md(f["level"]),
                f["check"],
                f"{_name(f['producer'])} → {_name(f['consumer'])}",
                f["outcome"],
                str(f["count"]),
                _md(f["seen"]),
                _md(f["expected"]),
                _md(f["message"]),
                repro or NONE,
                _md(expected),
            ]
        )
    header = ["rule", "level", "check", "pair", "outcome", "n", "seen", "expected", "message"]
    header += ["repro", "expected failure"]
    return ["## Findings", "", *_table(header, rows)]


def _rules(matrix: dict[str, Any]) -> list[str]:
    if not matrix["rules"]:
        return []
    lines = ["## Rules cited", ""]
    for rule_id, rule in matrix["rules"].items():
        lines += [
            f"### {rule_id}",
            "",
            f"**{rule['level']}** ({rule['side']}, {rule['spec_file']} § {rule['section']}): "
            f"{rule['text']}",
            "",
        ]
    return lines


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


def _skips(matrix: dict[str, Any]) -> list[str]:
    if not matrix["skips"]:
        return []
    rows = [
        [
            s["check"],
            f"{_name(s['producer'])} → {_name(s['consumer'])}",
            str(s["count"]),
            _md(s["reason"]),
        ]
        for s in matrix["skips"]
    ]
    return ["## Skipped", "", *_table(["check", "pair", "n", "reason"], rows), ""]


def _environment(matrix: dict[str, Any]) -> list[str]:
    lines = ["## Environment", ""]
    for run_id, run in matrix["runs"].items():
        lines += [f"### Run `{run_id}` ({run['results']} results)", ""]
        env = run["env"]
        if not env:
            lines += ["No env.json was recorded.", ""]
            continue
        rows = [[_md(key), _md(value)] for key, value in _flatten(env)]
        lines += [*_table(["key", "value"], rows), ""]
    return lines


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


def _catalogue(matrix: dict[str, Any]) -> list[str]:
    catalogue = matrix.get("catalogue")
    if not catalogue:
        return []
    groups = catalogue["groups"]
    lines = [
        "## Catalogue of non-conformances",
        "",
        f"{len(groups)} group(s): one library, one role, one rule, one outcome class each "
        f"({catalogue['summary']['must_groups']} at MUST level, "
        f"{catalogue['summary']['ambiguous_groups']} without a single culprit, "
        f"{catalogue['summary'].get('unreproduced_groups', 0)} not reproduced when run again; "
        "column *again*: did the first example give the same result when run once more).",
        "",
    ]
    if not groups:
        return lines
    rows = []
    for g in groups:
        repro = g["reproducer"]
        link = f"[min]({quote(repro['href'])})" if repro.get("href") else NONE
        condition = "; ".join(filter(None, [g.get("condition"), g.get("contrast")]))
        rows.append(
            [
                _name(g["library"]) if g["library"] else f"? ({_md(g['why'])})",
                _md(g["role"]),
                _md(_rule_of(g)),
                _md(g["level"]),
                g["outcome"],
                str(g["count"]),
                _again(g.get("reproduced")),
                str(len(g["cells"])),
                _md(g["version"]),
                _md(condition),
                link,
            ]
        )
    header = ["library", "role", "rule", "level", "outcome", "n", "again", "cells", "version"]
    return [*lines, *_table([*header, "condition", "repro"], rows)]


def _again(reproduced: bool | None) -> str:
    return NONE if reproduced is None else ("yes" if reproduced else "no")


def _rule_of(group: dict[str, Any]) -> str | None:
    """A group's rule, or for a record without one the rule its input breaks."""
    if group.get("rule") or not group.get("input_rule"):
        return group.get("rule")
    return f"(input breaks {group['input_rule']})"


def _coverage(matrix: dict[str, Any]) -> list[str]:
    coverage = matrix.get("coverage")
    if not coverage or not coverage["cells"]:
        return []
    summary = coverage["summary"]
    lines = [
        "## Coverage floor",
        "",
        f"{summary['required']} required combinations in {summary['cells']} cells; "
        f"{summary['exercised']} exercised, **{summary['not_exercised']} not exercised** "
        f"(skipped with a reason, or never reached).",
        "",
    ]
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
            f"**{_md(key)}**",
            "",
            *_table(["combination", "outcome", "rule or reason"], detail),
        ]
    return lines


def render_markdown(matrix: dict[str, Any], title: str = "caiconform report") -> str:
    """The whole `matrix.md` text."""
    summary = matrix["summary"]
    outcomes = ", ".join(f"{o} {n}" for o, n in summary["outcomes"].items())
    lines = [
        f"# {title}",
        "",
        f"{summary['results']} results ({outcomes}); pass fraction "
        f"{percent(summary['pass_fraction'])}; {summary['finding_groups']} finding group(s), "
        f"{summary['unexpected_groups']} not expected"
        + (
            f"; {sum(s['error'] for s in matrix['expectations'])} expectation entry error(s)."
            if matrix.get("expectations") is not None
            else "."
        ),
        "",
    ]
    for warning in matrix["warnings"]:
        lines.append(f"> warning: {_md(warning)}")
    if matrix["warnings"]:
        lines.append("")
    if matrix["summary"].get("required_combinations"):
        lines += [
            f"Coverage floor: {matrix['summary']['not_exercised']} of "
            f"{matrix['summary']['required_combinations']} required combinations not exercised; "
            f"{matrix['summary'].get('catalogue_groups', 0)} non-conformance group(s).",
            "",
        ]
    for section in (_heatmaps, _scores, _catalogue, _findings, _coverage):
        lines += [*section(matrix), ""]
    for section in (_expectations, _rules, _skips, _environment):
        lines += section(matrix)
    return "\n".join(lines).rstrip() + "\n"
