"""nox sessions: the project's tests and lint, the conformance suite per library, the full
matrix, the report and the benchmarks.

    nox -l                       list the sessions
    nox -s tests lint            CPU: the project's own tests, ruff, the import contract
    nox -s "suite(torch)"        one library against the reference, in its own venv (GPU)
    nox -s matrix                every library against every other, one venv (GPU)
    nox -s report -- RUN_DIR     rebuild a run's report (default: the newest under reports/)
    nox -s releases -- numba-cuda 0.26.0 0.27.0 --libraries reference,numba
                                 each release in a venv of its own, then their chart (GPU)
    nox -s bench                 the benchmarks in benchmarks/ (GPU)

Offline mode, for GPU machines without a network: `CAICONFORM_NOX_OFFLINE=1 nox -s matrix`
runs every session in the current Python environment (no venv is made and nothing is
installed: the libraries must already be there). `nox --no-venv -s matrix` does the same for one
invocation. Runs are written to reports/<UTC time>-<session>/ (docs/reports.md).
"""

from __future__ import annotations

import os
import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path

import nox

#: CAICONFORM_NOX_OFFLINE=1: reuse the current environment, install nothing
OFFLINE = os.environ.get("CAICONFORM_NOX_OFFLINE", "") not in ("", "0")
BACKEND = "none" if OFFLINE else None
REPORTS = Path("reports")

#: suite parameter -> (pip requirements, caiconform adapters it brings)
LIBRARIES = {
    "numba": (["numba-cuda"], ["numba", "numba-from-cai", "numba-kernel"]),
    "cupy12": (["cupy-cuda12x"], ["cupy"]),
    "cupy13": (["cupy-cuda13x"], ["cupy"]),
    "torch": (["torch"], ["torch"]),
    "jax": (["jax[cuda13]"], ["jax"]),
}
#: the matrix session's venv (cupy-cuda12x and cupy-cuda13x cannot share one)
MATRIX = ["numba-cuda", "cupy-cuda13x", "torch", "jax[cuda13]"]

nox.options.sessions = ["tests", "lint"]

sys.path.insert(0, str(Path(__file__).resolve().parent / "scripts"))
import releases_plan  # noqa: E402  (scripts/releases_plan.py: no caiconform import)


def _install(session: nox.Session, *requirements: str) -> None:
    """pip install into the session's venv; offline (no venv), only say what is assumed."""
    if OFFLINE or session.venv_backend == "none":
        session.log(f"offline: using the current environment's {' '.join(requirements)}")
        return
    session.install(*requirements)


def _run_dir(name: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return REPORTS / f"{stamp}-{name}"


def _matrix_run(session: nox.Session, name: str, libraries: list[str] | None) -> None:
    """`caiconform run` into a fresh run directory, then its report; extra `caiconform run`
    options come after `--` (e.g. `-- --max-examples 20 --checks roundtrip`)."""
    out = _run_dir(name)
    args = ["caiconform", "run", "--out", str(out)]
    if libraries is not None:
        args += ["--libraries", ",".join(libraries)]
    session.run(*args, *session.posargs)
    session.run("caiconform", "report", str(out))
    session.log(f"report: {out / 'index.html'}")


@nox.session(venv_backend=BACKEND)
def tests(session: nox.Session) -> None:
    """The project's own tests (GPU tests skip without a GPU)."""
    _install(session, "-e", ".[test]")
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session(venv_backend=BACKEND)
def lint(session: nox.Session) -> None:
    """ruff check, ruff format --check and the import contract (`lint-imports`, pyproject.toml
    `[tool.importlinter]`: the layers and no import cycles)."""
    _install(session, "ruff", "import-linter")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("lint-imports")


@nox.session(venv_backend=BACKEND)
@nox.parametrize("library", list(LIBRARIES))
def suite(session: nox.Session, library: str) -> None:
    """One library against the reference, in a venv holding only that library (GPU)."""
    requirements, adapters = LIBRARIES[library]
    _install(session, "-e", ".[test]", *requirements)
    _matrix_run(session, library, ["reference", *adapters])
    if library == "numba":
        session.run("python", "-m", "pytest", "suites/test_emm.py", "-ra")


@nox.session(venv_backend=BACKEND)
def matrix(session: nox.Session) -> None:
    """Every installed library against every other, all in one venv (GPU)."""
    _install(session, "-e", ".[test]", *MATRIX)
    _matrix_run(session, "matrix", None)


@nox.session(venv_backend=BACKEND)
def report(session: nox.Session) -> None:
    """Rebuild the report of a run: `nox -s report -- RUN_DIR [--merge DIR ...]`."""
    _install(session, "-e", ".")
    args = list(session.posargs)
    if not args:
        runs = sorted(p for p in REPORTS.glob("*") if (p / "env.json").is_file())
        if not runs:
            session.error("no run directory under reports/; give one: nox -s report -- RUN_DIR")
        args = [str(runs[-1])]
    session.run("caiconform", "report", *args)


@nox.session(venv_backend=BACKEND)
def releases(session: nox.Session) -> None:
    """Several releases of one library, each in a venv of its own with the other libraries
    fixed, then `caiconform releases` charts them (GPU): `nox -s releases -- LIBRARY VERSION...
    [--no-index] [--find-links DIR] [--constraints FILE] [--with REQ] [--system-site-packages]
    [caiconform run options]` (scripts/releases_plan.py; no arguments: CAICONFORM_RELEASES)."""
    if OFFLINE or session.venv_backend == "none":
        session.error("releases installs each release: not offline (scripts/gpu_releases.sh)")
    words = session.posargs or shlex.split(os.environ.get("CAICONFORM_RELEASES", ""))
    try:
        plan = releases_plan.plan(words)
    except releases_plan.PlanError as exc:
        session.error(str(exc))
    session.install(*plan.index, "-e", ".")
    constraints: list[str] = []
    if plan.constraints is not None:
        path = Path(session.create_tmp()) / "constraints.txt"
        text = Path(plan.constraints).read_text(encoding="utf-8")
        path.write_text(releases_plan.constraints_without(text, plan.library), encoding="utf-8")
        constraints = ["-c", str(path)]
    root = Path(session.virtualenv.location).parent
    for release in plan.releases:
        venv = root / release.venv
        system = ["--system-site-packages"] if plan.system_site_packages else []
        session.run("python", "-m", "venv", "--clear", *system, str(venv))
        python = str(venv / "bin" / "python")
        session.run(python, "-m", "pip", "install", *constraints, *release.install, external=True)
        probe = f"import importlib.metadata as m; print(m.version({release.library!r}))"
        found = session.run(python, "-c", probe, silent=True, external=True) or ""
        if found.strip() != release.version:
            session.error(f"{release.library} {release.version} asked, {found.strip()} installed")
        # 1: defects found, 3: a cell did not finish, 4: nothing tested (the release would not
        # import): the chart says so ("not run"), the next release still runs
        session.run(
            python, "-m", "caiconform.cli", *release.run, external=True, success_codes=[0, 1, 3, 4]
        )
        session.log(f"{release.library} {release.version}: {release.out}")
    if len(plan.releases) > 1:
        session.run("caiconform", *plan.chart)


@nox.session(venv_backend=BACKEND)
def bench(session: nox.Session) -> None:
    """Each benchmarks/bench_*.py script (GPU); arguments after `--` go to every script."""
    _install(session, "-e", ".[test]", "numba-cuda")
    for script in sorted(Path("benchmarks").glob("bench_*.py")):
        session.run("python", str(script), *session.posargs)
