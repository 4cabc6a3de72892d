"""The conformance suites (suites/) run as their own command, `python -m pytest suites`: they
are not among the project's tests (pyproject.toml `testpaths`), since a finding about a
third-party library is no defect of caiconform's. Their machinery is still the project's: here
pytest runs them in a fresh process, every suite module collected, and the one item that needs
no GPU (the schema family on synthetic dicts) judged end to end, through the runner's workers,
the verdict and the item's failure message.

Two validators judge: caiconform's own, under which the item passes (valid dicts draw no MUST
or SHOULD finding, each mutant exactly the rule it breaks), and a blind one, put into every
process of the run (the workers too) by a `sitecustomize` module, under which it fails naming
the rules the mutants break.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: a validator that finds nothing, in every process that imports site (the runner's workers)
BLIND_VALIDATOR = """
import caiconform
from caiconform.spec.findings import Report

caiconform.validate = lambda target, *, version=None: Report("blind", 3, [])
"""

#: the item that needs no GPU
SYNTHETIC_ITEM = "suites/test_schema.py::test_schema_synthetic[synthetic]"


def _run_suites(tmp_path: Path, blind: bool) -> subprocess.CompletedProcess[str]:
    """`python -m pytest suites -k synthetic`, small and unshrunk, from the repository root."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    if blind:
        site = tmp_path / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(BLIND_VALIDATOR)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    command = [
        sys.executable,
        "-m",
        "pytest",
        "suites",
        "-k",
        "synthetic",
        "-q",
        "-rA",
        "-p",
        "no:cacheprovider",
        "--basetemp",
        str(tmp_path / "basetemp"),
        "--suite-max-examples",
        "10",
        "--suite-workers",
        "1",
        "--suite-shrink-budget",
        "0",
    ]
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_project_tests_leave_the_suites_to_their_own_command() -> None:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert ini["testpaths"] == ["tests"], ini["testpaths"]


@pytest.mark.parametrize("blind", [False, True], ids=["validator", "blind-validator"])
def test_the_suites_collect_and_judge_the_synthetic_schema_cell(tmp_path: Path, blind) -> None:
    proc = _run_suites(tmp_path, blind)
    out = proc.stdout + proc.stderr
    tail = out[-4000:]
    # every suite module collected (an import or collection error is pytest's exit 2)
    assert "error" not in out.splitlines()[-1], tail
    deselected = re.search(r"(\d+) deselected", out)
    assert deselected and int(deselected.group(1)) > 0, tail  # the suites' other items
    if not blind:
        assert proc.returncode == 0, tail
        assert f"PASSED {SYNTHETIC_ITEM}" in out, tail
        return
    assert proc.returncode == 1, tail
    assert f"FAILED {SYNTHETIC_ITEM}" in out, tail
    # the item's message gives the rule a mutant broke and what the validator said
    assert re.search(r"mutant: got \[\], expected exactly \[CAI-[A-Z-]+\]", out), tail
