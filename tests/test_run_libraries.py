"""`caiconform run --libraries` with an adapter whose entry point fails to load (issue 26,
item 5): the summary says why it was dropped, and a run where nothing could run because of it
exits non-zero."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REASON = (
    "Library badimport dropped (no cell for it): entry point badimport = "
    "'badimport_nowhere.adapter:Adapter' (group caiconform.adapters) failed to load: "
    "ModuleNotFoundError: No module named 'badimport_nowhere'"
)


def _broken_entry_point(root: Path) -> Path:
    """A distribution `badimport` on `root` whose adapter's module does not exist."""
    info = root / "badimport-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: badimport\nVersion: 0\n")
    (info / "entry_points.txt").write_text(
        "[caiconform.adapters]\nbadimport = badimport_nowhere.adapter:Adapter\n"
    )
    return root


def _run(tmp_path: Path, libraries: str) -> subprocess.CompletedProcess:
    site = _broken_entry_point(tmp_path / "site")
    path = os.pathsep.join(filter(None, [str(ROOT), str(site), os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "caiconform.cli", "run", "--libraries", libraries]
        + ["--checks", "schema", "--max-examples", "2", "--gpus", "0"]
        + ["--out", str(tmp_path / "run")],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": path, "COLUMNS": "1000"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_broken_entry_point_alone_says_why_and_exits_2(tmp_path):
    done = _run(tmp_path, "badimport")
    assert done.returncode == 2, done.stderr
    assert REASON in done.stdout.splitlines()
    assert done.stderr.strip().splitlines()[-1] == (
        "caiconform: error: nothing ran: every library asked for was dropped (reasons above)"
    )


def test_a_broken_entry_point_among_good_names_is_not_dropped_silently(tmp_path):
    done = _run(tmp_path, "reference,badimport")
    assert REASON in done.stdout.splitlines()
    assert "nothing ran: every library" not in done.stderr
