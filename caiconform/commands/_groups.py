"""The finding groups of one or more run directories, for the commands that act on them
(`baseline`, `findings`): loaded, catalogued, and narrowed to one library with a usage error
naming the libraries there are when it names none."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["catalogue_groups", "library_groups"]


def catalogue_groups(run_dirs: Sequence[str]) -> tuple[Any, list[dict[str, Any]]]:
    """The runs of `run_dirs` (`report.build.load_runs`) and their catalogue's groups; a run
    that cannot be read is a UsageError (one line, exit 2)."""
    from caiconform.cli import UsageError
    from caiconform.report.build import load_runs
    from caiconform.report.catalogue import build_catalogue
    from caiconform.report.load import ReportInputError

    try:
        run_data = load_runs(list(run_dirs))
    except ReportInputError as exc:
        raise UsageError(str(exc)) from None
    catalogue = build_catalogue(run_data.records, run_data.envs, run_data.confirmations)
    return run_data, catalogue["groups"]


def library_groups(groups: list[dict[str, Any]], library: str | None) -> list[dict[str, Any]]:
    """`groups` whose culprit is `library` (all of them when None); a UsageError listing the
    libraries the groups name when none is `library`."""
    from caiconform.cli import UsageError

    if library is None:
        return groups
    named = sorted({g["library"] for g in groups if g.get("library")})
    if library not in named:
        raise UsageError(
            f"--library {library!r}: no finding names it (findings name: "
            f"{', '.join(named) or 'none'})"
        )
    return [g for g in groups if g.get("library") == library]
