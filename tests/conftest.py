"""Shared test configuration: hypothesis profiles, where the spec texts are, and what several
tests share because it costs seconds of CPU: the synthetic matrix runs, the adversarial floor.

`ci` (the default) keeps the property tests to seconds: few examples, no deadline (shared CI
machines stall), no shrink-time surprises. `thorough` is for a
local hunt: `HYPOTHESIS_PROFILE=thorough python -m pytest tests/test_validate_properties.py`.
"""

from __future__ import annotations

import fcntl
import gc
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from caiconform.spec.rules import SPEC_FILES

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile(
    "thorough",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Runs started by the tests (in this process or in the processes they spawn) measure their start
# anew: a test changes adapters and libraries in ways the start cache's key cannot see (a
# monkeypatched probe). tests/test_startcache.py turns it on where it is the subject.
os.environ.setdefault("CAICONFORM_START_CACHE", "off")


# Where the environment forbids writing bytecode (PYTHONDONTWRITEBYTECODE, set on this project's
# machines), every interpreter the tests start (xdist's workers, and the hundreds of run workers,
# fork servers, CLI and pytest processes the tests start) compiled caiconform, the tests and
# their assertion rewriting from source anew: 0.2 s of CPU for each run worker that imports the
# check families, a second or more for each pytest the plugin tests start. The test processes
# write bytecode as Python does by default instead, into the `__pycache__/` folders beside the
# sources (ignored by git: .gitignore). Set before xdist starts its workers, so that they and
# every process started from them inherit it. (A folder of the run's own, PYTHONPYCACHEPREFIX,
# was tried: it keeps the checkout clean but hides the installed packages' own bytecode, which
# every run then compiled anew: 108 s of CPU against 93 s here and 120 s before, for
# test_batch.py, test_pytest_plugin.py and test_suites_run.py.)
if sys.flags.dont_write_bytecode and not os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False


#: how long the collection ahead of the workers may take (about 12 s on the 2-core machine)
PRECOLLECT_TIMEOUT_S = 120
#: set in the collecting processes, which then collect no further ahead
_PRECOLLECTING = "CAICONFORM_TESTS_PRECOLLECTING"


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under xdist, before its workers start (it starts them last): each worker collects every
    test module, and the assertion rewriting is most of a collection (about 10 s of CPU), so
    three workers of a fresh checkout rewrote the same modules side by side. Here the modules
    are collected first, in one process per core each collecting a share, which leaves their
    rewritten bytecode in `__pycache__/` for the workers to load. Only where bytecode is written
    (above); nothing is judged here: a share that fails to collect leaves the workers to collect
    it, and report, as before."""
    config = session.config
    if sys.dont_write_bytecode or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if os.environ.get(_PRECOLLECTING):  # a collecting process itself (-n from PYTEST_ADDOPTS)
        return
    if not config.pluginmanager.hasplugin("dsession") or len(config.option.tx or []) < 2:
        return
    files: set[Path] = set()
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::")[0])
        if not path.exists():  # testpaths are the rootdir's
            path = Path(config.rootpath, arg.split("::")[0])
        if path.is_dir():
            files.update(path.rglob("test_*.py"))
        elif path.suffix == ".py":
            files.add(path)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    shares = max(1, min(cores or 1, len(config.option.tx)))
    biggest_first = sorted(files, key=lambda f: -f.stat().st_size)
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    procs = [
        subprocess.Popen(
            [*command, *map(str, biggest_first[share::shares])],
            cwd=config.invocation_params.dir,
            env={**os.environ, _PRECOLLECTING: "1"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for share in range(shares)
        if biggest_first[share::shares]
    ]
    for proc in procs:  # a share that has not collected in time is the workers' to collect
        try:
            proc.wait(timeout=PRECOLLECT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` on a machine of up to 4 cores: one worker more than its cores. Many tests wait
    on processes they start (runs, workers they crash, hangs they provoke), which leaves a core
    idle; on 2 cores, 3 workers ran the suite in 187-191 s against 235 s with 2 and 194 s with 4
    (docs/performance.md).
    On more cores (a GPU machine, whose tests share one GPU), one per core."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cores = cores or 1
    return cores + 1 if cores <= 4 else cores


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under `-n`, tests are stolen by idle workers (`--dist worksteal`) unless `--dist` was
    given: a few tests take 10-30 s, and xdist's default hands each worker its share up front,
    so one worker can end long after the others."""
    if config.getvalue("dist") != "load" or any(
        str(arg).startswith("--dist") for arg in config.invocation_params.args
    ):
        return None
    from xdist.scheduler import WorkStealingScheduling

    return WorkStealingScheduling(config, log)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection made (the test modules, their items and parameters) lives as long as
    the session: it is set aside from the cyclic collector (`gc.freeze`), so that each pass,
    the automatic ones and the `gc.collect()` the lifetime and deallocation checks call (a
    dozen per call of `emm.paths.PathChecks.run`), walks only what was made since. Late in an
    xdist worker those passes made a 0.1 s test take 1-3 s. Nothing a test makes is frozen:
    its garbage is collected as before (garbage left by collection is collected first)."""
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session")
def spec_dir() -> Path:
    """The folder holding the spec texts: $CAICONFORM_SPEC_DIR, else the committed docs/spec.
    A missing text fails the tests that read it rather than skipping them: docs/spec is part of
    the checkout, so its absence is a broken checkout, not a machine without something."""
    candidate = Path(
        os.environ.get("CAICONFORM_SPEC_DIR") or Path(__file__).parent.parent / "docs" / "spec"
    )
    missing = [name for name in SPEC_FILES.values() if not (candidate / name).is_file()]
    if missing:
        pytest.fail(f"spec texts {missing} not in {candidate} (set CAICONFORM_SPEC_DIR)")
    return candidate


def _built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], Any]) -> Path:
    """`name` in the directory every xdist worker of this pytest run shares (the session's own
    without xdist), made by `build(path)` in the first test process to ask while the others wait
    on its lock (waiting costs no more than building would); `name.done` marks it whole, so a
    build that raised is tried again by the next test asking."""
    shared = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    path = shared / name
    done = shared / f"{name}.done"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            if path.is_dir():
                shutil.rmtree(path)
            build(path)
            done.touch()
    return path


@pytest.fixture(scope="session")
def synthetic_matrix(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """`synthetic_matrix(workers, fork, batch=DEFAULT_BATCH)`: the run directory of
    tests/test_speed.py's synthetic matrix run with those settings, run once per pytest run
    (a run with cold-started workers costs about 30 s of CPU). Shared: copy it before changing
    it."""
    from caiconform.runner.config import DEFAULT_BATCH
    from tests.test_speed import _run

    def run(workers: int, fork: bool, batch: int = DEFAULT_BATCH) -> Path:
        name = f"synthetic-matrix-{workers}-{'fork' if fork else 'cold'}-{batch}"
        return _built_once(
            tmp_path_factory, name, lambda out: _run(out, workers, fork=fork, batch=batch)
        )

    return run


@pytest.fixture(scope="session")
def _adversarial_floor_data(tmp_path_factory: pytest.TempPathFactory) -> list:
    """The adversarial floor as plain JSON (`adversarial.floor_data`, about 7 s of CPU), built
    once per pytest run."""
    from caiconform.checks import adversarial

    path = _built_once(
        tmp_path_factory,
        "adversarial-floor.json",
        lambda path: path.write_text(json.dumps(adversarial.floor_data())),
    )
    return json.loads(path.read_text())


@pytest.fixture
def adversarial_floor(_adversarial_floor_data: list, monkeypatch: pytest.MonkeyPatch) -> None:
    """`adversarial.floor()` answers, for this test, from the floor built once per run (it is
    the floor built here: tests/test_startup.py holds the two to agreeing); the process's own
    cache is left as it was."""
    from caiconform.checks import adversarial

    monkeypatch.setattr(adversarial, "_floor_cache", [])
    adversarial.seed_floor([_adversarial_floor_data])
