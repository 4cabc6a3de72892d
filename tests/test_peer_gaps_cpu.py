"""CPU tests of what the peers' own suites check and the matrix did not (issue 25 item 4): objects
that cannot export, an export-version setting, object fields in descr, structured fields kept
on import, datetime units, an extent past 4 GiB, and RMM as a consumer. Each check meets a
synthetic library that breaks it."""

from __future__ import annotations

import ctypes
import sys
import types
from typing import Any

import numpy as np
import pytest

from caiconform import validate
from caiconform.adapters.base import Adapter, SkipExchange
from caiconform.adapters.registry import get
from caiconform.checks import _encoding, _exchange, adversarial, roundtrip, schema
from caiconform.reference.consumer import ConsumerRefused, inspect_dict
from caiconform.results.outcome import FAIL, PASS, REJECTED, SKIP
from caiconform.results.record import EXPECT_REJECTION
from caiconform.results.severity import CORRUPTS, DEPARTS, harm_of, severity_of
from caiconform.spec.dtypes import STRUCTURED_DESCR, numpy_dtype
from caiconform.spec.families import LIVE
from caiconform.spec.layout import Layout
from caiconform.spec.rules import RULES, Level
from caiconform.spec.values import compare_values, fields_dropped, make_values

# --- objects that cannot export -------------------------------------------------------------


class _RaisesRuntimeError:
    """What torch does for a CUDA tensor that requires grad (torch/_tensor.py)."""

    @property
    def __cuda_array_interface__(self) -> dict:
        raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad.")


class _RaisesAttributeError:
    @property
    def __cuda_array_interface__(self) -> dict:
        raise AttributeError("not on a device")


class _NoAttribute:
    pass


class _Unexportables(Adapter):
    """A synthetic library whose objects that cannot export behave as named."""

    name = "synthetic-unexportable"
    unexportable_kinds = ("raises-runtime", "raises-attribute", "plain", "broken-dict")

    def unexportable(self, kind: str) -> Any:
        return {
            "raises-runtime": _RaisesRuntimeError(),
            "raises-attribute": _RaisesAttributeError(),
            "plain": _NoAttribute(),
            "broken-dict": _encoding.InterfaceObject(
                {"shape": (4,), "typestr": "<f4", "version": 3}
            ),
        }[kind]


@pytest.fixture
def library(monkeypatch: pytest.MonkeyPatch) -> Adapter:
    lib = _Unexportables()
    monkeypatch.setattr(_exchange, "adapter", lambda name: lib)
    return lib


@pytest.mark.parametrize(
    ("kind", "outcome", "rule"),
    [
        ("raises-attribute", PASS, None),
        ("plain", PASS, None),
        ("raises-runtime", FAIL, "CAI-ATTR-RAISES-ATTRIBUTEERROR"),
        ("broken-dict", FAIL, "CAI-DATA-REQUIRED"),
    ],
)
def test_an_object_that_cannot_export_must_raise_attributeerror(library, kind, outcome, rule):
    result = schema.execute({"unexportable": kind}, library.name, None)
    assert (result.outcome, result.rule) == (outcome, rule), result.message
    if kind == "raises-runtime":
        assert "RuntimeError" in result.message
        assert "[CAI-ATTR-RAISES-ATTRIBUTEERROR]" in result.message


def test_the_schema_floor_holds_each_librarys_objects_that_cannot_export():
    kinds = {
        name: [
            e.params["unexportable"]
            for e in schema.floor(name, None)
            if e.params.get("unexportable")
        ]
        for name in ("torch", "cupy", "jax", "numba", "reference")
    }
    assert kinds == {
        "torch": ["cpu", "sparse-cpu", "sparse-cuda", "requires-grad"],
        "cupy": ["sparse-csr"],
        "jax": ["cpu"],
        "numba": [],
        "reference": [],
    }
    # an adapter source of its own (the tests' synthetic libraries) has none
    assert not [e for e in schema.floor("synthetic-x", None) if e.params.get("unexportable")]


def test_an_unknown_kind_is_a_skip_not_an_error():
    for name in ("cupy", "jax"):  # neither imports its library to say so
        with pytest.raises(SkipExchange, match="no object of kind 'nope'"):
            get(name).unexportable("nope")


def test_the_repro_of_an_object_that_cannot_export_compiles():
    source = schema.repro({"unexportable": "requires-grad"}, "torch", None)
    compile(source, "repro.py", "exec")
    assert "get('torch').unexportable('requires-grad')" in source


# --- an export-version setting (CuPy's CUPY_CUDA_ARRAY_INTERFACE_EXPORT_VERSION) ------------

_V3 = {"shape": (3, 4), "typestr": "<f4", "data": (256, False), "version": 3, "stream": 1}
_V2 = {"shape": (3, 4), "typestr": "<f4", "data": (256, False), "version": 2, "strides": None}


@pytest.mark.parametrize(
    ("interface", "failed"),
    [(_V2, False), (_V3, True), ({**_V2, "stream": 1}, True), ({**_V3, "version": 2}, True)],
)
def test_a_version_setting_must_give_that_version_without_stream(interface, failed):
    result = schema.judge_setting(interface, "X=2", 2, "c")
    if not failed:
        assert result is None
        return
    assert (result.outcome, result.rule) == (FAIL, "CAI-SYNC-PRODUCER-OPT-OUT")
    assert "[CAI-SYNC-PRODUCER-OPT-OUT]" in result.message


class _SettingIgnored(Adapter):
    """A synthetic library whose export-version setting changes nothing: still v3, a stream."""

    name = "synthetic-setting"
    export_settings = (("EXPORT_VERSION=2", 2),)

    def produce_under(self, setting, values, layout, typestr):
        return _encoding.InterfaceObject(dict(_V3), keepalive=values)


class _SettingHonoured(_SettingIgnored):
    def produce_under(self, setting, values, layout, typestr):
        return _encoding.InterfaceObject(dict(_V2), keepalive=values)


@pytest.mark.parametrize(("lib", "outcome"), [(_SettingIgnored, FAIL), (_SettingHonoured, PASS)])
def test_schema_judges_the_dict_read_under_the_setting(monkeypatch, lib, outcome):
    instance = lib()
    monkeypatch.setattr(_exchange, "adapter", lambda name: instance)
    monkeypatch.setattr(schema, "_adapter_hook", lambda producer, name: instance.export_settings)
    # the dicts point at no memory (data 256): on a machine with a GPU the live checks would
    # rightly find that; this test is about the dict, so they answer as without a GPU
    live_asked = []

    def live_check(obj):
        live_asked.append(obj)
        return [], "live checks skipped: the test's dict points at no memory"

    monkeypatch.setattr("caiconform.reference.live.live_check", live_check)
    params = {
        "export_setting": "EXPORT_VERSION=2",
        "typestr": "<f4",
        "layout": Layout((3, 4)).to_dict(),
        "stream_scenario": "none",
        "seed": 0,
    }
    result = schema.execute(params, instance.name, None)
    assert result.outcome == outcome, result.message
    assert len(live_asked) == (outcome == PASS)  # a dict that honours it is checked live too
    compile(schema.repro(params, instance.name, None), "repro.py", "exec")


def test_cupys_floor_has_its_export_version_setting():
    settings = [e.params for e in schema.floor("cupy", None) if e.params.get("export_setting")]
    assert [p["export_setting"] for p in settings] == ["CUPY_CUDA_ARRAY_INTERFACE_EXPORT_VERSION=2"]
    assert not [e for e in schema.floor("torch", None) if e.params.get("export_setting")]


def test_export_version_sets_cupys_module_value_while_reading_and_restores_it(monkeypatch):
    util = types.SimpleNamespace(CUDA_ARRAY_INTERFACE_EXPORT_VERSION=3)
    fake_cupy = types.ModuleType("cupy")
    fake_cupy._util = util  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)

    class Array:  # exports what CuPy's core reads from _util at each export
        @property
        def __cuda_array_interface__(self) -> dict:
            ver = util.CUDA_ARRAY_INTERFACE_EXPORT_VERSION
            return {**_V2, "version": ver} if ver == 2 else dict(_V3)

    from caiconform.adapters.cupy_adapter import ExportVersion

    assert ExportVersion(Array(), 2).__cuda_array_interface__["version"] == 2
    assert util.CUDA_ARRAY_INTERFACE_EXPORT_VERSION == 3


# --- object fields in descr -----------------------------------------------------------------


def _object_fields_dict(typestr: str = "<f4") -> dict:
    descr = adversarial.object_fields_descr(typestr)
    itemsize = np.dtype(descr).itemsize
    return {
        "shape": (3,),
        "typestr": f"|V{itemsize}",
        "descr": descr,
        "data": (4096, False),
        "version": 3,
    }


def test_an_object_field_descr_is_a_valid_dict():
    report = validate(_object_fields_dict())
    assert report.ok, report.errors
    assert LIVE["object-fields"] is None  # legal input
    assert RULES[adversarial.OBJECT_FIELDS_RULE].level is Level.SHOULD
    # objects made of device bytes are wrong values without an error
    # objects from device bytes are wrong values; the sentence is a SHOULD: listed, not failed
    assert harm_of(FAIL, adversarial.OBJECT_FIELDS_RULE, "SHOULD") == CORRUPTS
    assert severity_of(FAIL, adversarial.OBJECT_FIELDS_RULE, "SHOULD") == DEPARTS


class _Consumer:
    def __init__(self, values: Any = None, error: BaseException | None = None) -> None:
        self.values, self.error = values, error

    def consume(self, obj: Any) -> Any:
        if self.error is not None:
            raise self.error
        return self.values


@pytest.mark.parametrize(
    ("answer", "outcome", "rule"),
    [
        ("refuses", REJECTED, "CAI-DESCR-OBJECT-REFUSED"),
        ("objects", FAIL, "CAI-DESCR-OBJECT-REFUSED"),
        ("opaque", PASS, None),
        ("garbage", FAIL, "CAI-CONSUMER-READS-DESCRIBED"),
    ],
)
def test_object_fields_are_refused_or_kept_opaque(monkeypatch, answer, outcome, rule):
    zeros = np.zeros(3, dtype="V12")
    consumers = {
        "refuses": _Consumer(error=TypeError("object dtype")),
        # a synthetic library that builds an object array from the device bytes
        "objects": _Consumer(np.zeros(3, dtype=[("value", "<f4"), ("object", "O")])),
        "opaque": _Consumer(zeros.copy()),
        "garbage": _Consumer(np.frombuffer(b"\x01" * 36, dtype="V12").copy()),
    }
    monkeypatch.setattr(_exchange, "adapter", lambda name: consumers[name])
    obj = _encoding.InterfaceObject(_object_fields_dict())
    result = adversarial.judge_object_fields(answer, obj, zeros, "c")
    assert (result.outcome, result.rule) == (outcome, rule), result.message
    if outcome == REJECTED:
        assert result.expected == EXPECT_REJECTION


def test_the_reference_consumer_refuses_object_fields_and_keeps_structured_fields():
    with pytest.raises(ConsumerRefused) as refused:
        inspect_dict(_object_fields_dict())
    assert refused.value.rules == ["CAI-DESCR-OBJECT-REFUSED"]
    with pytest.raises(ConsumerRefused):
        inspect_dict({"shape": (2,), "typestr": "|O8", "data": (4096, False), "version": 3})
    structured = {
        "shape": (2,),
        "typestr": "|V16",
        "descr": list(STRUCTURED_DESCR),
        "data": (4096, False),
        "version": 3,
    }
    plan, _warnings = inspect_dict(structured)
    assert plan.dtype.names is not None and plan.dtype.names[:3] == ("a", "b", "c")
    plain, _ = inspect_dict({**structured, "descr": [("", "|V16")]})
    assert plain.dtype == np.dtype("V16")


# --- structured fields kept on import -------------------------------------------------------


@pytest.mark.parametrize("drops", [True, False])
def test_a_consumer_dropping_descr_passes_with_a_portability_warning(monkeypatch, drops):
    expected = make_values("structured", (3,), 7)
    assert expected.dtype.names is not None
    seen = expected.view("V16").copy() if drops else expected.copy()
    monkeypatch.setattr(_exchange, "adapter", lambda name: _Consumer(seen))
    result = _exchange.judge_exchange("x", _encoding.InterfaceObject({}), expected, None, "c")
    assert result.outcome == PASS
    assert (result.seen == ["CAI-PORT-DESCR-FIELDS"]) is drops, result.message
    assert fields_dropped(seen, expected) is drops


# --- datetime units and an extent past 4 GiB in the roundtrip floor -------------------------


def test_roundtrip_floor_holds_datetime_units_for_every_cell_and_the_big_extent_for_reference():
    for producer in ("reference", "cupy"):
        typestrs = [e.params["typestr"] for e in roundtrip.floor(producer, "torch")]
        for typestr in roundtrip.UNIT_TYPESTRS:
            assert typestr in typestrs
    labels = {e.coverage["dtype"] for e in roundtrip.floor("cupy", "torch")}
    assert {"timedelta[ns]", "datetime[s]", "datetime[D]"} <= labels
    big = [
        e
        for e in roundtrip.floor("reference", "torch")
        if Layout.from_dict(e.params["layout"]).allocation_bytes(4) > 2**32
    ]
    assert len(big) == 1 and big[0].coverage["layout"] == "extent > 4 GiB"
    layout = Layout.from_dict(big[0].params["layout"])
    assert layout.extent(4)[1] > 2**32  # a byte offset 32 bits cannot hold
    assert not [
        e
        for e in roundtrip.floor("cupy", "torch")
        if Layout.from_dict(e.params["layout"]).allocation_bytes(4) > 2**32
    ]


def test_the_big_extent_is_skipped_before_anything_is_made_when_memory_is_short(monkeypatch):
    monkeypatch.setattr(roundtrip, "_room_for", lambda nbytes: f"{nbytes} bytes: no room")

    def refuse(*args: Any) -> Any:
        raise AssertionError("produced although memory was short")

    monkeypatch.setattr(_exchange, "produce", refuse)
    params = {"typestr": roundtrip.BIG_TYPESTR, "layout": roundtrip.BIG_LAYOUT.to_dict(), "seed": 0}
    result = roundtrip.execute(params, "reference", "torch")
    assert result.outcome == SKIP and "no room" in result.message


def test_datetime_units_are_values_of_their_own():
    values = make_values("<M8[s]", (3, 4), 0)
    assert values.dtype == np.dtype("<M8[s]")
    # the same bits read in ns are other values (a view: converting these seconds to ns
    # overflows, which numpy 2.5 raises as OverflowError where 2.4 wrapped around silently)
    mismatch = compare_values(values.view("<M8[ns]"), values)
    assert mismatch == "dtype <M8[ns], expected <M8[s]", mismatch


# --- RMM as a consumer ----------------------------------------------------------------------


def _fake_rmm(copy_fraction: float = 1.0) -> types.ModuleType:
    """A stand-in `rmm` whose DeviceBuffer lives in host memory and whose copy_from_device
    follows RMM's (rmm/pylibrmm/device_buffer.pyx): 1-d only, strides equal to the item size,
    `shape[0] * itemsize` bytes from the data pointer. `copy_fraction` < 1 copies fewer bytes:
    a library that breaks the exchange."""

    class DeviceBuffer:
        def __init__(self, size: int = 0) -> None:
            self.size = size
            self.host = np.zeros(size, dtype=np.uint8)

        def copy_from_device(self, cuda_ary: Any) -> None:
            desc = cuda_ary.__cuda_array_interface__
            shape, strides = desc["shape"], desc.get("strides")
            dtype = np.dtype(desc["typestr"])
            if len(shape) > 1:
                raise ValueError(f"Only 1-D contiguous arrays are supported, got {len(shape)}-D")
            if strides is not None and strides[0] != dtype.itemsize:
                raise ValueError("Only 1-D contiguous arrays are supported, got a non-contiguous")
            count = int(shape[0] * dtype.itemsize * copy_fraction)
            if count:
                ctypes.memmove(self.host.ctypes.data, desc["data"][0], count)

        def copy_to_host(self) -> np.ndarray:
            return self.host.copy()

    module = types.ModuleType("rmm")
    module.DeviceBuffer = DeviceBuffer  # type: ignore[attr-defined]
    return module


def _host_export(values: np.ndarray) -> _encoding.InterfaceObject:
    d = {
        "shape": values.shape,
        "typestr": values.dtype.str if values.dtype.names is None else f"|V{values.itemsize}",
        "data": (values.ctypes.data, False),
        "version": 3,
        "strides": None,
    }
    if values.dtype.names is not None:
        d["descr"] = values.dtype.descr
    return _encoding.InterfaceObject(d, keepalive=values)


def test_rmm_consumes_through_copy_from_device(monkeypatch):
    monkeypatch.setitem(sys.modules, "rmm", _fake_rmm())
    adapter = get("rmm")
    assert "consume" in adapter.capabilities
    values = make_values("<f8", (5,), 3)
    got = adapter.consume(_host_export(values))
    assert compare_values(got, values) is None
    structured = np.ascontiguousarray(make_values("structured", (4,), 3))
    read = adapter.consume(_host_export(structured))
    assert read.dtype.names == numpy_dtype("structured").names  # descr's fields kept
    with pytest.raises(ValueError, match="Only 1-D"):
        adapter.consume(_host_export(make_values("<f4", (2, 3), 0)))
    compile(adapter.repro_consume(), "repro.py", "exec")


def test_an_rmm_that_copies_too_little_fails_the_exchange(monkeypatch):
    monkeypatch.setitem(sys.modules, "rmm", _fake_rmm(copy_fraction=0.5))
    values = make_values("<i4", (8,), 5) | 1  # no zero, so a missing half shows
    result = _exchange.judge_exchange("rmm", _host_export(values), values, None, "c")
    assert (result.outcome, result.rule) == (FAIL, "CAI-CONSUMER-READS-DESCRIBED")
