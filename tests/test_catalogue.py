"""The findings catalogue (report.catalogue), coverage tables (report.coverage) and
`caiconform compare`: grouping, the culprit of each finding, conditions, stability."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from caiconform.checks._support import EXPECT_REJECTION
from caiconform.report.catalogue import build_catalogue, compare, culprit_of
from caiconform.report.coverage import build_coverage, planned_from_dirs


def rec(check, producer, consumer, outcome, rule=None, **extra):
    base = {
        "run_id": "r1",
        "check": check,
        "producer": producer,
        "consumer": consumer,
        "outcome": outcome,
        "rule": rule,
        "params": extra.pop("params", {}),
        "message": extra.pop("message", f"{outcome} [{rule}]"),
        "expected": extra.pop("expected", "x"),
        "repro": extra.pop("repro", None),
        "shrunk": extra.pop("shrunk", False),
    }
    return {**base, **extra}


@pytest.mark.parametrize(
    ("record", "library", "role"),
    [
        (
            rec("adversarial", None, "cupy", "accepted-invalid", "CAI-VERSION-KNOWN"),
            "cupy",
            "consumer",
        ),
        (
            rec("roundtrip", "torch", "jax", "rejected", "CAI-PORT-NEGATIVE-STRIDES"),
            "jax",
            "consumer",
        ),
        (
            rec("roundtrip", "numba", "reference", "rejected", "CAI-PRODUCER-DESCRIBES-DATA"),
            "numba",
            "producer",
        ),
        (rec("schema", "jax", None, "rejected", "CAI-PORT-OPAQUE-EXPORT"), "jax", "producer"),
        (rec("roundtrip", "jax", "torch", "rejected", "CAI-PORT-OPAQUE-EXPORT"), "jax", "producer"),
        (rec("streams", "cupy", "torch", "fail", "CAI-SYNC-CONSUMER"), "torch", "consumer"),
        (rec("streams", "numba", "cupy", "fail", "CAI-STREAM-ZERO-FORBIDDEN"), "numba", "producer"),
        (rec("streams", "reference", "torch", "fail", "CAI-SYNC-RACE-FREE"), "torch", "consumer"),
        (rec("roundtrip", "reference", "torch", "crash"), "torch", "consumer"),
        (
            rec("schema", "numba", None, "fail", "CAI-DATA-EXTENT-IN-ALLOCATION"),
            "numba",
            "producer",
        ),
    ],
)
def test_each_finding_names_one_culprit(record, library, role):
    culprit = culprit_of(record)
    assert (culprit["library"], culprit["role"]) == (library, role), culprit
    assert culprit["why"]


def test_a_correct_rejection_is_no_finding():
    records = [
        rec("adversarial", None, "cupy", "rejected", "CAI-SHAPE-INT", expected=EXPECT_REJECTION)
    ]
    assert build_catalogue(records)["groups"] == []


def test_a_race_between_two_libraries_stays_ambiguous_and_says_why():
    culprit = culprit_of(rec("streams", "cupy", "torch", "fail", "CAI-SYNC-RACE-FREE"))
    assert culprit["library"] is None and culprit["why"].startswith("ambiguous")


def test_a_crash_between_two_libraries_is_pinned_by_the_crash_opposite_the_reference():
    records = [
        rec("roundtrip", "reference", "torch", "crash"),
        rec("roundtrip", "cupy", "torch", "crash"),
        rec("roundtrip", "cupy", "jax", "crash"),
    ]
    groups = build_catalogue(records)["groups"]
    torch = [g for g in groups if g["library"] == "torch"]
    assert len(torch) == 1 and torch[0]["count"] == 2
    assert sorted(torch[0]["cells"]) == ["roundtrip/cupy/torch", "roundtrip/reference/torch"]
    ambiguous = [g for g in groups if g["library"] is None]
    assert len(ambiguous) == 1 and "neither dies opposite the reference" in ambiguous[0]["why"]


def test_groups_join_cells_count_examples_and_use_the_shrunk_reproducer():
    records = [
        rec(
            "roundtrip",
            "reference",
            "torch",
            "fail",
            "CAI-CONSUMER-READS-DESCRIBED",
            params={"typestr": ">i4", "seed": 1},
        ),
        rec(
            "streams",
            "reference",
            "torch",
            "fail",
            "CAI-CONSUMER-READS-DESCRIBED",
            params={"typestr": ">i4", "seed": 2, "shape": [64]},
        ),
        rec(
            "roundtrip",
            "reference",
            "torch",
            "fail",
            "CAI-CONSUMER-READS-DESCRIBED",
            params={"typestr": ">i4", "seed": 0},
            shrunk=True,
            repro="repro/min.py",
        ),
    ]
    env = {"r1": {"libraries": {"torch": "2.11.0"}}}
    catalogue = build_catalogue(records, env)
    (group,) = catalogue["groups"]
    assert group["count"] == 2 and group["checks"] == ["roundtrip", "streams"]
    assert group["reproducer"]["repro"] == "repro/min.py" and group["reproducer"]["shrunk"]
    assert group["version"] == "2.11.0" and group["level"] == "MUST"
    assert catalogue["summary"] == {
        "groups": 1,
        "must_groups": 1,
        "ambiguous_groups": 0,
        "by_library": {"torch": 1},
    }


def test_the_condition_contrasts_the_failure_with_its_passing_neighbour():
    # CuPy refuses a zero-size array with pointer 0 only when strides are explicit
    layout = {"shape": [0, 3], "strides": [12, 4], "offset": 0, "kind": "C"}
    records = [
        rec(
            "zero_size",
            "reference",
            "cupy",
            "rejected",
            "CAI-DATA-ZERO-SIZE-NULL",
            params={"typestr": "<f4", "layout": layout},
            coverage={"layout": "zero-size[0, 3] strides", "dtype": "float32"},
        ),
        rec(
            "zero_size",
            "reference",
            "cupy",
            "pass",
            params={"typestr": "<f4", "layout": {**layout, "strides": None}},
            coverage={"layout": "zero-size[0, 3]", "dtype": "float32"},
        ),
        rec(
            "zero_size",
            "reference",
            "cupy",
            "pass",
            params={"typestr": "|b1", "layout": {**layout, "strides": None}},
            coverage={"layout": "zero-size[0, 3]", "dtype": "bool"},
        ),
    ]
    (group,) = build_catalogue(records)["groups"]
    assert group["contrast"] == (
        "fails with layout.strides=[12, 4]; passes with layout.strides=null, the rest the same"
    )
    assert group["condition"] == "layout in {zero-size[0, 3] strides}"


def test_the_condition_names_the_dtype_classes_only_failures_have():
    records = [
        rec(
            "schema",
            "torch",
            None,
            "fail",
            "CAI-ATTR-RAISES-ATTRIBUTEERROR",
            params={"typestr": t},
            coverage={"dtype": t, "layout": "C"},
        )
        for t in ("float8_e4m3fn", "float8_e5m2")
    ] + [
        rec(
            "schema",
            "torch",
            None,
            "pass",
            params={"typestr": t},
            coverage={"dtype": c, "layout": "C"},
        )
        for t, c in (("<f4", "float32"), ("bfloat16", "bfloat16"))
    ]
    (group,) = build_catalogue(records)["groups"]
    assert group["condition"] == "dtype in {float8_e4m3fn, float8_e5m2}"


def test_compare_counts_overlap_and_must_groups():
    a = build_catalogue(
        [
            rec("streams", "numba", None, "fail", "CAI-STREAM-ZERO-FORBIDDEN"),
            rec("roundtrip", "reference", "torch", "rejected", "CAI-PORT-READONLY"),
        ]
    )
    b = build_catalogue([rec("streams", "numba", None, "fail", "CAI-STREAM-ZERO-FORBIDDEN")])
    result = compare(a, b)
    assert result["in_both"] == 1 and result["overlap"] == 0.5 and result["must_in_both"]
    assert [g["rule"] for g in result["only_a"]] == ["CAI-PORT-READONLY"]
    result = compare(b, build_catalogue([]))
    assert not result["must_in_both"] and result["must_missing"][0]["library"] == "numba"


def test_coverage_counts_required_combinations_not_exercised(tmp_path):
    records = [
        rec(
            "roundtrip",
            "cupy",
            "torch",
            "pass",
            floor=True,
            coverage={"layout": "C", "dtype": "float32", "order": "<"},
        ),
        rec(
            "roundtrip",
            "cupy",
            "torch",
            "skip",
            floor=True,
            message="byte-swapped",
            coverage={"layout": "C", "dtype": "float32", "order": ">"},
        ),
        rec(
            "roundtrip",
            "cupy",
            "torch",
            "crash",
            floor=True,
            coverage={"layout": "negative", "dtype": "bool", "order": "|"},
        ),
        rec("roundtrip", "cupy", "torch", "pass"),  # drawn: not a required combination
    ]
    (tmp_path / "cells.jsonl").write_text(
        json.dumps({"cell": "roundtrip/cupy/torch", "floor_planned": 5}) + "\n{truncated"
    )
    planned = planned_from_dirs({"r1": tmp_path})
    assert planned == {"roundtrip/cupy/torch": 5}
    coverage = build_coverage(records, planned)
    cell = coverage["cells"]["roundtrip/cupy/torch"]
    assert (cell["planned"], cell["exercised"], cell["passed"], cell["not_passed"]) == (5, 2, 1, 1)
    assert (cell["skipped"], cell["never_reached"]) == (1, 2)
    assert cell["skips"][0]["reason"] == "byte-swapped"
    assert cell["problems"] == [
        {"combination": "layout=negative dtype=bool order=|", "outcome": "crash", "rule": None}
    ]
    assert coverage["summary"]["not_exercised"] == 3


def _write_run(directory: Path, records: list[dict]) -> None:
    directory.mkdir()
    (directory / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (directory / "env.json").write_text("{}")


def test_compare_command_exit_status_and_json(tmp_path):
    finding = {**rec("streams", "numba", None, "fail", "CAI-STREAM-ZERO-FORBIDDEN"), "seq": 1}
    _write_run(tmp_path / "a", [finding])
    _write_run(tmp_path / "b", [{**finding, "run_id": "r2"}])
    _write_run(tmp_path / "c", [{**rec("schema", "numba", None, "pass"), "seq": 1}])
    cmd = [sys.executable, "-m", "caiconform.cli", "compare"]
    same = subprocess.run(
        [*cmd, str(tmp_path / "a"), str(tmp_path / "b"), "--json"], capture_output=True, text=True
    )
    assert same.returncode == 0, same.stderr
    assert json.loads(same.stdout)["overlap"] == 1.0
    lost = subprocess.run(
        [*cmd, str(tmp_path / "a"), str(tmp_path / "c")], capture_output=True, text=True
    )
    assert lost.returncode == 1 and "only in A" in lost.stdout
    bad = subprocess.run(
        [*cmd, str(tmp_path / "a"), str(tmp_path / "nope")], capture_output=True, text=True
    )
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_report_writes_findings_json_and_renders_the_catalogue(tmp_path):
    from caiconform.report.build import write_report

    finding = {
        **rec(
            "streams",
            "numba",
            None,
            "fail",
            "CAI-STREAM-ZERO-FORBIDDEN",
            floor=True,
            coverage={"scenario": "library-default"},
        ),
        "seq": 1,
    }
    _write_run(tmp_path / "run", [finding])
    written = write_report([tmp_path / "run"])
    catalogue = json.loads((tmp_path / "run" / "findings.json").read_text())
    assert catalogue["schema"] == "caiconform-findings/1"
    assert catalogue["groups"][0]["library"] == "numba"
    markdown = (tmp_path / "run" / "matrix.md").read_text()
    assert "## Catalogue of non-conformances" in markdown and "## Coverage floor" in markdown
    assert written.matrix["summary"]["not_exercised"] == 0
    html = (tmp_path / "run" / "index.html").read_text()
    assert 'id="catalogue"' in html and "drawCoverage" in html
