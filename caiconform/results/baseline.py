"""A baseline: today's finding groups written as a strict expectation file, so that the next
run is red only for a new defect or for one that disappeared.

One entry per group (`caiconform.results.catalogue`): the rule it is filed under, the culprit
library in its role (`consumer: mylib` or `producer: mylib`), the check family when the group
showed in one only, the finding outcomes it showed, its failure mode (`detail`: the outcome
detail of its examples, `expectations.outcome_detail`, as patterns with numbers, addresses,
shapes and typestrs generalised; at most `MAX_DETAILS` of them, else their exception types,
else none and the reason says so), the number of examples it had (`examples`), and a reason to
fill in that starts as `TODO`. A finding of the same rule and outcome in another mode is then
new, and an entry covering ten times its examples is listed. Entries are strict, so a fixed
defect makes the run red until its entry is deleted — the baseline never rots. A group whose
first example gave another outcome when run again (`reproduced: false`: a race, a
memory-map-dependent fault) is written `strict: false`, so that its absence from a later run
is a note, not a failure.

The file is an ordinary expectation file (docs/expectations.md): `--cai-expectations`,
`caiconform report --expectations` and `caiconform run --expectations` read it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["BaselineError", "MAX_DETAILS", "entries_of", "render", "write_baseline"]

#: the most detail patterns one entry pins; a group with more pins their exception types
MAX_DETAILS = 8
_EXCEPTION = re.compile(r"([A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt)): ")

#: catalogue outcome class -> the journal outcome an entry expects
_OUTCOME = {"rejected-valid": "rejected"}


class BaselineError(ValueError):
    """The baseline cannot be written (one line naming the file and why)."""


def _pair(group: Mapping[str, Any]) -> tuple[str, str]:
    """(producer, consumer) patterns of a group without a single culprit: the one pair its
    cells show, else '*' for a side that varies."""
    producers = {str(c).split("/")[1] for c in group.get("cells") or []}
    consumers = {str(c).split("/")[2] for c in group.get("cells") or []}
    producer = producers.pop() if len(producers) == 1 else "*"
    consumer = consumers.pop() if len(consumers) == 1 else "*"
    return producer, consumer


def _details(examples: Sequence[Mapping[str, Any]]) -> tuple[list[str], str]:
    """(detail patterns pinning the failure mode of `examples`, what the reason says when
    they cannot be pinned)."""
    from caiconform.results.expectations import detail_pattern, outcome_detail

    details = sorted({detail_pattern(outcome_detail(r)) for r in examples} - {""})
    if len(details) <= MAX_DETAILS:
        return details, ""
    types = {_EXCEPTION.match(d) for d in details}
    if None not in types and len(types := {m.group(1) for m in types}) <= MAX_DETAILS:
        return [f"{name}: *" for name in sorted(types)], ""
    return [], f"; failure modes not pinned: {len(details)} details"


def entries_of(
    groups: Iterable[Mapping[str, Any]],
    date: str,
    records: Sequence[Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The expectation entries of `groups` (catalogue groups of `records`), in their order.
    Without `records` no entry pins its failure mode (`detail`)."""
    from caiconform.results.verdict import group_examples

    examples_of = group_examples(records) if records is not None else None
    entries = []
    for group in groups:
        rule = group.get("rule") or group.get("input_rule")
        if not rule:
            continue  # every catalogue group names a rule; an old findings.json may not
        entry: dict[str, Any] = {"rule": rule}
        if group.get("library") and group.get("role") in ("producer", "consumer"):
            entry[group["role"]] = group["library"]
        else:
            producer, consumer = _pair(group)
            entry.update({"producer": producer, "consumer": consumer})
        checks = list(group.get("checks") or [])
        if len(checks) == 1:
            entry["check"] = checks[0]
        outcome = str(group.get("outcome"))
        entry["outcome"] = _OUTCOME.get(outcome, outcome)
        unpinned = ""
        if examples_of is not None:
            details, unpinned = _details(examples_of(group))
            if details:
                entry["detail"] = details
        if group.get("count"):
            entry["examples"] = int(group["count"])
        message = " ".join(str(group.get("message") or "").split())[:160]
        entry["reason"] = (
            f"TODO: why this is expected (baseline {date}: {group.get('severity')}, "
            f"{group.get('count')} example(s); e.g. {message}{unpinned})"
        )
        if group.get("reproduced") is False:
            entry["strict"] = False
        entries.append(entry)
    return entries


def render(entries: list[dict[str, Any]], header: str) -> str:
    """The YAML text of an expectation file holding `entries`, `header` as its comment."""
    import yaml

    comment = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    body = yaml.safe_dump(
        {"version": 1, "expectations": entries}, sort_keys=False, width=100, allow_unicode=True
    )
    return comment + body


def write_baseline(
    groups: Iterable[Mapping[str, Any]],
    path: str | Path,
    *,
    date: str,
    source: str,
    records: Sequence[Mapping[str, Any]] | None = None,
) -> int:
    """Write the baseline of `groups` (catalogue groups of the journal `records`) to `path`;
    returns the number of entries. Raises BaselineError when the file cannot be written."""
    entries = entries_of(groups, date, records)
    header = (
        f"caiconform baseline of {source}, {date}: {len(entries)} known finding group(s).\n"
        "Fill in each reason (and a link to the issue); delete an entry once its defect is\n"
        "fixed. Later runs with this file are red only for a new finding group, or for an\n"
        "entry whose finding no longer happens. Format: docs/expectations.md."
    )
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render(entries, header), encoding="utf-8")
    except OSError as exc:
        raise BaselineError(f"cannot write baseline {target}: {exc.strerror or exc}") from None
    return len(entries)
