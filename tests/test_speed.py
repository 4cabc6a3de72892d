"""Matrix speed without changing results: a cell's examples split over workers, longest cells
first, fork-server workers (a crash costs a fork, not a cold import), per-phase timings, and the
streams spin calibration logic (with a fake measure: no GPU here)."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from caiconform.results.outcome import OUTCOMES, Result
from caiconform.runner import driver
from caiconform.runner.calibrate import SPIN_ENV, calibrate_spin
from caiconform.runner.config import DEFAULT_SHRINK_PATIENCE_S, RunConfig
from caiconform.runner.driver import run_matrix
from caiconform.runner.pool import Worker
from caiconform.runner.schedule import Scheduler
from caiconform.runner.shrink import SHRINK_PATIENCE_EXCHANGES
from tests.test_runner import MISBEHAVIOUR

ROOT = Path(__file__).resolve().parent.parent
SYNTHETIC = "tests.synthetic.checks"
EXECUTE = f"{SYNTHETIC}:execute"
SOURCE = "tests.synthetic.adapters"
KINDS = "tests.synthetic.kind_checks"
HOOK = f"{SYNTHETIC}:healthy"


@pytest.fixture(autouse=True)
def _importable_synthetic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


def _outcomes(run_dir: Path) -> tuple[dict, dict]:
    """Per cell: the explore records in journal order (index, floor, params, outcome, rule),
    and the shrunk (outcome, rule, params)."""
    explore: dict = {}
    shrunk: dict = {}
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        cell = (r["check"], r["producer"], r["consumer"])
        params = json.dumps(r["params"], sort_keys=True)
        if r.get("shrunk"):
            shrunk.setdefault(cell, set()).add((r["outcome"], r["rule"], params))
        else:
            row = (r["index"], r.get("floor"), params, r["outcome"], r["rule"])
            explore.setdefault(cell, []).append(row)
    return explore, shrunk


def _run(
    out: Path,
    workers: int,
    fork: bool,
    preload: bool | None = None,
    zygote: bool = False,
    extra: tuple[str, ...] = (),
    checks: tuple[str, ...] = (SYNTHETIC, "tests.synthetic.floor_checks", KINDS),
    libraries: tuple[str, ...] = ("good", "wrong", "raises", "abort", "poison"),
    **settings,
) -> Path:
    """The synthetic matrix (the libraries in `extra` beside the misbehaving ones); `settings`:
    more RunConfig fields."""
    run_matrix(
        RunConfig(
            out=out,
            checks=list(checks),
            libraries=[*libraries, *extra],
            max_examples=15,
            seed=77,
            workers=workers,
            timeout_s=5.0,
            gpus=0,
            shrink_budget_s=20.0,
            health_hooks=[HOOK],
            adapter_source=SOURCE,
            fork_workers=fork,
            preload_workers=preload,
            zygote=zygote,
            **settings,
        )
    )
    return out


def test_same_seed_same_results_however_the_cells_are_split(synthetic_matrix):
    """One worker running each cell alone and three workers that split cells journal the same
    examples, outcomes and minimal examples, the floor's crash cap included. (Cold-started
    workers against fork servers, and batches against one example at a time: test_batch.py.)"""
    one = _outcomes(synthetic_matrix(1, fork=True))
    three = _outcomes(synthetic_matrix(3, fork=True))
    assert one == three
    floor_abort = one[0][("synthetic-floor", "abort", None)]
    per_mutation = ["crash", "crash", "skip"]  # two mutations without a layout, capped apart
    assert [row[3] for row in floor_abort if row[1]] == [
        *("pass", "crash", "crash", "skip", "skip", "skip"),
        *per_mutation,
        *per_mutation,
    ]


def _kinds_run(out: Path, max_examples: int = 60, **settings) -> list[dict]:
    """The kinds family's one `abort` cell: its drawn records in journal order."""
    config = RunConfig(
        out=out,
        checks=[KINDS],
        libraries=["abort"],
        max_examples=max_examples,
        seed=5,
        workers=2,
        gpus=0,
        shrink=False,
        confirm=False,
        adapter_source=SOURCE,
        **settings,
    )
    run_matrix(config)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return [r for r in records if r.get("index") is not None]


def test_drawn_examples_of_a_kind_are_skipped_after_the_cap(tmp_path):
    """Crashes of one kind of drawn example (here a mutation) in a cell up to the cap (the
    default one; three here, to see the count) are enough: the rest of that kind is journaled
    as skipped, saying why, and the other kinds still run. An example that leaves its worker
    untrusted (the family's `taints`) counts as one lost."""
    import argparse

    from caiconform.commands.run import add_arguments
    from caiconform.runner.config import DRAWN_CRASH_CAP

    # the cap this run falls back on is the one `caiconform run --help` names
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    said = " ".join(parser.format_help().split())
    cap_help = said[said.index("--drawn-crash-cap N drawn") :][:320]
    assert f"(default {DRAWN_CRASH_CAP}; 0 runs them all;" in cap_help, (
        f"got {cap_help!r}, expected it to name the default cap {DRAWN_CRASH_CAP}"
    )
    assert DRAWN_CRASH_CAP == RunConfig(out=tmp_path, checks=["kinds"]).drawn_crash_cap == 1
    records = _kinds_run(tmp_path / "capped", drawn_crash_cap=3)
    for mutation in ("m-a", "m-b"):
        mine = [r for r in records if r["params"]["mutation"] == mutation]
        lost = [i for i, r in enumerate(mine) if r["outcome"] == "crash"]
        assert len(lost) == 3, (mutation, [r["outcome"] for r in mine])
        after = mine[lost[-1] + 1 :]
        assert after and all(r["outcome"] == "skip" for r in after), mutation
        assert after[0]["message"] == (
            f"not run: drawn examples of mutation {mutation!r} already ended 3 examples of "
            "that kind of this cell with crash/hang/poisoned or a worker it left untrusted"
        )
        assert all(r["outcome"] == "pass" for r in mine[: lost[-1]] if r["params"]["n"] < 500)
    tainting = [r for r in records if r["params"]["mutation"] == "m-t"]
    assert [r["outcome"] != "skip" for r in tainting][:4] == [True, True, True, False]
    assert all(r["outcome"] == "skip" for r in tainting[3:])
    assert len({r["worker"] for r in tainting[:3]}) == 3  # each retired its worker
    uncapped = _kinds_run(tmp_path / "uncapped", drawn_crash_cap=0)
    assert sum(r["outcome"] == "crash" for r in uncapped) > 6
    assert not any(r["outcome"] == "skip" for r in uncapped)


def test_drawn_examples_kinds_tell_mutants_of_different_rules_apart():
    from caiconform.runner.jobs import crash_kind

    first = crash_kind({"kind": "mutant", "rule": "CAI-SHAPE-INT", "interface": {}}, None)
    assert first == "drawn examples of kind 'mutant', rule 'CAI-SHAPE-INT'"
    assert first != crash_kind({"kind": "mutant", "rule": "CAI-SHAPE-TUPLE"}, None)
    live = {"kind": "live", "mutation": "stream-bogus", "layout": {"kind": "C"}, "seed": 3}
    assert crash_kind(live, None) == (
        "drawn examples of kind 'live', mutation 'stream-bogus', layout 'C'"
    )
    assert crash_kind({"n": 1}, None) == ""  # nothing tells it apart: never capped
    assert crash_kind({"n": 1}, {"layout": "x"}) == "layout 'x'"  # the floor's


def test_a_resumed_run_counts_the_lost_examples_its_journal_holds(tmp_path):
    """Resumed from its journal cut after the second crash of a kind, a run skips what the
    uninterrupted run skipped: the journal's crashes count toward the cap."""
    whole = _kinds_run(tmp_path / "whole")
    cut = tmp_path / "cut"
    shutil.copytree(tmp_path / "whole", cut)
    lines = (cut / "results.jsonl").read_text().splitlines(keepends=True)
    crashes = [i for i, line in enumerate(lines) if json.loads(line)["outcome"] == "crash"]
    (cut / "results.jsonl").write_text("".join(lines[: crashes[1] + 1]))
    (cut / "cells.jsonl").write_text("")
    config = RunConfig(out=cut, checks=[], adapter_source=SOURCE, resume=True, workers=2, gpus=0)
    run_matrix(config)
    resumed = [json.loads(line) for line in (cut / "results.jsonl").read_text().splitlines()]

    def rows(records):
        return [(r["index"], r["outcome"], r["message"]) for r in records if "index" in r]

    assert rows([r for r in resumed if r.get("index") is not None]) == rows(whole)


def test_run_drawn_crash_cap_flag(tmp_path):
    """`--drawn-crash-cap N` reaches the run, is saved for `--resume`, and the help's default
    is the runner's."""
    import argparse

    from caiconform.cli import main as cli_main
    from caiconform.commands import run as run_command
    from caiconform.runner.config import DRAWN_CRASH_CAP

    parser = argparse.ArgumentParser()
    run_command.add_arguments(parser)
    assert f"(default {DRAWN_CRASH_CAP};" in " ".join(parser.format_help().split())
    out = tmp_path / "run"
    argv = ["run", "--adapter-source", SOURCE, "--checks", KINDS, "--libraries", "abort"]
    argv += ["--max-examples", "60", "--seed", "5", "--gpus", "0", "--no-shrink", "--out", str(out)]
    # abort's crashes fail the verdict at the default --fail-on: exit status 1
    assert cli_main([*argv, "--drawn-crash-cap", "2"]) == 1
    assert json.loads((out / "run.json").read_text())["settings"]["drawn_crash_cap"] == 2
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    for mutation in ("m-a", "m-b"):
        mine = [r for r in records if r["params"].get("mutation") == mutation and "index" in r]
        assert sum(r["outcome"] == "crash" for r in mine) == 2, mutation


def test_records_and_cells_carry_timings(synthetic_matrix):
    out = synthetic_matrix(3, fork=True)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    passed = [r for r in records if r["outcome"] == "pass"]
    assert passed and all(
        {"execute_s", "health_s", "transfer_s", "cpu_user_s", "cpu_system_s", "preempted"}
        <= set(r["timing"])
        for r in passed
    )
    # the worker's CPU for an example is its own process's, never more than the example's
    # wall time times the host's CPUs, and the preemptions a count
    cores = os.cpu_count() or 1
    for r in passed:
        timing = r["timing"]
        cpu = timing["cpu_user_s"] + timing["cpu_system_s"]
        assert 0 <= cpu <= (timing["execute_s"] + timing["health_s"]) * cores + 0.02, timing
        assert isinstance(timing["preempted"], int) and timing["preempted"] >= 0
    crashed = [r for r in records if r["outcome"] == "crash" and r["timing"]]
    assert crashed and all("lost_s" in r["timing"] for r in crashed)
    cells = [json.loads(line) for line in (out / "cells.jsonl").read_text().splitlines()]
    assert all(c["wall_s"] >= 0 and c["timing"]["drawn"] == 15 for c in cells)


# -- fork-server workers --------------------------------------------------------------------
@pytest.fixture(scope="module")
def forked():
    w = Worker(0, health_hooks=[HOOK], fork=True)
    yield w
    w.close()


def _pid(worker: Worker) -> int:
    exchange = worker.run(EXECUTE, {"n": 0}, "pid", "good", timeout=30, module=SYNTHETIC)
    assert exchange.result.outcome == "pass", exchange.result
    return exchange.result.seen


@pytest.mark.parametrize("producer", list(MISBEHAVIOUR))
def test_a_fork_server_reports_each_misbehaviour_and_goes_on(forked, producer):
    outcome, replaced = MISBEHAVIOUR[producer]
    before = _pid(forked)
    exchange = forked.run(EXECUTE, {"n": 999}, producer, "good", timeout=1.5, module=SYNTHETIC)
    assert exchange.result.outcome == outcome, exchange.result
    assert exchange.worker == f"w0/{before}"
    after = _pid(forked)
    assert (after != before) == replaced, (before, after)
    assert forked.starts == 1, "the fork server itself was restarted"


def test_crash_details_survive_the_fork_server(forked):
    abort = forked.run(EXECUTE, {"n": 500}, "abort", "good", timeout=30).result
    assert abort.message.startswith("worker died (SIGABRT)")
    assert "Fatal Python error: Aborted" in abort.message
    exited = forked.run(EXECUTE, {"n": 500}, "exit", "good", timeout=30).result
    assert exited.message == "worker died (exit status 3)"


def test_a_fatal_signal_is_answered_before_the_dying_process_lets_go_of_its_pipes(forked):
    """A child killed by a signal is taken as dead at its faulthandler's first line, not when
    its pipes close: here a process of its own holds them LINGER_S longer, as the driver's
    teardown of a dead process's CUDA contexts did on the H100 (up to 5.4 s)."""
    from tests.synthetic.checks import LINGER_S

    before = _pid(forked)
    started = time.monotonic()
    exchange = forked.run(EXECUTE, {"n": 500}, "linger", "good", timeout=30, module=SYNTHETIC)
    took = time.monotonic() - started
    assert exchange.result.outcome == "crash", exchange.result
    assert exchange.result.message.startswith("worker died (SIGSEGV)"), exchange.result
    assert "Fatal Python error: Segmentation fault" in exchange.result.message
    assert took < LINGER_S / 4, took
    assert exchange.timing["lost_s"] < LINGER_S / 4, exchange.timing
    assert _pid(forked) != before
    assert forked.starts == 1


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(c) for c in (task / "children").read_text().split()}
    return found


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc")
def test_poisoned_children_are_answered_for_then_reaped(forked):
    """A retiring (poisoned) child is reaped after its answer is passed on, between requests:
    back-to-back poisoned examples still leave only the current child and its spare (no
    zombies). That the answer comes first is not seen on a CPU, where a killed child ends at
    once; on the H100 a faulted context's teardown took up to 5.5 s."""
    pids = set()
    for n in range(4):
        exchange = forked.run(
            EXECUTE, {"n": 900 + n}, "poison", "good", timeout=30, module=SYNTHETIC
        )
        assert exchange.result.outcome == "poisoned", exchange.result
        pids.add(exchange.worker)
    assert len(pids) == 4  # each on a fresh child
    _pid(forked)
    host = forked._proc.pid
    deadline = time.monotonic() + 10
    while len(_children(host)) > 2 and time.monotonic() < deadline:
        _pid(forked)  # the host reaps between requests
        time.sleep(0.05)
    assert len(_children(host)) == 2, _children(host)


def test_back_to_back_crashes_with_a_slow_library_cost_under_half_a_second():
    """Shrinking a crash crashes again and again: each replacement must not import again."""
    from tests.synthetic.adapters import SLOW_IMPORT_S

    worker = Worker(0, fork=True)
    cell = {"module": SYNTHETIC, "source": SOURCE, "timeout": 30}
    costs = []
    try:
        worker.run(EXECUTE, {"n": 0}, "slow-abort", None, **cell)  # the one cold import
        for _ in range(5):
            start = time.monotonic()
            crash = worker.run(EXECUTE, {"n": 600}, "slow-abort", None, **cell)
            after = worker.run(EXECUTE, {"n": 0}, "slow-abort", None, **cell)
            costs.append(time.monotonic() - start)
            assert (crash.result.outcome, after.result.outcome) == ("crash", "pass")
            assert after.worker != crash.worker
    finally:
        worker.close()
    assert max(costs) < min(0.5, SLOW_IMPORT_S), costs
    assert worker.starts == 1


# -- scheduling -----------------------------------------------------------------------------
class _FakeCell:
    queues: str | None = None
    wide = False

    def __init__(self, name: str, cost: float, examples: int, cap: int | None = None) -> None:
        self.name, self.cost, self.splittable, self.helpers_cap = name, cost, True, cap
        self.left = examples
        self.started = False

    def remaining(self) -> float:
        return self.cost if not self.started else float(self.left)

    def take(self):
        if self.started and self.left:
            self.left -= 1
            return ("example", self, self.left)
        return None

    def finished(self) -> bool:
        return self.started and not self.left


def test_longest_cells_start_first_and_free_threads_help_long_cells():
    stop = threading.Event()
    cells = [_FakeCell("short", 1, 1), _FakeCell("long", 50, 50), _FakeCell("mid", 5, 5)]
    scheduler = Scheduler(cells, stop)
    a, b = scheduler.thread(), scheduler.thread()
    first = scheduler.next(a)
    assert first == ("start", cells[1])  # the longest first
    cells[1].started = True
    # b: the long cell's remaining work per helper (50 / 2) outweighs the whole mid cell
    task = scheduler.next(b)
    assert task[0] == "example" and task[1] is cells[1]
    # a helper stays with the cell it helps; once the long cell's share is small, a free
    # thread starts the next longest cell instead
    assert scheduler.next(b)[1] is cells[1]
    cells[1].left = 4
    assert scheduler.next(scheduler.thread()) == ("start", cells[2])


def test_a_capped_cell_gets_no_more_helpers_than_its_cap():
    """A cell on all-GPU workers (WIDE_HELPERS) is helped by at most its cap of threads at once;
    the others start other cells."""
    stop = threading.Event()
    wide, other = _FakeCell("wide", 100, 100, cap=2), _FakeCell("other", 1, 1)
    scheduler = Scheduler([wide, other], stop)
    a, b, c = scheduler.thread(), scheduler.thread(), scheduler.thread()
    assert scheduler.next(a) == ("start", wide)
    wide.started = True
    assert scheduler.next(b)[1] is wide  # the second helper
    assert scheduler.next(c) == ("start", other)  # not a third


def test_a_thread_keeps_to_cells_of_its_workers_queues_while_any_is_left():
    """A cell whose workers want other hardware queues replaces the slot's forked workers
    (`forkserver.queues_for`): a thread starts the longest cell of its last cell's queues
    first, a thread without a cell the longest of all, and helps cells of its queues first."""
    stop = threading.Event()
    one = [_FakeCell(f"one{i}", cost, 3) for i, cost in enumerate((40, 8))]
    default = [_FakeCell(f"default{i}", cost, 3) for i, cost in enumerate((30, 20))]
    for cell in one:
        cell.queues = "1"
    for cell in default:
        cell.queues = None
    scheduler = Scheduler([*default, *one], stop)
    a, b = scheduler.thread(), scheduler.thread()
    assert scheduler.next(a) == ("start", one[0])  # no cell yet: the longest
    one[0].started = True
    assert scheduler.next(b) == ("start", default[0])
    default[0].started = True
    for _ in range(3):
        assert scheduler.next(a)[1] is one[0]
    assert scheduler.next(a) == ("start", one[1])  # not default[1], though longer
    one[1].started = True
    for _ in range(3):
        assert scheduler.next(a)[1] is one[1]
    assert scheduler.next(a) == ("start", default[1])  # none of its queues left
    default[1].started = True
    # helping: a thread last on a one-queue cell helps the one-queue cell with less left
    # before the other with more; a thread without a cell helps the one with more
    small, big, done = _FakeCell("small", 3, 3), _FakeCell("big", 10, 10), _FakeCell("d", 1, 0)
    small.queues, big.queues, done.queues = "1", None, "1"
    for cell in (small, big, done):
        cell.started = True
    helping = Scheduler([], stop)
    helping.active = [big, small]
    t = helping.thread()
    helping._attach(t, done)
    assert helping.next(t)[1] is small
    assert helping.next(helping.thread())[1] is big


def test_default_workers_are_the_cores_available(monkeypatch):
    monkeypatch.setattr(driver.os, "sched_getaffinity", lambda pid: set(range(13)))
    assert driver.default_workers() == 13
    assert driver.default_workers(gpus=16) == 16


# -- spin calibration -----------------------------------------------------------------------
def _race_seen_from(shortest_us: int, missed_at: int | None = None, misses: tuple = ()):
    """A measure that sees the race from `shortest_us` on, except the `misses`-th (1-based)
    measures at `missed_at` (a host held up at the run's start)."""
    calls: list[int] = []

    def measure(delay_us: int) -> dict:
        calls.append(delay_us)
        stalled = delay_us == missed_at and calls.count(delay_us) in misses
        seen = delay_us >= shortest_us and not stalled
        return {"ignore_stream": 100 if seen else 0, "unsynced_export": 100 if seen else 0}

    return measure, calls


def test_calibration_takes_the_shortest_visible_spin_times_the_safety_factor():
    measure, calls = _race_seen_from(1_000)
    found = calibrate_spin(measure, candidates=(250, 500, 1_000, 2_000), repeats=3, safety=4)
    assert (found.shortest_us, found.spin_us) == (1_000, 4_000)
    # two misses rule a spin out, two sightings take it: no third measure either way
    assert calls == [250, 250, 500, 500, 1_000, 1_000]
    assert found.measurements[-1]["delay_us"] == 1_000


def test_calibration_needs_most_repeats_and_clamps():
    """One measure in three that misses (a stalled host) does not rule a spin out; two do."""
    measure, calls = _race_seen_from(500, missed_at=500, misses=(2,))
    found = calibrate_spin(measure, candidates=(500, 1_000), repeats=3, safety=2, lowest=3_000)
    assert found.shortest_us == 500 and found.spin_us == 3_000
    assert calls == [500, 500, 500]
    measure, _ = _race_seen_from(500, missed_at=500, misses=(1, 3))
    found = calibrate_spin(measure, candidates=(500, 1_000), repeats=3, safety=2)
    assert found.shortest_us == 1_000 and found.spin_us == 2_000
    measure, _ = _race_seen_from(10**9)
    assert calibrate_spin(measure, candidates=(500,)).spin_us is None
    found = calibrate_spin(_race_seen_from(500)[0], candidates=(500,), repeats=3, required=3)
    assert found.spin_us == 2_000  # every measure, when asked for


def test_calibration_stops_on_a_failing_measure():
    def broken(delay_us: int) -> dict:
        raise RuntimeError("no context")

    found = calibrate_spin(broken)
    assert found.spin_us is None and "no context" in found.reason
    with pytest.raises(ValueError, match="expected 1 <= required <= repeats"):
        calibrate_spin(broken, repeats=1)


def test_calibrated_spin_scales_the_streams_spins(monkeypatch):
    from caiconform.adapters import _staging
    from caiconform.checks import streams

    monkeypatch.delenv("CAICONFORM_SPIN_US", raising=False)
    assert _staging.spin_us() == _staging.SPIN_US
    assert streams.spin_of(50_000) == 50_000
    monkeypatch.setenv("CAICONFORM_SPIN_US", "4000")
    assert _staging.spin_us() == 4_000
    assert streams.spin_of(streams.DELAYS_US[0]) == 4_000
    assert streams.spin_of(50_000) == 10_000
    monkeypatch.setenv("CAICONFORM_SPIN_US", "nonsense")
    assert _staging.spin_us() == _staging.SPIN_US


def test_fork_servers_preload_the_runs_modules_and_libraries_before_forking(
    tmp_path, synthetic_matrix
):
    """With `preload_workers`, every fork-server worker imports the run's check modules and
    available libraries before its first child (so a cell new to the worker replaces no
    children); the worker that probed is restarted to do the same. Their stderr logs say so.
    Off by default when no cell needs a GPU (these synthetic ones), and meaningless without
    fork servers."""
    out = _run(tmp_path / "run", 2, fork=True, preload=True)
    logs = sorted((out / "workers").glob("worker-*.log"))
    lines = [
        line
        for log in logs
        for line in log.read_text(errors="replace").splitlines()
        if line.startswith("fork server: preloaded")
    ]
    assert len(lines) >= 2, [log.read_text(errors="replace")[-400:] for log in logs]
    assert all("3 check module(s)" in line for line in lines), lines
    assert all("abort, good, poison, raises, wrong" in line for line in lines), lines
    by_default = synthetic_matrix(3, fork=True)
    # two cells that lose no process: each cold-started worker starts once
    cold = _run(
        tmp_path / "cold",
        2,
        fork=False,
        preload=True,
        checks=(SYNTHETIC,),
        libraries=("good", "wrong"),
    )
    assert len(list((cold / "workers").glob("worker-*.log"))) >= 2
    assert not [
        log
        for log in (by_default / "workers").glob("worker-*.log")
        if "fork server: preloaded" in log.read_text(errors="replace")
    ]
    assert not [
        log
        for log in (cold / "workers").glob("worker-*.log")
        if "fork server: preloaded" in log.read_text(errors="replace")
    ]


def test_workers_start_while_the_floors_are_still_being_built(tmp_path, monkeypatch):
    """The cell threads start their fork servers once the libraries are probed, not once the
    coverage floors (the schedule needs them) are built: the floor built at the start waits
    here until a worker's log says its preload is done, which only an early start gives."""
    from tests.synthetic import floor_checks

    out = tmp_path / "run"
    original = floor_checks.floor
    seen: list[bool] = []

    def floor(producer, consumer):
        if producer is None and consumer is None and not seen:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                logs = (out / "workers").glob("worker-*.log")
                if any("fork server: preloaded" in log.read_text(errors="replace") for log in logs):
                    break
                time.sleep(0.05)
            seen.append(time.monotonic() < deadline)
        return original(producer, consumer)

    monkeypatch.setattr(floor_checks, "floor", floor)
    _run(out, 2, fork=True, preload=True, checks=(SYNTHETIC, floor_checks.__name__))
    assert seen == [True]


def test_preloading_fork_servers_start_while_the_libraries_are_probed(tmp_path, monkeypatch):
    """With preloading fork servers the slots start before the probes end (each imports every
    library asked for meanwhile): every probe here waits until a server's log says its preload
    is done. Without preloading, they start after the probes, as before."""
    from tests.synthetic.adapters import PROBE_WAITS_ENV

    out = tmp_path / "early"
    monkeypatch.setenv(PROBE_WAITS_ENV, str(out / "workers"))
    _run(out, 2, fork=True, preload=True, checks=(SYNTHETIC,))
    versions = {i["version"] for i in json.loads((out / "adapters.json").read_text()).values()}
    assert versions == {"0.0-synthetic+saw-a-preloaded-server"}, versions


def test_a_library_whose_import_kills_the_early_servers_costs_no_example(tmp_path, monkeypatch):
    """Fork servers started before the probes import every library asked for: one whose import
    aborts kills them. The probes mark it unavailable, the servers restart with the available
    libraries at their first example, and no example is blamed for the dead servers."""
    from tests.synthetic.adapters import CRASH_IMPORT_ENV

    monkeypatch.setenv(CRASH_IMPORT_ENV, "1")
    out = tmp_path / "run"
    run_matrix(
        RunConfig(
            out=out,
            checks=[SYNTHETIC],
            libraries=["good", "crash-import"],
            max_examples=5,
            seed=3,
            workers=2,
            gpus=0,
            adapter_source=SOURCE,
            fork_workers=True,
            preload_workers=True,
        )
    )
    adapters = json.loads((out / "adapters.json").read_text())
    assert not adapters["crash-import"]["available"], adapters["crash-import"]
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    good = [r for r in records if r["producer"] == "good"]
    assert good and {r["outcome"] for r in good} == {"pass"}, {r["outcome"] for r in good}
    # the early imports happen in the zygote (the default) or, without one, in each server
    logs = " ".join(p.read_text(errors="replace") for p in (out / "workers").glob("*.log"))
    assert "Aborted" in logs  # the early imports did die on it


def test_a_fork_server_dying_as_it_preloads_starts_again_without_preloading(tmp_path, monkeypatch):
    """A server whose preload kills it (before the probes rule the library out) is started once
    more without preloading: the example that asked for it runs, not blamed for the death."""
    from caiconform.runner.forkserver import PRELOAD_ENV
    from tests.synthetic.adapters import CRASH_IMPORT_ENV

    monkeypatch.setenv(CRASH_IMPORT_ENV, "1")
    log = tmp_path / "worker.log"
    preload = {"modules": [SYNTHETIC], "libraries": ["crash-import", "good"], "source": SOURCE}
    worker = Worker(0, fork=True, log_path=log, env={PRELOAD_ENV: json.dumps(preload)})
    try:
        exchange = worker.run(
            EXECUTE, {"n": 0}, "good", None, timeout=30, module=SYNTHETIC, source=SOURCE
        )
    finally:
        worker.close()
    assert exchange.result.outcome == "pass", exchange.result
    assert worker.starts == 2
    assert "Aborted" in log.read_text(errors="replace")
    assert worker.env[PRELOAD_ENV] == json.dumps(preload)  # kept for later starts


def test_a_spin_file_written_after_the_workers_started_is_read(tmp_path, monkeypatch):
    from caiconform.adapters import _staging
    from caiconform.runner.calibrate import SPIN_FILE_ENV

    spin_file = tmp_path / "spin_us"
    monkeypatch.delenv("CAICONFORM_SPIN_US", raising=False)
    monkeypatch.setenv(SPIN_FILE_ENV, str(spin_file))
    assert _staging.spin_us() == _staging.SPIN_US  # not written yet
    notes: list[str] = []
    pool = driver.WorkerPool(2)
    driver._apply_spin({"spin_us": 3000}, pool, notes, spin_file)
    assert _staging.spin_us() == 3000 and notes == []
    assert all(SPIN_ENV not in w.env for w in pool.workers)
    driver._apply_spin({"spin_us": None, "reason": "no GPU"}, pool, notes, spin_file)
    assert notes == ["streams spin not calibrated (no GPU); fixed spins"]


class _FakeChild:
    """A forked child as the host sees it: what it was sent."""

    def __init__(self) -> None:
        self.prepared: set[str] = set()
        self.sent: list[dict] = []
        self.queues = None

    def send(self, message: dict) -> None:
        self.sent.append(message)


def test_a_new_fork_child_is_prepared_for_the_current_cell_only():
    """Replaying every cell a worker met into each replacement child re-initialised every
    library's CUDA state (10-15 s per replacement on an H100): a new child gets the current
    cell's prepare; the spare gets each new current prepare once."""
    from caiconform.runner.forkserver import ForkServer

    server = ForkServer(-1, -1, [])
    server.child, server.spare = _FakeChild(), _FakeChild()
    assert server.replay() == []

    def prepare(module: str, producer: str, number: int) -> None:
        request = {"op": "prepare", "module": module, "producer": producer, "consumer": None}
        server._request({**request, "id": number, "source": None})

    prepare("json", "a", 1)
    prepare("json", "b", 2)
    prepare("json", "a", 3)  # back to the first cell
    assert [m["producer"] for m in server.child.sent] == ["a", "b", "a"]  # relayed, with ids
    assert [m["id"] for m in server.child.sent] == [1, 2, 3]
    assert [m["producer"] for m in server.spare.sent] == ["a", "b"]  # each prepare once
    assert all(str(m["id"]).startswith("host-") for m in server.spare.sent)
    assert [r["producer"] for r in server.replay()] == ["a"]


def test_children_forked_for_a_new_cell_are_not_prepared_for_the_cell_before(monkeypatch):
    """A cell of the other queues (or one whose libraries the host imports first) replaces
    child and spare; the new ones were prepared for the cell before as well, warming its
    libraries' CUDA state in vain (one extra prepare per change of kind), until the new cell
    became current before they were forked."""
    from caiconform.runner import forkserver

    monkeypatch.delenv(forkserver.QUEUES_ENV, raising=False)
    monkeypatch.delenv(forkserver.SINGLE_QUEUE_ENV, raising=False)
    server = forkserver.ForkServer(-1, -1, [])
    forked: list[_FakeChild] = []

    def fork() -> _FakeChild:  # as `_fork` does, without a process
        child = _FakeChild()
        child.queues = server.queues
        for request in server.replay():
            server._send_prepare(child, request)
        forked.append(child)
        return child

    monkeypatch.setattr(server, "_fork", fork)
    monkeypatch.setattr(server, "_let_die", lambda child, grace: None)
    server.child, server.spare = fork(), fork()
    server.child.queues = server.spare.queues = "1"  # forked for a one-queue family's cell
    server.current = {"op": "prepare", "module": "json", "producer": "old", "consumer": None}
    request = {"op": "prepare", "module": "json", "producer": "new", "consumer": None}
    server._request({**request, "id": 7, "source": None})  # json: the default queues
    child, spare = forked[-2:]
    assert (server.child, server.spare) == (child, spare)
    assert [m["producer"] for m in child.sent] == ["new"] and child.sent[0]["id"] == 7
    assert [m["producer"] for m in spare.sent] == ["new"]
    assert child.queues is None and spare.queues is None

    monkeypatch.setattr(server, "_import", lambda request: True)  # new imports, same queues
    server._request({**request, "producer": "newer", "id": 8, "source": None})
    assert [m["producer"] for m in forked[-2].sent] == ["newer"]
    assert [m["producer"] for m in forked[-1].sent] == ["newer"]
    server._request({"op": "run", "execute": "json:x", "id": 9})  # a run request: no refresh
    assert len(forked) == 6 and [r["producer"] for r in server.replay()] == ["newer"]


def test_a_cells_prepare_warms_its_libraries_without_probing_them(monkeypatch):
    """A cell's prepare imports its libraries through the source's `warm`, not `probe`: the
    probe's version lookup read every installed distribution's metadata, about 1 s per worker
    and cell for CuPy and RMM on the H100. A source without `warm` is probed as before."""
    from caiconform.runner import worker
    from tests.synthetic import probes, warm_source

    warm_source.calls.clear()
    worker._prepare("json", "a", "b", "tests.synthetic.warm_source")
    worker._prepare("json", "a", "a", "tests.synthetic.warm_source")
    assert warm_source.calls == [("warm", "a"), ("warm", "b"), ("warm", "a")]

    probed: list[str] = []
    monkeypatch.setattr(probes, "probe", lambda name: probed.append(name) or {})
    monkeypatch.setattr(worker, "resolve", lambda spec: _resolve_fresh(spec))
    worker._prepare("json", "c", None, "tests.synthetic.probes")
    assert probed == ["c"]


def _resolve_fresh(spec: str):
    import importlib

    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def test_the_runs_library_source_warms_without_reading_versions(monkeypatch):
    """`libraries.warm` asks the adapter whether it is usable (its import, the GPU) and never
    for its version."""
    from caiconform.adapters import registry
    from caiconform.runner import libraries

    asked: list[str] = []

    class _Adapter:
        def available(self):
            asked.append("available")
            return True, ""

        def version(self):
            raise AssertionError("warm read the version")

    monkeypatch.setattr(registry, "get", lambda name: _Adapter())
    libraries.warm("cupy")
    libraries.warm(libraries.SYNTHETIC)  # needs nothing
    assert asked == ["available"]


def test_a_run_records_each_adapters_probe_and_the_report_shows_it(tmp_path, synthetic_matrix):
    from caiconform.report.build import write_report
    from caiconform.report.load import load_run

    out = tmp_path / "run"
    shutil.copytree(synthetic_matrix(3, fork=True), out)
    adapters = json.loads((out / "adapters.json").read_text())
    assert set(adapters) == {"good", "wrong", "raises", "abort", "poison"}
    assert adapters["good"] == {"available": True, "reason": "", "version": "0.0-synthetic"}
    run = load_run(out)
    (env,) = run.envs.values()
    assert env["adapters"]["abort"]["version"] == "0.0-synthetic"
    startup = json.loads((out / "run.json").read_text())["startup"]
    assert {"probe_s", "env_s", "startup_s"} <= set(startup)  # no GPU: nothing calibrated
    write_report([out], None, None)
    assert "adapters.good.version" in (out / "details" / "environment.md").read_text()
    assert "good 0.0-synthetic" in (out / "matrix.md").read_text()
    (out / "adapters.json").write_text("{broken")
    assert any("adapters.json: unreadable" in w for w in load_run(out).warnings)


@pytest.mark.parametrize(
    ("argv", "expected"), [([], None), (["--preload"], True), (["--no-preload"], False)]
)
def test_run_preload_flags(argv, expected):
    """`caiconform run` leaves preloading to the run (on when it has GPU cells) unless told."""
    import argparse

    from caiconform.commands import run as run_command

    parser = argparse.ArgumentParser()
    run_command.add_arguments(parser)
    assert parser.parse_args(argv).preload is expected


def test_run_refuses_preload_and_no_preload_together(capsys):
    import argparse

    from caiconform.commands import run as run_command

    parser = argparse.ArgumentParser()
    run_command.add_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--preload", "--no-preload"])
    assert "not allowed with" in capsys.readouterr().err


def test_a_cells_tasks_needing_every_gpu_run_on_a_second_worker_of_the_thread(
    monkeypatch, tmp_path
):
    """A task of a cell that needs several GPUs runs, on a machine with several, on a worker of
    the thread's that sees every GPU (the slot's own first: its device 0) but is otherwise the
    slot's: a fork server preloaded as the slots are, with a spare, so a poisoned context costs
    a fork; made once per thread, closed with it. Other cells' tasks stay on the slot's
    worker."""
    from caiconform.runner.forkserver import PRELOAD_ENV

    made: list[dict] = []

    class _Recorder:
        def __init__(self, slot, **kwargs):
            self.kwargs = kwargs
            made.append(kwargs)

        def close(self):
            made.append({"closed": True})

    class _Cell:
        def __init__(self, wide):
            self.wide, self.ran_on = wide, []

        def run_task(self, task, worker):
            self.ran_on.append(worker)

    wide, narrow = _Cell(True), _Cell(False)
    tasks = [("example", wide, 0), ("example", narrow, 0), ("example", wide, 1)]

    class _Scheduler:
        stop = threading.Event()

        def thread(self):
            return None

        def next(self, me):
            return tasks.pop(0) if tasks else None

    monkeypatch.setattr(driver, "Worker", _Recorder)
    slot = Worker(3, env={"CUDA_VISIBLE_DEVICES": "1", PRELOAD_ENV: "{}"}, health_hooks=[HOOK])
    monkeypatch.setattr(slot, "close", lambda: None)
    run_config = RunConfig(out=tmp_path, checks=["devices"])
    driver._drive(_Scheduler(), slot, ["0", "1"], run_config)
    assert len([m for m in made if "env" in m]) == 1
    assert made[0]["env"] == {PRELOAD_ENV: "{}", "CUDA_VISIBLE_DEVICES": "1,0"}
    assert made[0]["fork"] and made[0]["spare"] and list(made[0]["health_hooks"]) == [HOOK]
    assert made[-1] == {"closed": True}
    assert narrow.ran_on == [slot]
    assert len(wide.ran_on) == 2 and all(isinstance(w, _Recorder) for w in wide.ran_on)
    assert wide.ran_on[0] is wide.ran_on[1]


def _shrink_with_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, patience: float, step: float = 1.0
) -> dict:
    """Shrink a class of lists whose sum reaches 1,500, with exchanges that each take `step`
    seconds of a fake clock (most of the shrinker's tries fall below it); the shrink's log."""
    import types

    from hypothesis import strategies as st

    from caiconform.results.outcome import FAIL, PASS, Result
    from caiconform.runner.cell import CellRun
    from caiconform.runner.journal import Journal
    from caiconform.runner.plan import Cell, load_families
    from caiconform.runner.pool import Exchange

    clock = [0.0]
    fake_time = types.SimpleNamespace(monotonic=lambda: clock[0], perf_counter=time.perf_counter)
    monkeypatch.setattr("caiconform.runner.shrink.time", fake_time)
    families, _ = load_families([SYNTHETIC])
    out = tmp_path / f"patience-{patience}-{step}"
    config = RunConfig(out=out, checks=[SYNTHETIC], max_examples=50, seed=7)
    config.shrink_budget_s, config.shrink_patience_s = 1000.0, patience
    run = CellRun(
        Cell(families[0], "wrong", None, 0), Journal(out, "r"), config, None, threading.Event()
    )

    def exchange(params: dict, worker: object) -> Exchange:
        clock[0] += step
        if sum(params["xs"]) >= 1500:
            return Exchange(Result(FAIL, rule="R", message="wrong"), 1.0, "w0/1")
        return Exchange(Result(PASS), 1.0, "w0/1")

    run._exchange = exchange
    strategy = st.fixed_dictionaries({"xs": st.lists(st.integers(0, 1000), min_size=1)})
    record = run.shrink(strategy, (FAIL, "R"), None)
    (log,) = run.followups.shrinks
    assert record is not None and sum(record["params"]["xs"]) >= 1500 and log["found_at"]
    return log


def test_a_shrink_stops_once_its_patience_found_nothing_smaller(tmp_path, monkeypatch):
    """A class's shrink stops when `shrink_patience_s` seconds and SHRINK_PATIENCE_EXCHANGES
    exchanges brought no smaller example (on the H100 five classes spent their whole 20 s
    budget, two finding none); without patience it runs until hypothesis is done or the budget
    is spent."""
    patient = _shrink_with_clock(tmp_path, monkeypatch, 3.0)
    assert patient.get("patience_out") and not patient.get("budget_out"), patient
    # each exchange takes 1 s: the tries, not the seconds, end it; none starts after the tenth
    assert patient["exchanges"] - patient["found_s"] == SHRINK_PATIENCE_EXCHANGES, patient
    unlimited = _shrink_with_clock(tmp_path, monkeypatch, 0.0)
    assert not unlimited.get("patience_out") and not unlimited.get("budget_out"), unlimited
    assert unlimited["exchanges"] > patient["exchanges"], (patient, unlimited)
    assert unlimited["found_at"] == sorted(unlimited["found_at"])
    # exchanges of 0.1 s: the seconds end it, 15-16 tries after the last smaller example
    quick = _shrink_with_clock(tmp_path, monkeypatch, 1.5, step=0.1)
    assert quick.get("patience_out"), quick
    assert 15 <= quick["exchanges"] - round(quick["found_s"] / 0.1) <= 16, quick


def test_run_shrink_patience_flag(tmp_path):
    """`--shrink-patience S` reaches the run's settings, a run without it takes the default
    (none: the budget alone), and the help says that default."""
    import argparse

    from caiconform.cli import main as cli_main
    from caiconform.commands import run as run_command

    parser = argparse.ArgumentParser()
    run_command.add_arguments(parser)
    assert f"(default {DEFAULT_SHRINK_PATIENCE_S:g}:" in " ".join(parser.format_help().split())
    argv = ["run", "--adapter-source", SOURCE, "--checks", SYNTHETIC, "--libraries", "good"]
    argv += ["--max-examples", "3", "--seed", "5", "--gpus", "0"]
    for flag, expected in (([], DEFAULT_SHRINK_PATIENCE_S), (["--shrink-patience", "5"], 5)):
        out = tmp_path / f"run{len(flag)}"
        assert cli_main([*argv, *flag, "--out", str(out)]) == 0
        settings = json.loads((out / "run.json").read_text())["settings"]
        assert settings["shrink_patience_s"] == expected


@pytest.mark.parametrize("env, expected", [(None, driver.SWITCH_INTERVAL_S), ("0.002", 0.002)])
def test_the_runs_parent_switches_threads_more_often_and_restores_it(
    tmp_path, monkeypatch, env, expected
):
    """While a run goes on its parent's threads hand the GIL on every SWITCH_INTERVAL_S (the
    environment may say otherwise), so a thread reading an example's answer is not kept 5 ms
    behind one that shrinks; afterwards the process's own interval is back."""
    import sys

    if env is None:
        monkeypatch.delenv(driver.SWITCH_INTERVAL_ENV, raising=False)
    else:
        monkeypatch.setenv(driver.SWITCH_INTERVAL_ENV, env)
    seen: list[float] = []

    class _Listener:
        def planned(self, cells, skipped):
            pass

        def cell_started(self, cell, already):
            seen.append(sys.getswitchinterval())

        def example(self, cell, record):
            seen.append(sys.getswitchinterval())

        def cell_finished(self, cell, counts):
            pass

    before = sys.getswitchinterval()
    config = RunConfig(
        out=tmp_path / "run",
        checks=[SYNTHETIC],
        libraries=["good"],
        max_examples=5,
        seed=3,
        workers=1,
        gpus=0,
        adapter_source=SOURCE,
    )
    run_matrix(config, _Listener())
    assert seen and all(abs(value - expected) < 1e-9 for value in seen), seen
    assert sys.getswitchinterval() == before


def test_a_class_is_shrunk_while_its_cells_examples_still_run(tmp_path):
    """A class is queued to shrink (and its first example to run again) as soon as its first
    drawn example is journaled, before the cell's other examples: the shrunk record comes
    before the cell's last examples in the journal, and is still the minimal one."""
    from tests.synthetic.checks import THRESHOLD

    out = tmp_path / "run"
    run_matrix(
        RunConfig(
            out=out,
            checks=[SYNTHETIC],
            libraries=["wrong"],
            max_examples=60,
            seed=77,
            workers=1,
            gpus=0,
            adapter_source=SOURCE,
        )
    )
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    shrunk = [i for i, r in enumerate(records) if r.get("shrunk")]
    explored = [i for i, r in enumerate(records) if r.get("index") is not None]
    assert len(shrunk) == 1 and shrunk[0] < explored[-1], (shrunk, explored[-1])
    assert records[shrunk[0]]["params"] == {"n": THRESHOLD["wrong"]}
    cell = json.loads((out / "cells.jsonl").read_text().splitlines()[-1])
    assert [c["same"] for c in cell["confirmed"]] == [True]


def test_a_correct_rejection_is_neither_shrunk_nor_run_again(tmp_path):
    """Invalid input refused cleanly is the consumer doing its job: its class gets no shrink
    and no re-run; a rejection of valid input (`raises`, a finding) still gets both."""
    out = tmp_path / "run"
    run_matrix(
        RunConfig(
            out=out,
            checks=[SYNTHETIC],
            libraries=["refuses", "raises"],
            max_examples=40,
            seed=77,
            workers=2,
            gpus=0,
            adapter_source=SOURCE,
        )
    )
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    cells = {c["cell"]: c for c in map(json.loads, (out / "cells.jsonl").read_text().splitlines())}
    refused = [r for r in records if r["producer"] == "refuses"]
    assert any(r["outcome"] == "rejected" for r in refused)
    assert not any(r.get("shrunk") for r in refused)
    assert "confirmed" not in cells["synthetic/refuses/-"]
    assert "shrinks" not in cells["synthetic/refuses/-"]
    assert any(r.get("shrunk") for r in records if r["producer"] == "raises")
    assert cells["synthetic/raises/-"]["confirmed"]


def _queues(worker: Worker, module: str) -> tuple[str | None, int]:
    exchange = worker.run(f"{module}:queues", {}, "good", None, timeout=30, module=module)
    assert exchange.result.outcome == "pass", exchange.result
    return tuple(exchange.result.seen)


@pytest.mark.parametrize(
    ("env", "single", "other"),
    [
        ({}, "1", None),  # one queue for a SINGLE_QUEUE family's cells only
        ({"CUDA_DEVICE_MAX_CONNECTIONS": "4"}, "4", "4"),  # the user's setting stands
        ({"CAICONFORM_SINGLE_QUEUE": "0"}, None, None),  # turned off
    ],
)
def test_a_single_queue_familys_children_make_their_contexts_with_one_queue(
    monkeypatch, env, single, other
):
    """A context made with one hardware queue took a quarter of the time beside others on the
    H100, but runs every stream's work in issue order: only the cells of a family that says
    `SINGLE_QUEUE` get such children, and a cell of another family after them gets new ones
    (a context's queues are fixed when it is made), unless nothing differs."""
    monkeypatch.delenv("CUDA_DEVICE_MAX_CONNECTIONS", raising=False)
    monkeypatch.delenv("CAICONFORM_SINGLE_QUEUE", raising=False)
    worker = Worker(0, env=env, fork=True)
    try:
        first = _queues(worker, "tests.synthetic.single_queue")
        second = _queues(worker, SYNTHETIC)
        third = _queues(worker, "tests.synthetic.single_queue")
        again = _queues(worker, "tests.synthetic.single_queue")
    finally:
        worker.close()
    assert (first[0], second[0], third[0]) == (single, other, single)
    assert again == third  # the same family: the same child
    if single != other:
        assert first[1] != second[1] != third[1]  # children made for the other queues
    else:
        assert first[1] == second[1] == third[1]
    assert worker.starts == 1


@pytest.mark.parametrize(
    ("env", "single", "value"),
    [({}, ["schema"], None), ({"CUDA_DEVICE_MAX_CONNECTIONS": "4"}, [], "4")],
)
def test_run_json_says_which_families_workers_had_one_queue(
    tmp_path, monkeypatch, env, single, value
):
    monkeypatch.delenv("CUDA_DEVICE_MAX_CONNECTIONS", raising=False)
    monkeypatch.delenv("CAICONFORM_SINGLE_QUEUE", raising=False)
    for key, setting in env.items():
        monkeypatch.setenv(key, setting)
    run_matrix(
        RunConfig(
            out=tmp_path,
            checks=["schema"],
            libraries=["synthetic"],
            max_examples=3,
            workers=1,
            seed=1,
            adapter_source="caiconform.checks.synthetic_source",
        )
    )
    queues = json.loads((tmp_path / "run.json").read_text())["queues"]
    assert queues == {"single_queue": single, "CUDA_DEVICE_MAX_CONNECTIONS": value}


@pytest.mark.parametrize("outcome", OUTCOMES)
def test_the_crash_caps_count_exactly_the_outcomes_that_lose_a_worker(outcome):
    """crash, hang and poisoned cost the worker process (`_LOST`); no other outcome counts
    toward the caps unless the family's `taints` says so (a module without one here)."""
    import types

    from caiconform.runner.jobs import CrashCaps

    costly = CrashCaps(types.ModuleType("m"), 0).costly({}, Result(outcome))
    assert costly == (outcome in ("crash", "hang", "poisoned")), outcome
