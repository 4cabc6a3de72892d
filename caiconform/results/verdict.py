"""The verdict on a set of results: red only for a library's own defects at or above the
failing threshold that no expectation (baseline) covers, or for an expectation that no longer
holds.

Every finding group of the catalogue (`caiconform.results.catalogue`) has one culprit library
(or none, when it cannot be told) and a severity (`caiconform.results.severity`). For a library under
test (the pytest plugin's `--cai-name`) a group is:

- `own`: its culprit is that library;
- `ambiguous`: no single culprit, and the library is on one side of the pairs that showed it
  (a CI run cannot clear it, so it fails, saying so);
- `peer`: another library's defect, seen along the way: listed, never failing.

Without a library (a whole-matrix `caiconform run` or `report`), every group is judged as
`own`. A judged group fails when its severity is in `fail_on` and at least one of its examples
is not covered by an expectation entry: a *new* defect, or a new failure mode of a baselined
one (an entry pins its mode, docs/expectations.md). A group all of whose examples are covered
is `expected` (baselined). A group that is information about its input (`about_input`: what a
consumer did with a dict breaking a rule the dict cannot show, severity None) is `input`: listed
apart, never failing, counted among no one's defects. A group whose cause is caiconform's own
code (culprit `filing.HARNESS`, `adapters.selfcheck`) is `harness`: listed apart, never failing. A strict entry that covered nothing (the defect is gone, or the
entry is stale) is an entry error, also red: the baseline has to be updated; so is an entry
that matched nothing and names a check no result of the run carries and caiconform does not
know (a typo). An entry that now covers ten times the examples its baseline saw is listed
(`grown`), not failed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from caiconform.results.expectations import (
    EntryStatus,
    Expectation,
    apply_expectations,
    installed_version,
)
from caiconform.results.filing import HARNESS
from caiconform.results.severity import DEFAULT_FAIL_ON, SEVERITIES, rank
from caiconform.results.verification import lead_rank
from caiconform.results.wording import group_phrase, severity_word, standalone_word

__all__ = ["Judged", "Verdict", "judge", "group_examples", "group_line", "involves"]

#: an entry covering this many times its baseline's examples is listed ("tenfold")
GROWTH = 10


@dataclass
class Judged:
    """One finding group and what the verdict made of it.

    status: `new` (fails: at/above the threshold, not covered), `expected` (covered by the
    expectations), `below` (under the threshold: reported, not failing), `input` (information
    about the input, no defect: never failing), `harness` (caiconform's own defect, culprit
    `filing.HARNESS`: listed apart, never failing a library), `folded` (one more rule or
    outcome of a finding another group leads, `results.fold`: judged, listed and counted with
    its lead).
    side: `own`, `ambiguous` or `peer` (see the module docstring).
    """

    group: Mapping[str, Any]
    status: str
    side: str
    records: list[Mapping[str, Any]] = field(default_factory=list)
    #: the reasons of the expectation entries that cover the group's examples
    reasons: list[str] = field(default_factory=list)
    #: the group's examples no expectation entry covers (all of them without expectations)
    uncovered: list[Mapping[str, Any]] = field(default_factory=list)

    @property
    def new_mode(self) -> str | None:
        """The outcome detail of the first uncovered example of a group whose other examples
        an entry covers (a new failure mode of a baselined group), else None."""
        if not self.uncovered or len(self.uncovered) == len(self.records):
            return None
        from caiconform.results.expectations import outcome_detail

        return outcome_detail(self.uncovered[0])

    @property
    def failing(self) -> bool:
        return self.status == "new" and self.side in ("own", "ambiguous")


@dataclass
class Verdict:
    """What a set of results comes to for `library` (None: every library)."""

    library: str | None
    fail_on: frozenset[str]
    judged: list[Judged]
    entry_errors: list[EntryStatus]
    entry_notes: list[EntryStatus]
    expectations_given: bool
    #: (entry, examples it covers) for each entry covering `GROWTH` times its `examples`
    grown: list[tuple[Expectation, int]] = field(default_factory=list)

    def of(self, side: str, *statuses: str) -> list[Judged]:
        return [j for j in self.judged if j.side == side and (not statuses or j.status in statuses)]

    @property
    def failing(self) -> list[Judged]:
        return [j for j in self.judged if j.failing]

    @property
    def ok(self) -> bool:
        return not self.failing and not self.entry_errors

    @property
    def unmatched(self) -> list[EntryStatus]:
        """Strict entries that match no result although their libraries and checks ran: a
        typo or a stale entry, bad input rather than a finding (the CLI exits 2 for them)."""
        return [s for s in self.entry_errors if s.status == "unmatched"]

    def headline(self) -> str:
        """The first line a maintainer reads: what to do."""
        own = [j for j in self.judged if j.side == "own"]
        failing = self.failing
        who = self.library or "the matrix"
        if failing:
            worst = failing[0]
            first = group_line(worst.group)
            if worst.new_mode:
                first += f"; a new failure mode: {worst.new_mode}"
            standalone = standalone_word(worst.group)
            if standalone:
                first += f" [{standalone}]"
            more = f" and {len(failing) - 1} more" if len(failing) > 1 else ""
            do = f"FIX: {who}: {len(failing)} failing defect(s) ({first}{more})"
        elif self.entry_errors:
            do = (
                f"UPDATE THE BASELINE: {who}: {len(self.entry_errors)} expectation(s) no longer "
                "hold (a defect fixed, or an entry stale)"
            )
        else:
            do = f"OK: {who}: no failing defect"
        parts = [do]
        if self.expectations_given:
            new = sum(j.status == "new" for j in own)
            parts.append(f"{new} new since baseline")
        below = [j for j in own if j.status == "below"]
        if below:
            parts.append(
                f"{len(below)} below --fail-on ({_severity_counts(j.group for j in below)})"
            )
        harness = [j for j in self.judged if j.status == "harness"]
        if harness:
            parts.append(
                f"{len(harness)} defect(s) of caiconform's own harness, charged to no library "
                "(file them against caiconform)"
            )
        if self.library is not None:
            peers = [j for j in self.of("peer") if j.status != "harness"]
            parts.append(f"{len(peers)} defect(s) of other libraries seen, not failing")
        if self.grown:
            each = ", ".join(
                f"{entry.source}: entry {entry.index}: {count}, was {entry.examples}"
                for entry, count in self.grown
            )
            parts.append(
                f"{len(self.grown)} baseline entry(ies) cover tenfold their examples ({each})"
            )
        return "; ".join(parts)


def _severity_counts(groups: Iterable[Mapping[str, Any]]) -> str:
    counts: dict[str, int] = defaultdict(int)
    for g in groups:
        counts[str(g.get("severity"))] += 1
    return ", ".join(f"{counts[s]} {s}" for s in SEVERITIES if counts.get(s))


def group_line(group: Mapping[str, Any]) -> str:
    """One line for a group: `severity: library role rule (level, outcome, N example(s))`, or
    for a group whose input broke a rule `severity: given a dict that breaks RULE (level), the
    consumer LIBRARY crashed (N example(s))` (`results.wording.group_phrase`)."""
    return f"{severity_word(group)}: {group_phrase(group)}"


def involves(group: Mapping[str, Any], library: str) -> bool:
    """Whether `library` is on a side of a cell of `group` (cells are check/producer/consumer)."""
    return any(library in str(cell).split("/")[1:] for cell in group.get("cells") or [])


def _key(group: Mapping[str, Any]) -> tuple:
    rule = group.get("rule") or (
        f"input:{group['input_rule']}" if group.get("input_rule") else None
    )
    return (group.get("library"), group.get("role"), rule, group.get("outcome"))


def group_examples(
    records: Sequence[Mapping[str, Any]],
) -> Callable[[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """The examples (findings, shrunk ones left out) of each catalogue group of `records`: a
    function of the group, keyed as the catalogue keys its groups."""
    from caiconform.results.catalogue import Evidence, culprit_of, group_key, outcome_class

    evidence = Evidence.of(r for r in records if not r.get("shrunk"))
    members: dict[tuple, list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        if outcome_class(r) is not None and not r.get("shrunk"):
            members[group_key(r, culprit_of(r, evidence))].append(r)
    return lambda group: members.get(_key(group), [])


def judge(
    records: Sequence[Mapping[str, Any]],
    *,
    library: str | None = None,
    fail_on: Iterable[str] = DEFAULT_FAIL_ON,
    expectations: Sequence[Expectation] | None = None,
    version_of: Callable[[Mapping[str, Any]], Callable[[str], str | None]] | None = None,
    catalogue: Mapping[str, Any] | None = None,
) -> Verdict:
    """Judge `records` (journal records; shrunk ones included) for `library`.

    `catalogue` is `build_catalogue(records)` when the caller has it already. `version_of`
    as in `apply_expectations`.
    """
    from caiconform.results.catalogue import build_catalogue

    fail_on = frozenset(fail_on)
    catalogue = catalogue if catalogue is not None else build_catalogue(records)
    examples_of = group_examples(records)
    application = apply_expectations(
        expectations or [], records, version_of or (lambda record: installed_version)
    )
    covered = {id(v.record): v.entry for v in application.records if v.status == "xfail"}
    judged = []
    for group in catalogue.get("groups", []):
        side = _side(group, library)
        if side is None:
            continue
        examples = examples_of(group)
        uncovered = [r for r in examples if id(r) not in covered]
        if group.get("about_input"):
            status = "input"
        elif group.get("library") == HARNESS:
            status = "harness"
        elif group.get("severity") not in fail_on:
            status = "below"
        elif examples and not uncovered:
            status = "expected"
        else:
            status = "new"
        reasons = sorted({covered[id(r)].reason for r in examples if id(r) in covered})
        judged.append(Judged(group, status, side, examples, reasons, uncovered))
    _fold(judged)

    # the first line leads with a defect whose standalone script reproduced it (`findings
    # --verify`), then the unverified, then the unconfirmed; most severe first within each
    judged.sort(
        key=lambda j: (j.status != "new", lead_rank(j.group), rank(j.group.get("severity")))
    )
    ran = {(r.get("producer"), r.get("consumer"), r.get("check")) for r in records}
    errors, notes = [], []
    for status in application.entries:
        if (
            status.status == "unmatched"
            and not _entry_ran(status.entry, ran)
            and names_a_check(status.entry.check, {k for _, _, k in ran})
        ):
            notes.append(status)
        elif status.is_error:
            errors.append(status)
    verdict = Verdict(library, fail_on, judged, errors, notes, bool(expectations))
    verdict.grown = _grown(application.records)
    return verdict


def _fold(judged: list[Judged]) -> None:
    """One verdict per finding (`results.fold`): a group folded into another takes status
    `folded` and is counted no more; its examples join its lead's, so a member an entry does
    not cover makes the lead's finding new (a baseline entry for one rule of a bug does not
    cover the same bug under another rule the entry does not name)."""
    leads = {j.group.get("finding"): j for j in judged if not j.group.get("folded_into")}
    for j in judged:
        lead = leads.get(j.group.get("folded_into"))
        if lead is None:
            continue
        if j.status == "new" and lead.status in ("expected", "below"):
            lead.status = "new"
        lead.records = [*lead.records, *j.records]
        lead.uncovered = [*lead.uncovered, *j.uncovered]
        for reason in j.reasons:
            if reason not in lead.reasons:
                lead.reasons.append(reason)
        j.status = "folded"


def _grown(verdicts: Iterable[Any]) -> list[tuple[Expectation, int]]:
    """(entry, examples it covers) for each entry that records its baseline's `examples` and
    now covers `GROWTH` times as many (shrunk reproducers left out)."""
    counts: dict[int, int] = defaultdict(int)
    entries: dict[int, Expectation] = {}
    for v in verdicts:
        if v.status == "xfail" and v.entry.examples and not v.record.get("shrunk"):
            counts[v.entry.index] += 1
            entries[v.entry.index] = v.entry
    return [(entries[i], n) for i, n in sorted(counts.items()) if n >= GROWTH * entries[i].examples]


def names_a_check(pattern: str, ran: Iterable[Any]) -> bool:
    """Whether an entry's `check` pattern names a check caiconform knows (its families, the
    plugin's dict-schema) or one a result of the run carries: an entry naming none of them is
    a typo, never an entry about a check that did not run here."""
    from caiconform.results.expectations import KNOWN_CHECKS, wildcard_match

    return any(wildcard_match(str(check), pattern) for check in (*KNOWN_CHECKS, *ran) if check)


def _side(group: Mapping[str, Any], library: str | None) -> str | None:
    if library is None:
        return "own"
    if group.get("library") == library:
        return "own"
    if group.get("library") is None:
        return "ambiguous" if involves(group, library) else "peer"
    return "peer"


def _entry_ran(entry: Expectation, ran: set[tuple]) -> bool:
    """Whether any result of the run falls in the entry's producer/consumer/check scope (an
    entry about checks or libraries that did not run here is not judged stale)."""
    from caiconform.results.expectations import wildcard_match

    def fits(value: Any, pattern: str) -> bool:
        return wildcard_match("" if value is None else str(value), pattern)

    return any(
        fits(p, entry.producer) and fits(c, entry.consumer) and fits(k, entry.check)
        for p, c, k in ran
    )
