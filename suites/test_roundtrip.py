"""roundtrip suite: value round trip producer -> consumer over hypothesis layouts and dtypes:
bitwise equal, NaN-aware [CAI-CONSUMER-READS-DESCRIBED / CAI-PRODUCER-DESCRIBES-DATA].

One item per cell (see suites/conftest.py); the family is caiconform.checks.roundtrip.
"""

from __future__ import annotations

import pytest

FAMILY = "roundtrip"


@pytest.mark.gpu
def test_roundtrip(suite, cell) -> None:
    suite.check(FAMILY, cell)
