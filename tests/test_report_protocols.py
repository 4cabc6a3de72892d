"""The report's protocol section: the naming convention it reads a family's protocol by, and
the counts it gives."""

from __future__ import annotations

import pytest

from caiconform.checks import load
from caiconform.report import protocols
from caiconform.spec.families import FAMILIES


@pytest.mark.parametrize("family", FAMILIES)
def test_the_naming_convention_is_each_familys_own_protocols(family: str) -> None:
    module = load(family)
    assert set(protocols.protocols_of(family)) == set(getattr(module, "PROTOCOLS", ("cai",)))


def _matrix() -> dict:
    cells = [
        {"check": "roundtrip", "tested": 10, "passed": 9},
        {"check": "dlpack_roundtrip", "tested": 4, "passed": 2},
        {"check": "agreement", "tested": 2, "passed": 2},
        {"check": "dlpack_roundtrip", "tested": 0, "passed": 0},
    ]
    groups = [
        {"checks": ["roundtrip"], "severity": "corrupts", "library": "a"},
        {"checks": ["dlpack_roundtrip"], "severity": "refuses-valid", "library": "b"},
        {"checks": ["dlpack_roundtrip"], "severity": "corrupts", "library": "caiconform"},
        {"checks": ["dlpack_roundtrip"], "severity": "crashes", "about_input": True},
    ]
    return {"cells": cells, "catalogue": {"groups": groups}}


def test_rows_count_cells_examples_and_library_groups() -> None:
    rows = {row["protocol"]: row for row in protocols.protocol_rows(_matrix())}
    assert rows["cai"] == {
        "protocol": "cai",
        "cells": 2,
        "tested": 12,
        "passed": 11,
        "groups": 1,
        "severities": {"corrupts": 1},
    }
    assert rows["dlpack"]["cells"] == 2 and rows["dlpack"]["tested"] == 6
    assert rows["dlpack"]["severities"] == {"refuses-valid": 1}


def test_the_section_shows_only_when_dlpack_ran() -> None:
    lines = protocols.render(_matrix())
    assert lines[0] == "## Protocols" and any(
        line.startswith("| dlpack | 2 | 6 |") for line in lines
    )
    cai_only = {"cells": [{"check": "roundtrip", "tested": 3, "passed": 3}], "catalogue": {}}
    assert protocols.render(cai_only) == []
