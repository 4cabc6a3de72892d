"""Each library's conformance record: what a run says about one library, read in a minute.

Per protocol (`caiconform.spec.protocols`) and role (producer, consumer), a record holds the
cells the library played that role in, the rules its examples exercised with how many of those
examples passed and how many failed with the library the culprit, and the findings whose culprit
it is (severity, rule, triage from `triage.toml` and the upstream reports), with the library's
version from the run's env. It is built for a list of releases measured, one column each
(`Measured`: a release label and its run), so a record of several runs of a library's releases
(`releases.json`) reads across; a report of one run is one column.

Which rules an example exercises, for the library in one role:
- the rules the record names (its own rule, its mutant's, its live mutation's) and the rule its
  finding is filed under in that role (`results.filing.filed_rule`: a crash on valid input
  breaks what that side had to honour);
- unless it is an adversarial example about one rule, the rules of the family's protocols its
  family exercises (`spec.rule_coverage.exercisers`, read from the code) that bind that role's
  side (or both).
A rule belongs to the protocol of its prefix (`of_rule`), an EMM rule to its family's first.
An example *passed* a rule when it passed (or was a correct rejection); it *failed* it when its
finding is filed under that rule with this library in this role the culprit (the catalogue's
groups, those about their input left out): the rest of the examples failed on the other side, on
another rule, or with no single culprit.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from caiconform.report.load import Run
from caiconform.report.matrix import counted
from caiconform.report.releases import since_line
from caiconform.results.catalogue import library_version, passed
from caiconform.results.filing import filed_rule
from caiconform.results.fold import group_id
from caiconform.results.outcome import ACCEPTED_INVALID, CRASH, HANG, POISONED, REJECTED, SKIP
from caiconform.results.severity import rank
from caiconform.results.wording import group_level
from caiconform.spec.families import LIVE
from caiconform.spec.protocols import PROTOCOLS, Protocol, of_family, of_rule
from caiconform.spec.rules import RULES, Side, level_text

__all__ = ["SCHEMA", "ROLES", "Measured", "build_records", "libraries_of"]

SCHEMA = "caiconform-library-record/1"
ROLES = ("producer", "consumer")
#: the outcomes of an example that died: either side of a pair may have killed it
_LOST = (CRASH, HANG, POISONED)


@dataclass(frozen=True)
class Measured:
    """One release measured: its label (None: each library's own version in the run, as a
    report of one run of many libraries has it), the run and its matrix
    (`report.matrix.build_matrix`: cells, the triaged catalogue, the verdict, each run's env)."""

    release: str | None
    run: Run
    matrix: Mapping[str, Any]


def libraries_of(matrix: Mapping[str, Any]) -> list[str]:
    """Every library that played a role in a cell of `matrix` where an example ran (a library
    whose every cell was skipped, not installed or not usable, has nothing to record)."""
    cells = [c for c in matrix.get("cells") or [] if c.get("tested")]
    names = {c[role] for c in cells for role in ROLES if c.get(role)}
    return sorted(names)


@functools.cache
def _exercisers() -> dict[str, list[str]]:
    from caiconform.spec.rule_coverage import exercisers

    return exercisers()


def _binds(rule: str, role: str) -> bool:
    """Whether `rule` binds `role`'s side (or both)."""
    return RULES[rule].side in (Side(role), Side.BOTH)


@functools.cache
def _family_rules(check: str, role: str) -> frozenset[str]:
    """The rules of its own protocols family `check` exercises that bind `role`'s side (or
    both): a rule of another protocol a family's code names is that protocol's families' to
    count."""
    who = f"family:{check}"
    protocols = of_family(check)
    return frozenset(
        r
        for r, by in _exercisers().items()
        if who in by and _binds(r, role) and of_rule(r) in protocols
    )


def _named(record: Mapping[str, Any], role: str, ok: bool) -> set[str]:
    """The rules an example names for the library in `role`: its own, its mutant's, its live
    mutation's, and the rule its finding is filed under in that role. In a cell of two
    libraries a rule binding one side is that side's, except that what a consumer takes or
    refuses exercises the consumer on every rule its input was judged by, and an example that
    died exercises both (either may have killed it); in a cell of one, every rule is its
    library's (a consumer given a mutant refuses what breaks a producer's rule)."""
    params = record.get("params") if isinstance(record.get("params"), dict) else {}
    mutation = params.get("mutation")
    named = {record.get("rule"), params.get("rule")}
    if isinstance(mutation, str):
        named.add(LIVE.get(mutation))
    if not ok:
        named.add(filed_rule(record, role)[0])
    every = (
        not record.get("producer")
        or not record.get("consumer")
        or record.get("outcome") in _LOST
        or (role == "consumer" and record.get("outcome") in (REJECTED, ACCEPTED_INVALID))
    )
    return {r for r in named if isinstance(r, str) and r in RULES and (every or _binds(r, role))}


def _about_one(record: Mapping[str, Any]) -> bool:
    """An adversarial example about one rule (a mutant's, a live mutation's): it exercises that
    rule, not the family's others."""
    params = record.get("params") if isinstance(record.get("params"), dict) else {}
    return record.get("check") == "adversarial" and bool(
        params.get("rule") or params.get("mutation") in LIVE
    )


def _protocol_of(rule: str | None, check: str | None) -> Protocol:
    """A finding's protocol: its rule's, else its family's first."""
    found = of_rule(rule) if rule else None
    return found or of_family(str(check))[0]


def _rule_tallies(records: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], dict[str, list]]:
    """(library, role) -> rule -> [examples, passed] over the examples that ran."""
    tallies: dict[tuple[str, str], dict[str, list]] = defaultdict(
        lambda: defaultdict(lambda: [0, 0])
    )
    # the family's rules count per (library, role, family, passed), then once per rule
    by_family: Counter[tuple[str, str, str, bool]] = Counter()
    for record in counted(records):
        if record.get("outcome") in (SKIP, None):
            continue
        ok = passed(record)
        for role in ROLES:
            library = record.get(role)
            if not library:
                continue
            family = set() if _about_one(record) else _family_rules(str(record["check"]), role)
            if family:
                by_family[(library, role, str(record["check"]), ok)] += 1
            for rule in _named(record, role, ok) - family:
                tally = tallies[(library, role)][rule]
                tally[0] += 1
                tally[1] += ok
    for (library, role, check, ok), n in by_family.items():
        for rule in _family_rules(check, role):
            tally = tallies[(library, role)][rule]
            tally[0] += n
            tally[1] += n if ok else 0
    return tallies


def _failed(groups: Iterable[Mapping[str, Any]]) -> Counter[tuple[str, str, str]]:
    """(library, role, rule) -> examples failed with that library in that role the culprit."""
    failed: Counter[tuple[str, str, str]] = Counter()
    for group in groups:
        rule = group.get("rule") or group.get("input_rule")
        if (
            group.get("library")
            and group.get("role") in ROLES
            and rule
            and not group.get("about_input")
        ):
            failed[(group["library"], group["role"], rule)] += int(group.get("count") or 0)
    return failed


def _cell_tallies(
    cells: Iterable[Mapping[str, Any]],
) -> dict[tuple[str, str, Protocol], list[int]]:
    """(library, role, protocol) -> [cells tested, examples tested, passed]."""
    out: dict[tuple[str, str, Protocol], list[int]] = defaultdict(lambda: [0, 0, 0])
    for cell in cells:
        if not cell.get("tested"):
            continue
        for role in ROLES:
            if cell.get(role):
                for protocol in of_family(cell["check"]):
                    tally = out[(cell[role], role, protocol)]
                    tally[0] += 1
                    tally[1] += cell["tested"]
                    tally[2] += cell["passed"]
    return out


@dataclass
class _Column:
    """What one release's run says, for every library in it."""

    measured: Measured
    rules: dict[tuple[str, str], dict[str, list]]
    failed: Counter[tuple[str, str, str]]
    cells: dict[tuple[str, str, Protocol], list[int]]
    libraries: list[str]

    @classmethod
    def of(cls, measured: Measured) -> _Column:
        matrix = measured.matrix
        groups = (matrix.get("catalogue") or {}).get("groups") or []
        return cls(
            measured,
            _rule_tallies(measured.run.records),
            _failed(groups),
            _cell_tallies(matrix.get("cells") or []),
            libraries_of(matrix),
        )

    def release(self, library: str) -> dict[str, Any]:
        """The release's label, the library's version (runs merged from several machines that
        ran other versions: each, joined) and the run IDs."""
        runs = self.measured.matrix.get("runs") or {}
        versions = [library_version(library, run.get("env") or {}) for run in runs.values()]
        version = ", ".join(dict.fromkeys(v for v in versions if v)) or None
        label = self.measured.release or version or "version unknown"
        return {"release": label, "version": version, "runs": sorted(runs)}

    def rules_of(self, library: str, role: str, protocol: Protocol) -> dict[str, dict[str, int]]:
        """rule -> examples, passed, failed: the rules of `protocol` the library's examples in
        `role` exercised."""
        out = {}
        for rule, (examples, ok) in self.rules.get((library, role), {}).items():
            if of_rule(rule) is protocol:
                out[rule] = {
                    "examples": examples,
                    "passed": ok,
                    "failed": self.failed.get((library, role, rule), 0),
                }
        return out

    def findings(self, library: str) -> dict[str, tuple[int, dict[str, Any]]]:
        """finding id -> (catalogue index, group) of the findings `library` is the culprit of
        (one per bug: the folded groups are their lead's; those about their input left out)."""
        groups = (self.measured.matrix.get("catalogue") or {}).get("groups") or []
        return {
            group.get("finding") or group_id(group): (index, group)
            for index, group in enumerate(groups)
            if group.get("library") == library
            and not group.get("folded_into")
            and not group.get("about_input")
        }

    def status(self, index: int) -> str | None:
        statuses = (self.measured.matrix.get("verdict") or {}).get("status") or []
        return statuses[index] if index < len(statuses) else None


def _finding(group: Mapping[str, Any]) -> dict[str, Any]:
    rule = group.get("rule") or group.get("input_rule")
    checks = group.get("checks") or [None]
    return {
        "id": group.get("finding") or group_id(group),
        "protocol": _protocol_of(rule, checks[0]).name,
        "role": group.get("role"),
        "rule": group.get("rule"),
        "input_rule": group.get("input_rule"),
        "level": group_level(group),
        "outcome": group.get("outcome"),
        "severity": group.get("severity"),
        "also_filed_under": [
            m.get("rule") or m.get("input_rule") for m in group.get("folded") or []
        ],
        "triage": group.get("triage"),
        "known_reports": list(group.get("known_reports") or []),
        # the releases it is seen in, from a chart beside the run (`caiconform releases`)
        "across_releases": since_line(group),
    }


def _record(library: str, columns: Sequence[_Column]) -> dict[str, Any]:
    present = [c if library in c.libraries else None for c in columns]
    releases = [c.release(library) if c else None for c in present]
    protocols = []
    for protocol in PROTOCOLS:
        roles = []
        for role in ROLES:
            per_release = [c.rules_of(library, role, protocol) if c else {} for c in present]
            tallies = [c.cells.get((library, role, protocol)) if c else None for c in present]
            if not any(per_release) and not any(tallies):
                continue
            rule_ids = sorted(set().union(*per_release))
            roles.append(
                {
                    "role": role,
                    "measured": [
                        None
                        if tally is None
                        else {
                            "cells": tally[0],
                            "tested": tally[1],
                            "passed": tally[2],
                            "rules": len(rules),
                            "rules_failed": sum(1 for r in rules.values() if r["failed"]),
                        }
                        for tally, rules in zip(tallies, per_release, strict=True)
                    ],
                    "rules": [
                        {
                            "rule": rule,
                            "level": level_text(rule, quote=False),
                            "side": RULES[rule].side.value,
                            "measured": [rules.get(rule) for rules in per_release],
                        }
                        for rule in rule_ids
                    ],
                }
            )
        if roles:
            protocols.append({"protocol": protocol.name, "title": protocol.title, "roles": roles})
    findings: dict[str, dict[str, Any]] = {}
    for at, column in enumerate(present):
        for finding_id, (index, group) in (column.findings(library) if column else {}).items():
            entry = findings.setdefault(
                finding_id, {**_finding(group), "measured": [None] * len(columns)}
            )
            # the latest release that shows it says what it is now
            entry.update({k: v for k, v in _finding(group).items() if k != "id"})
            entry["measured"][at] = {
                "examples": int(group.get("count") or 0),
                "status": column.status(index),
                "group": index,
            }
    return {
        "schema": SCHEMA,
        "library": library,
        "releases": releases,
        "protocols": protocols,
        "findings": sorted(findings.values(), key=_finding_order),
    }


def _finding_order(finding: Mapping[str, Any]) -> tuple:
    return (rank(finding.get("severity")), finding["role"] or "", finding["id"])


def build_records(measured: Sequence[Measured]) -> dict[str, dict[str, Any]]:
    """library -> its record (JSON-able), a column per release of `measured` in order, for every
    library of any of them (a column is None where the library was not in that run)."""
    columns = [_Column.of(m) for m in measured]
    names = sorted({name for column in columns for name in column.libraries})
    return {name: _record(name, columns) for name in names}
