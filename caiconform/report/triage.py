"""The triage: each published finding judged as the library's maintainer would judge it.

`triage.toml` beside this module holds one `[[finding]]` per finding of the published run at or
above refuses-valid (a test keeps it so: `tests/test_triage.py`), matched by the finding's
identity (`results.fold.group_id` of its lead: `library/role/rule/outcome`), never by a word of
its text:

    id        the finding's identity
    verdict   "real" (a defect of that library, at this severity, a maintainer accepts) or
              "not-real" (and `reason` says why: caiconform's own making, more read into the
              text than it says, behaviour the text allows, the wrong severity)
    severity  the severity it was triaged at (a finding whose severity changed needs a new look)
    reason    the maintainer's reading, with the sentence of the specification it rests on
    reports   upstream reports read in full: {url, title, state, relation} (relation "reports":
              the same behaviour; "tracks": the change that would remove it; "related")

`annotate_triage(groups)` sets each group's `triage` (the entry, or None) and adds its reports
to the group's `known_reports`, which every report shows.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from caiconform.results.fold import group_id

__all__ = [
    "TRIAGE_FILE",
    "VERDICTS",
    "Triage",
    "parse_triage",
    "triage_entries",
    "triage_for",
    "annotate_triage",
]

TRIAGE_FILE = "triage.toml"
VERDICTS = ("real", "not-real")
_RELATIONS = ("reports", "tracks", "related")


class TriageError(ValueError):
    """triage.toml holds an entry that cannot be read (one line naming it)."""


@dataclass(frozen=True)
class Triage:
    """One finding's triage (the fields of a `[[finding]]` entry)."""

    id: str
    verdict: str
    severity: str
    reason: str
    spec: str = ""
    reports: tuple[Mapping[str, str], ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "verdict": self.verdict,
            "severity": self.severity,
            "reason": self.reason,
            "spec": self.spec,
            "reports": [dict(r) for r in self.reports],
        }


def parse_triage(text: str, where: str = TRIAGE_FILE) -> dict[str, Triage]:
    """The entries of a triage file's text, by finding identity; TriageError names the first
    entry that lacks a field, has an unknown verdict or relation, or repeats an identity."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TriageError(f"{where}: not TOML: {exc}") from None
    out: dict[str, Triage] = {}
    for index, entry in enumerate(data.get("finding") or [], 1):
        missing = [k for k in ("id", "verdict", "severity", "reason") if not entry.get(k)]
        if missing:
            raise TriageError(f"{where}: finding {index}: missing {', '.join(missing)}")
        if entry["verdict"] not in VERDICTS:
            raise TriageError(
                f"{where}: finding {index} ({entry['id']}): verdict {entry['verdict']!r} is not "
                f"one of {', '.join(VERDICTS)}"
            )
        reports = tuple(entry.get("reports") or ())
        for report in reports:
            if report.get("relation") not in _RELATIONS or not report.get("url"):
                raise TriageError(
                    f"{where}: finding {index} ({entry['id']}): a report needs a url and a "
                    f"relation of {', '.join(_RELATIONS)}"
                )
        if entry["id"] in out:
            raise TriageError(f"{where}: finding {index}: {entry['id']} is triaged twice")
        out[entry["id"]] = Triage(
            entry["id"],
            entry["verdict"],
            entry["severity"],
            " ".join(str(entry["reason"]).split()),
            " ".join(str(entry.get("spec") or "").split()),
            reports,
        )
    return out


@functools.cache
def triage_entries() -> dict[str, Triage]:
    """The entries of the package's triage.toml."""
    text = resources.files("caiconform.report").joinpath(TRIAGE_FILE).read_text(encoding="utf-8")
    return parse_triage(text)


def triage_for(
    group: Mapping[str, Any], entries: Mapping[str, Triage] | None = None
) -> Triage | None:
    """The triage of the finding `group` leads (None when it has none, or the group is folded
    into another: its lead's entry covers it)."""
    if group.get("folded_into"):
        return None
    entries = triage_entries() if entries is None else entries
    return entries.get(group.get("finding") or group_id(group))


def annotate_triage(
    groups: Iterable[dict[str, Any]], entries: Mapping[str, Triage] | None = None
) -> None:
    """Set each group's `triage` and add its triage's upstream reports to `known_reports`."""
    for group in groups:
        found = triage_for(group, entries)
        group["triage"] = found.to_dict() if found is not None else None
        if found is None:
            continue
        known = list(group.get("known_reports") or [])
        urls = {k.get("url") for k in known}
        for report in found.reports:
            if report.get("url") in urls or report.get("relation") == "related":
                continue
            known.append(
                {
                    "url": report["url"],
                    "title": report.get("title", report["url"]),
                    "state": report.get("state", "?"),
                    "relation": report["relation"],
                    "note": report.get("note", ""),
                }
            )
        group["known_reports"] = known
