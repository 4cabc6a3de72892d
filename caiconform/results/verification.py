"""What a group's standalone verification says: the statuses `caiconform findings --verify`
records in a group's `standalone` entry, and the order findings and the verdict lead with.

Running the scripts and recording their statuses is `caiconform.report.verify`'s; the statuses
and their order live here, below it, because the verdict (`results.verdict`) leads with the
groups that reproduce standalone, as findings and the upstream pack do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "REPRODUCES",
    "DOES_NOT",
    "NO_VERDICT",
    "NOT_RUN",
    "NONE",
    "STATUSES",
    "lead_rank",
    "lead_order",
]

REPRODUCES = "reproduces"
DOES_NOT = "does not"
NO_VERDICT = "no verdict"
NOT_RUN = "not run here"
NONE = "none"
#: every value of a group's `standalone`
STATUSES = (REPRODUCES, DOES_NOT, NO_VERDICT, NOT_RUN, NONE)


def lead_rank(group: Mapping[str, Any]) -> int:
    """0 for a group whose standalone script reproduced it, 1 not verified (or not run here),
    2 does not reproduce or gave no verdict, 3 no script: the order findings and the verdict
    lead with."""
    status = (group.get("standalone") or {}).get("standalone")
    return {REPRODUCES: 0, None: 1, NOT_RUN: 1, DOES_NOT: 2, NO_VERDICT: 2, NONE: 3}.get(status, 1)


def lead_order(groups: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """`groups` (annotated) with those that reproduce first, then those not verified, those
    that do not reproduce or gave no verdict and those without a script; the catalogue's order
    within each."""
    return sorted(groups, key=lead_rank)
