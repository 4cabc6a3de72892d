"""The verdict's edges about runs (issue 41, item 2): a merge of shards run with different
settings, a lone shard, `compare` against a killed run, the count of examples a killed run
misses, and no `OK` line over an INCOMPLETE or NOTHING TESTED run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from caiconform.cli import main as cli_main
from caiconform.report.runstate import first_line, state_of
from caiconform.runner.config import RunConfig
from caiconform.runner.driver import run_matrix

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "tests.synthetic.adapters"
CHECKS = ["tests.synthetic.checks", "tests.synthetic.floor_checks"]


@pytest.fixture(autouse=True)
def _importable_synthetic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


def _run(out: Path, libraries: list[str], **settings) -> Path:
    config = {"max_examples": 4, "seed": 7, **settings}
    run_matrix(
        RunConfig(
            out=out,
            checks=CHECKS,
            libraries=libraries,
            workers=1,
            timeout_s=5.0,
            gpus=0,
            shrink=False,
            confirm=False,
            adapter_source=SOURCE,
            **config,
        )
    )
    return out


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _kill_a_cell(run: Path, into: Path) -> tuple[Path, str]:
    """A copy of `run` as if killed before one of its cells that ran: neither its records nor
    its cells.jsonl line are there; run.json's plan still names it."""
    out = Path(shutil.copytree(run, into))
    ran = [c["cell"] for c in _lines(out / "cells.jsonl") if "counts" in c]
    gone = ran[-1]
    cells = [c for c in _lines(out / "cells.jsonl") if c["cell"] != gone]
    (out / "cells.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cells))
    records = [
        r
        for r in _lines(out / "results.jsonl")
        if f"{r['check']}/{r['producer'] or '-'}/{r['consumer'] or '-'}" != gone
    ]
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return out, gone


def test_a_merge_of_shards_run_with_different_settings_is_incomplete(tmp_path, capsys):
    """Shards of different seeds or --max-examples split different matrices: the merge is
    INCOMPLETE (exit 3) naming what differs, never OK."""
    one = _run(tmp_path / "s1", ["good"], shard=(1, 2), seed=1)
    two = _run(tmp_path / "s2", ["good"], shard=(2, 2), seed=2, max_examples=5)
    capsys.readouterr()
    merge = ["report", str(one), "--merge", str(two), "--out", str(tmp_path / "r")]
    assert cli_main(merge) == 3
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("INCOMPLETE: the shards merged were run with different settings")
    assert "seed (1 in shard 1/2, 2 in shard 2/2)" in out[0], out[0]
    assert "max_examples (4 in shard 1/2, 5 in shard 2/2)" in out[0], out[0]
    assert not any(line.startswith("OK") for line in out), out
    matrix = json.loads((tmp_path / "r" / "matrix.json").read_text())
    assert matrix["run_state"]["status"] == "incomplete"


def test_a_lone_shard_says_it_is_one_shard_of_n(tmp_path, capsys):
    shard = _run(tmp_path / "s1", ["good"], shard=(1, 3))
    capsys.readouterr()
    assert cli_main(["report", str(shard), "--out", str(tmp_path / "r")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("ONE SHARD: shard 1/3 of the matrix, judged alone"), first
    assert f"caiconform report {shard} --merge" in first


def test_compare_against_a_killed_run_is_incomplete_and_counts_only_cells_that_ran(
    tmp_path, capsys
):
    whole = _run(tmp_path / "whole", ["good", "missing"])
    killed, gone = _kill_a_cell(whole, tmp_path / "killed")
    capsys.readouterr()
    assert cli_main(["compare", str(whole), str(killed)]) == 3
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("B: INCOMPLETE: 1 of"), out
    assert gone in out[0]
    finished = [c for c in _lines(killed / "cells.jsonl") if "counts" in c]
    assert f"cells both runs finished: {len(finished)} (left out: 1 finished only in A" in (
        "\n".join(out)
    ), out
    assert any(line.startswith("INCOMPLETE (only the cells both runs finished)") for line in out)
    assert cli_main(["compare", str(whole), str(killed), "--json"]) == 3
    result = json.loads(capsys.readouterr().out)
    assert result["common_cells"]["compared"] == len(finished)
    assert result["incomplete"] and result["incomplete"][0].startswith("B: INCOMPLETE")


def test_common_cells_does_not_count_skipped_cells_as_finished(tmp_path, capsys):
    a = _run(tmp_path / "a", ["good", "missing"])
    b = _run(tmp_path / "b", ["good", "missing"], seed=8)
    skipped = [c for c in _lines(a / "cells.jsonl") if c.get("skipped") is not None]
    ran = [c for c in _lines(a / "cells.jsonl") if c.get("skipped") is None]
    assert skipped and ran
    capsys.readouterr()
    assert cli_main(["compare", str(a), str(b), "--common-cells", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["common_cells"]["compared"] == len(ran)


def _write(directory: Path, plan: list[str], records: list[dict], cells: list[dict]) -> Path:
    directory.mkdir()
    meta = {"run_id": "r", "plan": {"cells": plan, "skipped": []}, "settings": {}}
    meta["settings"]["max_examples"] = 100
    (directory / "run.json").write_text(json.dumps(meta))
    (directory / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (directory / "cells.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cells))
    return directory


def _record(producer: str, seq: int, index: int | None, floor: bool = False) -> dict:
    return {
        "run_id": "r",
        "seq": seq,
        "check": "fam",
        "producer": producer,
        "consumer": None,
        "rule": None,
        "outcome": "pass",
        "index": index,
        "floor": floor,
        "shrunk": index is None,
    }


def test_examples_missing_of_a_cell_not_started_are_those_its_family_runs(tmp_path):
    """A cell runs fewer drawn examples than --max-examples (duplicate draws run once) and its
    floor besides: a killed run's count of examples missing follows the cells of the family that
    finished, and a shrunk record is no example of a cell [the verdict: 'about 1712 examples
    missing' when 662 were]."""
    records = [_record("a", i, i) for i in range(10)]
    records += [_record("a", 10 + i, i, floor=True) for i in range(2)]
    records += [_record("a", 12, None)]  # the shrunk minimal example: not an example of the cell
    records += [_record("b", 13 + i, i) for i in range(4)]  # killed after 4 drawn examples
    done = {"cell": "fam/a/-", "counts": {"pass": 12}, "floor_planned": 2}
    run = _write(tmp_path / "run", ["fam/a/-", "fam/b/-", "fam/c/-"], records, [done])
    state = state_of(run)
    assert sorted(u.cell for u in state.unfinished) == ["fam/b/-", "fam/c/-"]
    assert state.missing == (10 - 4 + 2) + (10 + 2), state.missing
    assert "about 20 examples missing" in (first_line([state]) or "")


def test_no_ok_line_over_an_incomplete_or_nothing_tested_run(tmp_path, capsys):
    whole = _run(tmp_path / "whole", ["good"])
    killed, _ = _kill_a_cell(whole, tmp_path / "killed")
    nothing = _run(tmp_path / "nothing", ["missing"])
    capsys.readouterr()
    assert cli_main(["report", str(whole), "--out", str(tmp_path / "r0")]) == 0
    assert any(line.startswith("OK: ") for line in capsys.readouterr().out.splitlines())
    for run, status in ((killed, 3), (nothing, 4)):
        assert cli_main(["report", str(run), "--out", str(tmp_path / f"r{status}")]) == status
        out = capsys.readouterr().out.splitlines()
        assert not any(line.startswith("OK") for line in out), out
        word = "INCOMPLETE" if status == 3 else "NOTHING TESTED"
        assert out[0].startswith(word) and out[1].startswith(word), out
        # the pages say it as the command line does: no OK over half a run or over nothing
        pages = tmp_path / f"r{status}"
        matrix = json.loads((pages / "matrix.json").read_text())
        assert matrix["verdict"]["headline"].startswith(word), matrix["verdict"]["headline"]
        for page in ("matrix.md", "index.html"):
            assert "OK: the matrix" not in (pages / page).read_text(), page
    assert (
        cli_main(["report", str(killed), "--allow-incomplete", "--out", str(tmp_path / "a")]) == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert not any(line.startswith("OK") for line in out), out
    assert "no failing defect in the cells that ran (not an OK)" in out[1]


def test_the_schema_family_compares_a_producer_s_dict_with_the_array_it_asked_for():
    """Issue 41: a registered adapter's dict naming another shape than the array asked for is a
    CAI-PRODUCER-DESCRIBES-DATA finding, as the plugin's contract is; the same shape, or a shape
    the validator already finds malformed, is none."""
    from caiconform.checks.schema import _shape_asked

    d = {"shape": (3, 2), "typestr": "<f4", "data": (1 << 40, False), "version": 3}
    found = _shape_asked(d, (2, 3))
    assert found is not None and found.rule == "CAI-PRODUCER-DESCRIBES-DATA"
    assert "(2, 3)" in found.message and "(3, 2)" in found.message
    assert _shape_asked(d, (3, 2)) is None
    assert _shape_asked({**d, "shape": [3, 2]}, (2, 3)) is None  # CAI-SHAPE-TUPLE's to say
    assert _shape_asked({**d, "shape": ()}, (1,)) is not None  # 0-d is not (1,)
    assert _shape_asked(None, (2,)) is None
