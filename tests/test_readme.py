"""The README's examples run as written: each `caiconform check` / `caiconform rules` command
under a `# exit N` comment in its bash blocks exits N on this machine (they need no GPU); the
quick start's two commands are the ones `.ci/run` runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
_BASH_BLOCK = re.compile(r"^```bash\n(.*?)^```", re.S | re.M)
_EXIT = re.compile(r"^# exit (\d+)\b")


def _examples() -> list[tuple[str, int]]:
    """(command line, expected exit status) for each command under an `# exit N` comment."""
    found = []
    for block in _BASH_BLOCK.findall(README.read_text(encoding="utf-8")):
        expected = None
        for line in block.splitlines():
            mark = _EXIT.match(line)
            if mark:
                expected = int(mark.group(1))
            elif expected is not None and line.strip():
                found.append((line, expected))
                expected = None
    return found


EXAMPLES = _examples()


def test_the_readme_has_check_and_rules_examples_with_their_exit_status():
    commands = [command for command, _ in EXAMPLES]
    assert any("caiconform check" in c for c in commands), commands
    assert any("caiconform rules" in c for c in commands), commands
    assert {status for _, status in EXAMPLES} >= {0, 1}, EXAMPLES


@pytest.mark.parametrize(("command", "expected"), EXAMPLES, ids=[c for c, _ in EXAMPLES])
def test_readme_example_exits_as_stated(command, expected, tmp_path):
    """`caiconform` is this checkout's CLI run by this Python (whatever else is installed)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    script = f'caiconform() {{ "{sys.executable}" -m caiconform.cli "$@"; }}\n{command}\n'
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == expected, (
        f"got exit {done.returncode}, expected {expected} [README example: {command}]\n"
        f"{done.stdout[-2000:]}{done.stderr[-2000:]}"
    )
    if expected != 2:
        assert "Traceback" not in done.stderr, done.stderr


def test_ci_runs_the_readme_quick_start():
    """.ci/run installs what the quick start installs and runs its exact test command."""
    readme = README.read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1]
    install, tests = _BASH_BLOCK.search(quick_start).group(1).strip().splitlines()
    assert install.startswith('pip install ".[test]"'), install
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install -q ".[test]"' in ci
    assert re.search(rf"^{re.escape(tests)}$", ci, re.M), (tests, ci)


def test_caiconform_version_prints_the_version():
    from caiconform.cli import version

    done = subprocess.run(
        [sys.executable, "-m", "caiconform.cli", "--version"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"caiconform {version()}"


#: the README's names of the libraries it says were measured -> their distributions in env.json
#: (`lookup_version` finds `cupy` in `cupy-cuda13x`)
_DISTRIBUTIONS = {
    "numba-cuda": "numba-cuda",
    "numba-cuda-mlir": "numba-cuda-mlir",
    "CuPy": "cupy",
    "PyTorch": "torch",
    "JAX": "jax",
    "cuda.core": "cuda-core",
    "PyCUDA": "pycuda",
    "RMM": "rmm",
    "cuda-cccl": "cuda-cccl",
    "NumPy": "numpy",
    "Warp": "warp-lang",
}
LATEST_ENV = ROOT / "reports" / "latest" / "env.json"
_MEASURED = re.compile(
    r"Versions measured together in the published run.*?`env\.json`\): (.+?)\.\s", re.S
)


@pytest.mark.skipif(
    not LATEST_ENV.is_file(), reason="reports/latest is not in this copy of the tree"
)
def test_the_readme_s_measured_versions_are_what_the_published_run_ran():
    """Each library and version the README lists as measured together is the one
    reports/latest's env.json recorded (a library that run did not have is named apart, with
    the report that measured it)."""
    import json

    from caiconform.results.expectations import env_versions, lookup_version

    found = _MEASURED.search(README.read_text(encoding="utf-8"))
    assert found, "the README lists the versions measured together in the published run"
    versions = env_versions(json.loads(LATEST_ENV.read_text(encoding="utf-8")))
    listed = [" ".join(item.split()) for item in found.group(1).split(",")]
    assert len(listed) >= 5, listed
    for item in listed:
        name, _, version = item.rpartition(" ")
        assert name in _DISTRIBUTIONS, f"{name!r}: which distribution is it? ({item})"
        recorded = lookup_version(versions, _DISTRIBUTIONS[name])
        assert recorded == version, f"README: {item}; reports/latest/env.json: {recorded}"
