"""What each interchange protocol of a run found: cells, examples and defect groups of each
protocol's families, side by side.

A family's protocols are the family catalogue's (`caiconform.spec.protocols.of_family`; a family
comparing protocols, agreement, counts under each): the report reads finished runs and imports
no family module.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from caiconform.spec.protocols import NAMES, PROTOCOLS, get, of_family

__all__ = ["protocols_of", "protocol_rows", "render"]


def protocols_of(check: str) -> tuple[str, ...]:
    """The names of the protocols family `check` exchanges over."""
    return tuple(p.name for p in of_family(check))


def protocol_rows(matrix: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per protocol with cells that ran: cells, examples tested and passed, and the
    defect groups (library defects, harness and about-input groups left out) by severity."""
    rows = []
    for protocol in (p.name for p in PROTOCOLS):
        cells = [c for c in matrix.get("cells") or [] if protocol in protocols_of(c["check"])]
        tested = sum(c.get("tested") or 0 for c in cells)
        if not tested:
            continue
        severities: Counter[str] = Counter()
        for group in (matrix.get("catalogue") or {}).get("groups") or []:
            if group.get("about_input") or group.get("library") == "caiconform":
                continue
            checks = group.get("checks") or []
            if any(protocol in protocols_of(check) for check in checks):
                severities[group.get("severity") or "?"] += 1
        rows.append(
            {
                "protocol": protocol,
                "cells": sum(1 for c in cells if c.get("tested")),
                "tested": tested,
                "passed": sum(c.get("passed") or 0 for c in cells),
                "groups": sum(severities.values()),
                "severities": dict(severities),
            }
        )
    return rows


def render(matrix: dict[str, Any]) -> list[str]:
    """The "Protocols" section of matrix.md; [] unless families of more than one protocol ran."""
    rows = protocol_rows(matrix)
    if len(rows) < 2:
        return []
    titles = [get(row["protocol"]).title for row in rows]
    lines = [
        "## Protocols",
        "",
        f"The same libraries exchanging over {', '.join(titles[:-1])} and over {titles[-1]} "
        f"(`caiconform run --protocol {'|'.join(NAMES)}` runs one; a family comparing "
        "protocols counts under each).",
        "",
        "| protocol | cells | examples tested | passed | defect groups |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        by = ", ".join(f"{n} {s}" for s, n in sorted(row["severities"].items()))
        groups = f"{row['groups']} ({by})" if by else "0"
        lines.append(
            f"| {row['protocol']} | {row['cells']} | {row['tested']} | {row['passed']} | {groups} |"
        )
    return lines
