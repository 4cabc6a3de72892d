"""Scaling with the machine (issue 27): how many workers a run starts, how they spread over the
GPUs, and what keeps the cells that need every GPU from forming a run's tail. CPU only: fake
core counts, fake GPUs (`--gpus N` on a machine without one), a synthetic family that slows
down past K examples at once per device (`tests.synthetic.crowded`)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from caiconform.runner import pool
from caiconform.runner.config import RunConfig
from caiconform.runner.driver import _gpu_ids, run_matrix
from caiconform.runner.pool import (
    HOST_WORKERS,
    WORKERS_PER_GPU,
    choose_workers,
    default_workers,
)
from caiconform.runner.schedule import Scheduler, wide_threads

ROOT = Path(__file__).resolve().parents[1]
SOURCE = "tests.synthetic.adapters"
CROWDED = "tests.synthetic.crowded"
ONE_KIND = "tests.synthetic.one_kind"


@pytest.fixture(autouse=True)
def _importable_synthetic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


# -- how many workers ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cores", "gpus", "count", "per_gpu"),
    [
        (16, 1, 8, [8]),  # the 1 x H100 / 16-core host
        (32, 1, 8, [8]),  # 2 x H100 / 32 cores, --gpus 1: 8 workers 52.0 s, 16 65.5 s, 32 153 s
        (32, 2, 8, [4, 4]),  # both GPUs: 4 + 4 53.0 s, 8 + 8 60.7 s, 16 + 16 71.5 s
        (128, 8, 8, [1] * 8),  # the host's limit, however many GPUs
        (6, 2, 6, [3, 3]),  # fewer cores: the cores
        (2, 4, 4, [1, 1, 1, 1]),  # at least one per GPU
        (2, 16, 16, [1] * 16),
        (13, 0, 13, []),  # no GPU: one per core
    ],
)
def test_default_workers_follow_the_gpus_not_the_cores(cores, gpus, count, per_gpu):
    ids = [str(i) for i in range(gpus)]
    choice = choose_workers(None, ids, cores=cores)
    assert choice.count == default_workers(gpus, cores=cores) == count
    assert [choice.per_gpu[g] for g in ids] == per_gpu
    assert choice.chosen.startswith("default:")
    assert choice.to_json() == {
        "count": count,
        "workers_per_gpu": dict(zip(ids, per_gpu, strict=True)),
        "cores": cores,
        "chosen": choice.chosen,
    }


def test_a_bigger_host_never_gets_more_workers_per_gpu_than_one_takes():
    for gpus in range(1, 9):
        counts = [default_workers(gpus, cores=cores) for cores in range(1, 257)]
        assert counts == sorted(counts)  # more cores: never fewer workers
        assert max(counts) == max(gpus, min(WORKERS_PER_GPU * gpus, HOST_WORKERS))


def test_workers_given_override_the_default_and_still_spread():
    choice = choose_workers(5, ["0", "1"], cores=64)
    assert (choice.count, choice.per_gpu, choice.chosen) == (5, {"0": 3, "1": 2}, "--workers")
    assert choose_workers(0, [], cores=4).count == 1


def test_each_gpu_gets_its_own_slots():
    assert pool.slot_gpus(5, ["0", "1"]) == ["0", "1", "0", "1", "0"]
    assert pool.slot_gpus(3, ["7"]) == ["7"] * 3  # one GPU of several: the others unseen
    assert pool.slot_gpus(2, []) == [None] * 2
    several = pool.WorkerPool(4, gpu_ids=["2", "5"])
    try:
        assert [w.env.get("CUDA_VISIBLE_DEVICES") for w in several.workers] == list("2525")
    finally:
        several.close()


# -- spreading over (fake) GPUs ---------------------------------------------------------------
def _crowded_run(out: Path, monkeypatch, gpus: int, workers: int | None) -> list[dict]:
    crowd = out.parent / f"{out.name}-crowd"
    crowd.mkdir(parents=True)
    monkeypatch.setenv("CAICONFORM_TEST_CROWD_DIR", str(crowd))
    monkeypatch.setenv("CAICONFORM_TEST_CROWD_K", "2")
    # no GPU visible, on every machine: `--gpus N` then means N fake GPUs (on a machine with
    # real ones it would mean the first N of those, and a 1-GPU host gives 2 workers, not 4)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    config = RunConfig(
        out=out,
        checks=[CROWDED],
        libraries=["gpu-only"],
        max_examples=60,
        seed=3,
        workers=workers,
        gpus=gpus,
        shrink=False,
        confirm=False,
        adapter_source=SOURCE,
    )
    run_matrix(config)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return [r for r in records if r.get("index") is not None]


def test_the_default_run_spreads_over_every_gpu_within_what_each_takes(tmp_path, monkeypatch):
    """Two fake GPUs that each take 2 examples at once (slower past that): the default picks
    2 workers per GPU (WORKERS_PER_GPU made 2, 8 cores), each GPU's slots pinned to it, and no
    example ran on a crowded device. The same work given the cores' worth of workers on one
    device crowds it (what 32 workers did to one H100)."""
    monkeypatch.setattr(pool, "WORKERS_PER_GPU", 2)
    monkeypatch.setattr(pool.os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    records = _crowded_run(tmp_path / "two", monkeypatch, gpus=2, workers=None)
    meta = json.loads((tmp_path / "two" / "run.json").read_text())
    assert meta["workers"]["count"] == 4
    assert meta["workers"]["workers_per_gpu"] == {"0": 2, "1": 2}
    assert meta["workers"]["chosen"].startswith("default: min(8 cores, 2 per GPU x 2 GPU(s), 8 per")
    assert records and all(r["outcome"] == "pass" for r in records)
    assert {r["seen"]["device"] for r in records} == {"0", "1"}
    assert max(r["seen"]["crowd"] for r in records) <= 2

    crowded = _crowded_run(tmp_path / "one", monkeypatch, gpus=1, workers=4)
    meta = json.loads((tmp_path / "one" / "run.json").read_text())
    assert meta["workers"]["chosen"] == "--workers"
    assert {r["seen"]["device"] for r in crowded} == {"0"}  # --gpus 1: pinned to the first GPU
    assert max(r["seen"]["crowd"] for r in crowded) > 2


@pytest.mark.parametrize(
    ("visible", "requested", "ids"),
    [
        ("", 2, ["0", "1"]),  # none visible: the GPUs asked for are fake ones
        ("0", 2, ["0"]),  # a 1-GPU host: no more than it has
        ("3,5", 1, ["3"]),
        ("3,5", None, ["3", "5"]),
        ("3,5", 0, []),
    ],
)
def test_the_gpus_asked_for_are_the_visible_ones_else_fake_ones(
    monkeypatch, visible, requested, ids
):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert _gpu_ids(requested)[0] == ids


# -- the cells that need every GPU -------------------------------------------------------------
def test_a_familys_own_crash_kind_caps_its_drawn_examples(tmp_path):
    """Drawn params that name no kind were never capped (the devices family's: 70 poisoned
    contexts in one cell on two H100s); a family's `crash_kind` makes them one kind, and once
    the cap's count of them is lost (the default's; three here, to see the count) the rest of
    the cell's are skipped."""
    config = RunConfig(
        out=tmp_path / "run",
        checks=[ONE_KIND],
        libraries=["abort"],
        max_examples=60,
        seed=5,
        workers=2,
        gpus=0,
        shrink=False,
        confirm=False,
        adapter_source=SOURCE,
        drawn_crash_cap=3,
    )
    run_matrix(config)
    lines = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    records = [r for r in map(json.loads, lines) if r.get("index") is not None]
    lost = [i for i, r in enumerate(records) if r["outcome"] == "crash"]
    assert len(lost) == 3
    after = records[lost[-1] + 1 :]
    assert after and all(r["outcome"] == "skip" for r in after)
    assert after[0]["message"].startswith("not run: drawn examples of one kind already ended 3")


class _Cell:
    """A cell for the scheduler: `tasks` examples, wide or not."""

    helpers_cap = None
    splittable = True
    queues = None

    def __init__(self, name: str, tasks: int, wide: bool) -> None:
        self.name, self.left, self.wide, self.cost = name, tasks, wide, float(tasks)
        self.done = 0
        self.lock = threading.Lock()

    def remaining(self) -> float:
        return float(self.left)

    def take(self):
        with self.lock:
            if self.left <= 0:
                return None
            self.left -= 1
            return ("examples", self, None)

    def finished(self) -> bool:
        return self.left <= 0


def test_few_threads_take_the_cells_that_need_every_gpu():
    """However many threads a run has, at most `wide_threads` ever take tasks of cells that
    need every GPU (each such thread keeps a second fork server whose children make a context
    on every GPU); the others take every other cell, and every cell ends."""
    assert wide_threads(2) == 8 and wide_threads(0) == 4
    cells = [_Cell(f"wide-{i}", 20, True) for i in range(4)]
    cells += [_Cell(f"narrow-{i}", 20, False) for i in range(4)]
    scheduler = Scheduler(cells, threading.Event(), wide_threads=2)
    took: dict[int, set[str]] = {}

    def drive(i: int) -> None:
        me = scheduler.thread()
        while (task := scheduler.next(me)) is not None:
            if task[0] != "start":
                took.setdefault(i, set()).add(task[1].name)

    threads = [threading.Thread(target=drive, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert all(c.finished() for c in cells)
    wide = [i for i, names in took.items() if any(n.startswith("wide") for n in names)]
    assert 1 <= len(wide) <= 2
