"""zero_size suite: zero-size arrays, multi-dimensional zero shapes and empty views, producer -> consumer:
pointer 0 in the export [CAI-DATA-ZERO-SIZE-NULL] and an empty array of the same shape read back.

One item per cell (see suites/conftest.py); the family is caiconform.checks.zero_size.
"""

from __future__ import annotations

import pytest

FAMILY = "zero_size"


@pytest.mark.gpu
def test_zero_size(suite, cell) -> None:
    suite.check(FAMILY, cell)
