"""The upstream pack: each library's defects as Markdown sections ready to paste into its tracker,
and the table of defects already reported there.

`write_pack(groups, run, out_dir)` writes one file per library (`<library>.md`), one section per
defect group: its title, whether it is already reported (with the link), the status of its
standalone reproducer (`caiconform.report.verify`), the versions and machine (`env.json`), the
script itself, what happened (the `BUG:` line the script printed in a fresh process, or the
finding's message marked unconfirmed), the rule's words and level (derived by caiconform or the
specification's own), and the harm. Groups whose culprit is caiconform's own code or cannot be
told never go into a library's file.

`known_reports()` reads `known_reports.toml` beside this module: a curated, versioned table
mapping (library, rule[, condition]) to reports in the library's tracker that describe the same
behaviour (docs/reports.md, "Known upstream reports").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from caiconform.results.filing import HARNESS
from caiconform.results.severity import HARM
from caiconform.results.wording import folded_phrase, known_line
from caiconform.spec.rules import RULES, level_text

__all__ = [
    "KNOWN_REPORTS",
    "KnownReport",
    "known_reports",
    "parse_known_reports",
    "reports_for",
    "annotate_known",
    "fileable",
    "refuted",
    "rule_lines",
    "write_pack",
]

#: the table's file name, package data of caiconform.report
KNOWN_REPORTS = "known_reports.toml"
#: the table's schema version this module reads
_TABLE_VERSION = 1
_RELATIONS = ("reports", "tracks")


@dataclass(frozen=True)
class KnownReport:
    """One report in a library's tracker.

    libraries: catalogue library names (adapter names: `numba`, `numba-kernel`, `cupy`, ...)
        whose groups it covers.
    rule: the rule ID the group is filed under (its `rule`, else its `input_rule`).
    condition: when set, a word or phrase (case-insensitive) the group's condition, contrast or
        message must hold, for a report about one case of a rule.
    outcome: when set, the group's outcome class (`fail`, `rejected-valid`, `crash`, ...).
    relation: `reports` (the report describes this defect) or `tracks` (it asks for the change
        that would remove it).
    """

    libraries: tuple[str, ...]
    rule: str
    url: str
    title: str
    state: str
    relation: str = "reports"
    condition: str | None = None
    outcome: str | None = None
    note: str = ""

    def matches(self, group: Mapping[str, Any]) -> bool:
        if group.get("library") not in self.libraries:
            return False
        if (group.get("rule") or group.get("input_rule")) != self.rule:
            return False
        if self.outcome is not None and group.get("outcome") != self.outcome:
            return False
        if self.condition is None:
            return True
        said = " ".join(
            str(group.get(k) or "") for k in ("condition", "contrast", "message")
        ).lower()
        return self.condition.lower() in said

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "title": self.title,
            "state": self.state,
            "relation": self.relation,
            "note": self.note,
        }


def _load_toml(text: str) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads(text)


def parse_known_reports(text: str, where: str = KNOWN_REPORTS) -> list[KnownReport]:
    """The reports of a table's TOML text; ValueError (one line naming `where` and the entry)
    when it is malformed or names a rule caiconform does not have."""
    try:
        data = _load_toml(text)
    except ValueError as exc:
        raise ValueError(f"{where}: not TOML: {exc}") from None
    if data.get("version") != _TABLE_VERSION:
        raise ValueError(f"{where}: version {data.get('version')!r}, expected {_TABLE_VERSION}")
    out = []
    for n, entry in enumerate(data.get("report") or [], start=1):
        try:
            libraries = entry["library"]
            libraries = (libraries,) if isinstance(libraries, str) else tuple(libraries)
            report = KnownReport(
                libraries=libraries,
                rule=str(entry["rule"]),
                url=str(entry["url"]),
                title=str(entry["title"]),
                state=str(entry["state"]),
                relation=str(entry.get("relation", "reports")),
                condition=entry.get("condition"),
                outcome=entry.get("outcome"),
                note=str(entry.get("note", "")),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{where}: report {n}: missing or malformed {exc}") from None
        if report.rule not in RULES:
            raise ValueError(f"{where}: report {n}: unknown rule {report.rule!r}")
        if report.relation not in _RELATIONS:
            raise ValueError(
                f"{where}: report {n}: relation {report.relation!r} not in {_RELATIONS}"
            )
        if not report.url.startswith("https://"):
            raise ValueError(f"{where}: report {n}: url {report.url!r} is not https")
        out.append(report)
    return out


def known_reports() -> list[KnownReport]:
    """The curated table shipped with caiconform."""
    text = resources.files("caiconform.report").joinpath(KNOWN_REPORTS).read_text("utf-8")
    return parse_known_reports(text)


def reports_for(group: Mapping[str, Any], reports: Iterable[KnownReport]) -> list[KnownReport]:
    """The reports of `reports` that cover `group`."""
    return [r for r in reports if r.matches(group)]


def annotate_known(groups: Iterable[dict[str, Any]], reports: Sequence[KnownReport]) -> None:
    """Set each group's `known_reports` to the reports that cover it (a list of dicts), then
    its `triage` and the upstream reports its triage names (`report.triage`, matched by the
    finding's identity)."""
    from caiconform.report.triage import annotate_triage

    groups = list(groups)
    for group in groups:
        group["known_reports"] = [r.to_dict() for r in reports_for(group, reports)]
    annotate_triage(groups)


def refuted(group: Mapping[str, Any]) -> bool:
    """Whether the group's standalone script ran and did not reproduce it (`findings --verify`:
    "does not"): no reproducer, no report; such a finding is listed by the reports, marked
    UNCONFIRMED, but goes to no tracker."""
    from caiconform.results.verification import DOES_NOT

    return (group.get("standalone") or {}).get("standalone") == DOES_NOT


def fileable(group: Mapping[str, Any]) -> bool:
    """Whether a group goes to a library's tracker: its culprit is a library, not caiconform's
    own code and not unknown, and it leads its finding (a group folded into another is one
    more rule of the same bug: its lead's section lists it)."""
    library = group.get("library")
    return bool(library) and library != HARNESS and not group.get("folded_into")


def rule_lines(rule_id: str | None) -> list[str]:
    """The rule's words and level as a maintainer needs them: the specification's sentence and
    the level it states, or, for a requirement caiconform derives (`Rule.derived`), that it is
    caiconform's reading and the sentence it is read from."""
    rule = RULES.get(rule_id or "")
    if rule is None:
        return []
    _, _, anchor = rule.section.partition("#")
    where = f'`{rule.spec_file}`, section "{anchor}"'
    if rule.derived:
        lines = [
            f"**Rule** `{rule.id}` ({level_text(rule, quote=False)}: caiconform's reading of "
            f"the specification, not its words; {where}):",
            "",
            f"> {rule.text}",
            "",
        ]
        if rule.quote:
            lines += ["Read from the specification's sentence:", "", f"> {rule.quote}", ""]
        return lines
    lines = [f"**Rule** `{rule.id}` ({rule.level.value}, as the specification says; {where}):", ""]
    if rule.quote:
        return [*lines, f"> {rule.quote}", "", f"caiconform checks it as: {rule.text}", ""]
    return [*lines, f"> {rule.text}", ""]


def _script_block(group: Mapping[str, Any], run_dir: Path | None) -> tuple[str | None, str]:
    """The standalone script of `group` and where it comes from."""
    from caiconform.report.verify import standalone_script

    return standalone_script(group, run_dir)


def _what_happened(group: Mapping[str, Any]) -> list[str]:
    from caiconform.results.verification import DOES_NOT, NO_VERDICT, NOT_RUN, REPRODUCES

    entry = group.get("standalone") or {}
    status = entry.get("standalone")
    message = group.get("message")
    if status == REPRODUCES:
        return [
            "**What happens** (printed by the script above in a fresh process):",
            "",
            "```",
            str(entry.get("line")),
            "```",
            "",
        ]
    if status == DOES_NOT:
        why = f"the script did not reproduce it: {entry.get('detail')}"
    elif status == NO_VERDICT:
        why = f"the script gave no verdict: {entry.get('detail')}"
    elif status == NOT_RUN:
        why = f"the script was not run where its libraries are: {entry.get('detail')}"
    elif status:
        why = f"no standalone reproducer: {entry.get('detail')}"
    else:
        why = "the script was not run (`caiconform findings RUN --verify`)"
    return [
        f"**What happens** (UNCONFIRMED: {why}; as caiconform's own check saw it):",
        "",
        f"> {message}",
        "",
    ]


def _section(group: dict[str, Any], env: Mapping[str, Any], run_dir: Path | None) -> list[str]:
    from caiconform.report.issues import _environment, _title
    from caiconform.report.verify import status_line

    lines = [f"## {_title(group)}", ""]
    known = known_line(group)
    if known:
        lines += [f"**Known**: {known[0].upper()}{known[1:]}.", ""]
    status = status_line(group) or "not verified: run `caiconform findings RUN --verify`"
    lines += [f"**Standalone reproducer**: {status}.", ""]
    versions = [_without_caiconform(line) for line in _environment(group, env)]
    lines += ["**Versions**:", "", *versions, ""]
    script, origin = _script_block(group, run_dir)
    if script is None:
        lines += [f"**Reproducer**: {origin}.", ""]
    else:
        lines += [
            f"**Reproducer** ({origin}; it imports only numpy and the libraries involved, "
            "prints `BUG: ...` or `OK: ...` and exits 1 or 0):",
            "",
            "```python",
            script.rstrip(),
            "```",
            "",
        ]
    lines += _what_happened(group)
    condition = "; ".join(filter(None, [group.get("condition"), group.get("contrast")]))
    if condition:
        lines += [f"**When**: {condition}.", ""]
    lines += rule_lines(group.get("rule"))
    if not group.get("rule") and group.get("input_rule"):
        lines += [f"The input breaks `{group['input_rule']}`:", ""]
        lines += rule_lines(group.get("input_rule"))
    folded = folded_phrase(group)
    if folded:
        lines += [f"**One bug, several rules**: {folded}.", ""]
    severity = group.get("severity")
    lines += [f"**Harm** (`{severity}`): {HARM.get(str(severity), '-')}.", ""]
    if group.get("bound"):
        lines += [
            f"**Severity bounded** (harm seen: `{group.get('harm')}`): {group['bound']}.",
            "",
        ]
    triage = group.get("triage")
    if triage:
        lines += [f"**Triage** ({triage['verdict']}): {triage['reason']}", ""]
    cells = group.get("cells") or []
    lines += [f"**Seen**: {group.get('count')} example(s) in {len(cells)} cell(s).", ""]
    return lines


def _without_caiconform(line: str) -> str:
    """An environment line without caiconform's own version: the script does not use it."""
    return re.sub(r"(, )?\bcaiconform [^,\s]+", "", line).replace(": , ", ": ")


def _filename(library: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", library) + ".md"


def write_pack(
    groups: Sequence[dict[str, Any]],
    envs: Mapping[str, Mapping[str, Any]],
    dirs: Mapping[str, Path],
    out_dir: Path,
) -> dict[str, list[dict[str, Any]]]:
    """Write `<library>.md` into `out_dir` for each library among `groups` (annotated with
    `standalone` and `known_reports`; those `fileable` and not `refuted`), groups that
    reproduce first. Returns
    library -> its groups in the order written. OSError when `out_dir` cannot be written."""
    from caiconform.results.verification import lead_order

    by_library: dict[str, list[dict[str, Any]]] = {}
    for group in lead_order([g for g in groups if fileable(g) and not refuted(g)]):
        by_library.setdefault(str(group["library"]), []).append(group)
    out_dir.mkdir(parents=True, exist_ok=True)
    for library, chosen in by_library.items():
        lines = [
            f"# {library}: CUDA Array Interface defects",
            "",
            f"{len(chosen)} defect(s) found by caiconform, one section each, ready to paste as an "
            "issue. Sections whose standalone reproducer printed `BUG:` in a fresh process come "
            "first; a section marked UNCONFIRMED has not been reproduced without caiconform.",
            "",
        ]
        for group in chosen:
            run_id = str((group.get("reproducer") or {}).get("run_id"))
            lines += _section(group, envs.get(run_id) or {}, dirs.get(run_id))
        (out_dir / _filename(library)).write_text(
            "\n".join(lines).rstrip() + "\n", encoding="utf-8"
        )
    return by_library
