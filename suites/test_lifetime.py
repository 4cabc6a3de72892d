"""lifetime suite: the producer dropped while each consumer holds its data, then the consumer dropped:
memory kept while viewed [CAI-LIFETIME-DATA-HELD], freed after [CAI-LIFETIME-RELEASED].

One item per cell (see suites/conftest.py); the family is caiconform.checks.lifetime.
"""

from __future__ import annotations

import pytest

FAMILY = "lifetime"


@pytest.mark.gpu
def test_lifetime(suite, cell) -> None:
    suite.check(FAMILY, cell)
