"""versions suite: CAI versions 0-3, unknown versions and unknown keys fed to each consumer:
defined versions read correctly, unknown versions refused [CAI-VERSION-KNOWN].

One item per cell (see suites/conftest.py); the family is caiconform.checks.versions.
"""

from __future__ import annotations

import pytest

FAMILY = "versions"


@pytest.mark.gpu
def test_versions(suite, cell) -> None:
    suite.check(FAMILY, cell)
