"""schema suite on CPU: hypothesis-drawn valid dicts must draw no MUST or SHOULD finding and each
mutant exactly the rule it breaks, judged through the runner's workers like every other item.

The schema family's cells over the libraries are items of `test_families.py`.
"""

from __future__ import annotations

FAMILY = "schema"


def test_schema_synthetic(suite, synthetic_cell) -> None:
    suite.check(FAMILY, synthetic_cell)
