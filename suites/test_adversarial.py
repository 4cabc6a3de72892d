"""adversarial suite: malformed and unusual exports, backed by real allocations, fed to each consumer:
invalid ones refused cleanly, legal ones read correctly; crashes and poisoned contexts fail.

One item per cell (see suites/conftest.py); the family is caiconform.checks.adversarial.
"""

from __future__ import annotations

import pytest

FAMILY = "adversarial"


@pytest.mark.gpu
def test_adversarial(suite, cell) -> None:
    suite.check(FAMILY, cell)
