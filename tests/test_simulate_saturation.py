"""scripts/simulate_saturation.py: a journal replayed under a saturation limit for cells that
met a failure leaves their later drawn examples unrun, in journal order, with the seconds they
took and the raw groups only those examples had; a family that does not saturate runs all."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "simulate_saturation.py"


def _module():
    spec = importlib.util.spec_from_file_location("simulate_saturation", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record(seq: int, outcome: str, rule: str | None, check: str = "roundtrip", floor=False):
    return {
        "seq": seq,
        "check": check,
        "producer": "lib",
        "consumer": "peer",
        "outcome": outcome,
        "rule": rule,
        "floor": floor,
        "coverage": {"layout": "C"} if floor else None,
        "duration_s": 0.5,
        "worker": "w0/1",
    }


def _journal(check: str = "roundtrip") -> list[dict]:
    # a floor example that fails, three drawn passes, then a new failure on the fifth draw
    records = [_record(0, "fail", "CAI-A", check, floor=True)]
    records += [_record(n, "pass", None, check) for n in (1, 2, 3, 4)]
    records.append(_record(5, "fail", "CAI-B", check))
    return records


def test_a_failing_cell_cut_after_its_limit_loses_what_only_its_later_draws_met() -> None:
    sim = _module()
    whole = sim.replay(_journal(), 0, 0)
    assert whole[0] == 0 and ("roundtrip", "lib", "peer", "CAI-B", "fail") in whole[2]
    # pass is new on the first draw; draws 2 and 3 are quiet; a limit of 2 cuts draws 4 and 5
    unrun, seconds, groups = sim.replay(_journal(), 20, 2)
    assert (unrun, seconds) == (2, 1.0)
    assert whole[2] - groups == {("roundtrip", "lib", "peer", "CAI-B", "fail")}
    # a limit the cell never reaches cuts nothing
    assert sim.replay(_journal(), 20, 4)[0] == 0


def test_a_family_that_does_not_saturate_is_replayed_whole() -> None:
    sim = _module()
    assert sim.replay(_journal("adversarial"), 20, 2)[0] == 0


def test_a_shrink_of_a_class_the_replay_cut_is_lost_with_it() -> None:
    """A class met only by draws the replay leaves unrun is not shrunk either: its shrink's
    records do not keep its group (they had hidden the two refuses-valid groups a limit of
    30 lost on the H200, 2026-12-02)."""
    sim = _module()
    journal = _journal()
    journal.append({**_record(6, "fail", "CAI-B"), "shrunk": True, "floor": None})
    journal.append({**_record(7, "fail", "CAI-A"), "shrunk": True, "floor": None})
    groups = sim.replay(journal, 20, 2)[2]
    assert ("roundtrip", "lib", "peer", "CAI-B", "fail") not in groups
    assert ("roundtrip", "lib", "peer", "CAI-A", "fail") in groups
    assert ("roundtrip", "lib", "peer", "CAI-B", "fail") in sim.replay(journal, 0, 0)[2]
