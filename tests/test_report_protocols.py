"""The report's protocol section: the protocols it counts a family under (the family
catalogue's), and the counts it gives."""

from __future__ import annotations

import pytest

from caiconform.checks import load
from caiconform.report import protocols
from caiconform.spec.families import CATALOGUE, FAMILIES


@pytest.mark.parametrize("family", FAMILIES)
def test_a_family_s_protocols_are_declared_in_the_catalogue_alone(family: str) -> None:
    module = load(family)
    leftover = [a for a in ("PROTOCOLS", "PRODUCER_NEEDS", "CONSUMER_NEEDS") if hasattr(module, a)]
    assert not leftover, f"{family} declares {leftover}: the catalogue and its protocol decide"


def test_the_report_counts_a_family_under_its_catalogue_protocols() -> None:
    for entry in CATALOGUE:
        assert protocols.protocols_of(entry.name) == entry.protocols
    assert protocols.protocols_of("agreement") == ("cai", "dlpack")
    assert protocols.protocols_of("a.family.of.the.users.own") == ("cai",)


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
