"""The findings catalogue (report.catalogue), coverage tables (report.coverage) and
`caiconform compare`: grouping, the culprit of each finding, conditions, stability."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from caiconform.report.coverage import build_coverage, planned_from_dirs
from caiconform.results.catalogue import (
    NO_NEIGHBOUR,
    build_catalogue,
    compare,
    culprit_of,
    labels_of,
)
from caiconform.results.record import EXPECT_REJECTION


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
        "findings": 1,
        "must_groups": 1,
        "ambiguous_groups": 0,
        "about_input_groups": 0,
        "unreproduced_groups": 0,
        "by_library": {"torch": 1},
        "by_severity": {"corrupts": 1},
    }
    assert group["severity"] == "corrupts"  # a misread byte order
    assert group["derived"] is True and group["about_input"] is False
    assert group["level_text"].startswith("MUST, derived: caiconform's reading of 'If strides")


def test_the_condition_contrasts_the_failure_with_its_passing_neighbour():
    # CuPy refuses a zero-size array with pointer 0 only when strides are explicit
    layout = {"shape": [0, 3], "strides": [12, 4], "offset": 0, "pad": 0, "kind": "C"}
    refused = rec(
        "zero_size",
        "reference",
        "cupy",
        "rejected",
        "CAI-DATA-ZERO-SIZE-NULL",
        params={"typestr": "<f4", "layout": layout, "seed": 7},
    )
    accepted = rec(
        "zero_size",
        "reference",
        "cupy",
        "pass",
        params={"typestr": "<f4", "layout": {**layout, "strides": None}, "seed": 1},
    )
    further = [
        rec("zero_size", "reference", "cupy", "pass", params={"typestr": t, "layout": lay})
        for t, lay in (
            ("|b1", {**layout, "strides": None, "shape": [0]}),
            ("<i8", {**layout, "shape": [0, 5], "strides": [40, 8]}),
        )
    ]
    other_cell = rec(
        "zero_size", "reference", "torch", "pass", params={"typestr": "<f4", "layout": layout}
    )
    (group,) = build_catalogue([refused, accepted, *further, other_cell])["groups"]
    assert (group["library"], group["role"]) == ("cupy", "consumer")
    assert group["contrast"] == (
        "fails when layout.strides is explicit (passes with layout.strides: None, same otherwise)"
    )


def test_the_contrast_names_exact_values_when_no_coarse_param_differs():
    records = [
        rec(
            "roundtrip",
            "reference",
            "jax",
            "rejected",
            "CAI-PORT-READONLY",
            params={"typestr": "<c32", "layout": {"shape": [2], "strides": None, "kind": "C"}},
        ),
        rec(
            "roundtrip",
            "reference",
            "jax",
            "pass",
            params={"typestr": "<c8", "layout": {"shape": [2], "strides": None, "kind": "C"}},
        ),
        rec(
            "roundtrip",
            "reference",
            "jax",
            "pass",
            params={"typestr": "<c8", "layout": {"shape": [2, 2], "strides": None, "kind": "F"}},
        ),
    ]
    (group,) = build_catalogue(records)["groups"]
    assert (
        group["contrast"] == "fails when typestr is <c32 (passes with typestr: <c8, same otherwise)"
    )


def test_without_a_passing_neighbour_the_contrast_says_so():
    records = [
        rec("readonly", None, "cupy", "fail", "CAI-DATA-READONLY-HONOURED", params={"shape": [2]}),
        rec("readonly", None, "torch", "pass", params={"shape": [2]}),
    ]
    (group,) = build_catalogue(records)["groups"]
    assert group["contrast"] == NO_NEIGHBOUR


def test_a_mutant_is_contrasted_with_a_correctly_refused_mutant_of_the_same_rule():
    def mutant(typestr, outcome, rule="CAI-TYPESTR-STR", **extra):
        interface = {
            "$dict": [
                ["shape", {"$tuple": []}],
                ["typestr", typestr],
                ["data", {"$tuple": [256, False]}],
                ["version", 3],
            ]
        }
        return rec(
            "adversarial",
            None,
            "torch",
            outcome,
            rule,
            params={"kind": "mutant", "interface": interface, "rule": rule},
            **extra,
        )

    records = [
        mutant({"$bytes": "7c6231"}, "accepted-invalid"),
        mutant(1, "rejected", expected=EXPECT_REJECTION),
        mutant("f4", "rejected", "CAI-TYPESTR-GRAMMAR", expected=EXPECT_REJECTION),
    ]
    (group,) = build_catalogue(records)["groups"]
    assert group["contrast"] == (
        "fails when interface.typestr is b'|b1' (passes with interface.typestr: 1, same otherwise)"
    )
    alone = build_catalogue(records[:1])["groups"][0]
    assert alone["contrast"].startswith(NO_NEIGHBOUR)


def test_a_finding_with_no_rule_is_grouped_by_the_rule_its_input_breaks():
    def crash(mutation):
        return rec(
            "adversarial",
            None,
            "cupy",
            "crash",
            params={"kind": "live", "mutation": mutation, "typestr": "<f4"},
        )

    records = [
        crash("stream-bogus"),
        crash("stream-bogus"),
        crash("host-pointer"),
        crash("negative-strides"),
    ]
    groups = {g["input_rule"]: g for g in build_catalogue(records)["groups"]}
    assert set(groups) == {"CAI-STREAM-LIVE", "CAI-DATA-DEVICE-ACCESSIBLE", None}
    assert groups["CAI-STREAM-LIVE"]["count"] == 2 and groups["CAI-STREAM-LIVE"]["rule"] is None
    assert groups["CAI-STREAM-LIVE"]["condition"] is None  # nothing passed to contrast with


def test_a_context_poisoned_on_memory_the_dict_cannot_show_is_about_the_input():
    """pycuda's context poisoned by a dict whose extent reaches past its allocation: the
    example named the rule its input broke (CAI-DATA-EXTENT-IN-ALLOCATION) before the runner
    found the context unusable. A consumer cannot see an allocation's end in the dict, so the
    group is information about the input, said as one, never pycuda's crash [issue 33]."""
    params = {"kind": "live", "mutation": "extent-past-allocation", "typestr": "|b1"}
    records = [
        rec(
            "adversarial",
            None,
            "pycuda",
            "poisoned",
            "CAI-DATA-EXTENT-IN-ALLOCATION",
            params=params,
        ),
        rec("adversarial", None, "pycuda", "poisoned", "CAI-SHAPE-INT", params=params),
    ]
    groups = {g["input_rule"] or g["rule"]: g for g in build_catalogue(records)["groups"]}
    extent = groups["CAI-DATA-EXTENT-IN-ALLOCATION"]
    assert extent["rule"] is None and extent["about_input"] is True
    assert extent["severity"] is None
    # a poisoned context on a rule the dict shows (a float in shape) is the consumer's
    # accepts-invalid defect: it could have refused the dict, said as an input-caused group
    shape = groups["CAI-SHAPE-INT"]
    assert shape["about_input"] is False and shape["rule"] is None
    assert shape["input_rule"] == "CAI-SHAPE-INT" and shape["severity"] == "accepts-invalid"
    # a crash on a legal dict a PORTABILITY rule names (odd strides) stays a crash
    odd = rec("adversarial", None, "cupy", "poisoned", "CAI-PORT-STRIDES-ITEMSIZE", params=params)
    (crash,) = build_catalogue([odd])["groups"]
    assert crash["rule"] == "CAI-PORT-STRIDES-ITEMSIZE" and crash["severity"] == "crashes"


def test_a_race_between_two_libraries_is_pinned_by_triangulation():
    records = [
        rec("streams", "cupy", "jax", "fail", "CAI-SYNC-RACE-FREE"),
        rec("streams", "numba", "jax", "fail", "CAI-SYNC-RACE-FREE"),
        rec("streams", "cupy", "torch", "pass"),
        rec("streams", "numba", "cupy", "pass"),
    ]
    (group,) = build_catalogue(records)["groups"]
    assert (group["library"], group["role"], group["count"]) == ("jax", "consumer", 2)
    assert "cupy, numba" in group["why"]
    # one partner only: still two suspects
    (alone,) = build_catalogue(records[:1] + records[2:])["groups"]
    assert alone["library"] is None and alone["why"].startswith("ambiguous")


def test_a_dlpack_disagreement_read_through_cuda_core_stays_ambiguous():
    old = rec("agreement", "cupy", None, "fail", "CAI-DLPACK-AGREE", seen="(18446744073709551612,)")
    new = rec(
        "agreement",
        "cupy",
        None,
        "fail",
        "CAI-DLPACK-AGREE",
        seen="strides (-4,) in cupy's own DLPack capsule (dltensor) and (4,) in its CAI",
    )
    named = {**old, "culprit": {"library": "cuda.core", "role": "consumer", "why": "reads it"}}
    assert culprit_of(old)["library"] is None and "cuda.core" in culprit_of(old)["why"]
    assert culprit_of(new) == {
        "library": "cupy",
        "role": "producer",
        "why": "the only library in a producer cell",
    }
    assert culprit_of(named)["library"] == "cuda.core"


def test_labels_come_from_params_in_runs_before_the_floor_and_name_the_partner():
    records = [
        rec(
            "zero_size",
            p,
            "cuda.core",
            "rejected",
            "CAI-DATA-ZERO-SIZE-NULL",
            params={"typestr": "|b1", "layout": {"shape": [0], "kind": "C"}},
        )
        for p in ("torch", "jax")
    ] + [
        rec(
            "zero_size",
            p,
            "cuda.core",
            "pass",
            params={"typestr": "|b1", "layout": {"shape": [0], "kind": "C"}},
        )
        for p in ("cupy", "reference")
    ]
    (group,) = build_catalogue(records)["groups"]
    assert group["condition"] == "producer in {jax, torch}"
    assert labels_of(records[0]) == {"dtype": "bool", "order": "|", "layout": "zero-size"}


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
    assert group["contrast"] == (
        "fails when byte order is |, dtype is float8_e5m2 (passes with byte order: <, dtype: "
        "float32, same otherwise)"
    )


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
    assert result["must_missing_unreproduced"] == 0


def test_compare_says_which_missing_groups_did_not_reproduce():
    """A MUST group one seed found once and that gave something else when run again is still a
    difference, but compare says so (the H100 runs of 2026-11-24: PyCUDA reading zeros once)."""
    a = build_catalogue([rec("streams", "numba", None, "fail", "CAI-STREAM-ZERO-FORBIDDEN")])
    a["groups"][0]["reproduced"] = False
    result = compare(a, build_catalogue([]))
    assert not result["must_in_both"] and result["must_missing_unreproduced"] == 1
    assert result["only_a"][0]["reproduced"] is False


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


def test_compare_common_cells_judges_runs_cut_short_on_the_cells_both_finished(tmp_path):
    zero = {**rec("streams", "numba", None, "fail", "CAI-STREAM-ZERO-FORBIDDEN"), "seq": 1}
    mask = {**rec("mask", "-", "cupy", "fail", "CAI-MASK-TRUTH"), "seq": 2}
    mask["producer"] = None
    _write_run(tmp_path / "a", [zero, mask])  # finished both cells
    _write_run(tmp_path / "b", [{**zero, "run_id": "r2"}])  # stopped before the mask cell
    (tmp_path / "a" / "cells.jsonl").write_text(
        json.dumps({"cell": "streams/numba/-"}) + "\n" + json.dumps({"cell": "mask/-/cupy"})
    )
    (tmp_path / "b" / "cells.jsonl").write_text(json.dumps({"cell": "streams/numba/-"}) + "\n{")
    cmd = [sys.executable, "-m", "caiconform.cli", "compare", str(tmp_path / "a")]
    everything = subprocess.run([*cmd, str(tmp_path / "b")], capture_output=True, text=True)
    assert everything.returncode == 1 and "cupy consumer CAI-MASK-TRUTH" in everything.stdout
    common = subprocess.run(
        [*cmd, str(tmp_path / "b"), "--common-cells"], capture_output=True, text=True
    )
    assert common.returncode == 0, common.stdout + common.stderr
    assert "cells both runs finished: 1 (left out: 1 finished only in A, 0 only in B)" in (
        common.stdout
    )
    as_json = subprocess.run(
        [*cmd, str(tmp_path / "b"), "--common-cells", "--json"], capture_output=True, text=True
    )
    assert json.loads(as_json.stdout)["common_cells"] == {"compared": 1, "only_a": 1, "only_b": 0}
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "findings.json").write_text(json.dumps({"groups": []}))
    refused = subprocess.run(
        [*cmd, str(tmp_path / "c" / "findings.json"), "--common-cells"],
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "needs run directories" in refused.stderr


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
    assert "## Defects by library, most severe first" in markdown
    assert "## Coverage floor" in markdown
    page = (tmp_path / "run" / "libraries" / "numba.md").read_text()
    assert "CAI-STREAM-ZERO-FORBIDDEN" in page and "**contrast**" in page
    assert written.matrix["summary"]["not_exercised"] == 0
    html = (tmp_path / "run" / "index.html").read_text()
    assert 'id="catalogue"' in html and "drawCoverage" in html


@pytest.mark.parametrize(
    ("library", "dist", "version"),
    [
        ("cuda.cccl", "cuda-cccl", "1.2.1"),
        ("dali", "nvidia-dali-cuda130", "2.4.0"),
        ("rmm", "rmm-cu13", "26.10.0"),
        ("numba-kernel", "numba-cuda", "0.30.4"),
    ],
)
def test_first_version_seen_is_read_from_the_library_distribution(library, dist, version):
    from caiconform.results.catalogue import library_version

    envs = {"r1": {"libraries": {dist: version, "librmm-cu13": "0.0.0"}}}
    assert library_version(library, envs["r1"]) == version


def test_the_adapters_own_version_string_states_a_shim():
    from caiconform.results.catalogue import library_version

    shim = "0.30.4+shim(np.row_stack = np.vstack)"
    envs = {
        "r1": {
            "libraries": {"numba-cuda": "0.30.4"},
            "adapters": {"numba-kernel": {"available": True, "version": shim}},
        }
    }
    assert library_version("numba-kernel", envs["r1"]) == shim
    assert library_version("numba", envs["r1"]) == "0.30.4"  # no probe recorded: the distribution


def test_a_condition_no_single_label_states_is_read_from_a_pair():
    # CuPy's DLPack strides: wrong for negative and odd layouts, but only for items wider
    # than a byte; C layouts of the same types and byte-wide negative/odd layouts pass
    def agree(outcome, layout, dtype, order, seq):
        rule = "CAI-DLPACK-AGREE" if outcome == "fail" else None
        cov = {"layout": layout, "dtype": dtype, "order": order}
        seen = "strides[0] (20, 4) in cupy's own DLPack capsule (dltensor_versioned)"
        return rec(
            "agreement",
            "cupy",
            None,
            outcome,
            rule,
            coverage=cov,
            seq=seq,
            seen=seen,
            floor=True,
        )

    records = [
        agree("fail", "negative", "float32", "<", 1),
        agree("fail", "odd", "int16", "<", 2),
        agree("pass", "negative", "bool", "|", 3),
        agree("pass", "odd", "uint8", "|", 4),
        agree("pass", "C", "float32", "<", 5),
        agree("pass", "C", "int16", "<", 6),
    ]
    (group,) = build_catalogue(records)["groups"]
    assert group["library"] == "cupy"
    assert group["condition"] == "layout in {negative, odd} and dtype in {float32, int16}"
    # the first pair that separates them: here the dtype no longer does, the byte order does
    records.append(agree("pass", "negative", "float32", "|", 7))
    (group,) = build_catalogue(records)["groups"]
    assert group["condition"] == "layout in {negative, odd} and order is <"


def test_the_reproducer_shows_the_commonest_failure_mode():
    """RMM's refusals under one rule: most examples a 0-d IndexError, one a 1-element odd
    stride refused as non-contiguous, which hypothesis shrank to: the reproducer and message
    are one of the commonest mode's, and the group says how many modes it holds."""

    def refusal(n, seen, shrunk=False):
        return rec(
            "roundtrip",
            "reference",
            "rmm",
            "rejected",
            "CAI-CONSUMER-READS-DESCRIBED",
            params={"n": n},
            seen=seen,
            message=seen,
            shrunk=shrunk,
        )

    records = [refusal(i, f"IndexError: tuple index out of range (shape {i})") for i in range(3)]
    records += [refusal(9, "ValueError: Only 1-D contiguous arrays are supported")]
    records += [refusal(10, "ValueError: Only 1-D contiguous arrays are supported", True)]
    (group,) = build_catalogue(records)["groups"]
    assert group["modes"] == 2
    assert group["message"].startswith("IndexError"), group["message"]
    assert group["reproducer"]["params"] in ({"n": 0}, {"n": 1}, {"n": 2})
