"""A library's conformance record (`report.conformance`) as a page: Markdown and HTML.

Both open with what a user of the library reads in a minute: per protocol and role, how many of
its examples passed and how many rules it failed, for each release measured (a column each);
then the findings it is the culprit of, most severe first, with the releases they are seen in
(where a release chart lies beside the run), their triage and upstream reports; then, per
protocol and role, every rule its examples exercised with the passed and failed counts. The
Markdown is the top of `libraries/<name>.md` (the library's defect groups follow it there,
`report.markdown`); the HTML is `libraries/<name>.html`, a self-contained page like index.html
(no script, no network: the same Content-Security-Policy).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from caiconform.spec.protocols import get

__all__ = ["record_file", "record_lines", "render_record_html", "summary_text"]

NONE = "—"


def record_file(library: str, suffix: str) -> str:
    """The file name of `library`'s record page (`cupy.md`, `cupy.html`, `cupy.json`), as
    `markdown.library_page` names it, beside the other pages of `libraries/`."""
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", library) + suffix


def _labels(record: Mapping[str, Any]) -> list[str]:
    return [r["release"] if r else "not measured" for r in record["releases"]]


def summary_text(measured: Mapping[str, Any] | None) -> str:
    """One protocol and role in one release: "4340/4969 examples passed (87%) in 44 cells; 1 of
    54 rules failed"."""
    if not measured:
        return "not measured"
    tested, ok = measured["tested"], measured["passed"]
    share = f" ({100 * ok / tested:.0f}%)" if tested else ""
    return (
        f"{ok}/{tested} examples passed{share} in {measured['cells']} cell(s); "
        f"{measured['rules_failed']} of {measured['rules']} rules failed"
    )


def _rule_text(counts: Mapping[str, int] | None) -> str:
    if not counts:
        return NONE
    text = f"{counts['passed']}/{counts['examples']}"
    return text + (f", {counts['failed']} failed" if counts["failed"] else "")


def _finding_text(measured: Mapping[str, Any] | None) -> str:
    if not measured:
        return "not seen"
    status = {"new": "failing", "expected": "expected", "below": "below --fail-on"}
    word = status.get(measured.get("status") or "", "")
    return f"{measured['examples']} example(s)" + (f", {word}" if word else "")


def _triage_word(finding: Mapping[str, Any]) -> str:
    triage = finding.get("triage")
    return triage["verdict"] if triage else "not triaged"


def _reports(finding: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The upstream reports of a finding: those known to report or track it, then the triage's
    related ones."""
    known = list(finding.get("known_reports") or [])
    urls = {k.get("url") for k in known}
    related = [
        r for r in ((finding.get("triage") or {}).get("reports") or []) if r.get("url") not in urls
    ]
    return known + related


def _rule_of(finding: Mapping[str, Any]) -> str:
    if finding.get("rule"):
        return finding["rule"]
    return f"given input that breaks {finding.get('input_rule') or NONE}"


def _sorted_rules(rules: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rules failed most in the latest release first, then the rest by ID."""

    def failed(rule: Mapping[str, Any]) -> int:
        latest = next((m for m in reversed(rule["measured"]) if m), None)
        return latest["failed"] if latest else 0

    return sorted(rules, key=lambda r: (-failed(r), r["rule"]))


def _md(value: Any) -> str:
    text = " ".join(str(value).split()).replace("|", "\\|")
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _measured_line(record: Mapping[str, Any]) -> str:
    parts = []
    for release in record["releases"]:
        if release:
            runs = ", ".join(f"`{r}`" for r in release["runs"])
            parts.append(f"{_md(release['release'])} (run {runs})")
    return "Measured: " + "; ".join(parts) + "." if parts else "Not measured."


def _title(record: Mapping[str, Any]) -> str:
    """The library's name and the version of the latest release measured."""
    latest = next((r for r in reversed(record["releases"]) if r), None)
    version = latest["version"] if latest else None
    return record["library"] + (f" {version}" if version else "")


def record_lines(
    record: Mapping[str, Any],
    anchor: Callable[[int], str] | None = None,
    *,
    in_report: bool = True,
) -> list[str]:
    """The record as Markdown lines, headed by the library's name and its latest release;
    `anchor` (a catalogue index -> an anchor on the same page) links each finding of the
    latest release to its details; `in_report` links the report's summary (a record of
    several releases stands alone)."""
    library = record["library"]
    labels = _labels(record)
    back = "[Back to the summary](../matrix.md) · " if in_report else ""
    lines = [
        f"# {_md(_title(record))}: conformance record",
        "",
        f"{back}[JSON]({quote(record_file(library, '.json'))})"
        f" · [HTML]({quote(record_file(library, '.html'))}). {_measured_line(record)}",
        "",
    ]
    rows = [
        [_md(get(p["protocol"]).title), role["role"], *map(summary_text, role["measured"])]
        for p in record["protocols"]
        for role in p["roles"]
    ]
    lines += [*_table(["protocol", "role", *map(_md, labels)], rows), ""]
    lines += [f"## Findings whose culprit it is ({len(record['findings'])}), most severe first", ""]
    if record["findings"]:
        rows = []
        for finding in record["findings"]:
            rule = f"`{_md(_rule_of(finding))}`"
            last = finding["measured"][-1]
            if anchor is not None and last is not None:
                rule = f"[{rule}](#{anchor(last['group'])})"
            if finding["also_filed_under"]:
                rule += f" (+{len(finding['also_filed_under'])} rule(s), one bug)"
            upstream = ", ".join(
                f"[{_md(r.get('title') or r['url'])}]({r['url']}) ({_md(r.get('relation'))})"
                for r in _reports(finding)
            )
            rows.append(
                [
                    str(finding["severity"] or NONE),
                    _md(get(finding["protocol"]).title),
                    str(finding["role"]),
                    rule,
                    _md(finding["level"]),
                    *map(_finding_text, finding["measured"]),
                    _md(finding.get("across_releases") or NONE),
                    _triage_word(finding),
                    upstream or NONE,
                ]
            )
        header = ["severity", "protocol", "role", "rule", "level", *map(_md, labels)]
        lines += [*_table([*header, "across releases", "triage", "upstream"], rows), ""]
    else:
        lines += ["None.", ""]
    for protocol in record["protocols"]:
        for role in protocol["roles"]:
            lines += [
                f"## As {role['role']} over {_md(get(protocol['protocol']).title)}: "
                f"{len(role['rules'])} rule(s) exercised",
                "",
                "Examples passed/exercised, and those failed with it the culprit (the rest "
                "failed on the other side, on another rule, or with no single culprit).",
                "",
            ]
            rows = [
                [f"`{rule['rule']}`", _md(rule["level"]), *map(_rule_text, rule["measured"])]
                for rule in _sorted_rules(role["rules"])
            ]
            lines += [*_table(["rule", "level", *map(_md, labels)], rows), ""]
    return lines


_CSP = "default-src 'none'; style-src 'unsafe-inline'"
#: the record page's style: index.html's tables and severity colours, no more
_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1b1f24;
       margin: 0 auto; padding: 1.5rem; max-width: 1400px; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.2rem; border-bottom: 1px solid #d0d7de; }
table { border-collapse: collapse; margin: .4rem 0 1rem; }
th, td { border: 1px solid #d0d7de; padding: .25rem .5rem; vertical-align: top; text-align: left; }
th { background: #f6f8fa; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
small { color: #57606a; }
.sev { font-weight: 600; } .sev.corrupts { color: #cf222e; } .sev.crashes { color: #6e2fbf; }
.sev.refuses-valid { color: #bc4c00; }
"""


def _h(value: Any) -> str:
    return html.escape(str(value))


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    """A table of cells already escaped."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_record_html(record: Mapping[str, Any], *, in_report: bool = True) -> str:
    """`libraries/<name>.html`: the record as one self-contained page, linked from index.html
    (`in_report`: it links back)."""
    library = record["library"]
    labels = [_h(label) for label in _labels(record)]
    title = _title(record)
    back = '<a href="../index.html">Back to the report</a> · ' if in_report else ""
    parts = [
        f"<h1>{_h(title)}: conformance record</h1>",
        f"<p>{back}"
        f'<a href="{_h(quote(record_file(library, ".md")))}">Markdown</a> · '
        f'<a href="{_h(quote(record_file(library, ".json")))}">JSON</a>. '
        f"{_h(_measured_line(record).replace('`', ''))}</p>",
    ]
    rows = [
        [
            _h(get(p["protocol"]).title),
            _h(role["role"]),
            *(_h(summary_text(m)) for m in role["measured"]),
        ]
        for p in record["protocols"]
        for role in p["roles"]
    ]
    parts.append(_html_table(["protocol", "role", *labels], rows))
    parts.append(
        f"<h2>Findings whose culprit it is ({len(record['findings'])}), most severe first</h2>"
    )
    rows = []
    for finding in record["findings"]:
        upstream = ", ".join(
            f'<a href="{_h(r["url"])}">{_h(r.get("title") or r["url"])}</a> '
            f"({_h(r.get('relation'))})"
            for r in _reports(finding)
        )
        reason = (finding.get("triage") or {}).get("reason")
        triage = _h(_triage_word(finding)) + (f"<br><small>{_h(reason)}</small>" if reason else "")
        rows.append(
            [
                f'<span class="sev {_h(finding["severity"])}">'
                f"{_h(finding['severity'] or NONE)}</span>",
                _h(get(finding["protocol"]).title),
                _h(finding["role"]),
                f"<code>{_h(_rule_of(finding))}</code>",
                _h(finding["level"]),
                *(_h(_finding_text(m)) for m in finding["measured"]),
                _h(finding.get("across_releases") or NONE),
                triage,
                upstream or NONE,
            ]
        )
    header = [
        "severity", "protocol", "role", "rule", "level", *labels,
        "across releases", "triage", "upstream",
    ]  # fmt: skip
    parts.append(_html_table(header, rows) if rows else "<p>None.</p>")
    for protocol in record["protocols"]:
        for role in protocol["roles"]:
            parts.append(
                f"<h2>As {_h(role['role'])} over {_h(get(protocol['protocol']).title)}: "
                f"{len(role['rules'])} rule(s) exercised</h2>"
            )
            rows = [
                [
                    f"<code>{_h(rule['rule'])}</code>",
                    _h(rule["level"]),
                    *(_h(_rule_text(m)) for m in rule["measured"]),
                ]
                for rule in _sorted_rules(role["rules"])
            ]
            parts.append(_html_table(["rule", "level", *labels], rows))
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        f"<title>{_h(title)}: conformance record</title>\n<style>{_CSS}</style>\n</head>\n"
        '<body data-record="' + _h(library) + '">\n' + "\n".join(parts) + "\n</body>\n</html>\n"
    )
