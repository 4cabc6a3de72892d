"""The finding groups of one or more run directories, for the commands that act on them
(`baseline`, `findings`): loaded, catalogued, and narrowed to one library; a library that ran
clean is said so (no groups, exit 0), one the runs do not hold is a usage error naming those
they do."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["catalogue_groups", "library_groups"]

#: the fields of a result naming a library
SIDES = ("producer", "consumer")


def catalogue_groups(run_dirs: Sequence[str]) -> tuple[Any, list[dict[str, Any]]]:
    """The runs of `run_dirs` (`report.build.load_runs`) and their catalogue's groups; a run
    that cannot be read is a UsageError (one line, exit 2)."""
    from caiconform.cli import UsageError
    from caiconform.report.build import load_runs
    from caiconform.report.load import ReportInputError
    from caiconform.results.catalogue import build_catalogue

    try:
        run_data = load_runs(list(run_dirs))
    except ReportInputError as exc:
        raise UsageError(str(exc)) from None
    catalogue = build_catalogue(run_data.records, run_data.envs, run_data.confirmations)
    return run_data, catalogue["groups"]


def library_groups(
    groups: list[dict[str, Any]],
    library: str | None,
    records: Sequence[Mapping[str, Any]] = (),
) -> list[dict[str, Any]]:
    """`groups` whose culprit is `library` (all of them when None). A library that took part
    in `records` (the runs' results) but that no group names ran clean, or did not run when
    all its records are skips: one line says which and the answer is empty. A UsageError names the runs' libraries and those the groups name when
    `library` is neither."""
    from caiconform.cli import UsageError

    if library is None:
        return groups
    named = sorted({g["library"] for g in groups if g.get("library")})
    if library in named:
        return [g for g in groups if g.get("library") == library]
    ran = sorted({str(r[side]) for r in records for side in SIDES if r.get(side)})
    if library in ran:
        own = [r for r in records if library in (r.get("producer"), r.get("consumer"))]
        if all(r.get("outcome") == "skip" for r in own):  # present, but never exchanged
            why = next((str(r.get("message")) for r in own if r.get("message")), "skipped")
            print(f"{library} did not run here: every cell of it was skipped ({why})")
        else:
            print(f"{library} ran clean here: no finding names it")
        return []
    raise UsageError(
        f"--library {library!r}: not in these runs (libraries there: {', '.join(ran) or 'none'}; "
        f"findings name: {', '.join(named) or 'none'})"
    )
