"""mask suite: masked exports fed to each consumer:
the mask honoured or the export refused, never dropped silently [CAI-MASK-TRUTH].

One item per cell (see suites/conftest.py); the family is caiconform.checks.mask.
"""

from __future__ import annotations

import pytest

FAMILY = "mask"


@pytest.mark.gpu
def test_mask(suite, cell) -> None:
    suite.check(FAMILY, cell)
