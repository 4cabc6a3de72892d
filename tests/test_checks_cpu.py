"""CPU tests of the check families: their API, their params, their reproducers, and every part
of their logic that needs no GPU (value comparison, dict encoding, verdicts, classification of
what a consumer did, the schema family end to end through the runner on synthetic dicts)."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caiconform import strategies as cst
from caiconform import validate
from caiconform.adapters.base import SkipExchange
from caiconform.checks import (
    _encoding,
    _exchange,
    _results,
    adversarial,
    agreement,
    load,
    mask,
    schema,
    streams,
    versions,
)
from caiconform.results.outcome import OUTCOMES
from caiconform.results.record import EXPECT_REJECTION
from caiconform.spec.families import FAMILIES, LIVE
from caiconform.spec.rules import RULES, Level
from caiconform.spec.values import compare_values, make_values, values_source

ROOT = Path(__file__).resolve().parent.parent
CHECKS_DIR = ROOT / "caiconform" / "checks"
#: a producer/consumer per role, so examples() and repro() see real adapter names
CELLS = {"pair": ("cupy", "torch"), "producer": ("torch", None), "consumer": (None, "numba")}
FEW = settings(
    max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)


# --- the family API -------------------------------------------------------------------------


def test_families_list_every_family_module() -> None:
    modules = {
        p.stem
        for p in CHECKS_DIR.glob("*.py")
        if not p.stem.startswith("_") and p.stem != "synthetic_source"
    }
    assert set(FAMILIES) == modules


def test_load_rejects_an_unknown_family() -> None:
    with pytest.raises(ValueError, match="unknown check family 'nope'"):
        load("nope")


@pytest.mark.parametrize("family", FAMILIES)
def test_family_has_the_api(family: str) -> None:
    module = load(family)
    assert family == module.FAMILY
    assert module.ROLES in ("pair", "producer", "consumer")
    assert isinstance(module.NEEDS_GPU, bool)
    for name in ("examples", "execute", "repro"):
        assert callable(getattr(module, name)), f"{family}.{name}"
    assert set(module.__all__) >= {"FAMILY", "ROLES", "NEEDS_GPU", "examples", "execute", "repro"}


def test_devices_declares_two_gpus(monkeypatch) -> None:
    """The runner plans a devices cell of a GPU library on two GPUs, skips it on a machine
    with one, and the family's `execute` skips on one GPU too."""
    import caiconform.cuda
    from caiconform.runner.libraries import LibraryInfo
    from caiconform.runner.plan import load_families, plan_cells

    module = load("devices")
    assert module.MIN_GPUS == 2
    families, broken = load_families(["devices"])
    assert not broken
    gpu_library = LibraryInfo("g", True, "", "1", frozenset({"produce", "consume"}), True)
    libraries = {"g": gpu_library}
    runnable, skipped = plan_cells(families, libraries, 1)
    assert runnable == [] and [why for _, why in skipped] == ["needs 2 GPUs (1 visible)"], (
        f"got runnable {runnable}, skipped {skipped}, expected the cell skipped on one GPU"
    )
    runnable, skipped = plan_cells(families, libraries, 2)
    assert [cell.gpus for cell in runnable] == [2] and skipped == []
    monkeypatch.setattr(caiconform.cuda, "device_count", lambda: 1)
    result = module.execute({}, None, "g")
    assert (result.outcome, result.message) == ("skip", "devices needs 2 GPUs; 1 visible")


def test_every_rule_id_the_checks_cite_exists() -> None:
    cited = set()
    for path in CHECKS_DIR.glob("*.py"):
        cited |= set(re.findall(r"CAI-[A-Z0-9-]+[A-Z0-9]", path.read_text()))
    unknown = sorted(cited - set(RULES))
    assert not unknown, f"rule IDs missing from the catalogue: {unknown}"
    assert len(cited) >= 20  # the regex really finds them


# --- params and reproducers -----------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_examples_are_json_and_repro_scripts_compile(family: str) -> None:
    module = load(family)
    producer, consumer = CELLS[module.ROLES]
    checked = []

    @FEW
    @given(module.examples(producer, consumer))
    def check(params: dict) -> None:
        text = json.dumps(params)
        assert json.dumps(json.loads(text)) == text
        source = module.repro(json.loads(text), producer, consumer)
        compile(source, f"repro-{family}.py", "exec")
        assert source.startswith('"""')
        checked.append(params)

    check()
    assert checked


@pytest.mark.parametrize("family", ["roundtrip", "streams", "zero_size"])
def test_repro_with_the_reference_on_both_sides_compiles(family: str) -> None:
    module = load(family)

    @FEW
    @given(module.examples("reference", "reference"))
    def check(params: dict) -> None:
        source = module.repro(params, "reference", "reference")
        compile(source, "repro.py", "exec")
        assert "from caiconform.reference.producer import ReferenceArray" in source

    check()


def test_synthetic_schema_repro_runs_and_prints_the_verdict(tmp_path: Path) -> None:
    mutant = cst.Mutant(
        {"shape": (2,), "typestr": "<f4", "data": (4096, False), "version": 3, "stream": 0},
        "CAI-STREAM-ZERO-FORBIDDEN",
    )
    params = {"interface": _encoding.encode(mutant.interface), "rule": mutant.rule}
    script = tmp_path / "repro.py"
    script.write_text(schema.repro(params, schema.SYNTHETIC, None))
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert "[CAI-STREAM-ZERO-FORBIDDEN]" in out
    assert "ok (no MUST finding): False" in out


# --- values and comparison ------------------------------------------------------------------


@given(st.sampled_from(["|b1", "|i1", "<u2", "<i4", "<f2", "<f4", "<f8", "<c8", "<c16"]))
def test_make_values_is_deterministic_and_typed(typestr: str) -> None:
    a = make_values(typestr, (3, 4), 7)
    b = make_values(typestr, (3, 4), 7)
    assert a.shape == (3, 4) and a.dtype == np.dtype(typestr)
    assert a.tobytes() == b.tobytes()
    assert make_values(typestr, (3, 4), 8).tobytes() != a.tobytes()
    if typestr == "|b1":
        assert set(a.view(np.uint8).ravel()) <= {0, 1}


def test_make_values_of_a_zero_size_shape() -> None:
    assert make_values("<f4", (2, 0, 3), 1).shape == (2, 0, 3)


@FEW
@given(
    cst.typestrs().flatmap(
        lambda t: st.tuples(
            st.just(t), cst.layouts(itemsize=np.dtype(t).itemsize, portable_only=False)
        )
    )
)
def test_make_values_can_be_stored_at_every_layout(typestr_layout) -> None:
    from caiconform.reference.producer import check_layout

    typestr, layout = typestr_layout
    values = make_values(typestr, layout.shape, 3, layout.strides)
    assert values.shape == layout.shape and values.flags.c_contiguous
    check_layout(layout, values.dtype.itemsize, values)  # raises if broadcast values differ


def test_values_source_rebuilds_the_same_values() -> None:
    namespace: dict = {}
    exec(values_source("<f8", (5, 2), 11), namespace)
    assert namespace["values"].tobytes() == make_values("<f8", (5, 2), 11).tobytes()
    exec(values_source("<i2", (3, 2), 11, (0, 2)), namespace)
    assert namespace["values"].tobytes() == make_values("<i2", (3, 2), 11, (0, 2)).tobytes()
    assert (namespace["values"] == namespace["values"][0]).all()


def test_compare_values_is_bitwise_and_nan_aware() -> None:
    expected = np.array([1.0, np.nan, 0.0], dtype="<f4")
    other_nan = expected.copy()
    other_nan.view(np.uint32)[1] = 0x7FC00001  # another NaN payload
    assert compare_values(other_nan, expected) is None
    negative_zero = expected.copy()
    negative_zero[2] = -0.0
    message = compare_values(negative_zero, expected)
    assert message is not None and "1 of 3 elements differ; first at (2,)" in message
    assert "shape (2,)" in compare_values(expected[:2], expected)
    assert "dtype <f8" in compare_values(expected.astype("<f8"), expected)
    assert "not a numpy array" in compare_values([1.0], expected)


def test_compare_values_reports_a_misread_0d_array() -> None:
    """A 0-d big-endian array read back with its bytes swapped is a mismatch at (), not an
    IndexError of the comparison (which the runner journaled as the consumer's refusal)."""
    expected = make_values(">i4", (), 0)
    misread = np.asarray(expected.astype("<i4").view(">i4").astype("<i4"))
    message = compare_values(misread, expected)
    assert message is not None and message.startswith("1 of 1 elements differ; first at ()")
    assert compare_values(np.asarray(expected.astype("<i4")), expected) is None


def test_compare_values_complex_nan_and_byte_order() -> None:
    expected = np.array([complex(np.nan, 1.0), 2 + 3j], dtype="<c8")
    seen = np.array([complex(np.nan, 1.0), 2 + 3j], dtype="<c8")
    assert compare_values(seen, expected) is None
    seen[0] = complex(np.nan, 2.0)
    assert compare_values(seen, expected) is not None
    big = np.array([1, 2, 3], dtype=">i4")
    assert compare_values(big.astype("<i4"), big) is None


# --- encoding interface dicts ----------------------------------------------------------------


@FEW
@given(cst.interface_dicts(version=None, valid=True) | cst.mutants().map(lambda m: m.interface))
def test_encode_decode_keeps_every_finding(d: dict) -> None:
    encoded = json.loads(json.dumps(_encoding.encode(d)))
    decoded = _encoding.decode(encoded)
    before = sorted((f.rule, f.path) for f in validate(d).findings)
    after = sorted((f.rule, f.path) for f in validate(decoded).findings)
    assert before == after


def test_encode_keeps_tuples_lists_bytes_and_odd_objects() -> None:
    d = {"shape": [2], "data": (256, False), "stream": b"\x01", 3: "x", "mask": object()}
    back = _encoding.decode(json.loads(json.dumps(_encoding.encode(d))))
    assert back["shape"] == [2] and back["data"] == (256, False) and back["stream"] == b"\x01"
    assert back[3] == "x" and isinstance(back["mask"], _encoding.Opaque)
    with pytest.raises(RuntimeError):
        _encoding.RaisingInterface().__cuda_array_interface__  # noqa: B018 -- the raise is the point
    with pytest.raises(ValueError, match="not an encoded value"):
        _encoding.decode({"shape": 1})


# --- schema verdicts ------------------------------------------------------------------------


@FEW
@given(schema.examples(schema.SYNTHETIC, None))
def test_synthetic_schema_examples_pass(params: dict) -> None:
    result = schema.execute(json.loads(json.dumps(params)), schema.SYNTHETIC, None)
    assert result.outcome == "pass", result.message


@FEW
@given(cst.interface_dicts(valid=True))
def test_synthetic_schema_fails_when_the_verdict_differs(valid: dict) -> None:
    wrong_label = schema.execute(
        {"interface": _encoding.encode(valid), "rule": "CAI-STREAM-ZERO-FORBIDDEN"},
        "synthetic",
        None,
    )
    assert wrong_label.outcome == "fail" and wrong_label.rule == "CAI-STREAM-ZERO-FORBIDDEN"
    broken = dict(valid, version=3, stream=0)
    unlabelled = schema.execute(
        {"interface": _encoding.encode(broken), "rule": None}, "synthetic", None
    )
    assert unlabelled.outcome == "fail" and unlabelled.rule == "CAI-STREAM-ZERO-FORBIDDEN"


def test_judge_fails_on_must_and_records_warnings_in_a_pass() -> None:
    negative = {
        "shape": (3,),
        "typestr": "<f4",
        "data": (1 << 20, False),
        "version": 3,
        "strides": (-4,),
    }
    report = validate(negative)
    assert report.ok and report.warnings
    passed = schema.judge(report.findings, "ctx")
    assert passed.outcome == "pass"
    assert "CAI-PORT-NEGATIVE-STRIDES" in passed.seen and "warnings:" in passed.message
    broken = validate(dict(negative, stream=0, shape=[3]))
    failed = schema.judge(broken.findings, "ctx")
    assert failed.outcome == "fail"
    assert failed.rule in {f.rule for f in broken.errors}
    assert "(+1 more" in failed.message and failed.message.startswith("ctx: ")


def test_owner_reachable_finds_the_exporter_in_the_dict() -> None:
    owner = object()
    assert schema.owner_reachable({"data": (1, False), "owner": [owner]}, owner)
    assert not schema.owner_reachable({"data": (1, False)}, owner)


# --- exchange classification with fake consumers ----------------------------------------------


class FakeConsumer:
    """Stands in for an adapter: raises `error`, or returns `values`."""

    def __init__(self, values=None, error: BaseException | None = None) -> None:
        self.values = values
        self.error = error

    def consume(self, obj):
        if self.error is not None:
            raise self.error
        return self.values


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch):
    consumers: dict[str, FakeConsumer] = {}
    monkeypatch.setattr(_exchange, "adapter", lambda name: consumers[name])
    return consumers


def test_judge_exchange_classifies_every_answer(fake) -> None:
    values = np.arange(4, dtype="<i4")
    plain = _encoding.InterfaceObject(
        {"shape": (4,), "typestr": "<i4", "data": (256, False), "version": 3}
    )
    fake["reads"] = FakeConsumer(values)
    fake["wrong"] = FakeConsumer(values + 1)
    fake["raises"] = FakeConsumer(error=TypeError("no"))
    assert _exchange.judge_exchange("reads", plain, values, None, "c").outcome == "pass"
    wrong = _exchange.judge_exchange("wrong", plain, values, None, "c")
    assert (wrong.outcome, wrong.rule) == ("fail", "CAI-CONSUMER-READS-DESCRIBED")
    assert "4 of 4 elements differ" in wrong.message
    gap = _exchange.judge_exchange(
        "raises", plain, values, None, "c", reject_rule="CAI-VERSION-KNOWN"
    )
    assert (gap.outcome, gap.rule) == ("rejected", "CAI-VERSION-KNOWN")
    assert gap.expected != EXPECT_REJECTION
    right = _exchange.judge_exchange("raises", plain, values, "CAI-STREAM-LIVE", "c")
    assert (right.outcome, right.rule, right.expected) == (
        "rejected",
        "CAI-STREAM-LIVE",
        EXPECT_REJECTION,
    )
    taken = _exchange.judge_exchange("reads", plain, values, "CAI-STREAM-LIVE", "c")
    assert (taken.outcome, taken.rule) == ("accepted-invalid", "CAI-STREAM-LIVE")


def test_a_portable_refusal_names_the_portability_rule(fake) -> None:
    negative = _encoding.InterfaceObject(
        {"shape": (3,), "typestr": "<f4", "data": (1024, False), "version": 3, "strides": (-4,)}
    )
    fake["raises"] = FakeConsumer(error=ValueError("negative strides"))
    result = _exchange.judge_exchange("raises", negative, np.zeros(3, "<f4"), None, "c")
    assert (result.outcome, result.rule) == ("rejected", "CAI-PORT-NEGATIVE-STRIDES")


def test_a_keyerror_on_an_omitted_optional_key_is_the_consumers_bug(fake) -> None:
    # jax exports read-only dicts without 'strides'; cuda.compute 1.2.1 raised KeyError('strides'):
    # that is no read-only refusal but a consumer that cannot do without the optional key
    jaxlike = {"shape": (3,), "typestr": "<f4", "data": (1024, True), "version": 2}
    fake["keyerror"] = FakeConsumer(error=KeyError("strides"))
    result = _exchange.judge_exchange(
        "keyerror", _encoding.InterfaceObject(jaxlike), np.zeros(3, "<f4"), None, "c"
    )
    assert (result.outcome, result.rule) == ("rejected", "CAI-STRIDES-NONE-C-CONTIGUOUS")
    no_stream = {"shape": (3,), "typestr": "|u1", "data": (1024, False), "version": 0}
    assert (
        _results.refusal_portability_rule(no_stream, KeyError("stream")) == "CAI-SYNC-NONE-NO-SYNC"
    )
    # a key the dict does hold, or a key that is not optional, keeps the portability reading
    assert _results.refusal_portability_rule(jaxlike, KeyError("shape")) == "CAI-PORT-READONLY"
    assert (
        _results.refusal_portability_rule({**jaxlike, "strides": None}, KeyError("strides"))
        == "CAI-PORT-READONLY"
    )


def test_of_several_portability_findings_the_one_the_refusal_names_is_chosen(fake) -> None:
    # reference->cupy <f16 negative: CuPy said "Unsupported dtype float128" (H100, 2026-11-23)
    negative_f16 = {
        "shape": (2,),
        "typestr": "<f16",
        "data": (1024, False),
        "version": 3,
        "strides": (-16,),
    }
    dtype = ValueError("Unsupported dtype float128")
    assert _results.refusal_portability_rule(negative_f16, dtype) == "CAI-PORT-TYPESTR-KIND"
    strides = ValueError("negative strides are not supported")
    assert _results.refusal_portability_rule(negative_f16, strides) == "CAI-PORT-NEGATIVE-STRIDES"
    # a message naming none of them keeps the validator's first
    assert _results.refusal_portability_rule(
        negative_f16, ValueError("no")
    ) == _results.portability_rule(negative_f16)


def test_a_refusal_naming_the_version_it_wants_is_the_older_version_note() -> None:
    # cuda.core 1.2.0 (H100, 2026-11-25) refused v0-v2 exports without the word "version"
    v2 = {"shape": (0,), "typestr": "|u1", "data": (0, False), "version": 2}
    says = BufferError("only CUDA Array Interface v3 or above is supported")
    assert _results.named_refusal(v2, says) == "CAI-PORT-OLDER-VERSION"
    assert _results.named_refusal({**v2, "version": 3}, says) is None
    assert _results.named_refusal(v2, BufferError("unsupported dtype")) is None


def test_a_refusal_of_the_layout_it_cannot_copy_is_portability_only_when_true(fake) -> None:
    # rmm 26.10 (H100, 2026-11-25): DeviceBuffer.copy_from_device said "Only 1-D contiguous
    # arrays are supported, got 2-D array" to every 2-D export, zero-size ones included
    rmm_says = ValueError("Only 1-D contiguous arrays are supported, got 2-D array")
    two_d = {"shape": (0, 3), "typestr": "|b1", "data": (0, False), "version": 3}
    assert _results.named_refusal(two_d, rmm_says) == "CAI-PORT-LAYOUT-SUBSET"
    fake["flat"] = FakeConsumer(error=rmm_says)
    result = _exchange.judge_exchange(
        "flat",
        _encoding.InterfaceObject(two_d),
        np.zeros((0, 3), "?"),
        None,
        "c",
        reject_rule="CAI-DATA-ZERO-SIZE-NULL",
    )
    assert (result.outcome, result.rule) == ("rejected", "CAI-PORT-LAYOUT-SUBSET")
    # cuda.compute: "Non-contiguous arrays are not supported." for a strided 1-D export
    strided = {
        "shape": (4,),
        "typestr": "<i2",
        "data": (1024, False),
        "version": 3,
        "strides": (4,),
    }
    cccl_says = ValueError("Non-contiguous arrays are not supported.")
    assert _results.named_refusal(strided, cccl_says) == "CAI-PORT-LAYOUT-SUBSET"
    # the same words for a 1-D C-contiguous export are no layout refusal: it was misread
    flat = {"shape": (4,), "typestr": "<i2", "data": (1024, False), "version": 3}
    assert _results.named_refusal(flat, cccl_says) is None
    assert _results.named_refusal(flat, rmm_says) is None
    # JAX names its striding and broadcasting: a broadcast export is the overlap note, the
    # more specific one; a padded 2-D export the layout note (H100, 2026-11-25)
    jax_says = ValueError(
        "UNIMPLEMENTED: Only arrays with trivial (compact) striding are supported; i.e., arrays "
        "whose striding represents a transposition of the underlying buffer but not "
        "broadcasting. Dimensions were: [3, 4]"
    )
    broadcast = {
        "shape": (3, 4),
        "typestr": "|b1",
        "data": (1024, False),
        "version": 3,
        "strides": (0, 1),
    }
    padded = {**broadcast, "strides": (8, 1)}
    assert _results.named_refusal(broadcast, jax_says) == "CAI-PORT-OVERLAP"
    assert _results.named_refusal(padded, jax_says) == "CAI-PORT-LAYOUT-SUBSET"


def test_a_refusal_naming_its_reason_outranks_the_rule_the_example_is_about(fake) -> None:
    # zero_size judges refusals under CAI-DATA-ZERO-SIZE-NULL; jax->torch at shape (0,) was
    # refused with "the read only flag is not supported" (H100, 2026-11-23): a read-only refusal
    empty_ro = {"shape": (0,), "typestr": "|b1", "data": (0, True), "version": 2}
    fake["ro"] = FakeConsumer(error=TypeError("the read only flag is not supported"))
    fake["null"] = FakeConsumer(error=RuntimeError("requires explicit device ID"))
    obj = _encoding.InterfaceObject(empty_ro)
    values = np.zeros(0, "|b1")
    zero = "CAI-DATA-ZERO-SIZE-NULL"
    result = _exchange.judge_exchange("ro", obj, values, None, "c", reject_rule=zero)
    assert (result.outcome, result.rule) == ("rejected", "CAI-PORT-READONLY")
    # a message naming no reason of its own keeps the family's rule
    result = _exchange.judge_exchange("null", obj, values, None, "c", reject_rule=zero)
    assert (result.outcome, result.rule) == ("rejected", zero)


def test_skip_exchange_passes_through(fake) -> None:
    fake["absent"] = FakeConsumer(error=SkipExchange("not here"))
    with pytest.raises(SkipExchange):
        _exchange.consume_with("absent", object())


class FakeAllocation:
    def __init__(self, ptr: int, size: int) -> None:
        self.ptr, self.size = ptr, size


@pytest.fixture
def fake_memory(monkeypatch: pytest.MonkeyPatch) -> list[FakeAllocation]:
    made: list[FakeAllocation] = []

    def allocate(nbytes: int) -> FakeAllocation:
        made.append(FakeAllocation(0x7000_0000 + len(made) * (1 << 24), nbytes))
        return made[-1]

    monkeypatch.setattr(adversarial, "_allocate", allocate)
    return made


@FEW
@given(cst.mutants())
def test_adversarial_classifies_mutants(mutant) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(adversarial, "_allocate", lambda n: FakeAllocation(0x7000_0000, n))
        params = {
            "kind": "mutant",
            "interface": _encoding.encode(mutant.interface),
            "rule": mutant.rule,
        }
        params = json.loads(json.dumps(params))
        must = RULES[mutant.rule].level is Level.MUST
        refusing = {"c": FakeConsumer(error=ValueError("bad dict"))}
        patch.setattr(_exchange, "adapter", lambda name: refusing[name])
        refused = adversarial.execute(params, None, "c")
        assert refused.rule == mutant.rule and refused.outcome == "rejected"
        assert (refused.expected == EXPECT_REJECTION) == must
        d = _encoding.decode(params["interface"])
        zeros = None if must else np.zeros(tuple(d["shape"]), np.dtype(d["typestr"]))
        accepting = {"c": FakeConsumer(zeros)}
        patch.setattr(_exchange, "adapter", lambda name: accepting[name])
        taken = adversarial.execute(params, None, "c")
        assert taken.outcome == ("accepted-invalid" if must else "pass"), taken.message


def test_rebase_moves_pointers_into_real_memory(fake_memory) -> None:
    keep: list = []
    d = {
        "shape": (4,),
        "typestr": "<f8",
        "data": (256 * 1000 + 24, False),
        "version": 3,
        "strides": (-8,),
        "mask": _encoding.InterfaceObject(
            {"shape": (4,), "typestr": "|b1", "data": (512, False), "version": 3}
        ),
    }
    moved = adversarial.rebase(d, "CAI-KEYS-UNKNOWN", keep)
    assert len(keep) == 2 and len(fake_memory) == 2
    mask_alloc, data_alloc = fake_memory
    ptr = moved["data"][0]
    assert data_alloc.ptr + 24 <= ptr < data_alloc.ptr + data_alloc.size
    assert ptr - 24 >= data_alloc.ptr and ptr % 256 == 0
    assert moved["mask"].__cuda_array_interface__["data"][0] == mask_alloc.ptr
    assert d["data"][0] == 256 * 1000 + 24  # the original is untouched
    same = adversarial.rebase(dict(d, data=(-5, False)), "CAI-DATA-POINTER-RANGE", keep)
    assert same["data"] == (-5, False)


def test_live_mutations_name_catalogue_rules() -> None:
    for mutation, rule in LIVE.items():
        assert rule is None or RULES[rule].level is Level.MUST, mutation


# --- other families' pure parts --------------------------------------------------------------


def test_streams_rules_follow_the_trusted_side() -> None:
    assert streams.race_rule("reference", "cupy", "pending") == "CAI-SYNC-CONSUMER"
    assert streams.race_rule("cupy", "reference", "pending") == "CAI-SYNC-PRODUCER-SUFFICIENT"
    assert (
        streams.race_rule("cupy", "reference", "multi-stream") == "CAI-SYNC-PRODUCER-MULTI-STREAM"
    )
    assert streams.race_rule("cupy", "torch", "legacy") == "CAI-SYNC-RACE-FREE"


def test_adversarial_taints_after_a_bogus_stream_not_refused() -> None:
    from caiconform.results.outcome import ACCEPTED_INVALID, REJECTED, Result

    bogus = {"kind": "live", "mutation": "stream-bogus"}
    assert adversarial.taints(bogus, Result(ACCEPTED_INVALID, rule="CAI-STREAM-LIVE"))
    assert not adversarial.taints(bogus, Result(REJECTED))
    assert not adversarial.taints(
        {"kind": "live", "mutation": "host-pointer"}, Result(ACCEPTED_INVALID)
    )
    assert not adversarial.taints({"kind": "mutant", "rule": "CAI-STREAM-LIVE"}, Result("pass"))


def test_sentinel_count_counts_complemented_elements() -> None:
    values = make_values("<i4", (6,), 3)
    read = values.copy()
    read[:2] = ~values[:2]
    assert streams.sentinel_count(read, values) == 2
    assert streams.sentinel_count(values, values) == 0


def test_an_element_read_half_written_counts_as_read_early() -> None:
    """A read while the pending write was under way: an element part final, part sentinel
    (as a `<c32` array read on the H100) was read early; one holding other bytes was not."""
    from caiconform.reference.producer import sentinel_of

    values = np.array([complex(np.nan, 5e-300), 1 + 2j, 3 + 4j], dtype="<c16")
    read = sentinel_of(values).copy()
    read.real[0] = values.real[0]  # element 0: real part written, imaginary still sentinel
    read[1] = values[1]  # element 1: written
    assert streams.sentinel_count(read, values) == 2
    read.view(np.uint8)[-1] ^= 0x01  # element 2: a byte neither sentinel nor final
    assert streams.sentinel_count(read, values) == 1


def test_agreement_compares_what_matters() -> None:
    d = {"shape": (2, 1, 3), "typestr": "<f4", "data": (4096, False), "version": 3, "strides": None}
    cai = agreement.describe_cai(d)
    assert cai["strides"] == (12, 12, 4)
    assert agreement.compare(cai, dict(cai)) is None
    assert agreement.compare(cai, dict(cai, strides=(12, 999, 4))) is None  # size-1 dimension
    assert agreement.compare(cai, dict(cai, strides=(24, 12, 4)))[0] == "strides[0]"
    assert agreement.compare(cai, dict(cai, pointer=8192))[0] == "pointer"
    assert agreement.compare(cai, dict(cai, dtype="<i4"))[0] == "dtype"
    assert agreement.compare(cai, dict(cai, readonly=True))[0] == "readonly"
    empty = agreement.describe_cai(dict(d, shape=(0, 3), data=(0, False)))
    assert agreement.compare(empty, dict(empty, pointer=4096)) is None


def test_mask_values() -> None:
    assert mask.mask_values("none", (3,), 1) is None
    assert mask.mask_values("all-valid", (2, 2), 1).all()
    random = mask.mask_values("random", (3, 3), 5)
    assert random.dtype == np.bool_ and not random[0, 0]


def test_versions_build_edits_the_reference_dict() -> None:
    exported = _encoding.InterfaceObject(
        {
            "shape": (2,),
            "typestr": "<f4",
            "data": (256, False),
            "version": 1,
            "strides": (4,),
            "mask": None,
        }
    )
    params = {"version": 1, "unknown_version": 99, "extra_key": "owner"}
    d = versions.build(params, exported)
    assert d["version"] == 99 and d["owner"] == "caiconform"
    assert "CAI-VERSION-KNOWN" in {f.rule for f in validate(d).errors}
    assert exported.__cuda_array_interface__["version"] == 1


# --- the suites' verdicts and the runner end to end --------------------------------------------


def _suite_conftest():
    spec = importlib.util.spec_from_file_location("suite_conftest", ROOT / "suites" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("outcome", "rule", "expected", "judged"),
    [
        ("pass", None, None, None),
        ("skip", None, None, None),
        ("fail", "CAI-SYNC-CONSUMER", "x", "fails"),  # corrupts
        ("fail", "CAI-LIFETIME-DATA-HELD", "x", "listed"),  # departs: a SHOULD, listed
        ("fail", "CAI-STREAM-ZERO-FORBIDDEN", "x", "fails"),  # refuses-valid
        ("rejected", "CAI-STREAM-LIVE", EXPECT_REJECTION, None),  # the right answer
        ("rejected", "CAI-PORT-MASK", "x", "listed"),  # portability
        ("rejected", "CAI-CONSUMER-READS-DESCRIBED", "x", "fails"),  # refuses-valid
        ("accepted-invalid", "CAI-VERSION-KNOWN", EXPECT_REJECTION, "fails"),  # accepts-invalid
        ("accepted-invalid", "CAI-STREAM-LIVE", EXPECT_REJECTION, "listed"),  # about the input
        ("crash", None, None, "fails"),
        ("poisoned", None, None, "fails"),
    ],
)
def test_suite_items_judge_through_the_verdict(outcome, rule, expected, judged) -> None:
    """A suite item fails for a group of the run's verdict (`results.verdict`, at the suites'
    --suite-fail-on) with an example in its cell, and lists the others as warnings."""
    from caiconform.results.severity import parse_severities
    from caiconform.results.verdict import judge

    assert outcome in OUTCOMES
    conftest = _suite_conftest()
    cell = {"run_id": "r", "check": "roundtrip", "producer": "numba", "consumer": "cupy"}
    record = {**cell, "seq": 1, "outcome": outcome, "rule": rule, "expected": expected}
    record.update(params={"n": 1}, message=f"{outcome} [{rule}]", seen="y")
    other = {**cell, "seq": 2, "consumer": "torch", "outcome": "crash", "rule": None}
    other.update(params={"n": 2}, message="crash", expected=None, seen=None)
    verdict = judge([record, other], fail_on=parse_severities(conftest.SUITE_FAIL_ON))
    failing, listed = conftest.judge_cell(verdict, [record])
    assert len(failing) == (judged == "fails")
    assert len(listed) == (judged == "listed")


def test_suite_cells_follow_roles() -> None:
    conftest = _suite_conftest()
    libs = ["reference", "cupy", "cuda.core"]
    assert ("cupy", "cuda.core") in conftest.cells_for("roundtrip", libs)
    assert all(p != "cuda.core" for p, _ in conftest.cells_for("roundtrip", libs))
    assert conftest.cells_for("lifetime", libs) == [(None, n) for n in libs]
    assert conftest.cell_id(("cupy", "torch")) == "cupy->torch"


def test_schema_runs_through_the_runner_without_a_gpu(tmp_path: Path) -> None:
    from caiconform.runner.config import RunConfig
    from caiconform.runner.driver import run_matrix

    result = run_matrix(
        RunConfig(
            out=tmp_path,
            checks=["schema"],
            libraries=["synthetic"],
            max_examples=15,
            workers=1,
            seed=1,
            adapter_source="caiconform.checks.synthetic_source",
        )
    )
    outcomes = [r["outcome"] for r in result.records if r.get("check") == "schema"]
    assert len(outcomes) >= 10
    assert set(outcomes) == {"pass"}
    assert math.isfinite(sum(r["duration_s"] for r in result.records))


class _StubRun:
    def __init__(self, records: list[dict], run_dir: Path) -> None:
        self.records = records
        self.run_dir = run_dir


def test_suite_failure_message_names_rule_seen_expected_and_reproducer(tmp_path: Path) -> None:
    from caiconform.results.severity import parse_severities

    conftest = _suite_conftest()
    base = {"run_id": "r", "check": "lifetime", "producer": None, "consumer": "cupy", "seq": 1}
    records = [
        dict(base, outcome="pass", rule=None, message="ok"),
        dict(
            base,
            outcome="rejected",
            rule="CAI-PORT-MASK",
            message="refused a mask [CAI-PORT-MASK]",
            seen="refused",
            expected="taken",
            seq=3,
        ),
        dict(
            base,
            outcome="fail",
            rule="CAI-CONSUMER-READS-DESCRIBED",
            message="misread [CAI-CONSUMER-READS-DESCRIBED]",
            seen="misread",
            expected="kept",
            repro="repro/a.py",
        ),
        dict(
            base,
            outcome="crash",
            rule=None,
            message="worker died: SIGSEGV",
            seen=None,
            expected=None,
            repro="repro/b.py",
            seq=2,
        ),
    ]
    fail_on = parse_severities(conftest.SUITE_FAIL_ON)
    suite = conftest.Suite(None, tmp_path, ["lifetime"], fail_on)
    suite.run = lambda synthetic: _StubRun(records, tmp_path)  # no runner: judge these records
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("caiconform.cuda.gpu_available", lambda: (True, ""))
        with (
            pytest.warns(UserWarning, match=r"below: portability: .*CAI-PORT-MASK"),
            pytest.raises(pytest.fail.Exception) as failed,
        ):
            suite.check("lifetime", (None, "cupy"))
    text = str(failed.value)
    assert "lifetime cupy: 4 examples" in text
    assert "2 defect(s) of cupy (most severe first):" in text
    assert "CAI-CONSUMER-READS-DESCRIBED" in text and "minimal: worker died: SIGSEGV" in text
    assert f"reproduce: python {tmp_path / 'repro/a.py'}" in text
    skipped = [dict(base, outcome="skip", rule=None, message="cupy unavailable: not installed")]
    suite = conftest.Suite(None, tmp_path, ["lifetime"], fail_on)
    suite.run = lambda synthetic: _StubRun(skipped, tmp_path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("caiconform.cuda.gpu_available", lambda: (True, ""))
        with pytest.raises(pytest.skip.Exception, match="cupy unavailable: not installed"):
            suite.check("lifetime", (None, "cupy"))


def test_compare_values_shows_bytes_when_the_values_print_alike() -> None:
    from caiconform.spec.values import compare_values

    stored_as_two = np.frombuffer(b"\x02\x00", dtype="?").reshape(1, 2).copy()
    message = compare_values(stored_as_two, np.array([[True, False]]))
    assert message == "1 of 2 elements differ; first at (0, 0): got 02, expected 01 (bytes)"


def test_streams_refusals_name_the_rule_that_explains_them() -> None:
    from caiconform.checks.streams import refusal_rule

    class Refused(Exception):
        rules = ["CAI-STREAM-LIVE"]

    v3 = {"shape": (2,), "typestr": "<f4", "data": (4096, False), "version": 3, "stream": 7}
    big_endian = {**v3, "typestr": ">f4"}
    assert refusal_rule(v3, Refused("stale stream")) == "CAI-STREAM-LIVE"
    assert refusal_rule(v3, RuntimeError("failed to find stream 7")) == "CAI-SYNC-CONSUMER"
    assert refusal_rule(big_endian, TypeError("unsupported dtype")) == "CAI-PORT-BYTEORDER"
    assert refusal_rule(v3, TypeError("unsupported dtype")) == "CAI-CONSUMER-READS-DESCRIBED"


def test_streams_draw_a_spin_length_only_for_the_reference_producer() -> None:
    from hypothesis import find

    from caiconform.checks import streams

    assert find(streams.examples("cupy", "torch"), lambda p: True)["delay_us"] == 0
    longest = find(streams.examples("reference", "torch"), lambda p: p["delay_us"] > 20_000)
    assert longest["delay_us"] in streams.DELAYS_US


def test_only_families_without_overlapping_streams_ask_for_one_queue():
    """One hardware queue per context runs every stream's work in issue order: the streams
    family's spin could then never expose a consumer that does not wait for the producer's
    stream, nor dlpack_streams' (and dlpack_copy's host copy of pending work) a producer that
    does not order its work before the consumer's, nor dlpack_capi's a work stream other than
    the one the pending write is queued on, nor dlpack_consumer's a consumer reading on a stream
    it did not pass. The devices family's exchanges have no
    pending work (each of its replacements makes a context on two GPUs, cheaper with one
    queue)."""
    from caiconform.checks import load
    from caiconform.spec.families import FAMILIES

    single = {f for f in FAMILIES if getattr(load(f), "SINGLE_QUEUE", False)}
    overlapping = {"streams", "dlpack_streams", "dlpack_copy", "dlpack_capi", "dlpack_consumer"}
    assert single == set(FAMILIES) - overlapping


def test_devices_drawn_examples_are_one_kind_for_the_crash_cap() -> None:
    """The devices family's drawn params name nothing `cell.crash_kind` counts by, so its
    lost examples were never capped (70 poisoned contexts in one cell on two H100s): its own
    `crash_kind` makes every drawn example one kind, and the driver uses it."""
    from caiconform.runner.jobs import crash_kind

    devices = load("devices")
    params = [{"typestr": "<f4", "shape": [3], "seed": 1}, {"typestr": "|b1", "shape": [1, 2]}]
    assert crash_kind(params[0], None) == ""  # without the family's hook: never capped
    kinds = {crash_kind(p, None, devices.crash_kind) for p in params}
    assert kinds == {devices.DRAWN_KIND}
    # a floor example keeps the floor's kinds
    assert crash_kind(params[0], {"layout": "C"}, devices.crash_kind) == "layout 'C'"


def test_a_refusal_naming_its_element_type_or_compact_striding_names_its_reason():
    """numba names a type by its name alone ('NumbaNotImplementedError: complex256'): the
    type note, not a refusal of valid input; JAX's 'trivial (compact) striding' refusal of a
    1-D sliced export names its layout; a message naming neither stays unexplained."""
    wide = {"shape": (3,), "typestr": "<c32", "data": (1 << 40, False), "version": 3}
    said = RuntimeError("NumbaNotImplementedError: complex256")
    assert _results.named_refusal(wide, said) == "CAI-PORT-TYPESTR-KIND"
    assert _results.named_refusal({**wide, "typestr": "<f16"}, said) is None  # another type named
    sliced = {"shape": (2,), "typestr": "|u1", "data": (1 << 40, False), "version": 3}
    jax_says = RuntimeError("UNIMPLEMENTED: Only arrays with trivial (compact) striding")
    assert _results.named_refusal({**sliced, "strides": (3,)}, jax_says) == "CAI-PORT-LAYOUT-SUBSET"
    assert _results.named_refusal(sliced, jax_says) is None  # a C-contiguous export was misread
