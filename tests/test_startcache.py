"""The start cache (`runner.startcache`): a run's probes and self-checks, spin calibration and
floors built in workers are read from the last run in the same environment, measured anew when
anything they depend on changed, on `--fresh-start`, or when what was measured failed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from caiconform.runner import startup
from caiconform.runner.libraries import LibraryInfo
from caiconform.runner.startcache import ENV, StartCache, environment_key

ROOT = Path(__file__).resolve().parent.parent


def test_the_key_follows_the_environment_and_what_the_run_asks(monkeypatch):
    base = environment_key(["src", "a"])
    assert environment_key(["src", "a"]) == base, "the same environment gives the same key"
    assert environment_key(["src", "b"]) != base, "other libraries asked: another key"
    monkeypatch.setenv("NUMBA_CUDA_SOME_SETTING", "1")
    assert environment_key(["src", "a"]) != base, "a variable a library reads: another key"
    monkeypatch.delenv("NUMBA_CUDA_SOME_SETTING")
    monkeypatch.setenv("PATH", os.environ.get("PATH", "") + ":/opt/elsewhere/bin")
    assert environment_key(["src", "a"]) != base, "another PATH finds other libraries"
    monkeypatch.undo()
    assert environment_key(["src", "a"]) == base
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")
    assert environment_key(["src", "a"]) != base, "another GPU: another key"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setenv("PWD", "/elsewhere")
    monkeypatch.setenv("GITHUB_RUN_ID", "12345")
    monkeypatch.setenv(ENV, "/somewhere/else")
    assert environment_key(["src", "a"]) == base, "a shell's or CI job's own variables"


def test_kept_answers_read_back_and_nothing_else_does(tmp_path):
    cache = StartCache(tmp_path, "k1")
    assert cache.get("probes") is None and cache.hits == []
    cache.put("probes", {"a": 1})
    assert StartCache(tmp_path, "k1").get("probes") == {"a": 1}
    assert StartCache(tmp_path, "k2").get("probes") is None, "another environment's answers"
    assert StartCache(tmp_path, "k1", fresh=True).get("probes") is None, "--fresh-start"
    # a file that does not read as a kept answer is a miss, not an error
    path = cache.builds.path(cache._name("probes"))
    path.write_bytes(b"{not json")
    assert StartCache(tmp_path, "k1").get("probes") is None
    path.write_text(json.dumps({"kind": "calibration", "value": 1}))
    assert StartCache(tmp_path, "k1").get("probes") is None


def test_two_runs_asking_other_libraries_share_the_environments_answers(monkeypatch, tmp_path):
    """The pytest plugin's two directions ask other adapter sources: the calibration and the
    floors one kept, the other reads; the probes are each run's own."""
    monkeypatch.setenv(ENV, str(tmp_path))
    producer = StartCache.for_run(["producer-source", "mylib", "cupy"])
    producer.put("calibration", {"spin_us": 3.0})
    producer.put("floor:caiconform.checks.adversarial", [[{}, {}]])
    producer.put("probes", {"mylib": {}})
    consumer = StartCache.for_run(["consumer-source", "mylib", "cupy"])
    assert consumer.get("calibration") == {"spin_us": 3.0}
    assert consumer.get("floor:caiconform.checks.adversarial") == [[{}, {}]]
    assert consumer.get("probes") is None, "another run's libraries answered its probes"
    assert consumer.key != producer.key and consumer.shared_key == producer.shared_key


def test_off_turns_it_off(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV, "off")
    assert StartCache.for_run(["x"]) is None
    monkeypatch.setenv(ENV, str(tmp_path))
    cache = StartCache.for_run(["x"], fresh=True)
    assert cache is not None and cache.builds.directory == tmp_path and cache.fresh


def _probes(calls: list, reason: str = ""):
    def probe_all(source, names, processes, log_dir=None, seconds=None):
        calls.append(list(names))
        return {n: LibraryInfo(n, not reason, reason, "1.0", frozenset({"produce"})) for n in names}

    return probe_all


def _startup(tmp_path: Path, cache: StartCache, name: str) -> startup.Startup:
    out = tmp_path / name
    out.mkdir()
    (out / "run.json").write_text("{}")
    return startup.Startup(out, calibrate=False, cache=cache)


def test_probes_are_read_from_the_last_run_and_a_failed_probe_is_not_kept(tmp_path, monkeypatch):
    calls: list = []
    monkeypatch.setattr(startup, "probe_all", _probes(calls))
    first = _startup(tmp_path, StartCache(tmp_path / "c", "k"), "one")
    infos = first.probe("src", ["a", "b"], 2)
    second_cache = StartCache(tmp_path / "c", "k")
    second = _startup(tmp_path, second_cache, "two")
    again = second.probe("src", ["a", "b"], 2)
    assert calls == [["a", "b"]], "the second start probed again"
    assert again == infos and again["a"].capabilities == frozenset({"produce"})
    assert second_cache.hits == ["probes"]
    second.finish()
    meta = json.loads((tmp_path / "two" / "run.json").read_text())["startup"]
    assert meta["cache"] == "on" and meta["cached"] == ["probes"]
    # other libraries asked than were kept: probed
    _startup(tmp_path, StartCache(tmp_path / "c", "k"), "three").probe("src", ["a"], 1)
    assert calls[-1] == ["a"]

    failed: list = []
    monkeypatch.setattr(startup, "probe_all", _probes(failed, "probing it failed: hang"))
    for name in ("four", "five"):
        _startup(tmp_path, StartCache(tmp_path / "f", "k"), name).probe("src", ["a"], 1)
    assert len(failed) == 2, "a probe that failed was kept and read back"


def test_a_floor_built_in_workers_is_kept_and_read_back(tmp_path, monkeypatch):
    from caiconform.checks import adversarial

    built: list = []

    def in_worker(function, log_path, part=0, parts=1):
        built.append(part)
        return [[{"dtype": "mutant"}, {"kind": "mutant", "rule": f"R{part}"}]]

    seeded: list = []
    monkeypatch.setattr(startup, "_in_worker", in_worker)
    monkeypatch.setattr(adversarial, "seed_floor", seeded.append)
    monkeypatch.setattr(adversarial, "shipped_floor", lambda: None)  # as after a code change
    module = adversarial.__name__
    startup._floor_elsewhere(module, tmp_path, StartCache(tmp_path / "c", "k"))
    assert sorted(built) == list(range(adversarial.FLOOR_PARTS))
    cache = StartCache(tmp_path / "c", "k")
    startup._floor_elsewhere(module, tmp_path, cache)
    assert len(built) == adversarial.FLOOR_PARTS, "the kept floor was built again"
    assert seeded[0] == seeded[1] and cache.hits == [f"floor:{module}"]


def test_a_kept_calibration_starts_no_spin_and_is_the_runs(tmp_path, monkeypatch):
    started: list = []
    monkeypatch.setattr(startup, "_in_worker", lambda *a, **k: started.append(a) or {})
    cache = StartCache(tmp_path / "c", "k")
    cache.put("calibration", {"spin_us": 7.5})
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_text("{}")
    run_start = startup.Startup(out, calibrate=True, cache=StartCache(tmp_path / "c", "k"))
    run_start.begin()
    assert run_start.calibration() == {"spin_us": 7.5}
    assert not any("calibrate" in str(a) for a in started), started
    assert json.loads((out / "run.json").read_text())["spin_calibration"] == {"spin_us": 7.5}


def test_a_failed_calibration_is_the_runs_and_not_kept(tmp_path, monkeypatch):
    failed = {"spin_us": None, "reason": "calibration failed: no GPU"}
    monkeypatch.setattr(startup, "_in_worker", lambda *a, **k: dict(failed))
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_text("{}")
    run_start = startup.Startup(out, calibrate=True, cache=StartCache(tmp_path / "c", "k"))
    run_start.begin()
    assert run_start.calibration() == failed
    assert StartCache(tmp_path / "c", "k").get("calibration") is None, "a failure was kept"


def _run(out: Path, cache_dir: Path, *extra: str) -> dict:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "caiconform.cli",
            "run",
            "--checks",
            "tests.synthetic.checks",
            "--adapter-source",
            "tests.synthetic.adapters",
            "--gpus",
            "0",
            "--libraries",
            "good",
            "--max-examples",
            "3",
            "--out",
            str(out),
            *extra,
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), ENV: str(cache_dir)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "synthetic/good/-: 3 pass" in proc.stdout, proc.stdout[-2000:]
    return json.loads((out / "run.json").read_text())["startup"]


def test_a_second_run_reads_its_start_and_fresh_start_measures_it(tmp_path):
    first = _run(tmp_path / "one", tmp_path / "cache")
    assert first["cache"] == "on" and first["cached"] == []
    second = _run(tmp_path / "two", tmp_path / "cache")
    assert second["cached"] == ["probes"], second
    fresh = _run(tmp_path / "three", tmp_path / "cache", "--fresh-start")
    assert fresh["cache"] == "fresh" and fresh["cached"] == [], fresh
