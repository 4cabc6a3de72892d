"""What an item's results come to for the library under test, and how it is said.

An item fails only for its own finding groups (`caiconform.results.verdict`): those whose culprit is
the library under test, at or above `--cai-fail-on`, not covered by `--cai-expectations`, plus
groups with no single culprit on a pair it is part of (which fail, saying so). A peer's defect
seen in the same exchanges is listed in the terminal summary, never failing. A factory that
could not build an example is a defect of the test setup (`adapters.base.ProducerFailed`),
listed once per (family, exception type, typestr kind) with the hint to raise SkipExchange.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from caiconform.adapters.base import SETUP_PREFIX

__all__ = ["item_failures", "item_expected", "describe_failures", "setup_errors", "SETUP_HINT"]

SETUP_HINT = "raise caiconform.adapters.base.SkipExchange(reason) for what the library cannot make"


def _ids(records: Iterable[Mapping[str, Any]]) -> set[int]:
    return {id(r) for r in records}


def item_failures(verdict: Any, records: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The verdict's failing groups that have an example among `records` (one item's)."""
    ids = _ids(records)
    return [j for j in verdict.failing if any(id(r) in ids for r in j.records)]


def item_expected(verdict: Any, records: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The library's own groups among `records` that the expectations cover."""
    ids = _ids(records)
    return [
        j
        for j in verdict.judged
        if j.status == "expected" and j.side == "own" and any(id(r) in ids for r in j.records)
    ]


def describe_failures(failures: Sequence[Any], run_dir: Path | None, library: str) -> str:
    """The failure message of an item: per failing group, its severity and rule, the rule's
    text, the culprit and why, the minimal example and how to reproduce it."""
    from caiconform.results.verdict import group_line
    from caiconform.spec.rules import RULES

    lines = [f"{len(failures)} defect(s) of {library} (most severe first):"]
    for judged in failures:
        group = judged.group
        lines.append(f"  {group_line(group)}")
        rule = RULES.get(group.get("rule") or group.get("input_rule") or "")
        if rule is not None:
            lines.append(f"    rule: {rule.text} [{rule.id}, {rule.section}]")
        if judged.side == "ambiguous":
            lines.append(f"    no single culprit: {group.get('why')}")
        else:
            lines.append(f"    why {group.get('library')}: {group.get('why')}")
        if group.get("condition"):
            lines.append(f"    when: {group['condition']}")
        lines.append(f"    minimal: {group.get('message')}")
        repro = (group.get("reproducer") or {}).get("repro")
        if repro and run_dir is not None:
            lines.append(f"    reproduce: python {run_dir / repro}")
    return "\n".join(lines)


def _kind(record: Mapping[str, Any]) -> str:
    params = record.get("params") or {}
    typestr = params.get("typestr")
    return f"typestr kind {typestr[1]!r}" if isinstance(typestr, str) and len(typestr) > 1 else "-"


def _exception(message: str) -> str:
    """The exception type named in a setup skip's reason ('...the example: ValueError: x')."""
    tail = message.rsplit("could not build the example: ", 1)[-1]
    head = tail.split(":", 1)[0].strip()
    return head if head.isidentifier() else "an exception"


def setup_errors(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per (family, exception type, typestr kind) of the factory's failures, with
    how many examples and the first message."""
    groups: Counter[tuple[str, str, str]] = Counter()
    first: dict[tuple[str, str, str], str] = {}
    for r in records:
        message = str(r.get("message") or "")
        if r.get("outcome") != "skip" or not message.startswith(SETUP_PREFIX):
            continue
        key = (str(r.get("check")), _exception(message), _kind(r))
        groups[key] += 1
        first.setdefault(key, message[len(SETUP_PREFIX) :])
    return [
        f"{check}: {exc} for {kind} in {n} example(s): {first[(check, exc, kind)]}"
        for (check, exc, kind), n in groups.most_common()
    ]


def only_setup(records: Sequence[Mapping[str, Any]]) -> bool:
    """Whether every one of `records` is a setup skip (the factory built nothing)."""
    return bool(records) and all(
        r.get("outcome") == "skip" and str(r.get("message") or "").startswith(SETUP_PREFIX)
        for r in records
    )
