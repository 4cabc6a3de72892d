"""dlpack_consumer's copy case without a GPU: every branch of `judge_copy` (copy True, False,
None; refused, aliased, copied) and of `judge_device`, the element count of a re-read, the skip
of a consumer that takes no `copy`, the plugin's FunctionAdapter not claiming it, and NumPy's
`consume_dlpack_with` over a host array, whose result is read again after the memory changed
(what the family does on the device)."""

from __future__ import annotations

import numpy as np
import pytest

from caiconform.adapters.base import CAPABILITIES, Adapter, SkipExchange
from caiconform.checks import dlpack_consumer as family

VALUES = np.arange(8, dtype=np.float32) + 0.5
FLIPPED = (VALUES.view(np.uint8) ^ np.uint8(0xFF)).view(np.float32)


def _followed(n: int) -> np.ndarray:
    """The first read with its first `n` elements changed, as a view reads after the write."""
    again = VALUES.copy()
    again[:n] = FLIPPED[:n]
    return again


@pytest.mark.parametrize(
    ("copy", "after", "outcome", "rule"),
    [
        (True, VALUES.copy(), "pass", None),
        (True, _followed(8), "fail", "DLPACK-FROM-COPY-TRUE"),
        (True, _followed(1), "fail", "DLPACK-FROM-COPY-TRUE"),
        (False, _followed(8), "pass", None),
        (False, VALUES.copy(), "fail", "DLPACK-FROM-COPY-FALSE"),
        (None, VALUES.copy(), "pass", None),
        (None, _followed(8), "pass", None),
    ],
)
def test_a_read_again_is_judged_by_the_copy_asked(copy, after, outcome, rule) -> None:
    result = family.judge_copy(copy, VALUES.copy(), after, None, "ctx")
    assert result.outcome == outcome
    if rule is not None:
        assert result.rule == rule and "overwritten" in result.message


def test_copy_none_says_whether_it_gave_a_view_or_a_copy() -> None:
    view = family.judge_copy(None, VALUES.copy(), _followed(8), None, "ctx")
    copied = family.judge_copy(None, VALUES.copy(), VALUES.copy(), None, "ctx")
    assert "a view (8 of 8 elements followed the overwrite)" in view.message
    assert "gave a copy" in copied.message


@pytest.mark.parametrize("error", [BufferError("needs a copy"), ValueError("needs a copy")])
def test_copy_false_refused_with_the_text_s_error_passes(error) -> None:
    result = family.judge_copy(False, None, None, error, "ctx")
    assert result.outcome == "pass" and type(error).__name__ in result.message


@pytest.mark.parametrize(
    ("copy", "error"),
    [
        (False, NotImplementedError("no")),
        (True, BufferError("no")),
        (None, BufferError("no")),
        (True, NotImplementedError("device")),
    ],
)
def test_any_other_refusal_is_a_valid_request_rejected(copy, error) -> None:
    result = family.judge_copy(copy, None, None, error, "ctx")
    assert (result.outcome, result.rule) == ("rejected", family.COPY_RULES[copy])


def test_changed_count_compares_bytes_and_counts_a_reshaped_read_as_all() -> None:
    assert family.changed_count(VALUES, VALUES.copy()) == 0
    assert family.changed_count(VALUES, _followed(3)) == 3
    nan = np.array([np.nan], np.float32)
    assert family.changed_count(nan, nan.copy()) == 0  # bytes, not values: NaN is unchanged
    assert family.changed_count(VALUES, VALUES.reshape(2, 4)) == 8
    flags = np.array([True, False])
    assert family.changed_count(flags, ~flags) == 2


@pytest.mark.parametrize(
    ("device", "source", "result_device", "rule"),
    [
        (None, (2, 0), (2, 0), None),
        (None, (13, 0), (2, 0), None),  # managed memory is the GPU's, either device type
        (None, (2, 0), (1, 0), "DLPACK-FROM-DLPACK-SAME-DEVICE"),
        (None, (2, 1), (2, 0), "DLPACK-FROM-DLPACK-SAME-DEVICE"),
        ((2, 0), (2, 0), (2, 0), None),
        ((2, 0), (2, 0), (1, 0), "DLPACK-FROM-DEVICE"),
        ((2, 0), (2, 0), None, None),  # the result does not say: not judged
        (None, (3, 0), (1, 0), None),  # host memory: the host or the GPU, not judged
    ],
)
def test_the_result_is_on_the_device_asked_or_the_input_s(
    device, source, result_device, rule
) -> None:
    failure = family.judge_device(device, source, result_device, "ctx")
    if rule is None:
        assert failure is None
    else:
        assert (failure.outcome, failure.rule) == ("fail", rule)


def test_every_copy_scenario_is_a_case_and_names_its_copy() -> None:
    assert set(family.CASES["copy"]) == set(family.COPIES)
    assert {copy for copy, _ in family.COPIES.values()} == set(family.COPY_RULES)
    assert "dlpack-copy" in CAPABILITIES


def test_a_consumer_without_dlpack_copy_is_skipped_with_the_reason() -> None:
    params = {"case": "copy", "scenario": "true", "typestr": "<f4", "shape": [4], "seed": 0}
    result = family.execute(params, None, "reference")
    assert result.outcome == "skip" and "dlpack-copy" in result.message


def test_the_base_adapter_and_the_plugin_s_function_adapter_take_no_copy() -> None:
    from caiconform.pytest_plugin.adapter import FunctionAdapter

    with pytest.raises(SkipExchange, match="takes no copy"):
        Adapter().consume_dlpack_with(VALUES, copy=True)
    adapter = FunctionAdapter()
    adapter.dlpack_consumer_spec = "numpy:from_dlpack"
    assert "consume-dlpack" in adapter.capabilities
    assert "dlpack-copy" not in adapter.capabilities


@pytest.mark.parametrize(("copy", "aliased"), [(True, False), (False, True), (None, True)])
def test_numpy_s_from_dlpack_with_copy_over_a_host_array(copy, aliased) -> None:
    from caiconform.adapters.numpy_adapter import NumpyAdapter

    adapter = NumpyAdapter()
    host = VALUES.copy()
    got, result = adapter.consume_dlpack_with(host, copy=copy, device=(1, 0))
    host.view(np.uint8)[:] ^= 0xFF  # the producer's memory overwritten, as `overwrite` does
    again = adapter.read_result(result)
    assert np.array_equal(got, VALUES)
    assert family.changed_count(got, again) == (8 if aliased else 0)
    assert family.judge_copy(copy, got, again, None, "ctx").outcome == "pass"


def test_numpy_skips_a_device_it_cannot_hold() -> None:
    from caiconform.adapters.numpy_adapter import NumpyAdapter

    with pytest.raises(SkipExchange, match="host memory only"):
        NumpyAdapter().consume_dlpack_with(VALUES, copy=None, device=(2, 0))


def test_the_copy_case_s_reproducer_calls_the_adapter_with_the_copy() -> None:
    params = {"case": "copy", "scenario": "false-own", "typestr": "<f4", "shape": [4], "seed": 0}
    script = family.repro(params, None, "torch")
    assert "consume_dlpack_with(recorder, copy=False, device=device)" in script
    assert "if True else None" in script and "stream_scenario" not in script
    compile(script, "repro", "exec")


class _HostArray:
    """A stand-in for the reference array in host memory: numpy's own `__dlpack__` over
    `values` (kDLCPU), so NumPy's from_dlpack can alias or copy it without a GPU."""

    def __init__(self, values, layout, typestr, **_) -> None:
        self.values = np.array(values, dtype=np.dtype(typestr))
        self.dlpack_exports: list = []

    def __dlpack__(self, **kwargs):
        return self.values.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return (1, 0)


def _flip(array) -> None:
    array.values.view(np.uint8)[...] ^= 0xFF


@pytest.fixture
def host_copy_case(monkeypatch):
    import caiconform.reference.producer as producer

    monkeypatch.setattr(producer, "ReferenceArray", _HostArray)
    monkeypatch.setattr(family, "overwrite", _flip)

    def run(scenario: str):
        params = {"case": "copy", "scenario": scenario, "typestr": "<f4", "shape": [6], "seed": 1}
        return family.execute(params, None, "numpy")

    return run


@pytest.mark.parametrize("scenario", list(family.COPIES))
def test_the_copy_case_end_to_end_over_host_memory(host_copy_case, scenario) -> None:
    copy, own = family.COPIES[scenario]
    result = host_copy_case(scenario)
    assert result.outcome == "pass", result.message
    assert f"copy={copy} " in result.message
    assert f"device={(1, 0) if own else None}" in result.message
    dl_device = (1, 0) if own else None
    assert f"__dlpack__ asked (copy, dl_device): [({copy}, {dl_device})]" in result.message


def test_the_copy_case_fails_copy_false_when_the_result_keeps_its_values(
    host_copy_case, monkeypatch
) -> None:
    monkeypatch.setattr(family, "overwrite", lambda array: None)  # as if the result were a copy
    result = host_copy_case("false")
    assert (result.outcome, result.rule) == ("fail", "DLPACK-FROM-COPY-FALSE")
    assert host_copy_case("true").outcome == "pass"


def test_overwrite_flips_every_element_s_bytes_a_bool_s_lowest_bit(monkeypatch) -> None:
    import caiconform.cuda.device as device
    import caiconform.cuda.memory as memory

    written = []
    monkeypatch.setattr(memory, "copy_from_host", lambda ptr, data: written.append((ptr, data)))
    monkeypatch.setattr(device, "synchronize", lambda: written.append("synchronized"))

    class Array:
        ptr = 0x1000
        values = np.array([[True, False]])

    family.overwrite(Array())
    Array.values = VALUES
    family.overwrite(Array())
    (ptr, flags), _, (_, floats), last = written
    assert ptr == 0x1000 and last == "synchronized"
    assert flags.tolist() == [[0, 1]]
    assert family.changed_count(VALUES, floats.view(np.float32)) == VALUES.size


@pytest.mark.parametrize("rule", ["DLPACK-FROM-COPY-TRUE", "DLPACK-FROM-COPY-FALSE"])
def test_copy_semantics_not_kept_by_from_dlpack_corrupt(rule) -> None:
    from caiconform.results import severity

    assert severity.harm_of("fail", rule, "MUST") == severity.CORRUPTS
    assert severity.harm_of("rejected-valid", rule, "MUST") == severity.REFUSES_VALID


@pytest.mark.parametrize(
    ("refuses", "copy", "outcome", "rule"),
    [
        ("device", True, "rejected", "DLPACK-FROM-DEVICE"),
        ("device", None, "rejected", "DLPACK-FROM-DEVICE"),
        ("copy", True, "rejected", "DLPACK-FROM-COPY-TRUE"),
        ("copy", None, "pass", None),
    ],
)
def test_a_refused_device_request_is_asked_again_to_tell_which_keyword(
    host_copy_case, monkeypatch, refuses, copy, outcome, rule
) -> None:
    """A consumer refusing any device (CuPy's NotImplementedError) is filed under
    DLPACK-FROM-DEVICE; one refusing copy=True whatever the device (JAX's UNIMPLEMENTED copy)
    under DLPACK-FROM-COPY-TRUE for both scenarios, one bug under one rule."""
    from caiconform.adapters.numpy_adapter import NumpyAdapter

    real = NumpyAdapter.consume_dlpack_with

    def refusing(self, obj, *, copy=None, device=None):
        if refuses == "device" and device is not None:
            raise NotImplementedError("from_dlpack() does not support device yet.")
        if refuses == "copy" and copy is True:
            raise RuntimeError("UNIMPLEMENTED: no copy here")
        return real(self, obj, copy=copy, device=device)

    monkeypatch.setattr(NumpyAdapter, "consume_dlpack_with", refusing)
    result = host_copy_case("true-own" if copy else "none-own")
    assert (result.outcome, result.rule) == (outcome, rule), result.message
    if rule == "DLPACK-FROM-DEVICE":
        assert "without device imported" in result.message
    if rule == "DLPACK-FROM-COPY-TRUE":
        assert "refused without device too (RuntimeError)" in result.message
        assert host_copy_case("true").rule == "DLPACK-FROM-COPY-TRUE"  # the same rule
