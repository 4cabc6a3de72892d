"""The synthetic family with a coverage floor: fixed examples the runner runs before drawing.

Its examples reuse `tests.synthetic.checks.execute` (the producer name chooses how an example
misbehaves from n >= THRESHOLD on). The floor holds one passing example and five that cross the
`abort` producer's threshold, all of layout kind "x", so the runner's crash cap is visible; then
three crossing it for each of two mutations with no layout (as the adversarial floor's mutants
are), each capped on its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from caiconform.checks._floor import FloorExample
from tests.synthetic.checks import execute, healthy  # noqa: F401 - the family contract

if TYPE_CHECKING:  # workers import the family to run examples; only the parent draws them
    from hypothesis import strategies as st

FAMILY = "synthetic-floor"
ROLES = "producer"
NEEDS_GPU = False


def examples(producer: str, consumer: str | None) -> st.SearchStrategy[dict]:
    from hypothesis import strategies as st

    return st.fixed_dictionaries({"n": st.integers(0, 100)})


def floor(producer: str, consumer: str | None) -> list[FloorExample]:
    out = [FloorExample({"layout": "ok", "dtype": "int"}, {"n": 1})]
    out += [FloorExample({"layout": "x", "dtype": "int"}, {"n": 600 + i}) for i in range(5)]
    for base, rule in ((700, "R1"), (710, "R2")):
        out += [
            FloorExample({"dtype": "mutant", "mutation": rule}, {"n": base + i}) for i in range(3)
        ]
    return out
