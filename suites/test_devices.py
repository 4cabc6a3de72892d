"""devices suite: an array on device 1 consumed while device 0 is current (needs two GPUs):
read correctly or refused [CAI-DATA-POINTER-CONTEXT].

One item per cell (see suites/conftest.py); the family is caiconform.checks.devices.
"""

from __future__ import annotations

import pytest

FAMILY = "devices"


@pytest.mark.gpu
def test_devices(suite, cell) -> None:
    suite.check(FAMILY, cell)
