"""Building a report: load run directories, merge, apply expectations, write the three files.

This is what `caiconform report` and the pytest plugin's `--cai-report` call; the renderers
never read a journal themselves.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from caiconform.expectations import (
    Application,
    Expectation,
    apply_expectations,
    env_versions,
    lookup_version,
)
from caiconform.report.html import render_html
from caiconform.report.load import ReportInputError, Run, load_run
from caiconform.report.markdown import render_markdown
from caiconform.report.matrix import build_matrix
from caiconform.report.merge import merge_runs

__all__ = ["Written", "write_report", "load_runs", "apply_to_run", "REPORT_FILES"]

REPORT_FILES = ("matrix.json", "matrix.md", "index.html", "findings.json")


@dataclass
class Written:
    """What a report build produced: the files, the matrix, and the expectations' verdict."""

    out_dir: Path
    files: list[Path]
    matrix: dict
    application: Application | None


def load_runs(run_dirs: Sequence[str | Path]) -> Run:
    """Load and merge run directories (one directory is just loaded)."""
    runs = [load_run(directory) for directory in run_dirs]
    return runs[0] if len(runs) == 1 else merge_runs(runs)


def apply_to_run(expectations: list[Expectation], run: Run) -> Application:
    """Apply expectations to every record, each judged against its own run's library versions."""
    versions = {run_id: env_versions(env) for run_id, env in run.envs.items()}

    def version_of(record: dict) -> Callable[[str], str | None]:
        table = versions.get(str(record["run_id"]), {})
        return lambda name: lookup_version(table, name)

    return apply_expectations(expectations, run.records, version_of)


def write_report(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path | None = None,
    expectations: list[Expectation] | None = None,
    title: str | None = None,
) -> Written:
    """Write matrix.json, matrix.md and index.html for `run_dirs` (merged) into `out_dir`
    (default: the first run directory). Raises ReportInputError for unusable input."""
    if not run_dirs:
        raise ReportInputError("no run directory given")
    run = load_runs(run_dirs)
    out = Path(out_dir if out_dir is not None else run_dirs[0])
    if out.exists() and not out.is_dir():
        raise ReportInputError(f"{out}: exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReportInputError(f"{out}: cannot create the output directory ({exc})") from None
    application = apply_to_run(expectations, run) if expectations is not None else None
    matrix = build_matrix(run, out, application)
    title = title or "caiconform report: " + ", ".join(sorted(matrix["runs"]))
    contents = {
        "matrix.json": json.dumps(matrix, indent=1, ensure_ascii=False) + "\n",
        "matrix.md": render_markdown(matrix, title),
        "index.html": render_html(matrix, title),
        "findings.json": json.dumps(matrix["catalogue"], indent=1, ensure_ascii=False) + "\n",
    }
    files = []
    for name in REPORT_FILES:
        path = out / name
        try:
            path.write_text(contents[name], encoding="utf-8")
        except OSError as exc:
            raise ReportInputError(f"{path}: cannot write ({exc.strerror or exc})") from None
        files.append(path)
    return Written(out, files, matrix, application)
