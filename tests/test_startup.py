"""The run's start (`runner.startup`): library probes side by side, each in a process of its
own, a crashing probe costing only its library; the environment capture and the streams spin
calibration beside them, a resumed run keeping its calibration. And workers that write no core
dumps (`process.no_core_dumps`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from caiconform.runner.startup import Startup, probe_all

SOURCE = "tests.synthetic.probes"
NAMES = ["a", "b", "c", "crash", "d"]


def _pids(infos) -> dict[str, str]:
    return {name: info.version for name, info in infos.items() if info.available}


def test_probes_run_side_by_side_and_a_crash_costs_only_its_library(tmp_path):
    seconds: dict = {}
    infos = probe_all(SOURCE, NAMES, processes=3, log_dir=tmp_path, seconds=seconds)
    assert list(infos) == NAMES
    assert set(seconds) == set(NAMES) and all(s >= 0 for s in seconds.values())
    assert not infos["crash"].available
    assert "probing it failed" in infos["crash"].reason and "died" in infos["crash"].reason
    pids = _pids(infos)
    assert set(pids) == {"a", "b", "c", "d"}
    assert len(set(pids.values())) >= 3  # three processes probing at once


def test_one_process_probes_in_turn(tmp_path):
    pids = _pids(probe_all(SOURCE, NAMES, processes=1, log_dir=tmp_path))
    assert pids["a"] == pids["b"] == pids["c"]  # one worker, in the names' order
    assert pids["d"] != pids["a"]  # restarted after the crash


def test_the_longest_probes_begin_first(tmp_path):
    """With the source's `probe_seconds`, one process probes the longest estimate first;
    the answers keep the names' order."""
    infos = probe_all("tests.synthetic.probes_timed", ["quick", "slow", "middling"], 1, tmp_path)
    assert list(infos) == ["quick", "slow", "middling"]
    began = sorted(infos, key=lambda name: float(infos[name].reason))
    assert began == ["slow", "middling", "quick"]


def _run_dir(tmp_path: Path, **meta) -> Path:
    (tmp_path / "run.json").write_text(json.dumps({"run_id": "r", "settings": {}, **meta}))
    return tmp_path


@pytest.mark.parametrize("gpus", ["hidden", "as-here"])
def test_startup_overlaps_env_capture_and_calibration_and_records_the_phases(
    tmp_path, monkeypatch, gpus
):
    if gpus == "hidden":  # the calibrating worker inherits it: no GPU, on every machine
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
        has_gpu = False
    else:
        from caiconform.cuda import gpu_available

        has_gpu = gpu_available()[0]
    out = _run_dir(tmp_path)
    startup = Startup(out, calibrate=True)
    startup.begin()
    infos = startup.probe(SOURCE, ["a", "b"], processes=2)
    assert all(info.available for info in infos.values())
    calibration = startup.calibration()
    if has_gpu:  # measured: a spin, or none with the reason, after the measures it took
        assert calibration["measurements"], calibration
        assert calibration["spin_us"] is not None or calibration["reason"], calibration
    else:
        assert calibration["spin_us"] is None and "no GPU" in calibration["reason"], calibration
    startup.finish()
    meta = json.loads((out / "run.json").read_text())
    assert meta["spin_calibration"] == calibration
    assert {"probe_s", "calibrate_s", "env_s", "startup_s"} <= set(meta["startup"])
    assert "python" in json.loads((out / "env.json").read_text())


def test_a_resumed_run_keeps_its_calibration_and_env(tmp_path):
    saved = {"spin_us": 4000, "shortest_us": 1000, "safety": 4.0, "measurements": []}
    out = _run_dir(tmp_path, spin_calibration=saved)
    (out / "env.json").write_text('{"kept": true}')
    startup = Startup(out, calibrate=True)
    startup.begin()
    assert startup.calibration() == saved
    startup.finish()
    assert "calibrate_s" not in startup.timings and "env_s" not in startup.timings
    assert json.loads((out / "env.json").read_text()) == {"kept": True}


def test_a_calibration_not_needed_after_all_is_not_saved(tmp_path):
    out = _run_dir(tmp_path)
    startup = Startup(out, calibrate=True)
    startup.begin()
    startup.finish()  # the run had no streams cells on a GPU: calibration() never asked
    assert "spin_calibration" not in json.loads((out / "run.json").read_text())


def test_warm_work_runs_beside_the_probes_and_its_errors_wait(tmp_path):
    out = _run_dir(tmp_path)
    done = []

    def broken():
        raise RuntimeError("reported later, by whoever needs it")

    startup = Startup(out, calibrate=False)
    startup.begin(warm=[broken, lambda: done.append("floor")])
    startup.probe(SOURCE, ["a"], processes=1)
    startup.finish()
    assert done == ["floor"] and "warm_s" in startup.timings


def test_builds_run_in_processes_of_their_own_past_the_start(tmp_path):
    """A library's builds (compiles every worker would repeat) run each in a worker process
    of its own from `begin`; `finish` does not wait for them, and run.json `builds` gets their
    answers, the longest's seconds and a failure's error once the run saves them."""
    import os
    import time

    out = _run_dir(tmp_path)
    build = f"{SOURCE}:build"
    startup = Startup(out, calibrate=False)
    startup.begin(
        builds=[
            (build, {"tag": "a"}),
            (build, {"tag": "b", "seconds": 3.0}),
            (build, {"tag": "c", "fail": True}),
        ]  # fmt: skip
    )
    startup.finish()
    assert "builds" not in json.loads((out / "run.json").read_text())
    deadline = time.monotonic() + 60
    while any(t.is_alive() for t in startup._builds) and time.monotonic() < deadline:
        time.sleep(0.1)
    startup.save_builds()
    builds = json.loads((out / "run.json").read_text())["builds"]
    assert set(builds["answers"]) == {"a", "b"} and builds["unfinished"] == 0
    assert len({*builds["answers"].values(), os.getpid()}) == 3
    assert builds["s"] >= 3.0 and "build c failed" in builds["errors"][0]


def test_builds_still_running_when_the_run_ends_are_counted_not_waited_for(tmp_path):
    out = _run_dir(tmp_path)
    startup = Startup(out, calibrate=False)
    startup.begin(builds=[(f"{SOURCE}:build", {"tag": "slow", "seconds": 5.0})])
    startup.save_builds()
    builds = json.loads((out / "run.json").read_text())["builds"]
    assert builds == {"s": 0.0, "answers": {}, "unfinished": 1}


def test_a_run_on_a_gpu_asks_the_source_for_cuda_cccls_builds_in_parts(tmp_path):
    from caiconform.adapters._cccl_builds import WARM_TYPESTRS
    from caiconform.runner import driver, libraries
    from caiconform.runner.config import RunConfig

    config = RunConfig(out=tmp_path, checks=[], adapter_source="caiconform.runner.libraries")
    builds = driver._builds(config, ["cupy", "cuda.cccl"], ["0"])
    assert len(builds) == libraries.BUILD_PROCESSES
    assert {function for function, _ in builds} == {"caiconform.adapters.cccl_adapter:warm"}
    assert sorted(t for _, kwargs in builds for t in kwargs["typestrs"]) == sorted(WARM_TYPESTRS)
    assert driver._builds(config, ["cupy", "torch"], ["0"]) == []
    assert driver._builds(config, ["cuda.cccl"], []) == []  # no GPU
    config.warm_builds = False
    assert driver._builds(config, ["cuda.cccl"], ["0"]) == []
    config.warm_builds, config.adapter_source = True, "tests.synthetic.probes"
    assert driver._builds(config, ["a"], ["0"]) == []  # no `builds` in the source: none


@pytest.mark.parametrize(("argv", "expected"), [([], True), (["--no-warm-builds"], False)])
def test_run_warms_builds_unless_told_not_to(argv, expected):
    import argparse

    from caiconform.commands import run as run_command

    parser = argparse.ArgumentParser()
    run_command.add_arguments(parser)
    assert parser.parse_args(argv).warm_builds is expected


def test_warming_cuda_cccls_builds_without_it_says_why(monkeypatch):
    from caiconform.adapters.cccl_adapter import CcclAdapter, warm

    monkeypatch.setattr(CcclAdapter, "available", lambda self: (False, "no cuda.compute"))
    assert warm(["<f4"]) == {"skipped": "no cuda.compute"}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
@pytest.mark.parametrize("fork", [False, True])
def test_workers_write_no_core_dumps(fork):
    """A crashing worker writes no core file (dumping a process that maps a CUDA context took
    seconds per crash on the H100): non-dumpable, RLIMIT_CORE 0, forked children too."""
    from caiconform.runner.pool import Worker

    worker = Worker(0, fork=fork)
    try:
        assert worker.call("tests.synthetic.probes:dump_state", 60) == [0, 0]
    finally:
        worker.close()


def test_a_floor_built_elsewhere_is_taken_before_the_costs(tmp_path):
    """The adversarial floor is built in a worker process, not in a thread of the parent
    (where it shared the GIL with the cell threads' start); `wait_floors` gives it to the
    parent, which then never builds it."""
    import os

    from tests.synthetic import floor_elsewhere

    floor_elsewhere.cache.clear()
    out = _run_dir(tmp_path)
    startup = Startup(out, calibrate=False)
    startup.begin(floors=["tests.synthetic.floor_elsewhere"])
    startup.wait_floors()
    floor = floor_elsewhere.floor(None, None)
    assert sorted(e.params["n"] for e in floor) == [0, 1, 2, 3]
    built_by = {e.params["built_by"] for e in floor}
    assert len(built_by) == 2 and os.getpid() not in built_by  # its two parts, side by side
    startup.finish()
    assert "floor_s" in json.loads((out / "run.json").read_text())["startup"]
    floor_elsewhere.cache.clear()


def test_a_floor_that_fails_elsewhere_is_built_by_the_parent(tmp_path, monkeypatch):
    import os

    from tests.synthetic import floor_elsewhere

    floor_elsewhere.cache.clear()
    monkeypatch.setattr(
        "caiconform.runner.startup._in_worker",
        lambda function, log, **kw: (_ for _ in ()).throw(RuntimeError("worker died")),
    )
    startup = Startup(_run_dir(tmp_path), calibrate=False)
    startup.begin(floors=["tests.synthetic.floor_elsewhere"])
    startup.wait_floors()  # the failure is swallowed here ...
    assert floor_elsewhere.floor(None, None)[0].params["built_by"] == os.getpid()  # ... and here
    startup.finish()
    floor_elsewhere.cache.clear()


def test_the_adversarial_floor_is_the_same_built_in_parts_elsewhere(
    tmp_path, monkeypatch, _adversarial_floor_data
):
    """What workers build in parts and hand over as JSON, merged, is what one process builds
    whole (`_adversarial_floor_data`: `floor_data()` in one process, built once per pytest run
    and shared; the wire to the workers is JSON too): the same params in the same order, so
    the same findings. The parts keep seven of the rules (the layout floor's, a zero-size one,
    the first and the last; building all of them again costs 15-30 s of CPU) and the live
    mutations; the whole is compared on the same rows."""
    from caiconform import strategies as cst
    from caiconform.checks import adversarial
    from caiconform.runner.protocol import canonical
    from caiconform.runner.startup import _in_worker

    names = list(cst.MUTATIONS)
    any_size = [r for r in names if cst.MUTATIONS[r].size == "any"]
    rules = sorted(
        {names[0], names[1], names[-1], *adversarial.LAYOUT_FLOOR_RULES, *any_size[:3]},
        key=names.index,
    )
    assert len(rules) >= 5 and any_size, rules
    parts = [
        _in_worker(
            "caiconform.checks.adversarial:floor_data",
            tmp_path / "floor.log",
            part=i,
            parts=3,
            rules=rules,
        )
        for i in range(3)
    ]
    whole = [
        row
        for row in _adversarial_floor_data
        if row[1].get("kind") != "mutant" or row[1]["rule"] in rules
    ]
    assert len(_adversarial_floor_data) > 300 and len(whole) > 20
    assert {row[1]["rule"] for row in whole if row[1].get("kind") == "mutant"} == set(rules)
    merged = []
    monkeypatch.setattr(adversarial, "_floor_cache", merged)
    adversarial.seed_floor(parts)
    assert [canonical([e.coverage, e.params]) for e in merged] == [canonical(row) for row in whole]
