"""One finding per bug (results.fold), what a mutant's dict holds deciding its filing
(results.filing.unprovable_field), and the triage of every published finding
(report/triage.toml)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caiconform.report.triage import TriageError, annotate_triage, parse_triage, triage_entries
from caiconform.results.catalogue import build_catalogue
from caiconform.results.fold import findings, group_id
from caiconform.results.severity import DEFAULT_FAIL_ON, PORTABILITY, rank
from caiconform.results.verdict import judge

LATEST = Path(__file__).parents[1] / "reports" / "latest" / "findings.json"


def _rec(seq, check, producer, consumer, outcome, rule=None, **extra):
    return {
        "run_id": "r1",
        "seq": seq,
        "check": check,
        "producer": producer,
        "consumer": consumer,
        "outcome": outcome,
        "rule": rule,
        "params": extra.pop("params", {"typestr": "<f4", "seed": seq}),
        "message": extra.pop("message", "m"),
        **extra,
    }


NULL = "RuntimeError: UnownedMemory requires explicit device ID for a null pointer."


def _null_refusals() -> list[dict]:
    """CuPy's refusal of a zero-size array with a null pointer, seen by two families under
    two rules, and one unrelated refusal."""
    return [
        _rec(1, "zero_size", "reference", "cupy", "rejected", "CAI-DATA-ZERO-SIZE-NULL", seen=NULL),
        _rec(2, "zero_size", "reference", "cupy", "rejected", "CAI-DATA-ZERO-SIZE-NULL", seen=NULL),
        _rec(
            3,
            "roundtrip",
            "reference",
            "cupy",
            "rejected",
            "CAI-CONSUMER-READS-DESCRIBED",
            seen=NULL,
        ),
        _rec(
            4,
            "roundtrip",
            "reference",
            "cupy",
            "rejected",
            "CAI-STRIDES-NONE-C-CONTIGUOUS",
            seen="KeyError: 'strides'",
        ),
    ]


def test_groups_of_one_culprit_and_signature_fold_into_one_finding() -> None:
    catalogue = build_catalogue(_null_refusals())
    groups = {group_id(g): g for g in catalogue["groups"]}
    lead = groups["cupy/consumer/CAI-DATA-ZERO-SIZE-NULL/rejected-valid"]
    member = groups["cupy/consumer/CAI-CONSUMER-READS-DESCRIBED/rejected-valid"]
    other = groups["cupy/consumer/CAI-STRIDES-NONE-C-CONTIGUOUS/rejected-valid"]
    assert member["folded_into"] == group_id(lead) == member["finding"]
    assert [m["rule"] for m in lead["folded"]] == ["CAI-CONSUMER-READS-DESCRIBED"]
    assert not other.get("folded_into") and not other.get("folded")
    assert catalogue["summary"]["groups"] == 3 and catalogue["summary"]["findings"] == 2
    assert len(findings(catalogue["groups"])) == 2
    # the verdict counts findings: two failing, not three
    verdict = judge(_null_refusals(), catalogue=catalogue)
    assert len(verdict.failing) == 2
    assert [j.status for j in verdict.judged if j.group is member] == ["folded"]


def test_a_baseline_entry_for_one_rule_of_a_bug_does_not_hide_its_other_rule() -> None:
    """The lead's rule is baselined; the same bug under another rule is not covered: the
    finding is new."""
    from caiconform.results.expectations import parse_expectations

    records = _null_refusals()
    entries = parse_expectations(
        {
            "version": 1,
            "expectations": [
                {
                    "consumer": "cupy",
                    "rule": "CAI-DATA-ZERO-SIZE-NULL",
                    "outcome": "rejected",
                    "reason": "known",
                }
            ],
        },
        "base.yaml",
    )
    verdict = judge(records, expectations=entries)
    lead = [j for j in verdict.judged if j.group["rule"] == "CAI-DATA-ZERO-SIZE-NULL"][0]
    assert lead.status == "new" and lead.uncovered


def test_a_producer_misdescription_folds_across_its_rules_by_layout() -> None:
    odd = {"typestr": "<f4", "layout": {"shape": [3, 4], "strides": [21, 5], "kind": "odd"}}
    neg = {"typestr": "<u2", "layout": {"shape": [4], "strides": [-2], "kind": "negative"}}
    records = [
        _rec(
            1,
            "dlpack_roundtrip",
            "cupy",
            "torch",
            "fail",
            "DLPACK-PRODUCER-DESCRIBES-DATA",
            params=odd,
        ),
        _rec(
            2,
            "agreement",
            "cupy",
            None,
            "fail",
            "CAI-DLPACK-AGREE",
            params=odd,
            seen="in cupy's own DLPack capsule",
        ),
        _rec(3, "dlpack_roundtrip", "cupy", "torch", "fail", "DLPACK-STRIDES-ELEMENTS", params=neg),
    ]
    groups = build_catalogue(records)["groups"]
    leads = findings(groups)
    assert {g["rule"] for g in leads} == {
        "DLPACK-PRODUCER-DESCRIBES-DATA",
        "DLPACK-STRIDES-ELEMENTS",
    }


def test_a_crash_on_a_stream_handle_no_dict_can_show_live_is_about_the_input() -> None:
    """A v2 mutant built to break CAI-V2-STREAM-UNDEFINED carrying stream 0x7F00: a consumer
    that synchronizes on it dies on what the input holds (CAI-STREAM-LIVE), not on a legal
    dict; the same mutant with stream 1 is valid input and its crash is the consumer's."""

    def mutant(stream):
        entries = [["shape", {"$tuple": [0]}], ["typestr", "|b1"], ["data", {"$tuple": [0, False]}]]
        entries += [["version", 2], ["stream", stream]]
        return {
            "kind": "mutant",
            "interface": {"$dict": entries},
            "rule": "CAI-V2-STREAM-UNDEFINED",
        }

    bogus = _rec(1, "adversarial", None, "numba", "crash", params=mutant(0x7F00))
    legal = _rec(2, "adversarial", None, "cupy", "crash", params=mutant(1))
    groups = {g["library"]: g for g in build_catalogue([bogus, legal])["groups"]}
    assert groups["numba"]["input_rule"] == "CAI-STREAM-LIVE"
    assert groups["numba"]["about_input"] is True and groups["numba"]["severity"] is None
    assert groups["cupy"]["input_rule"] == "CAI-V2-STREAM-UNDEFINED"
    assert groups["cupy"]["severity"] == "crashes"


def test_severity_is_bounded_in_the_catalogue_and_says_by_what() -> None:
    records = [
        _rec(1, "readonly", "reference", "cupy", "fail", "CAI-DATA-READONLY-HONOURED"),
        _rec(2, "streams", "torch", "jax", "fail", "CAI-PORT-V2-PENDING"),
        _rec(3, "mask", "reference", "rmm", "fail", "CAI-MASK-TRUTH"),
    ]
    groups = {g["library"]: g for g in build_catalogue(records)["groups"]}
    assert groups["cupy"]["severity"] == "departs" and "no duty" in groups["cupy"]["bound"]
    assert groups["torch"]["severity"] == PORTABILITY
    assert groups["rmm"]["severity"] == "departs" and groups["rmm"]["harm"] == "corrupts"
    assert all(g["severity"] not in DEFAULT_FAIL_ON for g in groups.values())


def test_a_triage_file_is_checked_when_read() -> None:
    good = (
        '[[finding]]\nid = "cupy/consumer/R/fail"\nverdict = "real"\nseverity = "corrupts"\n'
        'reason = "r"\nreports = [{url = "https://x/1", relation = "reports", title = "t"}]\n'
    )
    entries = parse_triage(good)
    group = {"library": "cupy", "role": "consumer", "rule": "R", "outcome": "fail"}
    annotate_triage([group], entries)
    assert group["triage"]["verdict"] == "real"
    assert group["known_reports"][0]["url"] == "https://x/1"
    with pytest.raises(TriageError, match="verdict 'maybe'"):
        parse_triage(good.replace('"real"', '"maybe"'))
    with pytest.raises(TriageError, match="triaged twice"):
        parse_triage(good + good)
    with pytest.raises(TriageError, match="missing reason"):
        parse_triage(good.replace('reason = "r"\n', ""))


@pytest.mark.skipif(not LATEST.exists(), reason="reports/latest is not in this copy of the tree")
def test_every_published_finding_at_or_above_refuses_valid_is_triaged_real() -> None:
    """The published run (reports/latest): each finding at or above refuses-valid (folded
    leads) has a triage entry at its severity; each that goes upstream (its standalone script
    did not refute it) is triaged real, and one triaged not real is one its script refuted,
    which the pack leaves out."""
    from caiconform.report.upstream import refuted

    groups = json.loads(LATEST.read_text())["groups"]
    entries = triage_entries()
    listed = [
        g
        for g in groups
        if not g.get("folded_into") and rank(g.get("severity")) <= rank("refuses-valid")
    ]
    assert listed, "the published run has no finding at or above refuses-valid"
    missing = [group_id(g) for g in listed if group_id(g) not in entries]
    assert not missing, f"not triaged: {missing}"
    not_real = [
        (group_id(g), entries[group_id(g)].reason)
        for g in listed
        if entries[group_id(g)].verdict != "real" and not refuted(g)
    ]
    assert not not_real, f"published but triaged not real: {not_real}"
    moved = [
        (group_id(g), g["severity"], entries[group_id(g)].severity)
        for g in listed
        if entries[group_id(g)].severity != g["severity"]
    ]
    assert not moved, f"triaged at another severity: {moved}"


def test_a_typestr_describing_other_values_is_the_producers_corruption(monkeypatch) -> None:
    """A producer exporting float32 data under typestr '<i4' (its descr saying '<f4'): a
    conforming consumer trusts the typestr and reads other numbers without an error, so the
    roundtrip files CAI-PRODUCER-DESCRIBES-DATA (corrupts), not only the descr's schema rule;
    a dict whose typestr is right and whose descr alone is odd stays a schema finding."""
    import numpy as np

    from caiconform import validate
    from caiconform.checks import roundtrip

    values = np.array([1.5, -2.25], dtype="<f4")

    class Export:
        def __init__(self, typestr: str) -> None:
            self.typestr = typestr

        @property
        def __cuda_array_interface__(self):
            d = {"shape": (2,), "typestr": self.typestr, "data": (1 << 40, False), "version": 3}
            return {**d, "descr": [("", "<f4" if self.typestr == "<i4" else "<i4")]}

    def read(name, obj):  # the reference consumer: the raw bytes, read as the typestr says
        d = obj.__cuda_array_interface__
        assert "descr" not in d
        return values.view(d["typestr"]), None

    monkeypatch.setattr(roundtrip._exchange, "consume_with", read)
    wrong = Export("<i4")
    found = roundtrip._misdescribed(
        wrong, values, validate(wrong.__cuda_array_interface__).errors, "ctx"
    )
    assert found is not None and found.rule == "CAI-PRODUCER-DESCRIBES-DATA"
    assert found.outcome == "fail"
    right = Export("<f4")
    assert (
        roundtrip._misdescribed(right, values, validate(right.__cuda_array_interface__).errors, "c")
        is None
    )


def test_a_poison_after_one_sides_own_call_raised_is_pinned_on_that_side() -> None:
    """Between two third-party libraries a poisoned context has no culprit by the pair alone;
    when the example had ended with a refusal first, the side whose own call raised is at
    fault: the producer's `__dlpack__`, else the consumer's import of the export."""
    ended = "CUDA context unusable after the example: cuCtxSynchronize failed (the example itself ended rejected: "
    dl = _rec(
        1,
        "dlpack_roundtrip",
        "cupy",
        "numpy",
        "poisoned",
        "DLPACK-EXPORT-BUFFERERROR",
        message=ended + "cupy->numpy over DLPack <f4 odd (3, 4): got __dlpack__({'copy': None}) "
        "raised CUDARuntimeError: misaligned)",
    )
    cai = _rec(
        2,
        "roundtrip",
        "cupy",
        "numba-mlir-kernel",
        "poisoned",
        "CAI-PORT-NEGATIVE-STRIDES",
        message=ended + "cupy->numba-mlir-kernel <c8 negative (3, 4): got CudaAPIError: illegal)",
    )
    plain = _rec(3, "roundtrip", "cupy", "torch", "poisoned", message="CUDA context unusable")
    groups = {g["rule"]: g for g in build_catalogue([dl, cai, plain])["groups"]}
    assert (
        groups["DLPACK-EXPORT-BUFFERERROR"]["library"],
        groups["DLPACK-EXPORT-BUFFERERROR"]["role"],
    ) == ("cupy", "producer")
    assert groups["CAI-PORT-NEGATIVE-STRIDES"]["library"] == "numba-mlir-kernel"
    assert groups["CAI-CONSUMER-READS-DESCRIBED"]["library"] is None


def test_a_refusal_naming_odd_strides_of_a_dimension_that_addresses_nothing_is_portability():
    """cuda.core's StridedMemoryView refuses strides that are no multiple of the item size,
    by design, in dimensions of length 0 or 1 too, where the validator names no portability
    rule (they reach no element): the refusal names its reason, CAI-PORT-STRIDES-ITEMSIZE, a
    refusal the text allows; the same words about item-size strides refuse nothing odd."""
    from caiconform.checks._results import named_refusal

    said = ValueError("strides must be divisible by itemsize")
    empty = {"shape": (0,), "typestr": "<i2", "strides": (3,), "data": (0, False), "version": 3}
    ones = {**empty, "shape": (1, 1), "strides": (7, 5), "typestr": "<f4"}
    plain = {**empty, "shape": (2,), "strides": (2,)}
    assert named_refusal(empty, said) == "CAI-PORT-STRIDES-ITEMSIZE"
    assert named_refusal(ones, said) == "CAI-PORT-STRIDES-ITEMSIZE"
    assert named_refusal(plain, said) is None


def test_a_finding_its_script_did_not_reproduce_goes_to_no_tracker() -> None:
    """No reproducer, no report: a group whose standalone script ran and printed OK stays in
    the reports (UNCONFIRMED) but `write_pack` leaves it out; one not yet verified stays in."""
    from caiconform.report import upstream

    base = {"library": "cupy", "role": "consumer", "rule": "R", "outcome": "fail"}
    refuted = {**base, "standalone": {"standalone": "does not"}}
    unverified = dict(base)
    assert upstream.refuted(refuted) and not upstream.refuted(unverified)
    assert upstream.fileable(refuted) and upstream.fileable(unverified)


def test_a_death_on_invalid_input_is_not_folded_into_a_death_on_valid_input() -> None:
    """torch aborts (SIGABRT) on a legal negative-stride array and on a dict whose null pointer
    the dict shows: the signal is the same, the bugs are not."""
    died = "worker died (SIGABRT): Fatal Python error: Aborted"
    legal = {"typestr": "|b1", "layout": {"shape": [4], "strides": [-1], "kind": "negative"}}
    records = [
        _rec(1, "roundtrip", "reference", "torch", "crash", message=died, params=legal),
        _rec(2, "dlpack_roundtrip", "reference", "torch", "crash", message=died, params=legal),
        _rec(
            3, "adversarial", None, "torch", "crash", message=died, params={"rule": "CAI-SHAPE-INT"}
        ),
    ]
    groups = build_catalogue(records)["groups"]
    leads = findings(groups)
    assert len(leads) == 2
    crash = next(g for g in leads if g["severity"] == "crashes")
    assert [m["rule"] for m in crash["folded"]] == ["DLPACK-CONSUMER-READS-DESCRIBED"]
