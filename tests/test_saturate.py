"""Saturation (`RunConfig.saturate`, `runner.cell`): the drawn examples of a cell that met
nothing but pass and skip end once that many in a row met no (outcome, rule) class the cell had
not met; a cell that met a failure has its own limit (`saturate_found`; 0 runs them all);
decided in journal order, so the journal is the same however the cell is split; families whose
draws are each their own input (`SATURATES = False`) and `--saturate 0` run every drawn
example."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caiconform.runner.config import RunConfig
from caiconform.runner.driver import run_matrix
from tests.test_speed import HOOK, SOURCE, SYNTHETIC, _outcomes

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _importable_synthetic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


#: what the last `_run` said in its notes
NOTES: list[str] = []


def _run(
    out: Path,
    workers: int,
    saturate: int,
    libraries=("good", "wrong"),
    checks=(SYNTHETIC,),
    saturate_found: int = 0,
) -> Path:
    result = run_matrix(
        RunConfig(
            out=out,
            checks=list(checks),
            libraries=list(libraries),
            max_examples=40,
            seed=5,
            workers=workers,
            timeout_s=5.0,
            gpus=0,
            shrink=False,
            confirm=False,
            health_hooks=[HOOK],
            adapter_source=SOURCE,
            saturate=saturate,
            saturate_found=saturate_found,
            batch=3,
        )
    )
    NOTES[:] = result.notes
    return out


def _cells(out: Path) -> dict[str, dict]:
    lines = (out / "cells.jsonl").read_text().splitlines()
    return {entry["cell"]: entry for entry in map(json.loads, lines)}


def _drawn(out: Path, producer: str) -> list[dict]:
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return [
        r
        for r in records
        if r.get("producer") == producer and r.get("index") is not None and not r.get("floor")
    ]


def test_a_cell_that_meets_nothing_new_ends_its_draws_the_same_however_split(tmp_path):
    one = _run(tmp_path / "one", 1, saturate=5)
    drawn = _drawn(one, "good")
    # the first drawn example's class (pass) is new; five more in a row end the draws
    assert [r["outcome"] for r in drawn] == ["pass"] * 6, [r["outcome"] for r in drawn]
    cells = _cells(one)
    good = cells["synthetic/good/-"]
    assert good["saturated"] == {"quiet": 5, "unrun": good["saturated"]["unrun"]}
    assert good["saturated"]["unrun"] > 20 and sum(good["counts"].values()) == 6
    # wrong fails from n = 100 on: a cell that met a failure runs every drawn example
    assert len(_drawn(one, "wrong")) == 40
    assert "saturated" not in cells["synthetic/wrong/-"]
    unrun = sum(entry.get("saturated", {}).get("unrun", 0) for entry in cells.values())
    said = [n for n in NOTES if "left unrun" in n]
    assert said == [
        f"1 cell(s) that met nothing but pass and skip ended their draws after 5 in a row met "
        f"no new class: {unrun} drawn examples left unrun (--saturate 0 runs them)"
    ], NOTES
    three = _run(tmp_path / "three", 3, saturate=5)
    assert _outcomes(three) == _outcomes(one), "three workers journaled other examples"
    assert _cells(three)["synthetic/good/-"]["saturated"] == good["saturated"]


def test_saturate_zero_and_a_family_that_does_not_saturate_run_every_draw(tmp_path, monkeypatch):
    every = _run(tmp_path / "zero", 2, saturate=0, libraries=("good",))
    assert len(_drawn(every, "good")) == 40
    assert "saturated" not in _cells(every)["synthetic/good/-"]
    assert not [n for n in NOTES if "left unrun" in n], NOTES
    import tests.synthetic.checks as family

    monkeypatch.setattr(family, "SATURATES", False, raising=False)
    mutants = _run(tmp_path / "mutants", 2, saturate=5, libraries=("good",))
    assert len(_drawn(mutants, "good")) == 40, "a family with SATURATES = False was cut"
    settings = json.loads((mutants / "run.json").read_text())["settings"]
    assert settings["saturate"] == 5


def test_the_floor_meets_classes_but_only_drawn_examples_count_in_a_row(tmp_path):
    """The floor's twelve passes make pass a class the cell has met: the first drawn pass is
    the first of the five in a row, and the floor's own examples count none of them."""
    out = _run(
        tmp_path / "floor", 1, saturate=5, libraries=("good",),
        checks=("tests.synthetic.floor_checks",),
    )  # fmt: skip
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    floor = [r for r in records if r.get("floor")]
    assert len(floor) == 12 and all(r["outcome"] == "pass" for r in floor)
    assert len(_drawn(out, "good")) == 5


def test_a_run_from_before_saturation_resumes_without_it(tmp_path):
    from caiconform.runner.config import resumed_run_id

    (tmp_path / "run.json").write_text(
        json.dumps({"run_id": "old", "settings": {"checks": [SYNTHETIC], "max_examples": 40}})
    )
    config = RunConfig(out=tmp_path, checks=[SYNTHETIC], resume=True)
    assert config.saturate == 20
    assert resumed_run_id(config) == "old" and config.saturate == 0


def test_a_cell_that_only_skips_saturates_too(tmp_path):
    """A skip is no failure: a cell whose library skips every example ends its draws too."""
    out = _run(tmp_path / "skips", 2, saturate=5, libraries=("skip",))
    assert [r["outcome"] for r in _drawn(out, "skip")] == ["skip"] * 6
    assert _cells(out)["synthetic/skip/-"]["saturated"]["quiet"] == 5


def test_the_report_says_what_saturation_left_unrun(tmp_path):
    from caiconform.cli import main as cli_main

    out = _run(tmp_path / "run", 2, saturate=5, libraries=("good", "pid"))
    cells = _cells(out)
    unrun = sum(cells[f"synthetic/{name}/-"]["saturated"]["unrun"] for name in ("good", "pid"))
    assert cli_main(["report", str(out)]) in (0, 1)
    summary = json.loads((out / "matrix.json").read_text())["summary"]
    assert (summary["saturated_cells"], summary["unrun_examples"]) == (2, unrun)
    page = (out / "matrix.md").read_text()
    expected = (
        "2 cell(s) that met nothing but pass and skip ended their draws early (`--saturate`): "
        f"{unrun} drawn example(s) not run."
    )
    assert expected in page, page[:2000]
    html = (out / "index.html").read_text()
    assert "pass-only cell(s) ended their draws " in html and "early (--saturate): " in html


def test_a_cell_that_met_a_failure_ends_its_draws_under_its_own_limit(tmp_path):
    """`wrong` fails for n >= 100 and passes below: once both classes are met, five drawn
    examples in a row that meet neither anew end its draws (`saturate_found`), the same
    however the cell is split, and the cut says the cell had met a failure."""
    one = _run(tmp_path / "one", 1, saturate=5, saturate_found=5, libraries=("wrong",))
    drawn = _drawn(one, "wrong")
    assert 6 <= len(drawn) < 40, len(drawn)
    cut = _cells(one)["synthetic/wrong/-"]["saturated"]
    assert cut == {"quiet": 5, "unrun": 40 - len(drawn), "found": True}, cut
    assert any(r["outcome"] == "fail" for r in drawn)
    said = [n for n in NOTES if "met a failure" in n]
    assert said == [
        "1 cell(s) that met a failure ended their draws after 5 in a row met no new class: "
        f"{cut['unrun']} drawn examples left unrun (--saturate-found 0 runs them)"
    ], NOTES
    three = _run(tmp_path / "three", 3, saturate=5, saturate_found=5, libraries=("wrong",))
    assert _outcomes(three) == _outcomes(one), "three workers journaled other examples"
    assert _cells(three)["synthetic/wrong/-"]["saturated"] == cut
    settings = json.loads((three / "run.json").read_text())["settings"]
    assert settings["saturate_found"] == 5


def test_a_family_that_does_not_saturate_runs_every_draw_of_a_failing_cell(tmp_path, monkeypatch):
    import tests.synthetic.checks as family

    monkeypatch.setattr(family, "SATURATES", False, raising=False)
    out = _run(tmp_path / "mutants", 2, saturate=5, saturate_found=5, libraries=("wrong",))
    assert len(_drawn(out, "wrong")) == 40
    assert "saturated" not in _cells(out)["synthetic/wrong/-"]


def test_a_run_from_before_the_found_limit_resumes_without_it(tmp_path):
    from caiconform.runner.config import DEFAULT_SATURATE_FOUND, resumed_run_id

    settings = {"checks": [SYNTHETIC], "max_examples": 40, "saturate": 20}
    (tmp_path / "run.json").write_text(json.dumps({"run_id": "old", "settings": settings}))
    config = RunConfig(out=tmp_path, checks=[SYNTHETIC], resume=True)
    assert config.saturate_found == DEFAULT_SATURATE_FOUND > 0
    assert resumed_run_id(config) == "old"
    assert (config.saturate, config.saturate_found) == (20, 0)


def test_the_report_counts_the_cells_cut_after_a_failure(tmp_path):
    from caiconform.cli import main as cli_main

    out = _run(tmp_path / "run", 2, saturate=5, saturate_found=5, libraries=("good", "wrong"))
    cells = _cells(out)
    unrun = sum(cells[f"synthetic/{name}/-"]["saturated"]["unrun"] for name in ("good", "wrong"))
    assert cli_main(["report", str(out)]) in (0, 1)
    summary = json.loads((out / "matrix.json").read_text())["summary"]
    assert (summary["saturated_cells"], summary["saturated_found_cells"]) == (2, 1)
    expected = (
        "2 cell(s) ended their draws early, 1 of them after meeting a failure (`--saturate`, "
        f"`--saturate-found`): {unrun} drawn example(s) not run."
    )
    assert expected in (out / "matrix.md").read_text()
    assert "of them after meeting a failure, ended " in (out / "index.html").read_text()
