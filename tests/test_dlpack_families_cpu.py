"""CPU tests of the producer-side DLPack families (dlpack_streams, dlpack_copy,
dlpack_versions): their pure judging on planted capsule facts, and each family's `execute` on a
host-memory producer.

NumPy 2.1+ arrays export kDLCPU capsules and take `max_version`, `copy` and `dl_device`, so a
"producer" handing out numpy arrays stands in for a library on this GPU-less machine; the faults
(a copy unflagged, a device ignored, a keyword it predates, a stream it takes on the host) are
planted in the stand-in.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from caiconform.adapters.base import SkipExchange
from caiconform.checks import (
    _dlpack_calls,
    _dlpack_refusals,
    _exchange,
    dlpack_copy,
    dlpack_streams,
    dlpack_versions,
)
from caiconform.results.outcome import FAIL, PASS, REJECTED
from caiconform.results.record import EXPECT_REJECTION


class _Host:
    """A producer's array on the host: numpy's own `__dlpack__`, or a planted fault."""

    def __init__(self, array: np.ndarray, fault: str = "") -> None:
        self.array = array
        self.fault = fault

    @property
    def __array_interface__(self) -> dict:
        return self.array.__array_interface__

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.array.__dlpack_device__()

    def __dlpack__(self, **kwargs: Any) -> Any:
        if self.fault == "old" and set(kwargs) - {"stream"}:
            raise TypeError(
                f"__dlpack__() got an unexpected keyword argument {sorted(kwargs)[0]!r}"
            )
        if self.fault == "takes-streams":
            kwargs.pop("stream", None)
        if self.fault == "unflagged-copy" and kwargs.get("copy"):
            kwargs["copy"] = None
            return self.array.copy().__dlpack__(**kwargs)
        if self.fault == "ignores-device":
            kwargs.pop("dl_device", None)
        if self.fault == "versioned-always":
            kwargs["max_version"] = (1, 0)
        if self.fault == "legacy-only":
            kwargs.pop("max_version", None)
        if self.fault == "not-a-buffererror" and kwargs.get("dl_device") == (4242, 0):
            raise ValueError("bad device")
        return self.array.__dlpack__(**kwargs)


class _Producer:
    def __init__(self, fault: str = "", capabilities: frozenset = frozenset()) -> None:
        self.fault = fault
        self.capabilities = frozenset({"produce", "dlpack"}) | capabilities

    def produce(self, values, layout, typestr, scenario="none", readonly=False):
        if scenario != "none":
            raise SkipExchange("the host stand-in has no streams")
        array = np.ascontiguousarray(values)
        if readonly:
            array.flags.writeable = False
        return _Host(array, self.fault)


@pytest.fixture
def producer(monkeypatch: pytest.MonkeyPatch):
    made: dict[str, _Producer] = {}

    def plant(fault: str = "", capabilities: frozenset = frozenset()) -> str:
        made["host"] = _Producer(fault, capabilities)
        return "host"

    monkeypatch.setattr(_exchange, "adapter", lambda name: made[name])
    return plant


# --- the shared calls -----------------------------------------------------------------------


def test_ask_reads_a_capsule_and_keeps_a_refusal() -> None:
    array = np.arange(6, dtype="<f4")
    answer = _dlpack_calls.ask(array, max_version=(1, 1))
    assert answer.capsule is not None and answer.capsule.version is not None
    assert answer.error is None
    # numpy refuses a stream on the host; what it raises is its own (RuntimeError up to 2.4,
    # ValueError from 2.5), so the refusal kept is compared with numpy's own answer
    with pytest.raises(Exception) as numpy_refusal:
        array.__dlpack__(stream=1)
    refused = _dlpack_calls.ask(array, stream=1)
    assert refused.capsule is None and refused.raw is None
    assert type(refused.error) is numpy_refusal.type, refused.error
    assert str(refused.error) == str(numpy_refusal.value)


def test_read_of_a_host_capsule_follows_its_strides() -> None:
    parent = np.arange(24, dtype="<i4").reshape(4, 6)
    view = parent[::-1, ::2]
    answer = _dlpack_calls.ask(view, max_version=(1, 1))
    got = _dlpack_calls.read(answer.capsule, "<i4")
    assert got.tobytes() == np.ascontiguousarray(view).tobytes()


def test_keyword_refused_tells_an_old_signature_from_a_refusal() -> None:
    assert _dlpack_calls.keyword_refused(TypeError("unexpected keyword argument 'copy'"))
    assert not _dlpack_calls.keyword_refused(BufferError("copy needed"))
    assert not _dlpack_calls.keyword_refused(TypeError("unsupported dtype"))


def test_own_pointer_reads_the_array_interface() -> None:
    array = np.arange(3, dtype="<f8")
    assert _dlpack_calls.own_pointer(array) == array.ctypes.data
    assert _dlpack_calls.own_pointer(object()) is None


# --- dlpack_streams: the pure verdicts ------------------------------------------------------

CUDA = (2, 0)
HOST = (1, 0)


def _values() -> np.ndarray:
    return np.arange(8, dtype="<u2")


def _sentinel(values: np.ndarray) -> np.ndarray:
    return (~values.view(np.uint8)).view(values.dtype)


@pytest.mark.parametrize("value", [None, 1, 2, "handle"])
def test_streams_final_values_pass(value) -> None:
    values = _values()
    result = dlpack_streams.judge(value, CUDA, None, values.copy(), values, "ctx")
    assert result.outcome == PASS, result.message


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        (None, "DLPACK-STREAM-NONE-LEGACY"),
        (1, "DLPACK-STREAM-PRODUCER-SYNC"),
        (2, "DLPACK-STREAM-PRODUCER-SYNC"),
        ("handle", "DLPACK-STREAM-PRODUCER-SYNC"),
    ],
)
def test_streams_a_sentinel_read_is_the_producer_s_missing_sync(value, rule) -> None:
    values = _values()
    result = dlpack_streams.judge(value, CUDA, None, _sentinel(values), values, "ctx")
    assert (result.outcome, result.rule) == (FAIL, rule)
    assert dlpack_streams.value_rule(value) in result.message


def test_streams_other_wrong_values_are_a_capsule_not_describing_the_array() -> None:
    values = _values()
    result = dlpack_streams.judge(None, CUDA, None, np.zeros_like(values), values, "ctx")
    assert (result.outcome, result.rule) == (FAIL, "DLPACK-PRODUCER-DESCRIBES-DATA")


@pytest.mark.parametrize("value", [1, 2, "handle", -1])
def test_streams_an_optional_value_refused_is_a_refusal(value) -> None:
    result = dlpack_streams.judge(value, CUDA, BufferError("no"), None, _values(), "ctx")
    assert (result.outcome, result.rule) == (REJECTED, "DLPACK-STREAM-OPTIONAL")


def test_streams_zero_refused_is_the_right_answer_and_taken_is_no_failure() -> None:
    refused = dlpack_streams.judge(0, CUDA, ValueError("0 is ambiguous"), None, _values(), "c")
    assert (refused.outcome, refused.rule) == (REJECTED, "DLPACK-STREAM-ZERO-FORBIDDEN")
    assert refused.expected == EXPECT_REJECTION
    taken = dlpack_streams.judge(0, CUDA, None, None, _values(), "c")
    assert taken.outcome == PASS and "DLPACK-STREAM-ZERO-FORBIDDEN" in taken.message


def test_streams_minus_one_needs_only_a_capsule() -> None:
    result = dlpack_streams.judge(-1, CUDA, None, None, _values(), "ctx")
    assert result.outcome == PASS and "DLPACK-STREAM-NO-SYNC" in result.message


def test_streams_on_the_host_only_none_is_taken() -> None:
    values = _values()
    assert dlpack_streams.judge(1, HOST, RuntimeError("no"), None, values, "c").outcome == PASS
    taken = dlpack_streams.judge(1, HOST, None, None, values, "c")
    assert (taken.outcome, taken.rule) == (FAIL, "DLPACK-STREAM-CPU-NONE")


def test_streams_none_refused_other_than_buffererror_breaks_the_should() -> None:
    values = _values()
    result = dlpack_streams.judge(None, CUDA, RuntimeError("x"), None, values, "c")
    assert (result.outcome, result.rule) == (FAIL, "DLPACK-EXPORT-BUFFERERROR")
    result = dlpack_streams.judge(None, CUDA, BufferError("x"), None, values, "c")
    assert (result.outcome, result.rule) == (REJECTED, "DLPACK-EXPORT-BUFFERERROR")


# --- dlpack_streams on the host stand-in ----------------------------------------------------


def _stream_params(value) -> dict:
    return {"stream": value, "scenario": "none", "typestr": "<f4", "shape": [3, 2], "seed": 1}


@pytest.mark.parametrize("value", dlpack_streams.STREAM_VALUES)
def test_streams_execute_on_numpy(producer, value) -> None:
    name = producer()
    result = dlpack_streams.execute(_stream_params(value), name, None)
    assert result.outcome == PASS, result.message


def test_streams_execute_a_host_producer_taking_a_stream_fails(producer) -> None:
    name = producer("takes-streams")
    result = dlpack_streams.execute(_stream_params(2), name, None)
    assert (result.outcome, result.rule) == (FAIL, "DLPACK-STREAM-CPU-NONE")


def test_streams_examples_of_a_producer_without_streams_play_none_only() -> None:
    assert dlpack_streams._scenarios(None) == ("none",)
    floor = dlpack_streams.floor(None, None)
    assert {e.params["scenario"] for e in floor} == {"none"}
    assert {e.params["stream"] for e in floor} == set(dlpack_streams.STREAM_VALUES)


# --- dlpack_copy: the pure verdicts ---------------------------------------------------------


def _facts(**kw) -> dlpack_copy.Facts:
    base = {"device": CUDA, "own_device": CUDA, "pointer": 0x1000, "own_pointer": 0x1000}
    return dlpack_copy.Facts(**{**base, **kw})


def test_copy_true_needs_other_memory_and_the_flag() -> None:
    judge = dlpack_copy.judge
    assert judge("copy-true", _facts(pointer=0x2000, copied=True), "c").outcome == PASS
    same = judge("copy-true", _facts(copied=True), "c")
    assert (same.outcome, same.rule) == (FAIL, "DLPACK-COPY-TRUE")
    unflagged = judge("copy-true", _facts(pointer=0x2000), "c")
    assert (unflagged.outcome, unflagged.rule) == (FAIL, "DLPACK-COPY-FLAG")
    wrong = judge("copy-true", _facts(pointer=0x2000, copied=True, mismatch="x"), "c")
    assert (wrong.outcome, wrong.rule) == (FAIL, "DLPACK-PRODUCER-DESCRIBES-DATA")


def test_copy_false_is_the_own_memory_or_a_buffererror() -> None:
    judge = dlpack_copy.judge
    assert judge("copy-false", _facts(), "c").outcome == PASS
    refused = judge("copy-false", _facts(error=BufferError("copy needed")), "c")
    assert (refused.outcome, refused.rule) == (REJECTED, "DLPACK-COPY-FALSE")
    copied = judge("copy-false", _facts(pointer=0x2000, copied=True), "c")
    assert (copied.outcome, copied.rule) == (FAIL, "DLPACK-COPY-FALSE")
    other = judge("copy-false", _facts(error=RuntimeError("x")), "c")
    assert (other.outcome, other.rule) == (FAIL, "DLPACK-EXPORT-BUFFERERROR")


def test_copy_none_reuses_the_memory() -> None:
    result = dlpack_copy.judge("copy-none", _facts(pointer=0x2000, copied=True), "c")
    assert (result.outcome, result.rule) == (FAIL, "DLPACK-COPY-NONE")


def test_device_default_is_the_object_s_own() -> None:
    result = dlpack_copy.judge("device-none", _facts(device=(13, 0)), "c")
    assert (result.outcome, result.rule) == (FAIL, "DLPACK-DL-DEVICE-DEFAULT")
    assert dlpack_copy.judge("device-own", _facts(), "c").outcome == PASS


def test_device_cpu_is_a_flagged_host_copy_or_a_buffererror() -> None:
    judge = dlpack_copy.judge
    good = _facts(device=HOST, pointer=0x2000, copied=True)
    assert judge("device-cpu", good, "c").outcome == PASS
    unflagged = judge("device-cpu", _facts(device=HOST, pointer=0x2000), "c")
    assert (unflagged.outcome, unflagged.rule) == (FAIL, "DLPACK-COPY-FLAG")
    ignored = judge("device-cpu", _facts(), "c")
    assert (ignored.outcome, ignored.rule) == (FAIL, "DLPACK-DL-DEVICE-BUFFERERROR")
    refused = judge("device-cpu", _facts(error=BufferError("no")), "c")
    assert (refused.outcome, refused.rule) == (REJECTED, "DLPACK-DL-DEVICE-CPU")
    other = judge("device-cpu", _facts(error=RuntimeError("no")), "c")
    assert (other.outcome, other.rule) == (FAIL, "DLPACK-DL-DEVICE-BUFFERERROR")
    stale = judge(
        "device-cpu-pending", _facts(**{**good.__dict__, "mismatch": "x", "pending": True}), "c"
    )
    assert (stale.outcome, stale.rule) == (FAIL, "DLPACK-STREAM-DL-DEVICE-CPU")


def test_device_cpu_without_copy_must_raise_buffererror() -> None:
    judge = dlpack_copy.judge
    ok = judge("device-cpu-no-copy", _facts(error=BufferError("copy needed")), "c")
    assert ok.outcome == PASS and "DLPACK-COPY-FALSE-CPU-BUFFERERROR" in ok.message
    copied = judge("device-cpu-no-copy", _facts(device=HOST, pointer=0x2000, copied=True), "c")
    assert (copied.outcome, copied.rule) == (FAIL, "DLPACK-COPY-FALSE-CPU-BUFFERERROR")


def test_an_unknown_device_must_raise_buffererror() -> None:
    judge = dlpack_copy.judge
    assert judge("device-unknown", _facts(error=BufferError("no")), "c").outcome == PASS
    taken = judge("device-unknown", _facts(), "c")
    assert (taken.outcome, taken.rule) == (FAIL, "DLPACK-DL-DEVICE-BUFFERERROR")
    other = judge("device-unknown", _facts(error=ValueError("no")), "c")
    assert (other.outcome, other.rule) == (FAIL, "DLPACK-DL-DEVICE-BUFFERERROR")


def test_flags_read_only_and_default() -> None:
    judge = dlpack_copy.judge
    missing = judge("readonly", _facts(readonly_export=True), "c")
    assert (missing.outcome, missing.rule) == (FAIL, "DLPACK-READONLY-FLAG")
    assert judge("readonly", _facts(readonly_export=True, readonly=True), "c").outcome == PASS
    extra = judge("copy-none", _facts(readonly=True), "c")
    assert extra.outcome == PASS and extra.seen == ["DLPACK-FLAGS-DEFAULT"]
    lying = judge("copy-none", _facts(copied=True), "c")
    assert (lying.outcome, lying.rule) == (FAIL, "DLPACK-COPIED-OWNED")


def test_an_unversioned_capsule_is_a_warning_not_a_flag_failure() -> None:
    result = dlpack_copy.judge("copy-true", _facts(pointer=0x2000, has_flags=False), "c")
    assert result.outcome == PASS and result.seen == ["DLPACK-VERSIONED-STRUCT"]


def test_a_producer_predating_the_keywords_is_a_refusal_naming_the_standard() -> None:
    exc = TypeError("__dlpack__() got an unexpected keyword argument 'copy'")
    result = dlpack_copy.judge("copy-true", _facts(error=exc), "c")
    assert (result.outcome, result.rule) == (REJECTED, "DLPACK-COPY-TRUE")
    assert "2023.12" in result.expected


# --- dlpack_copy on the host stand-in -------------------------------------------------------


def _copy_params(case: str) -> dict:
    return {"case": case, "typestr": "<f4", "shape": [4, 3], "seed": 2}


@pytest.mark.parametrize(
    "case", [c for c in dlpack_copy.CASES if c not in ("readonly", "device-cpu-pending")]
)
def test_copy_execute_on_numpy(producer, case) -> None:
    name = producer()
    result = dlpack_copy.execute(_copy_params(case), name, None)
    assert result.outcome == PASS, result.message


def test_copy_execute_readonly_needs_the_capability(producer) -> None:
    with pytest.raises(SkipExchange):
        dlpack_copy.execute(_copy_params("readonly"), producer(), None)
    name = producer(capabilities=frozenset({"readonly"}))
    result = dlpack_copy.execute(_copy_params("readonly"), name, None)
    assert result.outcome == PASS, result.message


@pytest.mark.parametrize(
    ("fault", "case", "outcome", "rule"),
    [
        ("unflagged-copy", "copy-true", FAIL, "DLPACK-COPY-FLAG"),
        ("old", "copy-true", REJECTED, "DLPACK-COPY-TRUE"),
        ("not-a-buffererror", "device-unknown", FAIL, "DLPACK-DL-DEVICE-BUFFERERROR"),
        ("legacy-only", "copy-none", PASS, None),
    ],
)
def test_copy_execute_finds_planted_faults(producer, fault, case, outcome, rule) -> None:
    result = dlpack_copy.execute(_copy_params(case), producer(fault), None)
    assert (result.outcome, result.rule) == (outcome, rule), result.message


def test_copy_a_device_ignoring_producer_on_the_host_is_no_finding(producer) -> None:
    """On the host kDLCPU is the object's own device: ignoring dl_device gives the same."""
    result = dlpack_copy.execute(_copy_params("device-cpu"), producer("ignores-device"), None)
    assert result.outcome == PASS, result.message


# --- dlpack_versions ------------------------------------------------------------------------


def _version_params(max_version) -> dict:
    layout = {"shape": [3, 4], "strides": None, "offset": 0, "pad": 0, "kind": "C"}
    return {"max_version": max_version, "typestr": "<f4", "layout": layout, "seed": 3}


@pytest.mark.parametrize("max_version", dlpack_versions.MAX_VERSIONS)
def test_versions_execute_on_numpy(producer, max_version) -> None:
    result = dlpack_versions.execute(_version_params(max_version), producer(), None)
    assert result.outcome == PASS, result.message


def test_versions_a_different_version_is_noted_not_failed(producer) -> None:
    result = dlpack_versions.execute(_version_params([1, 1]), producer(), None)
    assert result.outcome == PASS and "DLPACK-MAX-VERSION-RETURNED" in result.message


def test_versions_a_legacy_capsule_for_max_version_1_is_a_warning(producer) -> None:
    result = dlpack_versions.execute(_version_params([1, 0]), producer("legacy-only"), None)
    assert result.outcome == PASS and "DLPACK-VERSIONED-STRUCT" in result.seen


def test_versions_a_versioned_capsule_for_a_legacy_consumer_is_a_warning(producer) -> None:
    result = dlpack_versions.execute(_version_params("omitted"), producer("versioned-always"), None)
    assert result.outcome == PASS and result.seen == ["DLPACK-MAX-VERSION-NONE-LEGACY"]


def test_versions_a_producer_predating_max_version_is_a_refusal(producer) -> None:
    result = dlpack_versions.execute(_version_params([1, 0]), producer("old"), None)
    assert (result.outcome, result.rule) == (REJECTED, "DLPACK-VERSIONED-STRUCT")


def test_versions_judge_fails_on_a_must_finding_of_the_validator() -> None:
    from caiconform.spec.findings import finding

    bad = finding("DLPACK-SHAPE", "dl_tensor.ndim", "-1", "0 to 64 dimensions")
    result = dlpack_versions.judge_capsule([bad], "dltensor_versioned", (1, 1), [1, 1], "c")
    assert (result.outcome, result.rule) == (FAIL, "DLPACK-SHAPE")


def test_versions_refusals() -> None:
    judge = dlpack_versions.judge_refusal
    assert judge(BufferError("dtype"), [1, 1], "c").rule == "DLPACK-EXPORT-BUFFERERROR"
    assert judge(BufferError("dtype"), [1, 1], "c").outcome == REJECTED
    assert judge(RuntimeError("dtype"), [1, 1], "c").outcome == FAIL


def test_floors_are_json_and_cover_every_value() -> None:
    import json

    for module in (dlpack_streams, dlpack_copy, dlpack_versions):
        for example in module.floor("torch", None):
            json.dumps(example.params)
    cases = {e.params["case"] for e in dlpack_copy.floor("torch", None)}
    assert cases == set(dlpack_copy.CASES)
    wanted = {json_key(e.params["max_version"]) for e in dlpack_versions.floor("torch", None)}
    assert wanted == {json_key(v) for v in dlpack_versions.MAX_VERSIONS}


def json_key(value) -> str:
    import json

    return json.dumps(value)


def test_pending_scenarios_follow_the_producer(producer) -> None:
    """A library with streams leaves work on its own current streams, the reference producer
    on its own non-blocking ones, a library without streams nowhere (its pending examples
    skip)."""
    assert _dlpack_calls.pending_scenarios(producer()) == ()
    streaming = producer(capabilities=frozenset({"streams"}))
    assert _dlpack_calls.pending_scenarios(streaming) == ("library-default", "nonblocking")
    assert dlpack_streams._scenarios(streaming) == ("library-default", "nonblocking", "none")
    assert _dlpack_calls.pending_scenarios("reference") == ("pending",)
    assert dlpack_copy._scenario_of("device-cpu-pending", "reference") == "pending"
    assert dlpack_copy._scenario_of("device-cpu", "reference") == "none"


def test_copy_pending_case_skips_a_producer_without_streams(producer) -> None:
    with pytest.raises(SkipExchange, match="no streams capability"):
        dlpack_copy.execute(_copy_params("device-cpu-pending"), producer(), None)


def test_a_refusal_in_a_producer_cell_is_laid_on_the_producer(producer) -> None:
    """The catalogue lays a refusal of valid input on the consumer; these cells have none."""
    from caiconform.results.catalogue import culprit_of

    result = dlpack_copy.execute(_copy_params("copy-true"), producer("old"), None)
    assert result.outcome == REJECTED
    record = {**result.to_dict(), "producer": "host", "consumer": None, "check": "dlpack_copy"}
    assert culprit_of(record)["library"] == "host"
    right = dlpack_streams.judge(0, CUDA, ValueError("0"), None, _values(), "c")
    assert dlpack_calls_culprit(right) is None


def dlpack_calls_culprit(result):
    return _dlpack_refusals.producer_refused(result, "host").culprit


def test_stale_reads_over_dlpack_rank_as_corrupting() -> None:
    from caiconform.results.severity import CORRUPTS, severity_of

    for rule in ("DLPACK-STREAM-PRODUCER-SYNC", "DLPACK-STREAM-NONE-LEGACY"):
        assert severity_of("fail", rule, "MUST") == CORRUPTS


def test_versions_a_newer_major_is_right_only_for_a_consumer_that_reads_it() -> None:
    from caiconform.spec.findings import finding

    newer = finding("DLPACK-VERSION-MAJOR-MISMATCH", "version", "DLPack 2.0", "major version 1")
    ok = dlpack_versions.judge_capsule([newer], "dltensor_versioned", None, [2, 0], "c")
    assert ok.outcome == PASS and "DLPack 2.0" in ok.message
    bad = dlpack_versions.judge_capsule([newer], "dltensor_versioned", None, [1, 1], "c")
    assert (bad.outcome, bad.rule) == (FAIL, "DLPACK-VERSION-MAJOR-MISMATCH")


def test_a_buffererror_for_what_dlpack_cannot_describe_is_right(producer) -> None:
    """numpy refuses a structured array with BufferError: DLPack has no type code for it."""
    name = producer()
    params = _version_params([1, 1])
    result = dlpack_versions.execute({**params, "typestr": "structured"}, name, None)
    assert result.outcome == PASS and "BufferError" in result.message, result.message
    copied = dlpack_copy.execute({**_copy_params("copy-true"), "typestr": "structured"}, name, None)
    assert copied.outcome == PASS and "BufferError" in copied.message, copied.message
    streamed = dlpack_streams.execute({**_stream_params(None), "typestr": "structured"}, name, None)
    assert streamed.outcome == PASS and "BufferError" in streamed.message, streamed.message


def test_undescribable_names_the_rule_that_makes_the_refusal_right() -> None:
    from caiconform.checks._floor import floor_layout

    assert _dlpack_calls.undescribable("<f4") is None
    assert _dlpack_calls.undescribable("bfloat16") is None
    assert _dlpack_calls.undescribable("structured").startswith("DLPACK-EXPORT-BUFFERERROR")
    odd = _dlpack_calls.undescribable("<f4", floor_layout("odd", 4))
    assert odd.startswith("DLPACK-STRIDES-ELEMENTS")


def test_drawn_examples_are_capped_by_what_they_ask() -> None:
    """Each family names its drawn examples' kind, so a producer dying on one stream value,
    case or max_version does not skip the others (nor dies uncapped)."""
    from caiconform.runner.jobs import crash_kind

    assert crash_kind(_stream_params(0), None, dlpack_streams.crash_kind) == "stream 0 none"
    assert crash_kind(_copy_params("copy-true"), None, dlpack_copy.crash_kind) == "case copy-true"
    kind = crash_kind(_version_params([1, 1]), None, dlpack_versions.crash_kind)
    assert kind == "max_version [1, 1] layout C"
