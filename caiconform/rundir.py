"""The files of a run directory, named in one place (`RunDir`).

A run directory is written by the runner (`caiconform run`), read back by `--resume`, the
reports, `findings`, `compare` and the rule coverage, and merged as shards; every one of them
must agree on each file's name, and the names never change: a run written by an earlier
version still loads. The names are the constants below; `RunDir(path)` gives each file's path
in one directory. It imports nothing of caiconform, so every layer may use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "RunDir",
    "JOURNAL",
    "JOURNAL_GZ",
    "JOURNAL_NAMES",
    "CELLS",
    "RUN_JSON",
    "ENV_JSON",
    "ADAPTERS_JSON",
    "SELFCHECK_JSON",
    "VERIFY_JSON",
    "REPRO_DIR",
    "STANDALONE_DIR",
    "WORKERS_DIR",
    "MATRIX_JSON",
    "MATRIX_MD",
    "INDEX_HTML",
    "FINDINGS_JSON",
    "REPORT_FILES",
]

#: one record per finished example (`runner.journal`); a finished run may be gzipped
JOURNAL = "results.jsonl"
JOURNAL_GZ = "results.jsonl.gz"
#: the journal's names in the order a reader looks for them
JOURNAL_NAMES = (JOURNAL, JOURNAL_GZ)
#: one line per finished cell (`runner.journal`)
CELLS = "cells.jsonl"
#: the run's id, settings and what its start measured (`runner.driver`, `runner.startup`)
RUN_JSON = "run.json"
#: the environment the run saw (`caiconform.env.capture`)
ENV_JSON = "env.json"
#: each library's probe: available, reason, version (`runner.driver`)
ADAPTERS_JSON = "adapters.json"
#: what the adapters' self-checks found (`adapters.selfcheck`)
SELFCHECK_JSON = "selfcheck.json"
#: the standalone reproducers' verification (`report.verify`)
VERIFY_JSON = "verify.json"
#: the reproducer scripts of the run's non-pass examples (`runner.repro`)
REPRO_DIR = "repro"
#: the standalone reproducers `findings --verify` writes (`report.verify`)
STANDALONE_DIR = "standalone"
#: the worker processes' logs and the start's helpers' (`runner.pool`, `runner.startup`)
WORKERS_DIR = "workers"
#: the report's files (`report.build`), written into the run directory unless told otherwise
MATRIX_JSON = "matrix.json"
MATRIX_MD = "matrix.md"
INDEX_HTML = "index.html"
FINDINGS_JSON = "findings.json"
REPORT_FILES = (MATRIX_JSON, MATRIX_MD, INDEX_HTML, FINDINGS_JSON)


@dataclass(frozen=True)
class RunDir:
    """One run directory: each of its files' paths (none need exist)."""

    path: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))

    @property
    def journal(self) -> Path:
        return self.path / JOURNAL

    def journal_found(self) -> Path | None:
        """The journal there is, plain or gzipped (JOURNAL_NAMES' order); None without one."""
        for name in JOURNAL_NAMES:
            if (self.path / name).is_file():
                return self.path / name
        return None

    @property
    def cells(self) -> Path:
        return self.path / CELLS

    @property
    def run_json(self) -> Path:
        return self.path / RUN_JSON

    @property
    def env(self) -> Path:
        return self.path / ENV_JSON

    @property
    def adapters(self) -> Path:
        return self.path / ADAPTERS_JSON

    @property
    def verify(self) -> Path:
        return self.path / VERIFY_JSON

    @property
    def repro(self) -> Path:
        return self.path / REPRO_DIR

    @property
    def standalone(self) -> Path:
        return self.path / STANDALONE_DIR

    @property
    def workers(self) -> Path:
        return self.path / WORKERS_DIR

    @property
    def findings(self) -> Path:
        return self.path / FINDINGS_JSON

    @property
    def matrix_md(self) -> Path:
        return self.path / MATRIX_MD

    @property
    def index_html(self) -> Path:
        return self.path / INDEX_HTML
