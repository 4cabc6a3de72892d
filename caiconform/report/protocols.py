"""What each interchange protocol of a run found: cells, examples and defect groups of the CAI
families beside those of the DLPack families.

A family's protocol is read from its name, the convention `caiconform.checks` keeps (DLPack
families are named `dlpack_*`; agreement compares the two and counts under both; every other
family exchanges over the CAI): the report reads finished runs and imports no family module.
`tests/test_report_protocols.py` holds the convention to each family's own `PROTOCOLS`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

__all__ = ["PROTOCOLS", "protocols_of", "protocol_rows", "render"]

PROTOCOLS = ("cai", "dlpack")
_BOTH = frozenset({"agreement"})


def protocols_of(check: str) -> tuple[str, ...]:
    """The protocols family `check` exchanges over, by the naming convention."""
    if check in _BOTH:
        return PROTOCOLS
    return ("dlpack",) if check.startswith("dlpack_") else ("cai",)


def protocol_rows(matrix: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per protocol with cells that ran: cells, examples tested and passed, and the
    defect groups (library defects, harness and about-input groups left out) by severity."""
    rows = []
    for protocol in PROTOCOLS:
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
    """The "Protocols" section of matrix.md; [] unless a DLPack family ran."""
    rows = protocol_rows(matrix)
    if not any(row["protocol"] == "dlpack" for row in rows):
        return []
    lines = [
        "## Protocols",
        "",
        "The same libraries exchanging over the CUDA Array Interface and over DLPack "
        "(`caiconform run --protocol cai|dlpack` runs one; agreement counts under both).",
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
