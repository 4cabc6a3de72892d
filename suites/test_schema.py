"""schema suite: every dict each producer exports, across layouts, dtypes and stream scenarios,
judged by the validator and the reference consumer's live checks (MUST findings fail; SHOULD and
PORTABILITY findings are recorded in the passing records' messages).

`test_schema_synthetic` needs no GPU: hypothesis-drawn valid dicts must draw no MUST or SHOULD
finding and each mutant exactly the rule it breaks.
"""

from __future__ import annotations

import pytest

FAMILY = "schema"


def test_schema_synthetic(suite, synthetic_cell) -> None:
    suite.check(FAMILY, synthetic_cell)


@pytest.mark.gpu
def test_schema(suite, cell) -> None:
    suite.check(FAMILY, cell)
