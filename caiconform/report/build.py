"""Building a report: load run directories, merge, apply expectations, judge, write the files.

This is what `caiconform report` and the pytest plugin's `--cai-report` call; the renderers
never read a journal themselves.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caiconform.report.conformance import Measured, build_records
from caiconform.report.conformance_pages import record_file, record_lines, render_record_html
from caiconform.report.html import render_html
from caiconform.report.load import ReportInputError, Run, load_run
from caiconform.report.markdown import LIBRARIES_DIR, library_page, render_pages
from caiconform.report.matrix import build_matrix, version_of
from caiconform.report.merge import merge_runs
from caiconform.report.runstate import as_json as run_state_json
from caiconform.report.runstate import headline_in_state, states_of
from caiconform.results.expectations import Application, Expectation, apply_expectations
from caiconform.results.severity import DEFAULT_FAIL_ON
from caiconform.rundir import FINDINGS_JSON, INDEX_HTML, MATRIX_JSON, MATRIX_MD, REPORT_FILES

__all__ = ["Written", "write_report", "write_records", "record_pages", "load_runs", "apply_to_run"]

#: the files of `libraries/`: each library's page (its record and defects), its record as JSON
#: and as HTML
RECORD_SUFFIXES = (".md", ".json", ".html")


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
    """Write matrix.json, matrix.md (with its pages: `markdown.render_pages`), index.html,
    findings.json and each library's conformance record (`report.conformance`: its page's top,
    `libraries/<name>.json` and `.html`) for `run_dirs` (merged) into `out_dir` (default: the
    first run directory),
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
    records = build_records([Measured(None, run, matrix)])
    pages = {**render_pages(matrix, title, records), **record_pages(records)}
    contents = {
        MATRIX_JSON: json.dumps(matrix, indent=1, ensure_ascii=False) + "\n",
        MATRIX_MD: pages.pop(MATRIX_MD),
        INDEX_HTML: render_html(matrix, title, records),
        FINDINGS_JSON: json.dumps(matrix["catalogue"], indent=1, ensure_ascii=False) + "\n",
    }
    files = [_write(out / name, contents[name]) for name in REPORT_FILES]
    _remove_stale_library_pages(out, set(pages))
    for name, text in pages.items():
        _write(out / name, text)
    return Written(out, files, matrix, application)


def record_pages(records: Mapping[str, dict[str, Any]], in_report: bool = True) -> dict[str, str]:
    """Each library's conformance record as `libraries/<name>.json` and `libraries/<name>.html`
    (its Markdown is the top of `libraries/<name>.md`, `markdown.render_pages`); `in_report`:
    the pages link back to the report's index."""
    pages = {}
    for library, record in records.items():
        text = json.dumps(record, indent=1, ensure_ascii=False) + "\n"
        html = render_record_html(record, in_report=in_report)
        pages[f"{LIBRARIES_DIR}/{record_file(library, '.json')}"] = text
        pages[f"{LIBRARIES_DIR}/{record_file(library, '.html')}"] = html
    return pages


def write_records(measured: Sequence[Measured], out_dir: str | Path) -> list[Path]:
    """The conformance records of several runs, one column per release measured (`releases.json`
    gives the (release, run) list): `libraries/<name>.json`, `.html` and `.md` (the record
    alone: the defects' details are each run's own report) under `out_dir`."""
    records = build_records(measured)
    pages = record_pages(records, in_report=False)
    for library, record in records.items():
        lines = record_lines(record, in_report=False)
        pages[library_page(library)] = "\n".join(lines).rstrip() + "\n"
    return [_write(Path(out_dir) / name, text) for name, text in pages.items()]


def _write(path: Path, text: str) -> Path:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ReportInputError(f"{path}: cannot write ({exc.strerror or exc})") from None
    return path


def _remove_stale_library_pages(out: Path, pages: set[str]) -> None:
    """A report written again into the same directory leaves no page of a library that is no
    longer in the run (nor, for the page of the groups without a single culprit, when there
    are none)."""
    folder = out / LIBRARIES_DIR
    if not folder.is_dir():
        return
    for page in (p for suffix in RECORD_SUFFIXES for p in folder.glob(f"*{suffix}")):
        if f"{LIBRARIES_DIR}/{page.name}" not in pages:
            with contextlib.suppress(OSError):
                page.unlink()
