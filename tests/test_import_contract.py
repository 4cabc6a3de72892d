"""The import contract of pyproject.toml's `[tool.importlinter]` holds: every layer imports only
the layers below it, and no package's modules import each other in a cycle (`lint-imports`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_import_contract_is_kept() -> None:
    pytest.importorskip("importlinter", reason="import-linter is not installed (the test extra)")
    command = shutil.which("lint-imports")
    if command is None:
        pytest.skip("import-linter is installed without its lint-imports command")
    done = subprocess.run(
        [command, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
