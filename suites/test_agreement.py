"""agreement suite: objects exporting both the CAI and DLPack:
both describe the same pointer, shape, strides, dtype and read-only flag [CAI-DLPACK-AGREE].

One item per cell (see suites/conftest.py); the family is caiconform.checks.agreement.
"""

from __future__ import annotations

import pytest

FAMILY = "agreement"


@pytest.mark.gpu
def test_agreement(suite, cell) -> None:
    suite.check(FAMILY, cell)
