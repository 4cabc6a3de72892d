"""aliasing suite: each consumer entry point copies, or not, as its library documents
[CAI-ENTRY-ZERO-COPY-SEES-WRITES, CAI-ENTRY-ZERO-COPY-WRITES-THROUGH, CAI-ENTRY-COPY-INDEPENDENT].

One item per cell (see suites/conftest.py); the family is caiconform.checks.aliasing.
"""

from __future__ import annotations

import pytest

FAMILY = "aliasing"


@pytest.mark.gpu
def test_aliasing(suite, cell) -> None:
    suite.check(FAMILY, cell)
