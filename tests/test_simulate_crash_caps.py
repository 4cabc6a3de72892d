"""scripts/simulate_crash_caps.py: a journal replayed under tighter crash caps loses the deaths
(and the groups) past the cap, in journal order, per cell and kind."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "simulate_crash_caps.py"


def _module():
    spec = importlib.util.spec_from_file_location("simulate_crash_caps", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record(n: int, outcome: str, rule: str, mutation: str = "m1") -> dict:
    return {
        "check": "adversarial",
        "producer": None,
        "consumer": "lib",
        "outcome": outcome,
        "rule": rule,
        "params": {"n": n},
        "floor": True,
        "coverage": {"mutation": mutation},
        "worker": "w0/1",
    }


def test_a_tighter_floor_cap_skips_the_kind_after_its_deaths_and_says_what_is_lost() -> None:
    sim = _module()
    records = [
        _record(0, "crash", "CAI-A"),
        _record(1, "crash", "CAI-B"),
        _record(2, "fail", "CAI-C"),  # after two deaths of mutation m1: capped at 2
        _record(3, "crash", "CAI-D", mutation="m2"),  # another kind: counted apart
    ]
    deaths, skipped, groups = sim.replay(records, 2, 3)
    assert (deaths, skipped) == (3, 1)
    assert ("adversarial", None, "lib", "CAI-C", "fail") not in groups
    deaths, skipped, groups = sim.replay(records, 3, 3)
    assert (deaths, skipped) == (3, 0) and ("adversarial", None, "lib", "CAI-C", "fail") in groups
    deaths, skipped, groups = sim.replay(records, 1, 3)
    assert (deaths, skipped) == (2, 2)
    assert {g[3] for g in groups} == {"CAI-A", "CAI-D"}
