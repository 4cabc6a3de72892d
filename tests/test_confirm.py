"""A finding's first example is run once more; the catalogue says whether it reproduced."""

from __future__ import annotations

import json

from caiconform.report.issues import render_issue
from caiconform.report.load import Run, confirmations_of, load_run
from caiconform.report.merge import merge_runs
from caiconform.results.catalogue import build_catalogue, reproduced
from caiconform.runner.config import RunConfig
from caiconform.runner.driver import run_matrix
from tests.synthetic.checks import FLAKY_ENV

SYNTHETIC = "tests.synthetic.checks"
SOURCE = "tests.synthetic.adapters"
HOOK = f"{SYNTHETIC}:healthy"


def _run(out, confirm: bool = True):
    run_matrix(
        RunConfig(
            out=out,
            checks=[SYNTHETIC],
            libraries=["good", "wrong", "flaky", "abort"],
            max_examples=20,
            seed=3,
            workers=2,
            timeout_s=5.0,
            gpus=0,
            shrink_budget_s=5.0,
            health_hooks=[HOOK],
            adapter_source=SOURCE,
            confirm=confirm,
        )
    )
    return out


def _cells(out) -> dict[str, dict]:
    lines = (out / "cells.jsonl").read_text().splitlines()
    return {c["cell"]: c for c in map(json.loads, lines)}


def test_each_class_runs_again_and_the_catalogue_says_what_reproduced(tmp_path, monkeypatch):
    monkeypatch.setenv(FLAKY_ENV, str(tmp_path / "marks"))
    (tmp_path / "marks").mkdir()
    out = _run(tmp_path / "run")
    cells = _cells(out)
    wrong = cells["synthetic/wrong/-"]["confirmed"]
    assert [(c["outcome"], c["again"], c["same"]) for c in wrong] == [("fail", "fail", True)]
    flaky = cells["synthetic/flaky/-"]["confirmed"]
    assert [(c["outcome"], c["again"], c["same"]) for c in flaky] == [("fail", "pass", False)]
    crash = cells["synthetic/abort/-"]["confirmed"]
    assert [(c["outcome"], c["same"]) for c in crash] == [("crash", True)]
    assert "confirmed" not in cells["synthetic/good/-"]  # nothing to confirm
    assert cells["synthetic/wrong/-"]["timing"]["confirm_s"] > 0
    run = load_run(out)
    groups = {
        g["library"]: g for g in build_catalogue(run.records, run.envs, run.confirmations)["groups"]
    }
    assert groups["wrong"]["reproduced"] is True
    assert groups["flaky"]["reproduced"] is False
    assert groups["abort"]["reproduced"] is True
    text = render_issue(groups["flaky"], run.envs, run.dirs)
    assert "**Not reproduced**" in text
    assert "**Reproduced**" in render_issue(groups["wrong"], run.envs, run.dirs)


def test_no_confirm_runs_nothing_again_and_says_nothing(tmp_path):
    out = _run(tmp_path / "run", confirm=False)
    assert not any("confirmed" in c for c in _cells(out).values())
    run = load_run(out)
    catalogue = build_catalogue(run.records, run.envs, run.confirmations)
    assert {g["reproduced"] for g in catalogue["groups"]} == {None}
    assert catalogue["summary"]["unreproduced_groups"] == 0
    group = next(g for g in catalogue["groups"] if g["library"] == "wrong")
    assert "eproduced" not in render_issue(group, run.envs, run.dirs)


def test_confirmations_of_cells_and_merged_runs():
    cells = [
        {"cell": "a/x/-", "confirmed": [{"outcome": "fail", "rule": "R", "same": False}]},
        {"cell": "b/x/-", "confirmed": [{"outcome": "crash", "rule": None, "same": True}]},
        {"cell": "c/x/-", "counts": {}},
    ]
    table = confirmations_of(cells)
    assert table == {("a/x/-", "fail", "R"): False, ("b/x/-", "crash", None): True}
    # one run that reproduced it is enough
    merged = merge_runs(
        [
            Run(records=[], confirmations={("a/x/-", "fail", "R"): False}),
            Run(records=[], confirmations={("a/x/-", "fail", "R"): True}),
        ]
    )
    assert merged.confirmations == {("a/x/-", "fail", "R"): True}


def test_reproduced_over_a_groups_cells():
    examples = [
        {"check": "a", "producer": "x", "consumer": None, "outcome": "fail", "rule": "R"},
        {"check": "b", "producer": "x", "consumer": None, "outcome": "fail", "rule": "R"},
    ]
    assert reproduced(examples, {}) is None
    assert reproduced(examples, {("a/x/-", "fail", "R"): False}) is False
    table = {("a/x/-", "fail", "R"): False, ("b/x/-", "fail", "R"): True}
    assert reproduced(examples, table) is True


def _lost(check, producer, rule, outcome="crash", **more):
    return {
        "check": check,
        "producer": producer,
        "consumer": "cupy",
        "outcome": outcome,
        "rule": rule,
        "params": {"kind": "mutant", "rule": rule} if producer is None else {},
        "message": "worker died (SIGSEGV)",
        "floor": True,
        **more,
    }


def test_a_consumer_lost_on_a_mutant_breaking_a_producer_rule_is_not_run_again():
    """A consumer's crash or poisoned context on a dict that breaks a producer's MUST rule,
    in a cell with no producer library, ranks at most accepts-invalid whatever else the run
    holds: it is not run again (that costs another process) and its reproduced stays
    unknown. A crash opposite a real producer, on a portability rule, or with no rule is
    run again as before."""
    from caiconform.results.catalogue import lost_on_input_alone
    from caiconform.runner.followup import FollowUps

    on_input = [
        _lost("adversarial", None, "CAI-SHAPE-INT"),
        _lost("adversarial", None, "CAI-DATA-NONZERO-SIZE-NONNULL", outcome="poisoned"),
    ]
    kept = [
        _lost("adversarial", None, "CAI-PORT-STRIDES-ITEMSIZE", outcome="poisoned"),
        _lost("roundtrip", "reference", None),
        _lost("roundtrip", "torch", "CAI-SHAPE-INT"),
        _lost("adversarial", None, "CAI-SHAPE-INT", outcome="fail"),
    ]
    assert [lost_on_input_alone(r) for r in on_input] == [True, True]
    assert [lost_on_input_alone(r) for r in kept] == [False, False, False, False]
    follow = FollowUps(shrink=False, confirm=True, records=[])
    follow.note([*on_input, *kept])
    assert follow.confirms == kept
    # the catalogue files such a group as what the consumer did with the input, below
    # refuses-valid, and with nothing run again says nothing of its reproduction
    group = next(
        g
        for g in build_catalogue([{**on_input[0], "worker": "w0/1"}])["groups"]
        if g["library"] == "cupy"
    )
    assert group["input_rule"] == "CAI-SHAPE-INT"
    assert group["severity"] in ("accepts-invalid", None)
    assert group["reproduced"] is None
