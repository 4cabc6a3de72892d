"""`caiconform run --shard I/N`: N runs of the same seed, merged by `caiconform report --merge`,
give the report a single run gives; the split is deterministic and balanced by cost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caiconform.cli import main as cli_main
from caiconform.runner.config import RunConfig
from caiconform.runner.driver import run_matrix
from caiconform.runner.schedule import estimate_cost, parse_shard, shard_cells
from tests.conftest import _built_once

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "tests.synthetic.adapters"
CHECKS = ["tests.synthetic.checks", "tests.synthetic.floor_checks"]
LIBRARIES = ["good", "wrong", "raises", "abort", "skip", "gpu-only", "missing"]


@pytest.fixture(autouse=True)
def _importable_synthetic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


def _run(out: Path, shard: tuple[int, int] | None = None, workers: int = 2) -> Path:
    run_matrix(
        RunConfig(
            out=out,
            checks=CHECKS,
            libraries=LIBRARIES,
            max_examples=12,
            seed=2024,
            workers=workers,
            timeout_s=5.0,
            gpus=0,
            shrink_budget_s=10.0,
            adapter_source=SOURCE,
            shard=shard,
        )
    )
    return out


@pytest.fixture(scope="session")
def shard_run(tmp_path_factory: pytest.TempPathFactory):
    """`shard_run(i)`: the run directory of shard i/3 (`_run(out, (i, 3))`), run once per pytest
    run and shared by the tests here, which only read it (`caiconform report` writes to its
    `--out`)."""
    return lambda i: _built_once(tmp_path_factory, f"shard-{i}-of-3", lambda out: _run(out, (i, 3)))


def _comparable(matrix: dict) -> dict:
    """The parts of a report that must not depend on how the matrix was split: per-cell
    outcome counts, finding groups (without reproducer paths), skips, the summary."""
    findings = [{k: v for k, v in f.items() if k != "repros"} for f in matrix["findings"]]
    return {
        "cells": matrix["cells"],
        "findings": findings,
        "skips": sorted(matrix["skips"], key=json.dumps),
        "summary": matrix["summary"],
        "families": matrix["families"],
    }


def test_merged_shards_give_the_report_of_a_single_run(tmp_path, shard_run):
    single = _run(tmp_path / "single")
    shards = [shard_run(i) for i in (1, 2, 3)]
    cells = [
        {json.loads(line)["cell"] for line in (d / "cells.jsonl").read_text().splitlines()}
        for d in shards
    ]
    assert all(cells), "every shard got cells"
    assert not (cells[0] & cells[1]) and not (cells[0] & cells[2]) and not (cells[1] & cells[2])
    everything = {
        json.loads(line)["cell"] for line in (single / "cells.jsonl").read_text().splitlines()
    }
    assert cells[0] | cells[1] | cells[2] == everything

    # the synthetic adapters have defects at the default --fail-on: the status is 1 for both
    assert cli_main(["report", str(single), "--out", str(tmp_path / "r1")]) == 1
    merge = ["report", str(shards[0]), "--merge", str(shards[1]), str(shards[2])]
    assert cli_main([*merge, "--out", str(tmp_path / "r3")]) == 1
    one = json.loads((tmp_path / "r1" / "matrix.json").read_text())
    merged = json.loads((tmp_path / "r3" / "matrix.json").read_text())
    assert _comparable(merged) == _comparable(one)
    assert len(merged["runs"]) == 3


def test_shards_are_a_deterministic_balanced_partition():
    costs = {f"f/{i}/-": float(c) for i, c in enumerate([9, 7, 6, 5, 4, 3, 3, 2, 1, 1])}
    parts = [shard_cells(costs, (i, 3)) for i in (1, 2, 3)]
    assert set().union(*parts) == set(costs)
    assert sum(len(p) for p in parts) == len(costs)
    loads = [sum(costs[k] for k in part) for part in parts]
    assert max(loads) - min(loads) <= max(costs.values())
    assert parts == [shard_cells(dict(reversed(costs.items())), (i, 3)) for i in (1, 2, 3)]
    assert shard_cells(costs, (1, 1)) == set(costs)


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0", "-1/2"])
def test_bad_shards_are_refused(text, tmp_path, capsys):
    with pytest.raises(ValueError, match="expected I/N"):
        parse_shard(text)
    argv = ["run", "--adapter-source", SOURCE, f"--shard={text}", "--out", str(tmp_path / "r")]
    with pytest.raises(SystemExit) as exit_:
        cli_main(argv)
    assert exit_.value.code == 2
    assert "expected I/N" in capsys.readouterr().err


def test_cost_estimate_weighs_examples_libraries_and_history():
    light = estimate_cost("schema", ["reference"], 100)
    heavy = estimate_cost("schema", ["torch", "cupy"], 100)
    assert heavy > light
    assert estimate_cost("streams", ["reference"], 100) > light
    assert estimate_cost("schema", ["reference"], 300) > light
    history = {"schema/reference/-": 1.0}
    assert estimate_cost("schema", ["reference"], 100, history, "schema/reference/-") > 100


def test_adversarial_cells_start_before_the_heaviest_streams_cells():
    """Measured on an H100: an adversarial cell (floor 318 + 100 examples, crashes and
    shrinking) outlasts a streams cell of torch and JAX (35 + 100 examples, two slow starts), so
    longest-first starts it first."""
    adversarial = estimate_cost("adversarial", ["cuda.cccl"], 418)
    streams = estimate_cost("streams", ["torch", "jax"], 135)
    assert adversarial > 2 * streams


def test_cells_that_cannot_be_split_start_first():
    """A cell that cannot be split, or only over a few threads (every GPU), cannot be helped
    much: it starts before the longest freely splittable one."""
    from types import SimpleNamespace

    from caiconform.runner.schedule import start_order

    cells = [
        SimpleNamespace(key="long", splittable=True, cost=100.0, helpers_cap=None),
        SimpleNamespace(key="own", splittable=False, cost=20.0, helpers_cap=None),
        SimpleNamespace(key="short", splittable=True, cost=5.0, helpers_cap=None),
        SimpleNamespace(key="own-long", splittable=True, cost=30.0, helpers_cap=4),
    ]
    assert [c.key for c in start_order(cells)] == ["own-long", "own", "long", "short"]


def test_a_merge_missing_a_shard_is_incomplete(tmp_path, capsys, shard_run):
    """Two of three shards merged judge two thirds of the matrix: INCOMPLETE (exit 3) naming
    the shard that is not there; one shard judged alone is its own whole run [issue 34]."""
    shards = [shard_run(i) for i in (1, 3)]
    merge = ["report", str(shards[0]), "--merge", str(shards[1]), "--out", str(tmp_path / "r")]
    assert cli_main(merge) == 3
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("INCOMPLETE: shard(s) 2/3 not among the runs merged"), first
    assert "caiconform run --shard 2/3" in first
    assert cli_main(["report", str(shards[0]), "--out", str(tmp_path / "alone")]) == 1
