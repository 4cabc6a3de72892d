"""What changes for a user moving from numba-cuda to numba-cuda-mlir: the defect groups of each
pair of cells that differ only by the Numba implementation, present on one side and not the other.

numba-cuda-mlir's adapters mirror numba-cuda's one for one (`adapters.numba_impls.ADAPTERS`:
`numba` / `numba-mlir`, `numba-from-cai` / `numba-mlir-from-cai`, `numba-kernel` /
`numba-mlir-kernel`), so a cell with a Numba adapter in either role has a *twin*: the same family
and partner with the adapter of the other implementation ("roundtrip/cupy/numba-kernel" and
"roundtrip/cupy/numba-mlir-kernel"). A group is the catalogue's (library, role, rule, outcome)
(`results.catalogue`); in a twin cell it is matched by role, rule (or the input's rule) and
outcome, with a Numba library read as its twin. Only pairs whose two cells both tested something
are compared: a difference against a cell that did not run says nothing about the migration.
Pure data in, rows out; the reports render them (`markdown`, `html`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from caiconform.adapters.numba_impls import ADAPTERS, twin

__all__ = ["twin_cell", "ran_pairs", "migration_rows"]


def twin_cell(cell: str) -> str | None:
    """`check/producer/consumer` with every Numba adapter replaced by its twin; None when the
    cell has no Numba adapter."""
    check, _, rest = cell.partition("/")
    producer, _, consumer = rest.partition("/")
    if producer not in ADAPTERS and consumer not in ADAPTERS:
        return None
    swap = [twin(name) if name in ADAPTERS else name for name in (producer, consumer)]
    return f"{check}/{swap[0]}/{swap[1]}"


def _impl(cell: str) -> str:
    """The implementation a cell's Numba adapter(s) drive."""
    _, producer, consumer = cell.split("/")
    names = [n for n in (producer, consumer) if n in ADAPTERS]
    return ADAPTERS[names[0]][1]


def ran_pairs(cells: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The (numba-cuda cell, numba-cuda-mlir cell) pairs of the matrix's `cells` (dicts with
    check, producer, consumer and `tested`) where both cells tested at least one example."""
    tested = {
        f"{c['check']}/{c.get('producer') or '-'}/{c.get('consumer') or '-'}"
        for c in cells
        if c.get("tested")
    }
    pairs = []
    for cell in sorted(tested):
        other = twin_cell(cell)
        if other in tested and _impl(cell) == "numba-cuda":
            pairs.append((cell, other))
    return pairs


def _key(group: Mapping[str, Any], mirrored: bool = False) -> tuple:
    """(library, role, rule, outcome) of a group; `mirrored`: a Numba library named by its
    twin, as the group would be named in the twin cell."""
    library = group.get("library")
    if mirrored and library in ADAPTERS:
        library = twin(library)
    rule = group.get("rule") or f"input:{group.get('input_rule')}"
    return (library, group.get("role"), rule, group.get("outcome"))


def migration_rows(
    catalogue: Mapping[str, Any], cells: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]] | None:
    """One row per defect group present in one cell of a ran pair and absent from its twin:
    `numba_cell`, `mlir_cell`, `only_in` ("numba-cuda" or "numba-cuda-mlir"), the group's
    `library`, `role`, `rule` (or `input_rule`), `level_text`, `outcome` and `severity`.
    Groups about their input (no library's defect) are left out. None when no pair ran (the
    reports then show no section); [] when pairs ran and none differ."""
    pairs = ran_pairs(cells)
    if not pairs:
        return None
    by_cell: dict[str, list[Mapping[str, Any]]] = {}
    for group in catalogue.get("groups", []):
        if group.get("about_input"):
            continue
        for cell in group.get("cells", []):
            by_cell.setdefault(cell, []).append(group)
    rows = []
    for numba_cell, mlir_cell in pairs:
        for here, there, side in (
            (numba_cell, mlir_cell, "numba-cuda"),
            (mlir_cell, numba_cell, "numba-cuda-mlir"),
        ):
            twins = {_key(g) for g in by_cell.get(there, [])}
            for group in by_cell.get(here, []):
                if _key(group, mirrored=True) in twins:
                    continue
                rows.append(
                    {
                        "numba_cell": numba_cell,
                        "mlir_cell": mlir_cell,
                        "only_in": side,
                        "library": group.get("library"),
                        "role": group.get("role"),
                        "rule": group.get("rule"),
                        "input_rule": group.get("input_rule"),
                        "level_text": group.get("level_text"),
                        "outcome": group.get("outcome"),
                        "severity": group.get("severity"),
                    }
                )
    return rows
