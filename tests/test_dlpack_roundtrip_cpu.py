"""CPU tests of the DLPack roundtrip family and the protocol choice: host-memory stand-ins.

NumPy's own arrays export kDLCPU capsules, so a "producer" handing out numpy arrays laid out as
asked and a "consumer" importing with `numpy.from_dlpack` exchange real capsules on this GPU-less
machine; the faults (a misreading consumer, a capsule that does not describe its array, a refusal,
a non-native array exported as it is) are planted in the stand-ins.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from caiconform.adapters.base import SkipExchange
from caiconform.checks import _exchange, dlpack_roundtrip
from caiconform.errors import UsageError
from caiconform.spec.layout import Layout


class _Host:
    """A producer's object over host memory: numpy's own `__dlpack__`, or a planted fault."""

    def __init__(self, array: np.ndarray, fault: str = "") -> None:
        self.array = array
        self.fault = fault

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.array.__dlpack_device__()

    def __dlpack__(self, **kwargs: Any) -> Any:
        if self.fault == "refuse":
            raise BufferError("cannot export this")
        if self.fault == "typeerror":
            raise TypeError("no")
        if self.fault == "lies":  # a capsule of other values than the array holds
            return np.zeros_like(self.array).__dlpack__(**kwargs)
        if self.fault == "swapped" and not self.array.dtype.isnative:  # exported as it is
            native = self.array.view(self.array.dtype.newbyteorder("="))
            return native.__dlpack__(**kwargs)
        return self.array.__dlpack__(**kwargs)


class _AskMinusOne:
    """A consumer's request with stream -1 (no synchronization), passed on to the producer."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __dlpack_device__(self):
        return self.obj.__dlpack_device__()

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.obj.__dlpack__(**{**kwargs, "stream": -1})


class _Producer:
    def __init__(self, fault: str = "") -> None:
        self.fault = fault

    def produce(self, values, layout, typestr, scenario="none"):
        return _Host(values, self.fault)


class _Consumer:
    def __init__(self, how: str = "reads") -> None:
        self.how = how

    def consume_dlpack(self, obj):
        if self.how == "asks-minus-one":
            return np.from_dlpack(_AskMinusOne(obj)).copy()
        assert not hasattr(obj, "__cuda_array_interface__")  # only the DLPack methods show
        if self.how == "refuses":
            raise RuntimeError("unsupported dtype")
        if self.how == "skips":
            raise SkipExchange("no DLPack import")
        out = np.from_dlpack(obj).copy()
        if self.how == "wrong" and out.size:
            out.reshape(-1)[0] = ~out.reshape(-1)[0] if out.dtype.kind in "iub" else 7
        return out


@pytest.fixture
def libs(monkeypatch: pytest.MonkeyPatch):
    adapters: dict[str, Any] = {
        "host": _Producer(),
        "liar": _Producer("lies"),
        "refuser": _Producer("refuse"),
        "typeerror": _Producer("typeerror"),
        "swapper": _Producer("swapped"),
        "np": _Consumer(),
        "wrong": _Consumer("wrong"),
        "refuses": _Consumer("refuses"),
        "minus-one": _Consumer("asks-minus-one"),
        "reference": _Consumer(),
    }

    def produce(name, values, layout, typestr, scenario):
        return adapters[name].produce(values, layout, typestr, scenario)

    monkeypatch.setattr(_exchange, "adapter", lambda name: adapters[name])
    monkeypatch.setattr(_exchange, "produce", produce)
    return adapters


def _params(typestr: str = "<i4", shape=(3, 4)) -> dict:
    return {"typestr": typestr, "layout": Layout(tuple(shape), None).to_dict(), "seed": 5}


def test_a_faithful_exchange_passes(libs) -> None:
    result = dlpack_roundtrip.execute(_params(), "host", "np")
    assert result.outcome == "pass", result.message


def test_a_zero_size_exchange_passes(libs) -> None:
    result = dlpack_roundtrip.execute(_params("<f4", (0, 3)), "host", "np")
    assert result.outcome == "pass", result.message


def test_a_misreading_consumer_is_blamed(libs) -> None:
    result = dlpack_roundtrip.execute(_params(), "host", "wrong")
    assert (result.outcome, result.rule) == ("fail", "DLPACK-CONSUMER-READS-DESCRIBED")


def test_a_capsule_of_other_values_is_the_producers_fault(libs) -> None:
    result = dlpack_roundtrip.execute(_params(), "liar", "np")
    assert (result.outcome, result.rule) == ("fail", "DLPACK-PRODUCER-DESCRIBES-DATA")
    assert "reads a mismatch too" in str(result.seen)


def test_a_consumer_refusing_a_type_it_need_not_have_is_a_portability_gap(libs) -> None:
    values = np.zeros(3, "<i2")  # bfloat16's bytes
    result = dlpack_roundtrip._exchange_values(
        _Host(values), values, "bfloat16", "host", "refuses", "c"
    )
    assert (result.outcome, result.rule) == ("rejected", "DLPACK-PORT-DTYPE")
    assert dlpack_roundtrip.uncommon("bfloat16") and dlpack_roundtrip.uncommon("float8_e5m2")
    assert not dlpack_roundtrip.uncommon("<f8") and not dlpack_roundtrip.uncommon("<c16")


def test_a_consumer_refusing_a_valid_capsule_is_rejected(libs) -> None:
    result = dlpack_roundtrip.execute(_params(), "host", "refuses")
    assert (result.outcome, result.rule) == ("rejected", "DLPACK-CONSUMER-READS-DESCRIBED")


def test_a_producer_refusing_a_describable_array_is_filed_against_it(libs) -> None:
    result = dlpack_roundtrip.execute(_params(), "refuser", "np")
    assert (result.outcome, result.rule) == ("rejected", "DLPACK-EXPORT-BUFFERERROR")
    assert result.culprit["library"] == "refuser" and result.culprit["role"] == "producer"


def test_a_refusal_other_than_buffererror_fails(libs) -> None:
    result = dlpack_roundtrip.execute(_params(), "typeerror", "np")
    assert (result.outcome, result.rule) == ("fail", "DLPACK-EXPORT-BUFFERERROR")


@pytest.mark.parametrize("typestr", [">i4", "<M8[ns]"])
def test_refusing_what_dlpack_cannot_describe_passes(libs, typestr: str) -> None:
    result = dlpack_roundtrip.execute(_params(typestr), "refuser", "np")
    assert result.outcome == "pass", result.message


def test_a_non_native_array_exported_as_it_is_breaks_byte_order(libs) -> None:
    result = dlpack_roundtrip.execute(_params(">i4"), "swapper", "np")
    assert (result.outcome, result.rule) == ("fail", "DLPACK-BYTE-ORDER")


def test_the_floor_crosses_types_layouts_and_zero_size() -> None:
    floor = dlpack_roundtrip.floor("host", "np")
    kinds = {example.coverage.get("layout") for example in floor}
    assert {"C", "F", "negative", "zero-size[0, 3]"} <= kinds
    types = {example.params["typestr"] for example in floor}
    assert {"bfloat16", ">i4", "structured", "<M8[ns]"} <= types


def test_run_protocol_keeps_the_families_of_that_protocol() -> None:
    from caiconform.commands.run import checks_for
    from caiconform.runner.plan import default_checks

    names = default_checks()
    dl = checks_for(names, "dlpack")
    cai = checks_for(names, "cai")
    assert "dlpack_roundtrip" in dl and "roundtrip" not in dl
    assert "roundtrip" in cai and "dlpack_roundtrip" not in cai
    assert "agreement" in dl and "agreement" in cai
    assert checks_for(names, "both") == names
    with pytest.raises(UsageError, match="--protocol dlpack"):
        checks_for(["roundtrip"], "dlpack")


def test_cells_need_the_dlpack_capabilities() -> None:
    from caiconform.runner.libraries import LibraryInfo
    from caiconform.runner.plan import load_families, plan_cells

    families, _ = load_families(["dlpack_roundtrip"])
    libs = {
        "a": LibraryInfo("a", True, "", "1", frozenset({"produce", "consume", "dlpack"}), False),
        "b": LibraryInfo("b", True, "", "1", frozenset({"consume", "consume-dlpack"}), False),
        "c": LibraryInfo("c", True, "", "1", frozenset({"produce", "consume"}), False),
    }
    cells, skipped = plan_cells(families, libs, 0)
    assert [(c.producer, c.consumer) for c in cells] == [("a", "b")] and not skipped


@pytest.mark.parametrize(
    ("check", "role", "rule"),
    [
        ("dlpack_roundtrip", "consumer", "DLPACK-CONSUMER-READS-DESCRIBED"),
        ("dlpack_lifetime", "producer", "DLPACK-PRODUCER-DESCRIBES-DATA"),
        ("roundtrip", "consumer", "CAI-CONSUMER-READS-DESCRIBED"),
        ("streams", "consumer", "CAI-SYNC-CONSUMER"),
    ],
)
def test_a_crash_without_a_rule_is_filed_under_its_protocols_reading_rule(check, role, rule):
    """A worker's crash records no rule: a DLPack family's is filed under the DLPack reading
    rules, not the CAI's."""
    from caiconform.results.filing import filed_rule

    record = {"check": check, "outcome": "crash", "rule": None, "params": {}}
    assert filed_rule(record, role) == (rule, "implied")


def test_a_crash_on_a_bad_capsule_is_filed_under_the_rule_it_breaks():
    from caiconform.checks import dlpack_adversarial as adv
    from caiconform.results.filing import filed_rule

    for example in adv.floor(None, "torch"):
        record = {"check": adv.FAMILY, "outcome": "crash", "rule": None, "params": example.params}
        kind = example.params["kind"]
        if kind in adv.LEGAL:
            assert filed_rule(record, "consumer")[0] == "DLPACK-CONSUMER-READS-DESCRIBED"
        else:
            assert filed_rule(record, "consumer") == (adv.KINDS[kind], "input")


def test_numpy_is_the_host_side_dlpack_consumer():
    from caiconform.adapters._staging import dlpack_only
    from caiconform.adapters.numpy_adapter import NumpyAdapter

    values = np.arange(12, dtype="<i4").reshape(3, 4)[:, ::2]
    view = dlpack_only(values)
    got = NumpyAdapter().consume_dlpack(view)
    assert np.array_equal(got, values) and got.base is None  # a copy the consumer owns
    assert view.calls and view.calls[0].get("dl_device") == (1, 0)


def test_numpy_takes_no_part_in_the_adversarial_cuda_capsules():
    from caiconform.checks import dlpack_adversarial as adv

    result = adv.execute({"kind": "used-capsule"}, None, "numpy")
    assert result.outcome == "skip" and "host capsules only" in result.message


def test_a_producer_refusing_the_consumers_stream_is_filed_against_the_producer(libs) -> None:
    """numpy's host export refuses any stream but None: the consumer's import fails, and the
    failure is the producer's refusal of an optional stream value."""
    result = dlpack_roundtrip.execute(_params(), "host", "minus-one")
    assert (result.outcome, result.rule) == ("rejected", "DLPACK-STREAM-OPTIONAL")
    assert result.culprit == {
        "library": "host",
        "role": "producer",
        "why": "the producer's __dlpack__ refused the consumer's request",
    }


def test_refusing_byte_strides_dlpack_cannot_count_passes(libs) -> None:
    params = {"typestr": "<i4", "layout": Layout((3, 4), (21, 5)).to_dict(), "seed": 1}
    result = dlpack_roundtrip.execute(params, "refuser", "np")
    assert result.outcome == "pass", result.message


def test_an_adapters_bookkeeping_reads_past_every_view():
    from caiconform.adapters._staging import dlpack_only, unwrapped
    from caiconform.checks.dlpack_lifetime import Keeping

    array = np.arange(3.0)
    keeping = Keeping(array)
    view = dlpack_only(keeping)
    assert unwrapped(view) is array and unwrapped(array) is array
    assert not keeping.capsules and not view.calls


def test_agreement_takes_cuda_cores_lazy_dtype_refusal_as_its_own_matter(monkeypatch) -> None:
    """cuda.core's StridedMemoryView reads the dtype only when asked: a float8 capsule is
    refused there, after from_dlpack returned. That is cuda.core's matter, not a rejection
    of the producer's export (the published run had filed it against no one)."""
    import sys
    import types

    from caiconform.checks import agreement

    class View:
        @property
        def dtype(self):
            raise TypeError("Unsupported dtype. dtype code: 12")

    module = types.ModuleType("cuda.core.utils")
    module.StridedMemoryView = types.SimpleNamespace(from_dlpack=lambda obj, stream_ptr: View())
    monkeypatch.setitem(sys.modules, "cuda.core.utils", module)
    result = agreement._check_cuda_core(object(), {}, "c", "reference")
    assert result.outcome == "pass" and "cuda.core refused" in result.message
