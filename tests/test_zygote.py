"""The zygote (`runner.zygote`): one process imports the libraries once and forks the slots'
fork servers, on their own pipes and stderr, in their own environment; a run with it journals
what a run without it does. CPU only, with the synthetic libraries (one with a slow import)."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest

from caiconform.runner.forkserver import PRELOAD_ENV
from caiconform.runner.pool import Worker
from caiconform.runner.zygote import Zygote
from tests.test_speed import EXECUTE, HOOK, SOURCE, SYNTHETIC, _outcomes, _run

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _importable_synthetic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


@pytest.fixture
def zygote(tmp_path):
    preload = {"modules": [SYNTHETIC], "libraries": ["slow-good"], "source": SOURCE}
    env = {
        **Worker(0)._environment(),
        PRELOAD_ENV: json.dumps(preload),
        "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path]),
    }
    with open(tmp_path / "zygote.log", "ab") as log:
        made = Zygote(env, log)
    yield made
    made.close()


def _run_on(worker: Worker, producer: str, n: int):
    return worker.run(EXECUTE, {"n": n}, "pid" if producer == "pid" else producer, "good",
                      timeout=30, module=SYNTHETIC, source=SOURCE)  # fmt: skip


def test_a_slots_fork_server_comes_from_the_zygote_and_survives_crashes(zygote, tmp_path):
    worker = Worker(0, health_hooks=[HOOK], fork=True, log_path=tmp_path / "w0.log")
    worker.zygote = zygote
    try:
        assert _run_on(worker, "good", 0).result.outcome == "pass"
        server = worker._proc.pid
        with open(f"/proc/{server}/stat") as fh:
            parent = int(fh.read().rsplit(")", 1)[1].split()[1])
        assert parent == zygote.proc.pid  # forked by the zygote, not started by us
        assert _run_on(worker, "abort", 999).result.outcome == "crash"
        assert _run_on(worker, "good", 0).result.outcome == "pass"
        assert worker._proc.pid == server and worker.starts == 1
        log = (tmp_path / "w0.log").read_text(errors="replace")
        assert "Fatal Python error: Aborted" in log  # its children's stderr is the slot's log
    finally:
        worker.close()


def test_a_dead_server_is_seen_with_its_status_and_replaced(zygote, tmp_path):
    worker = Worker(0, fork=True, log_path=tmp_path / "w0.log")
    worker.zygote = zygote
    try:
        assert _run_on(worker, "good", 0).result.outcome == "pass"
        proc = worker._proc
        os.killpg(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
        assert not worker.alive
        assert _run_on(worker, "good", 0).result.outcome == "pass"
        assert worker.starts == 2 and worker._proc.pid != proc.pid
    finally:
        worker.close()


def test_a_running_server_is_polled_without_asking_the_zygote(zygote, tmp_path, monkeypatch):
    """Every example polls its server twice: while it runs, its pidfd answers and the zygote
    (a lock and a socket shared by every slot) is not asked; once it died, the zygote's
    status is its exit status."""
    worker = Worker(0, fork=True, log_path=tmp_path / "w0.log")
    worker.zygote = zygote
    asked: list[int] = []
    status = zygote.status
    monkeypatch.setattr(zygote, "status", lambda pid: asked.append(pid) or status(pid))
    try:
        assert _run_on(worker, "good", 0).result.outcome == "pass"
        assert worker.alive and worker.alive
        assert asked == []
        os.killpg(worker._proc.pid, signal.SIGKILL)
        assert worker._proc.wait(timeout=10) == -signal.SIGKILL
        assert asked and set(asked) == {worker._proc.pid}
    finally:
        worker.close()


def test_without_a_zygote_a_slot_starts_cold(zygote, tmp_path):
    zygote.close()
    worker = Worker(0, fork=True, log_path=tmp_path / "w0.log")
    worker.zygote = zygote
    try:
        assert _run_on(worker, "good", 0).result.outcome == "pass"
        assert not hasattr(worker._proc, "_zygote")  # a subprocess.Popen
    finally:
        worker.close()


#: the matrix of the runs compared below: cells that lose processes (crashes, poisoned
#: processes, the floor's crash cap, shrinking) beside cells that lose none, and slow-good
MATRIX = {
    "checks": (SYNTHETIC, "tests.synthetic.floor_checks"),
    "libraries": ("good", "abort", "poison"),
    "extra": ("slow-good",),
}


def test_a_run_with_the_zygote_journals_what_one_without_does(tmp_path):
    """Over MATRIX, 3 preloading fork-server workers whose servers the zygote forks journal
    what servers started one by one journal, and slow-good is imported once, in the zygote.
    MATRIX is the synthetic matrix less the cells of `wrong` and `raises` (they lose no
    process) and the kinds family (the workers it retires are replaced as the poisoned ones
    are): about half the CPU of the whole one."""
    started = time.monotonic()
    with_zygote = _run(tmp_path / "z", 3, fork=True, preload=True, zygote=True, **MATRIX)
    assert time.monotonic() - started < 120
    assert _outcomes(with_zygote) == _outcomes(
        _run(tmp_path / "plain", 3, fork=True, preload=True, **MATRIX)
    )
    log = (with_zygote / "workers" / "zygote.log").read_text(errors="replace")
    assert "fork server: preloaded" in log and "slow-good" in log  # imported once, there
    # ... its own second there, by name: what a run's first fork waits for
    assert re.search(r"slow-good 1\.\d\d", log), log[-400:]
    # ... so the slots' servers, forked from it, find slow-good imported (1 s when it is not)
    for run, fast in ((with_zygote, True), (tmp_path / "plain", False)):
        times = [
            float(line.rsplit(" in ", 1)[1].split()[0])
            for log in (run / "workers").glob("worker-*.log")
            for line in log.read_text(errors="replace").splitlines()
            if line.startswith("fork server: preloaded")
        ]
        assert times and all((t < 0.5) == fast for t in times), (run.name, times)


def test_a_zygote_that_does_not_answer_is_given_up_and_the_slot_starts_cold(
    zygote, tmp_path, monkeypatch
):
    """Still importing (here a one-second import) past SPAWN_TIMEOUT_S: the zygote is closed,
    so no late answer is taken for another spawn, and the slot starts its server itself."""
    from caiconform.runner import zygote as module

    monkeypatch.setattr(module, "SPAWN_TIMEOUT_S", 0.1)
    worker = Worker(0, fork=True, log_path=tmp_path / "w0.log")
    worker.zygote = zygote
    try:
        assert _run_on(worker, "good", 0).result.outcome == "pass"
        assert not hasattr(worker._proc, "_zygote")  # a subprocess.Popen
        assert not zygote.alive
    finally:
        worker.close()


@pytest.mark.parametrize(
    ("argv", "expected"), [([], True), (["--no-zygote"], False), (["--zygote"], True)]
)
def test_the_zygote_is_the_default_and_no_zygote_turns_it_off(argv, expected):
    """On a GPU the slots' fork servers come from the zygote unless `--no-zygote` (`--zygote`,
    the flag of the runs that measured it, is still accepted); the run's default agrees."""
    import argparse

    from caiconform.commands import run as run_command
    from caiconform.runner.config import RunConfig

    parser = argparse.ArgumentParser()
    run_command.add_arguments(parser)
    assert parser.parse_args(argv).zygote is expected
    assert RunConfig(out=Path("x"), checks=[]).zygote is True
