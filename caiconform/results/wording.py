"""How a finding group reads, the same in every report (verdict lines, Markdown, HTML, issue texts).

A group whose input broke a rule reads alike whatever the consumer did with it: "given a dict that
breaks CAI-SHAPE-INT (MUST, derived), the consumer cuda.cccl crashed" (or hung, poisoned its CUDA
context, accepted it). Any other group reads "cupy consumer CAI-CONSUMER-READS-DESCRIBED (MUST,
derived, fail, 3 example(s))". Levels show through `spec.rules.level_text`, so a derived rule is
marked wherever its level appears.

It lives in `caiconform.results`, not with the reports that use it most, because the verdict
(`results.verdict`) words its headline and group lines exactly as the reports do, and a result's
meaning sits below everything that shows one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from caiconform.results.filing import HARNESS
from caiconform.spec.rules import level_text

__all__ = [
    "ABOUT_INPUT",
    "about_input_lines",
    "broken_input",
    "group_level",
    "folded_phrase",
    "group_phrase",
    "harness_lines",
    "is_harness",
    "issue_filename",
    "known_line",
    "severity_word",
    "standalone_word",
]

#: what a report calls a group that is information about its input (severity None)
ABOUT_INPUT = "about the input"
#: outcome class -> what the consumer did with the input
_DID = {
    "crash": "crashed",
    "hang": "hung",
    "poisoned": "poisoned its CUDA context",
    "accepted-invalid": "accepted it",
    "rejected-valid": "refused it",
    "fail": "misread it",
}


def broken_input(group: Mapping[str, Any]) -> str | None:
    """The rule the group's input broke: its input rule (a crash, hang or poison has no rule of
    its own), or the rule of an accepted-invalid group; None for any other group."""
    if group.get("input_rule"):
        return str(group["input_rule"])
    if group.get("outcome") == "accepted-invalid" and group.get("rule"):
        return str(group["rule"])
    return None


def group_level(group: Mapping[str, Any], *, quote: bool = False) -> str:
    """The group's level as reports show it: "MUST", "MUST, derived" (with `quote`, "MUST,
    derived: caiconform's reading of '...'")."""
    return level_text(group.get("rule") or group.get("input_rule"), group.get("level"), quote=quote)


def severity_word(group: Mapping[str, Any]) -> str:
    """The group's severity, or `ABOUT_INPUT` for information about its input."""
    if group.get("about_input") or not group.get("severity"):
        return ABOUT_INPUT if group.get("about_input") else "-"
    harm = group.get("harm")
    if group.get("bound") and harm and harm != group["severity"]:
        # the harm observed, bounded by what the broken sentence says (docs/severity.md)
        return f"{group['severity']} (seen: {harm})"
    return str(group["severity"])


def folded_phrase(group: Mapping[str, Any]) -> str | None:
    """ "also filed under R2 (rejected-valid, 6), R3 (...)": the other groups of a finding this
    group leads (`results.fold`), None when it leads no other."""
    folded = group.get("folded") or []
    if not folded:
        return None
    parts = [
        f"{m.get('rule') or 'input:' + str(m.get('input_rule'))} ({m.get('outcome')}, "
        f"{m.get('count')})"
        for m in folded
    ]
    return "the same bug also filed under " + ", ".join(parts)


def group_phrase(group: Mapping[str, Any], *, library: bool = True, count: bool = True) -> str:
    """One group in a phrase. `library` False leaves the library out (a page about one library);
    `count` False leaves the number of examples out (a title)."""
    name = (group.get("library") or "(no single library)") if library else ""
    role = group.get("role") or ""
    examples = f"{group.get('count')} example(s)"
    rule = broken_input(group)
    if rule is not None:
        did = _DID.get(str(group.get("outcome")), str(group.get("outcome")))
        who = " ".join(filter(None, [f"the {role}" if role else "the exchange", name]))
        tail = f" ({examples})" if count else ""
        return f"given a dict that breaks {rule} ({group_level(group)}), {who} {did}{tail}"
    filed = group.get("rule") or "(no rule)"
    details = [group_level(group), str(group.get("outcome"))] + ([examples] if count else [])
    head = " ".join(filter(None, [name, role, filed]))
    also = f" + {len(group['folded'])} more rule(s) of the same bug" if group.get("folded") else ""
    return f"{head} ({', '.join(details)}){also}"


def about_input_lines(groups: Iterable[Mapping[str, Any]]) -> list[str]:
    """The groups that are information about their input, one line per broken rule and outcome
    with the libraries and their example counts ("given a dict that breaks X (MUST), the
    consumer crashed: cupy (3), pycuda (1)"): bounded by the rules a dict cannot show, however
    many libraries ran."""
    by_kind: dict[str, list[Mapping[str, Any]]] = {}
    for group in groups:
        if group.get("about_input"):
            by_kind.setdefault(group_phrase(group, library=False, count=False), []).append(group)
    return [
        f"{phrase}: "
        + ", ".join(f"{g.get('library') or '(no single library)'} ({g.get('count')})" for g in same)
        for phrase, same in by_kind.items()
    ]


def is_harness(group: Mapping[str, Any]) -> bool:
    """Whether the group's cause is caiconform's own code (culprit `filing.HARNESS`): a harness
    defect, listed apart and charged to no library."""
    return group.get("library") == HARNESS


def harness_lines(groups: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per harness group: what it looked like and why it is caiconform's own."""
    return [
        f"{group_phrase(group, library=False)}: {group.get('why') or 'a harness defect'}"
        for group in groups
        if is_harness(group)
    ]


def standalone_word(group: Mapping[str, Any]) -> str | None:
    """What `findings --verify` established of a group, in a few words (None: not verified)."""
    status = (group.get("standalone") or {}).get("standalone")
    if status is None:
        return None
    return "reproduces standalone" if status == "reproduces" else "UNCONFIRMED standalone"


def issue_filename(group: dict[str, Any]) -> str:
    """A stable file name for a group: library-role-rule-outcome.md."""
    parts = [
        group.get("library") or "ambiguous",
        group.get("role") or "-",
        group.get("rule") or f"input-{group.get('input_rule') or 'none'}",
        group.get("outcome") or "-",
    ]
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(str(p) for p in parts)) + ".md"


def known_line(group: Mapping[str, Any]) -> str | None:
    """The sentence "already reported: <url> (state)" for an annotated group, or None."""
    known = group.get("known_reports") or []
    if not known:
        return None
    parts = []
    for k in known:
        how = "already reported" if k["relation"] == "reports" else "tracked"
        parts.append(f"{how}: [{k['title']}]({k['url']}) ({k['state']})")
    return "; ".join(parts)
