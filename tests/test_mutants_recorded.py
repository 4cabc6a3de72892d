"""The recorded mutants (`tests/mutants/*.toml`, planted by `scripts/mutants.py`) still plant:
each names a file of the tree and a text that occurs there exactly once. Code that moves (a
function to a lower layer) leaves a mutant that plants nothing, and a catch rate that counts
fewer mutants than were recorded; this says which at once, without planting any."""

from __future__ import annotations

from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = [
    (path.name, entry)
    for path in sorted((ROOT / "tests" / "mutants").glob("*.toml"))
    for entry in tomllib.loads(path.read_text())["mutant"]
]


def test_there_are_recorded_mutants():
    assert len(MUTANTS) >= 100, len(MUTANTS)
    ids = [entry["id"] for _, entry in MUTANTS]
    assert len(ids) == len(set(ids)), "a mutant id twice"


@pytest.mark.parametrize(("source", "mutant"), MUTANTS, ids=[m["id"] for _, m in MUTANTS])
def test_each_mutant_plants_once_and_its_tests_exist(source, mutant):
    path = ROOT / mutant["file"]
    assert path.is_file(), f"{source}: {mutant['id']}: no file {mutant['file']}"
    count = path.read_text().count(mutant["old"])
    assert count == 1, f"{source}: {mutant['id']}: its text occurs {count} times in {path.name}"
    assert mutant["old"] != mutant["new"], mutant["id"]
    missing = [t for t in mutant["tests"] if not (ROOT / t.split("::")[0]).is_file()]
    assert not missing, f"{source}: {mutant['id']}: no test file {missing}"
