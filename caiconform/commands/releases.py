"""Chart the findings of one library's releases, each run apart, side by side.

To chart numba-cuda: run each release in an environment of its own (`nox -s releases --
numba-cuda 0.29.0 0.30.4 ...`, or `scripts/gpu_releases.sh` on a GPU machine without a
network), then `caiconform releases runs/releases/numba-cuda-*` and read releases.md; a
release whose adapters would not load is named with the reason (`WOULD NOT LOAD:`), and its
findings are `not run`, never `absent`.

`caiconform releases RUN_DIR... [--library NAME] [--out DIR] [--json] [--annotate RUN]` reads
two or more run directories, each a run of one release of a library with the other libraries
fixed (`nox -s releases`, `scripts/gpu_releases.sh`), builds each run's findings as `findings`
and `report` do (the catalogue's groups, folded: `caiconform.results.fold`) and charts them
(`caiconform.report.releases`): per finding, the releases where it appears, first and last seen,
since when and the release that fixed it (a release that did not run the finding's cells fixes
nothing: "not run"); per release, the counts. The library is the one distribution whose version
differs between the runs (env.json `libraries`), or `--library` (an adapter name or a
distribution's) when others differ too.

`--out DIR` (default: LIBRARY beside the first run directory, `runs/releases/numba-cuda` for
`runs/releases/numba-cuda-*`) receives releases.json, releases.md and releases.html; `--json`
prints the chart instead of the summary. `--annotate RUN` dates another run's findings by the
chart: it copies the chart into RUN as releases-LIBRARY.json (beside other libraries' charts)
and writes each finding's `releases` (per chart naming it: since when, fixed in, whether an
upgrade from RUN's version fixes it) into RUN/findings.json; `caiconform report RUN` and
`caiconform findings RUN` read the charts there too (index.html shows them, issue texts say
since when). `caiconform releases --chart RELEASES_JSON --annotate RUN` dates RUN by a chart
made before (a published `reports/releases/LIBRARY/releases.json`), without its runs.

Exit status: 0; 2 for a directory that is not a run, one run, runs that are not one library's
releases (different libraries' versions mixed, one release twice), an unwritable directory.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dirs", metavar="RUN_DIR", nargs="*", help="run directories, one per release"
    )
    parser.add_argument(
        "--chart",
        metavar="RELEASES_JSON",
        help="with --annotate and no run directories: date the run by this chart, one made "
        "before (a published releases.json)",
    )
    parser.add_argument(
        "--library",
        metavar="NAME",
        help="the library whose releases these are (default: the one whose version differs)",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="write releases.json, .md and .html here (default: LIBRARY beside the runs)",
    )
    parser.add_argument("--json", action="store_true", help="print the chart as JSON")
    parser.add_argument(
        "--annotate",
        metavar="RUN",
        help="date the findings of this run directory by the chart (its findings.json; the "
        "chart is copied there as releases-LIBRARY.json)",
    )


def _libraries(directory: str) -> dict[str, Any]:
    """The library versions a run directory's env.json records, read before anything heavier:
    runs that are not one library's releases are refused before their catalogues are built. A
    directory with neither a journal nor a findings.json is no run."""
    from caiconform.rundir import JOURNAL_NAMES, RunDir

    where = RunDir(directory)
    if not where.path.is_dir():
        raise _usage(f"{directory}: not a run directory")
    if where.journal_found() is None and not where.findings.is_file():
        raise _usage(
            f"{directory}: not a run directory (no {' or '.join(JOURNAL_NAMES)}, no findings.json)"
        )
    env = _json(where.env) if where.env.is_file() else {}
    return env.get("libraries") if isinstance(env.get("libraries"), dict) else {}


def _release_run(directory: str, libraries: dict[str, Any], version: str) -> Any:
    """One release's run: its findings, built from its journal as `findings` builds them, or,
    in a copy without the journal (what `scripts/gpu_releases.sh` brings back), its
    findings.json's; and the cells it finished and ran."""
    from caiconform.commands._groups import catalogue_groups
    from caiconform.report.releases import ReleaseRun
    from caiconform.report.runstate import finished_cells
    from caiconform.rundir import RunDir

    where = RunDir(directory)
    if where.journal_found() is None:
        catalogue = _json(where.findings)
        groups, run_ids = catalogue.get("groups"), catalogue.get("runs") or []
        if not isinstance(groups, list):
            raise _usage(f"{where.findings}: not a findings.json (no 'groups')")
    else:
        run_data, groups = catalogue_groups([directory])
        run_ids = sorted(run_data.envs)
    ran = finished_cells(directory)
    unavailable = _unavailable(where.adapters, version)
    return ReleaseRun(Path(directory), version, libraries, groups, ran, run_ids, unavailable)


def _unavailable(path: Path, version: str) -> dict[str, str]:
    """The adapters of the charted release (those whose probed version is it) that
    adapters.json records as not available, with the reason; {} without the file."""
    if not path.is_file():
        return {}
    probed = _json(path)
    return {
        name: str(entry.get("reason") or "not available")
        for name, entry in probed.items()
        if isinstance(entry, dict)
        and not entry.get("available")
        and str(entry.get("version") or "").split("+")[0] == version
    }


def _usage(message: str) -> Exception:
    from caiconform.cli import UsageError

    return UsageError(message)


def _json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise _usage(f"{path}: not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise _usage(f"{path}: not a JSON object")
    return value


def _chart(path: str) -> dict[str, Any]:
    """A chart file (`releases.json`), checked as a run directory's charts are."""
    from caiconform.report.releases import SCHEMA

    chart = _json(Path(path))
    if chart.get("schema") != SCHEMA or not isinstance(chart.get("library"), str):
        raise _usage(f"{path}: not a releases chart (schema {SCHEMA} expected)")
    return chart


def _write(path: Path, text: str) -> None:
    from caiconform.cli import UsageError

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _annotate(target: str, chart: dict[str, Any]) -> str:
    """Copy the chart into the run directory `target` (`releases-LIBRARY.json`, beside the
    charts of other libraries there) and date its findings.json's groups by every chart there;
    the line that says what it did."""
    from caiconform.cli import UsageError
    from caiconform.report.releases import (
        ReleasesInputError,
        annotate_since,
        chart_file,
        load_charts,
    )
    from caiconform.results.expectations import env_versions, lookup_version
    from caiconform.rundir import RunDir

    directory = RunDir(target)
    if not directory.path.is_dir():
        raise UsageError(f"--annotate: {target}: not a run directory")
    env = _json(directory.env) if directory.env.is_file() else {}
    path = directory.path / chart_file(chart["library"])
    _write(path, json.dumps(chart, indent=1, ensure_ascii=False) + "\n")
    if not directory.findings.is_file():
        return (
            f"wrote {path}; no findings.json there: `caiconform report {target}` dates its findings"
        )
    try:
        charts = load_charts(directory.path)
        catalogue = json.loads(directory.findings.read_text(encoding="utf-8"))
        groups = catalogue["groups"]
    except ReleasesInputError as exc:
        raise UsageError(str(exc)) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{directory.findings}: not a findings.json ({exc})") from None
    versions = env_versions(env or {})
    libraries = {c["library"]: lookup_version(versions, c["library"]) for c in charts}
    annotate_since(groups, charts, libraries)
    _write(directory.findings, json.dumps(catalogue, indent=1, ensure_ascii=False) + "\n")
    library = chart["library"]
    ours = [
        g
        for g in groups
        if not g.get("folded_into")
        and any(e["library"] == library for e in g.get("releases") or [])
    ]
    upgrades = [
        g for g in ours if any(e["library"] == library and e.get("upgrade") for e in g["releases"])
    ]
    fixed = "; ".join(str(g.get("finding")) for g in upgrades[:5]) + (
        f" and {len(upgrades) - 5} more" if len(upgrades) > 5 else ""
    )
    return (
        f"dated {len(ours)} finding(s) of {target} by {library}'s releases (it has "
        f"{libraries.get(library) or '?'}); {len(upgrades)} fixed by an upgrade"
        + (f": {fixed}" if upgrades else "")
    )


def run(args: argparse.Namespace) -> int:
    from caiconform.cli import UsageError
    from caiconform.report.html import releases_page
    from caiconform.report.releases import (
        ReleasesInputError,
        build_chart,
        charted_library,
        render_markdown,
        version_key,
    )

    if args.chart is not None:
        if args.run_dirs or not args.annotate:
            raise UsageError(
                "--chart dates a run by a chart made before: give it with --annotate RUN and no "
                "run directories"
            )
        print(_annotate(args.annotate, _chart(args.chart)))
        return 0
    if len(args.run_dirs) < 2:
        given = "one was given" if args.run_dirs else "none was given"
        raise UsageError(f"give the run directories of two or more releases ({given})")
    libraries = [_libraries(directory) for directory in args.run_dirs]
    try:
        library, others = charted_library(libraries, args.library)
        versions = [str(found[library]) for found in libraries]
        for version in versions:
            version_key(version)
        runs = [
            _release_run(directory, found, version)
            for directory, found, version in zip(args.run_dirs, libraries, versions, strict=True)
        ]
        chart = build_chart(runs, library, others)
    except ReleasesInputError as exc:
        raise UsageError(str(exc)) from None
    out = Path(args.out) if args.out else Path(args.run_dirs[0]).resolve().parent / library
    _write(out / "releases.json", json.dumps(chart, indent=1, ensure_ascii=False) + "\n")
    _write(out / "releases.md", render_markdown(chart))
    _write(out / "releases.html", releases_page(chart))
    annotated = _annotate(args.annotate, chart) if args.annotate else None
    if args.json:
        print(json.dumps(chart, indent=1, ensure_ascii=False))
        return 0
    summary = chart["summary"]
    print(
        f"{library}: {summary['rows']} finding(s) over {len(chart['versions'])} releases "
        f"({', '.join(chart['versions'])}), {summary['of_library']} of them {library}'s, "
        f"{len(summary['fixed'])} fixed in a later release, {summary['in_newest']} in "
        f"{chart['versions'][-1]}; wrote releases.json, releases.md, releases.html to {out}"
    )
    if summary["tested_nothing"]:
        print(
            f"NOT RUN: {', '.join(summary['tested_nothing'])} ran no cell (the library would "
            "not import, or no GPU)"
        )
    for release in chart["releases"]:
        if release.get("unavailable"):
            names = ", ".join(release["unavailable"])
            reason = next(iter(release["unavailable"].values()))
            print(f"WOULD NOT LOAD: {release['version']}: {names}: {reason}")
    if others:
        print(f"note: other libraries' versions differ too: {', '.join(others)}")
    if annotated:
        print(annotated)
    return 0
