"""Conformance across releases: the findings of one library's releases, run apart, as one chart.

Each release of a library is run in an environment of its own, the other libraries fixed
(`nox -s releases`, `scripts/gpu_releases.sh`); `caiconform releases` merges those run
directories. A finding keeps the identity the triage and baselines name (`results.fold`: the
`group_id` of its lead, `library/role/rule/outcome`), and since the lead of a folded finding is
its most severe member, then the one with most examples, two releases may lead one bug with two
of its members: findings of two releases that share a member group are one row.

Per row and release the chart says `found`, `absent` (every cell the finding was seen in, in
any release, finished and ran there, and it was not found), `not run` (none of those cells ran:
the library would not import, the cell was not chosen) or `partly run`. A finding is `fixed_in`
the release just after the last one it appears in, and only when that release is `absent`: a
release that did not run its cells fixes nothing. `since` says the first release it was seen in,
as "since X" when the release before X ran its cells without it, else "since ≤X" (X is the
oldest charted, or the one before did not run it).

`annotate_since` writes a row's dates into the groups of another run (a run's findings.json,
`caiconform releases --annotate`, and `caiconform report` and `findings` when a chart,
`releases-LIBRARY.json`, lies in the run directory), with whether a later release than that
run's fixes it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caiconform.results.catalogue import DISTRIBUTION
from caiconform.results.fold import findings, group_id
from caiconform.results.severity import SEVERITIES, rank

__all__ = [
    "SCHEMA",
    "STATUSES",
    "ReleaseRun",
    "ReleasesInputError",
    "distribution_of",
    "of_distribution",
    "version_key",
    "charted_library",
    "build_chart",
    "listed_rows",
    "render_markdown",
    "annotate_since",
    "since_line",
    "chart_file",
    "load_charts",
]

SCHEMA = "caiconform-releases/1"
FOUND, ABSENT, NOT_RUN, PARTLY_RUN = "found", "absent", "not run", "partly run"
STATUSES = (FOUND, ABSENT, NOT_RUN, PARTLY_RUN)
#: what releases.md writes for each status
MARKS = {FOUND: "✓", ABSENT: "—", NOT_RUN: "not run", PARTLY_RUN: "part run"}


class ReleasesInputError(ValueError):
    """Run directories that cannot be charted together (one line for the user)."""


@dataclass(frozen=True)
class ReleaseRun:
    """One release's run: its directory, the charted library's version there, every library's
    version (env.json), the run's catalogue groups and the cells it finished and ran."""

    directory: Path
    version: str
    libraries: Mapping[str, Any]
    groups: list[dict[str, Any]]
    ran: set[str]
    run_ids: list[str] = field(default_factory=list)
    #: the charted library's adapters that were not available in this run, with the reason
    #: their probe gave (adapters.json): why its cells did not run there
    unavailable: Mapping[str, str] = field(default_factory=dict)


def distribution_of(name: str) -> str:
    """The distribution whose releases are charted, from an adapter name ("numba") or the
    distribution's own ("numba-cuda")."""
    return DISTRIBUTION.get(name, name)


def of_distribution(library: str, distribution: str) -> bool:
    """Whether adapter or distribution `library` is charted as `distribution`: its own
    distribution, or the variant of it a run's env.json names (cupy as cupy-cuda13x, as
    `results.expectations.lookup_version` finds it)."""
    own = distribution_of(library)
    return own == distribution or _variant_of(distribution, own)


def _variant_of(name: str, distribution: str) -> bool:
    """`name` is a build of `distribution` (cupy-cuda13x of cupy), not another library whose
    name starts with it (numba-cuda-mlir is not numba-cuda's)."""
    return name.startswith(distribution + "-") and name not in set(DISTRIBUTION.values())


def version_key(version: str) -> Any:
    """A sort key ordering releases as their versions do (PEP 440); ReleasesInputError for a
    version that is none."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version)
    except InvalidVersion:
        raise ReleasesInputError(f"{version!r} is not a release version") from None


def charted_library(
    libraries: Sequence[Mapping[str, Any]], library: str | None
) -> tuple[str, dict[str, list[Any]]]:
    """(the distribution whose releases the runs are, the other distributions whose versions
    also differ between them, with their versions) from each run's env.json `libraries`. Without
    `library` it is the one distribution whose version differs; with it, that one, which must
    have a different version in each run. ReleasesInputError when the runs are not one library's
    releases."""
    names = sorted({name for versions in libraries for name in versions})
    differ = {
        name: [versions.get(name) for versions in libraries]
        for name in names
        if len({str(versions.get(name)) for versions in libraries}) > 1
    }
    if library is None:
        if not differ:
            raise ReleasesInputError(
                "the runs have the same version of every library: not releases of one library"
            )
        if len(differ) > 1:
            raise ReleasesInputError(
                f"the runs differ in {', '.join(differ)}: runs of different libraries' "
                "versions mixed (give --library NAME to chart one of them)"
            )
        library = next(iter(differ))
    chosen = distribution_of(library)
    variants = sorted({name for name in names if _variant_of(name, chosen)})
    if chosen not in names and len(variants) == 1:  # cupy: the runs have cupy-cuda13x
        chosen = variants[0]
    versions = [versions.get(chosen) for versions in libraries]
    missing = sum(v is None for v in versions)
    if missing:
        raise ReleasesInputError(
            f"{missing} of the runs have no {chosen} installed (env.json `libraries`)"
        )
    repeated = sorted(v for v, n in Counter(map(str, versions)).items() if n > 1)
    if repeated:
        raise ReleasesInputError(
            f"{chosen} {', '.join(repeated)} is in more than one run: runs of one release, or "
            "of different libraries' versions mixed"
        )
    return chosen, {name: v for name, v in differ.items() if name != chosen}


class _Components:
    """Union-find over group ids: the findings of several releases sharing a member group."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, key: str) -> str:
        self.parent.setdefault(key, key)
        while self.parent[key] != key:
            self.parent[key] = self.parent[self.parent[key]]
            key = self.parent[key]
        return key

    def join(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        for other in keys[1:]:
            self.parent[self.find(other)] = self.find(keys[0])


def _members(lead: Mapping[str, Any]) -> list[str]:
    """The group ids of a finding: its lead's and those folded into it."""
    own = lead.get("finding") or group_id(lead)
    return [own, *(str(f["group"]) for f in lead.get("folded") or [] if f.get("group"))]


def _cells_of(lead: Mapping[str, Any], groups: Sequence[Mapping[str, Any]]) -> set[str]:
    """The cells any group of a finding (its lead and the members folded into it) was seen in."""
    own = lead.get("finding") or group_id(lead)
    return {
        str(cell)
        for g in groups
        if g is lead or g.get("finding") == own
        for cell in g.get("cells") or []
    }


def _status(cells: set[str], ran: set[str]) -> str:
    covered = len(cells & ran)
    if cells and covered == len(cells):
        return ABSENT
    return NOT_RUN if covered == 0 else PARTLY_RUN


def build_chart(runs: Sequence[ReleaseRun], library: str, others: Mapping[str, Any]) -> dict:
    """The chart (schema `caiconform-releases/1`) of `runs`, releases of `library` (a
    distribution); `others`: the other distributions whose versions also differ, said in it."""
    runs = sorted(runs, key=lambda r: version_key(r.version))
    components = _Components()
    seen: list[list[tuple[dict[str, Any], set[str]]]] = []
    for run in runs:
        leads = [(lead, _cells_of(lead, run.groups)) for lead in findings(run.groups)]
        for lead, _ in leads:
            components.join(_members(lead))
        seen.append(leads)
    rows: dict[str, dict[str, Any]] = {}
    for index, leads in enumerate(seen):
        for lead, cells in leads:
            key = components.find(_members(lead)[0])
            row = rows.setdefault(key, {"found": {}, "cells": set(), "aliases": set()})
            row["found"].setdefault(index, []).append(lead)
            row["cells"] |= cells
            row["aliases"] |= set(_members(lead))
    chart_rows = [_row(row, runs, library) for row in rows.values()]
    chart_rows.sort(key=lambda r: (not r["of_library"], rank(r["severity"]), r["id"]))
    releases = [_release(i, run, chart_rows) for i, run in enumerate(runs)]
    return {
        "schema": SCHEMA,
        "library": library,
        "versions": [run.version for run in runs],
        "others_differ": {name: list(v) for name, v in others.items()},
        "releases": releases,
        "rows": chart_rows,
        "summary": {
            "rows": len(chart_rows),
            "of_library": sum(r["of_library"] for r in chart_rows),
            "fixed": [r["id"] for r in chart_rows if r["fixed_in"]],
            "in_newest": sum(r["statuses"][-1] == FOUND for r in chart_rows),
            # releases whose run ran no cell (the library would not import, no GPU)
            "tested_nothing": [r["version"] for r in releases if not r["cells_ran"]],
            # releases where an adapter of the charted library would not load: its cells are
            # `not run` there, not `absent`
            "unavailable": [r["version"] for r in releases if r["unavailable"]],
        },
    }


def _row(row: Mapping[str, Any], runs: Sequence[ReleaseRun], library: str) -> dict[str, Any]:
    found: dict[int, list[dict[str, Any]]] = row["found"]
    first, last = min(found), max(found)
    lead = min(found[last], key=lambda g: (rank(g.get("severity")), -int(g.get("count") or 0)))
    cells = set(row["cells"])
    statuses = [FOUND if i in found else _status(cells, run.ran) for i, run in enumerate(runs)]
    after = last + 1
    fixed_in = runs[after].version if after < len(runs) and statuses[after] == ABSENT else None
    exact = first > 0 and statuses[first - 1] == ABSENT
    since = f"since {runs[first].version}" if exact else f"since ≤{runs[first].version}"
    culprit = lead.get("library")
    return {
        "id": lead.get("finding") or group_id(lead),
        "aliases": sorted(row["aliases"]),
        "library": culprit,
        "role": lead.get("role"),
        "of_library": bool(culprit) and of_distribution(str(culprit), library),
        "rule": lead.get("rule")
        or (f"input:{lead['input_rule']}" if lead.get("input_rule") else None),
        "level_text": lead.get("level_text"),
        "outcome": lead.get("outcome"),
        "severity": lead.get("severity"),
        "about_input": bool(lead.get("about_input")),
        "signature": lead.get("signature"),
        "message": lead.get("message"),
        "cells": sorted(cells),
        "statuses": statuses,
        "counts": [
            sum(int(g.get("count") or 0) for g in found.get(i, [])) for i in range(len(runs))
        ],
        "first_seen": runs[first].version,
        "last_seen": runs[last].version,
        "since": since,
        "fixed_in": fixed_in,
        # the release after the last one it appears in, when that one did not run its cells
        "not_run_after": runs[after].version if after < len(runs) and not fixed_in else None,
    }


def _release(index: int, run: ReleaseRun, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    found = [r for r in rows if r["statuses"][index] == FOUND]
    severities = Counter(r["severity"] for r in found if r["severity"])
    return {
        "version": run.version,
        "run_dir": str(run.directory),
        "run_ids": list(run.run_ids),
        "findings": len(found),
        "of_library": sum(r["of_library"] for r in found),
        "by_severity": {s: severities[s] for s in SEVERITIES if severities[s]},
        "cells_ran": len(run.ran),
        "fixed_here": sum(r["fixed_in"] == run.version for r in rows),
        "unavailable": dict(sorted(run.unavailable.items())),
    }


def _cell(text: Any) -> str:
    return str(text if text not in (None, "") else "-").replace("|", "\\|").replace("\n", " ")


def listed_rows(chart: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The rows releases.md and the HTML section list: the charted library's, and the other
    libraries' that some release did not show (with those fixed, a finding every release shows
    says nothing about the releases)."""
    return [r for r in chart["rows"] if r["of_library"] or set(r["statuses"]) != {FOUND}]


def render_markdown(chart: Mapping[str, Any]) -> str:
    """releases.md: one row per finding (the charted library's first, most severe first), one
    column per release, then the counts per release. The other libraries' findings that every
    release shows are counted, not listed: with those libraries fixed they say nothing about
    the releases."""
    versions = chart["versions"]
    library = chart["library"]
    summary = chart["summary"]
    lines = [
        f"# {library} across releases",
        "",
        f"{summary['rows']} finding(s) over {len(versions)} releases of {library} "
        f"({', '.join(versions)}), {summary['of_library']} of them {library}'s; "
        f"{len(summary['fixed'])} fixed in a later release; {summary['in_newest']} in "
        f"{versions[-1]}. ✓ found, — its cells ran and it was not found, not run: none of its "
        "cells ran, part run: some did. Fixed in: the release after the last it appears in, "
        "when that one ran its cells.",
        "",
    ]
    if summary.get("tested_nothing"):
        lines += [
            f"**Not run**: {', '.join(summary['tested_nothing'])} ran no cell (the library would "
            "not import, or no GPU): no finding is charted there.",
            "",
        ]
    unavailable = [r for r in chart["releases"] if r.get("unavailable")]
    if unavailable:
        lines += ["**Would not load** (its cells are `not run` there, whatever they would find):"]
        for release in unavailable:
            reasons = dict.fromkeys(release["unavailable"].values())
            said = "; ".join(
                f"{', '.join(a for a, r in release['unavailable'].items() if r == reason)}: "
                f"{_cell(reason)}"
                for reason in reasons
            )
            lines.append(f"- {release['version']}: {said}")
        lines.append("")
    if chart.get("others_differ"):
        differ = "; ".join(
            f"{name} {', '.join(str(v) for v in values)}"
            for name, values in chart["others_differ"].items()
        )
        lines += [f"Other libraries whose versions differ between these runs: {differ}.", ""]
    shown = listed_rows(chart)
    steady = len(chart["rows"]) - len(shown)
    header = ["finding", "severity", "rule", *versions, "since", "fixed in"]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in shown:
        finding = f"{row['library'] or '(ambiguous)'} ({row['role']}) {row['outcome']}"
        severity = "about input" if row["about_input"] else row["severity"]
        marks = [MARKS[s] for s in row["statuses"]]
        fixed = row["fixed_in"] or (
            f"not run in {row['not_run_after']}" if row["not_run_after"] else "-"
        )
        values = [finding, severity, row["rule"], *marks, row["since"], fixed]
        lines.append("| " + " | ".join(_cell(v) for v in values) + " |")
    if steady:
        lines += [
            "",
            f"Not listed: {steady} finding(s) of the other libraries, found in every release "
            "(releases.json lists every finding).",
        ]
    lines += ["", "## Per release", ""]
    header = ["release", "findings", f"{library}'s", *SEVERITIES, "fixed here", "cells run", "run"]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for release in chart["releases"]:
        counts = [release["by_severity"].get(s, 0) for s in SEVERITIES]
        values = [
            release["version"],
            release["findings"],
            release["of_library"],
            *counts,
            release["fixed_here"],
            release["cells_ran"],
            release["run_dir"],
        ]
        lines.append("| " + " | ".join(_cell(v) for v in values) + " |")
    return "\n".join(lines) + "\n"


def chart_file(library: str) -> str:
    """The name a chart of `library` has in a run directory it dates (one per charted library:
    numba-cuda's and cuda-core's charts date one run side by side)."""
    return f"releases-{library}.json"


def load_charts(directory: str | Path) -> list[dict[str, Any]]:
    """The charts in a run directory (`releases-LIBRARY.json`, by name), [] when it has none;
    ReleasesInputError for one that is not a chart."""
    charts = []
    for path in sorted(Path(directory).glob(chart_file("*"))):
        try:
            chart = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            raise ReleasesInputError(f"{path}: not a releases chart ({exc})") from None
        if not isinstance(chart, dict) or chart.get("schema") != SCHEMA:
            raise ReleasesInputError(f"{path}: not a releases chart (schema {SCHEMA} expected)")
        charts.append(chart)
    return charts


def annotate_since(
    groups: Sequence[dict[str, Any]],
    charts: Sequence[Mapping[str, Any]],
    versions: Mapping[str, str | None],
) -> int:
    """Set `releases` on each group a chart row names (by its finding's identity or a
    member's): one entry per such chart, the chart of the group's own library first: the
    charted library, first and last release seen, `since`, `fixed_in`, and `upgrade` when the
    run's own version of that library (`versions`) is older than the release that fixed it.
    Returns how many findings (groups leading one) a row named."""
    for group in groups:
        group.pop("releases", None)
    named: set[int] = set()
    for chart in charts:
        library = str(chart.get("library"))
        version = versions.get(library)
        by_id = {a: row for row in chart.get("rows") or [] for a in row.get("aliases") or []}
        for group in groups:
            row = by_id.get(str(group.get("finding") or group_id(group))) or by_id.get(
                group_id(group)
            )
            if row is None:
                continue
            if not group.get("folded_into"):
                named.add(id(group))
            entry = _dated(row, library, version)
            entries = group.setdefault("releases", [])
            own = bool(group.get("library")) and of_distribution(str(group["library"]), library)
            entries.insert(0, entry) if own else entries.append(entry)
    return len(named)


def _dated(row: Mapping[str, Any], library: str, version: str | None) -> dict[str, Any]:
    fixed = row.get("fixed_in")
    upgrade = None
    if fixed and version is not None:
        try:
            older = version_key(version) < version_key(fixed)
        except ReleasesInputError:
            older = False
        upgrade = f"fixed in {library} {fixed} (this run has {version})" if older else None
    return {
        "library": library,
        "row": row.get("id"),
        "first_seen": row.get("first_seen"),
        "last_seen": row.get("last_seen"),
        "since": row.get("since"),
        "fixed_in": fixed,
        "upgrade": upgrade,
    }


def since_line(group: Mapping[str, Any]) -> str | None:
    """What a group's `releases` says, in one line for an issue text: "numba-cuda since 0.27.0;
    last seen in 0.28.0; fixed in 0.29.0; an upgrade fixes it", for the chart of its own
    library and any other whose releases fixed it; None without one."""
    library = str(group.get("library") or "")
    said = []
    for dated in group.get("releases") or []:
        own = bool(library) and of_distribution(library, str(dated.get("library")))
        if not own and not dated.get("fixed_in"):
            continue
        parts = [
            f"{dated.get('library')} {dated.get('since')}",
            f"last seen in {dated.get('last_seen')}",
        ]
        if dated.get("fixed_in"):
            parts.append(f"fixed in {dated['fixed_in']}")
        if dated.get("upgrade"):
            parts.append("an upgrade fixes it")
        said.append("; ".join(parts))
    return " — ".join(said) or None
