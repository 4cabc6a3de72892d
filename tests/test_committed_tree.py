"""The committed tree holds published results, not a lab notebook: reports/ keeps the latest
complete matrix and a few summaries (reports/README.md) under MAX_REPORT_FILES files; a run's
reproducers travel as one archive, and any loose one is shrunk or cited by its catalogue."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: published results only (investigations live in git history and docs/performance.md); the
#: latest run alone is about 80 files: its report, and each library's conformance record as
#: Markdown, HTML and JSON
MAX_REPORT_FILES = 120
MAX_FILES_PER_DIRECTORY = 300


def _tracked(prefix: str) -> list[str]:
    try:
        out = subprocess.run(
            ["git", "ls-files", prefix], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"not a git checkout: {exc}")
    files = out.splitlines()
    if files and not (ROOT / prefix).is_dir():
        pytest.skip(f"{prefix}/ is not in this copy of the tree ({len(files)} files committed)")
    return files


def _cited(files: list[str]) -> set[str]:
    """The reproducers each committed findings.json names, as repository paths."""
    cited = set()
    for name in files:
        if Path(name).name != "findings.json":
            continue
        catalogue = json.loads((ROOT / name).read_text(encoding="utf-8"))
        for group in catalogue.get("groups", []):
            repro = (group.get("reproducer") or {}).get("repro")
            if repro:
                cited.add((Path(name).parent / repro).as_posix())
    return cited


def test_reports_hold_no_bulk_of_generated_files():
    files = _tracked("reports")
    assert files, "reports/ holds no committed run"
    assert len(files) < MAX_REPORT_FILES, len(files)
    per_directory = Counter(str(Path(f).parent) for f in files)
    crowded = {d: n for d, n in per_directory.items() if n > MAX_FILES_PER_DIRECTORY}
    assert not crowded, crowded


def test_committed_reproducers_are_shrunk_or_cited_by_the_catalogue():
    files = _tracked("reports")
    cited = _cited(files)
    scripts = [f for f in files if "/repro/" in f and f.endswith(".py")]
    extra = [f for f in scripts if "__min-" not in f and f not in cited]
    assert not extra, extra[:5]
