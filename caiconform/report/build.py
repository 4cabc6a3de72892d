"""Building a report: load run directories, merge, apply expectations, judge, write the files.

This is what `caiconform report` and the pytest plugin's `--cai-report` call; the renderers
never read a journal themselves.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caiconform.report.html import render_html
from caiconform.report.load import ReportInputError, Run, load_run
from caiconform.report.markdown import LIBRARIES_DIR, render_pages
from caiconform.report.matrix import build_matrix, version_of
from caiconform.report.merge import merge_runs
from caiconform.report.runstate import as_json as run_state_json
from caiconform.report.runstate import headline_in_state, states_of
from caiconform.results.expectations import Application, Expectation, apply_expectations
from caiconform.results.severity import DEFAULT_FAIL_ON
from caiconform.rundir import FINDINGS_JSON, INDEX_HTML, MATRIX_JSON, MATRIX_MD, REPORT_FILES

__all__ = ["Written", "write_report", "load_runs", "apply_to_run"]


@dataclass
class Written:
    """What a report build produced: the files, the matrix, and the expectations' verdict."""

    out_dir: Path
    files: list[Path]
    matrix: dict
    application: Application | None

    @property
    def verdict(self) -> dict[str, Any]:
        """matrix.json's `verdict`: headline, ok, fail_on, status per catalogue group."""
        return self.matrix["verdict"]

    @property
    def ok(self) -> bool:
        """Whether the verdict passes: no failing defect, no expectation entry error."""
        return bool(self.matrix["verdict"]["ok"])


def load_runs(run_dirs: Sequence[str | Path]) -> Run:
    """Load and merge run directories (one directory is just loaded)."""
    runs = [load_run(directory) for directory in run_dirs]
    return runs[0] if len(runs) == 1 else merge_runs(runs)


def apply_to_run(expectations: list[Expectation], run: Run) -> Application:
    """Apply expectations to every record, each judged against its own run's library versions."""
    return apply_expectations(expectations, run.records, version_of(run.envs))


def write_report(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path | None = None,
    expectations: list[Expectation] | None = None,
    title: str | None = None,
    fail_on: Iterable[str] = DEFAULT_FAIL_ON,
) -> Written:
    """Write matrix.json, matrix.md (with its pages: `markdown.render_pages`), index.html and
    findings.json for `run_dirs` (merged) into `out_dir` (default: the first run directory),
    judged at `fail_on` with `expectations` (`caiconform.results.verdict`). Raises ReportInputError
    for unusable input."""
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
    matrix = build_matrix(run, out, application, fail_on=fail_on, expectations=expectations)
    matrix["run_state"] = run_state_json(states_of(run))
    # no OK over half a run or over nothing, in the pages as on the command line
    verdict = matrix.get("verdict")
    if verdict and verdict.get("headline"):
        verdict["headline"] = headline_in_state(verdict["headline"], matrix["run_state"]["status"])
    title = title or "caiconform report: " + ", ".join(sorted(matrix["runs"]))
    pages = render_pages(matrix, title)
    contents = {
        MATRIX_JSON: json.dumps(matrix, indent=1, ensure_ascii=False) + "\n",
        MATRIX_MD: pages.pop(MATRIX_MD),
        INDEX_HTML: render_html(matrix, title),
        FINDINGS_JSON: json.dumps(matrix["catalogue"], indent=1, ensure_ascii=False) + "\n",
    }
    files = [_write(out / name, contents[name]) for name in REPORT_FILES]
    _remove_stale_library_pages(out, set(pages))
    for name, text in pages.items():
        _write(out / name, text)
    return Written(out, files, matrix, application)


def _write(path: Path, text: str) -> Path:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ReportInputError(f"{path}: cannot write ({exc.strerror or exc})") from None
    return path


def _remove_stale_library_pages(out: Path, pages: set[str]) -> None:
    """A report written again into the same directory leaves no page of a library that has no
    defect any more."""
    folder = out / LIBRARIES_DIR
    if not folder.is_dir():
        return
    for page in folder.glob("*.md"):
        if f"{LIBRARIES_DIR}/{page.name}" not in pages:
            with contextlib.suppress(OSError):
                page.unlink()
