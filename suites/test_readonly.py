"""readonly suite: a read-only export fed to each consumer:
refused or honoured, never written [CAI-DATA-READONLY-HONOURED].

One item per cell (see suites/conftest.py); the family is caiconform.checks.readonly.
"""

from __future__ import annotations

import pytest

FAMILY = "readonly"


@pytest.mark.gpu
def test_readonly(suite, cell) -> None:
    suite.check(FAMILY, cell)
