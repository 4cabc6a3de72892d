"""Planted single-point mutants of the pytest plugin (`caiconform.pytest_plugin`) that the suite
let live (issue 41, tests/mutants/validator_check_plugin.toml): its options (`-n 0`, a library
named like a built-in adapter, a `.yml` baseline, the `module:function` form), what the factory's
objects claim and which directions a family judges, the adapter's capabilities and narrowed
probe, the verdict after new records, the baseline's groups, the factory's contract on
dimensions of length 1, and the summary's lines.

Most are asked of the plugin's modules directly, with `tests.test_pytest_plugin`'s records and
campaign; the options go through `pytester` with that file's `fakelib`. No GPU is needed.
"""

from __future__ import annotations

import pytest

from caiconform.pytest_plugin.campaign import Campaign, Options, directions_of
from caiconform.pytest_plugin.targets import Sample, Target, TargetError, parse_spec
from tests.test_pytest_plugin import FAKELIB, _campaign, _record

pytest_plugins = ["pytester"]


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(fakelib=FAKELIB)
    pytester.syspathinsert()
    return pytester


COLLECT = ("--collect-only", "-q", "-p", "no:cacheprovider")
SCHEMA_ONLY = ("-k", "dict-schema", "-p", "no:cacheprovider")


# --- options --------------------------------------------------------------------------------


def test_xdist_n_0_is_no_workers_and_is_accepted(project):
    result = project.runpytest("--cai-producer", "fakelib:make", "-n", "0", *COLLECT)
    assert result.ret == pytest.ExitCode.OK, f"expected -n 0 accepted: {result.stderr.str()}"


def test_a_library_named_like_a_built_in_adapter_is_renamed_under_test(project):
    result = project.runpytest(
        "--cai-producer",
        "fakelib:make",
        "--cai-name",
        "reference",
        "--cai-protocol",
        "cai",
        *COLLECT,
    )
    out = result.stdout.str()
    assert "roundtrip[reference-under-test->peers]" in out, f"expected the renamed item: {out}"


def test_a_baseline_may_be_written_as_yml(project):
    result = project.runpytest(
        "--cai-producer", "fakelib:make", "--cai-write-baseline", "base.yml", *COLLECT
    )
    assert result.ret == pytest.ExitCode.OK, f"expected .yml accepted: {result.stderr.str()}"


@pytest.mark.parametrize("spec", ["fakelib:make-it", "fakelib:make extra", "fakelib:make:more"])
def test_a_spec_must_be_module_colon_function_and_nothing_after(spec):
    with pytest.raises(TargetError, match="expected 'module:function'"):
        parse_spec("--cai-producer", spec)


# --- what the library claims, and the directions --------------------------------------------


def _claims(sample: Sample | None) -> Campaign:
    options = Options(
        target=Target("mylib", "mylib:make", "mylib:read"),
        peers=[],
        max_examples=1,
        expectations=[],
        report=None,
    )
    campaign = Campaign(options, (False, "no GPU"), None)
    campaign._sample = sample
    campaign.family_protocols.update({"dlpack_roundtrip": ("dlpack",), "roundtrip": ("cai",)})
    return campaign


def test_a_factory_that_made_no_sample_keeps_its_dlpack_claim():
    campaign = _claims(Sample("the factory made no sample array", None))
    got = campaign.unjudged("dlpack_roundtrip", "producer")
    assert got is None, f"expected the DLPack family to judge it, got {got!r}"


def test_objects_without_dlpack_skip_only_the_dlpack_family_s_producer_items():
    campaign = _claims(
        Sample("a mylib.Array made for <f4 (4,)", frozenset({"__cuda_array_interface__"}))
    )
    assert "have no __dlpack__" in (campaign.unjudged("dlpack_roundtrip", "producer") or "")
    assert campaign.unjudged("dlpack_roundtrip", "consumer") is None, "the consumer is judged"
    assert campaign.unjudged("roundtrip", "producer") is None, "a CAI family judges it"


def test_a_dlpack_attribute_that_raises_counts_as_present():
    from caiconform.pytest_plugin.targets import sample_exports

    class Raising:
        @property
        def __dlpack__(self):
            raise RuntimeError("broken")

    sample = sample_exports(lambda values, layout, typestr, scenario: Raising())
    assert "__dlpack__" in sample.exports, f"expected the raising attribute counted, got {sample}"


def test_a_family_of_both_protocols_judges_the_cai_consumer():
    target = Target("mylib", "mylib:make", "mylib:read")
    got = directions_of("pair", target, ("cai", "dlpack"))
    assert got == ["producer", "consumer"], f"expected both directions, got {got}"
    assert directions_of("pair", target, ("dlpack",)) == ["producer"]


# --- the adapter the runner sees -----------------------------------------------------------


def test_the_adapter_claims_dlpack_only_for_objects_that_export_it():
    from caiconform.pytest_plugin.adapter import FunctionAdapter

    class User(FunctionAdapter):
        name = "mylib"
        producer_spec = "mylib:make"
        exports_dlpack = False

    assert "dlpack" not in User().capabilities, "expected no dlpack claim"
    User.exports_dlpack = True
    assert "dlpack" in User().capabilities


def test_the_exchange_cells_are_the_user_against_each_peer_in_each_direction():
    from types import SimpleNamespace

    from caiconform.pytest_plugin.campaign import _cell_keys

    pair, prod, cons = (SimpleNamespace(name=n, roles=n) for n in ("pair", "producer", "consumer"))
    peers = ["cupy", "torch"]
    assert _cell_keys(pair, "producer", "mylib", peers) == ["pair/mylib/cupy", "pair/mylib/torch"]
    assert _cell_keys(pair, "consumer", "mylib", peers) == ["pair/cupy/mylib", "pair/torch/mylib"]
    assert _cell_keys(prod, "producer", "mylib", peers) == ["producer/mylib/-"]
    assert _cell_keys(cons, "consumer", "mylib", peers) == ["consumer/-/mylib"]
    assert _cell_keys(prod, "consumer", "mylib", peers) == []
    assert _cell_keys(cons, "producer", "mylib", peers) == []


# --- verdicts, the baseline, the contract -------------------------------------------------


def test_the_verdict_counts_records_added_after_it_was_first_asked():
    campaign = _campaign([])
    assert campaign.verdict().ok
    campaign.records.append(_record("mylib", "reference", "fail", "CAI-PRODUCER-DESCRIBES-DATA"))
    assert not campaign.verdict().ok, "expected the new record's defect in the verdict"


def test_the_baseline_holds_a_defect_with_no_single_culprit_on_the_library_s_pair(tmp_path):
    crash = _record("torch", "mylib", "crash", None, message="worker died (SIGSEGV)")
    path, count = _campaign([crash]).write_baseline(tmp_path / "base.yaml")
    assert count == 1, f"expected the ambiguous crash written, got {count} entries"


def test_a_dimension_of_length_1_may_have_any_stride():
    from caiconform.pytest_plugin.schema import _contract
    from caiconform.spec.layout import Layout

    d = {"shape": (1, 3), "typestr": "<f4", "strides": (999, 4)}
    assert _contract(d, Layout((1, 3)), "<f4") == [], "expected no contract failure"
    bad = _contract({**d, "strides": (12, 8)}, Layout((1, 3)), "<f4")
    assert [f["message"].split(":")[0] for f in bad] == ["strides"]


# --- the summary and the setup lines -------------------------------------------------------


def test_exactly_twelve_skipped_cells_are_listed_whole():
    campaign = _campaign([])
    campaign.skipped_cells = [(f"cell{i}", "why") for i in range(12)]
    lines = _summary(campaign)
    at = lines.index("skipped cells (12):")
    assert lines[at + 1 : at + 13] == [f"  cell{i}: why" for i in range(12)]
    assert not any("more" in line for line in lines), f"expected no cut line: {lines}"
    campaign.skipped_cells.append(("cell12", "why"))
    assert "  ... and 1 more" in _summary(campaign)


def _summary(campaign) -> list[str]:
    from caiconform.pytest_plugin.summary import summary_lines

    return summary_lines(campaign)


@pytest.mark.parametrize(("protocol", "said"), [("both", True), ("dlpack", True), ("cai", False)])
def test_the_summary_says_the_consumer_is_not_judged_over_dlpack(protocol, said):
    campaign = _campaign([])
    campaign.options = Options(**{**campaign.options.__dict__, "protocol": protocol})
    lines = [line for line in _summary(campaign) if line.startswith("DLPack families:")]
    assert bool(lines) == said, f"--cai-protocol {protocol}: got {lines}"


def test_no_records_are_not_a_factory_that_built_nothing():
    from caiconform.pytest_plugin.verdicts import only_setup

    assert only_setup([]) is False


def test_a_setup_reason_without_an_exception_type_says_an_exception():
    from caiconform.adapters.base import SETUP_PREFIX
    from caiconform.pytest_plugin.verdicts import setup_errors

    message = f"{SETUP_PREFIX}producer mylib could not build the example: gave up early"
    (line,) = setup_errors([{"check": "dict-schema", "outcome": "skip", "message": message}])
    assert line.startswith("dict-schema: an exception for - in 1 example(s)"), line


PARTIAL = """
from caiconform.adapters.base import SkipExchange
from fakelib import make


def no_complex(values, layout, typestr, stream_scenario):
    if typestr[1] == "c":
        raise SkipExchange(f"no {typestr} arrays")
    return make(values, layout, typestr, stream_scenario)
"""


def test_a_factory_skipping_some_typestrs_still_passes_its_items(project):
    """Only a factory that skipped every example of a layout kind has that item skipped."""
    project.makepyfile(partial=PARTIAL)
    result = project.runpytest(
        "--cai-producer", "partial:no_complex", "--cai-max-examples", "6", *SCHEMA_ONLY
    )
    result.assert_outcomes(passed=6)
    assert "dict-schema: " in result.stdout.str() and "skip " in result.stdout.str(), (
        "expected some examples skipped, so the items pass with skips among their examples"
    )
