"""Shared test configuration: hypothesis profiles.

`ci` (the default) keeps the whole CPU suite within about a minute on a 2-core machine: few
examples, no deadline (shared CI machines stall), no shrink-time surprises. `thorough` is for a
local hunt: `HYPOTHESIS_PROFILE=thorough python -m pytest tests/test_validate_properties.py`.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile(
    "thorough",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
