"""`caiconform.dlpack`, DLPack's vocabulary in one home: the one device lookup and its callers,
the one element reader, the type-code table read both ways, the one producer-refused helper,
the scripts' structs against the home's, and the C exchange API reader on tables built here
with ctypes (no function in them is ever called).
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from caiconform.checks import _dlpack_calls, _dlpack_refusals
from caiconform.dlpack import header
from caiconform.dlpack.capsule import capi, read_capsule, stream_for
from caiconform.dlpack.devices import DeviceTupleError, dlpack_device
from caiconform.dlpack.dtypes import CODE_KINDS, CODE_NAMED, KIND_CODES, NAMED_CODES, typestr_of
from caiconform.dlpack.elements import UnreadableType, element_type, read_host
from caiconform.dlpack.exchange_api import (
    MAX_CHAIN,
    ExchangeAPI,
    ExchangeAPIError,
    read_exchange_api,
)
from caiconform.dlpack.validate import check_dlpack
from caiconform.reference import dlpack_export as dx
from caiconform.reference.consumer import ConsumerRefused
from caiconform.reference.dlpack_import import import_dlpack
from caiconform.reference.dlpack_read import read_elements
from caiconform.results.outcome import FAIL, PASS, REJECTED, Result
from caiconform.results.record import EXPECT_REJECTION

# --- the one device lookup --------------------------------------------------------------------


class _Device:
    """An object whose `__dlpack_device__` answers `answer` (or raises it, an exception)."""

    def __init__(self, answer):
        self.answer = answer

    def __dlpack_device__(self):
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


@pytest.mark.parametrize(
    ("answer", "exact", "lenient"),
    [
        ((1, 0), (1, 0), (1, 0)),
        ((2, 3), (2, 3), (2, 3)),
        ([2, 0], None, (2, 0)),  # a list: not the tuple the standard says, read all the same
        ((np.int32(2), np.int64(1)), None, (2, 1)),  # numpy integers are no ints
        ((True, 0), None, (1, 0)),  # a bool is no device type
        ((1, 0, 0), None, None),
        ((1,), None, None),
        ("cpu", None, None),
        (None, None, None),
        (("a", 0), None, None),
    ],
)
def test_the_device_lookup_reads_exactly_or_leniently(answer, exact, lenient) -> None:
    obj = _Device(answer)
    for strict, wanted in ((True, exact), (False, lenient)):
        if wanted is None:
            with pytest.raises(DeviceTupleError) as raised:
                dlpack_device(obj, exact=strict)
            assert raised.value.seen == f"{answer!r:.80}"
        else:
            assert dlpack_device(obj, exact=strict) == wanted


def test_what_dlpack_device_raises_propagates_and_a_long_answer_is_cut() -> None:
    with pytest.raises(KeyError):
        dlpack_device(_Device(KeyError("no device")))
    with pytest.raises(DeviceTupleError) as raised:
        dlpack_device(_Device(tuple(range(100))))
    assert len(raised.value.seen) == 80


def test_every_caller_of_the_device_lookup_keeps_its_own_judgement() -> None:
    # the validator: a list is a DLPACK-DEVICE-TUPLE finding, a raise too
    for answer in ([1, 0], RuntimeError("broken")):
        findings, _why = check_dlpack(_Exporting(answer))
        assert "DLPACK-DEVICE-TUPLE" in {f.rule for f in findings}
    # the reference consumer: reads a list, refuses a triple, lets a raise through
    with pytest.raises(ConsumerRefused) as refused:
        import_dlpack(_Exporting((1, 0, 0)))
    assert [f.rule for f in refused.value.findings] == ["DLPACK-DEVICE-TUPLE"]
    with pytest.raises(RuntimeError):
        import_dlpack(_Exporting(RuntimeError("broken")))
    assert np.array_equal(import_dlpack(_Exporting([1, 0])).values, np.arange(4.0))
    # the checks: any pair, None for anything else
    assert _dlpack_calls.device_of(_Device([1, 0])) == (1, 0)
    assert _dlpack_calls.device_of(_Device(RuntimeError("broken"))) is None
    assert _dlpack_calls.device_of(_Device((1, 0, 0))) is None
    # the no-sync stream: None on the host, -1 on CUDA or when the device cannot be told
    assert stream_for(_Device((1, 0))) is None
    assert stream_for(_Device((header.kDLCUDA, 0))) == header.NO_SYNC
    assert stream_for(_Device(RuntimeError("broken"))) == header.NO_SYNC


class _Exporting(_Device):
    """A host producer of four float64 whose `__dlpack_device__` answers `answer`."""

    def __init__(self, answer):
        super().__init__(answer)
        self.values = np.arange(4.0)

    def __dlpack__(self, stream=None, max_version=None, **_):
        if stream is not None:
            raise BufferError("host memory takes stream None")
        return dx.host_capsule(self.values, versioned=max_version is not None)[0]


# --- the type-code table, both ways ---------------------------------------------------------


def test_the_code_table_reads_both_ways() -> None:
    assert {CODE_KINDS[code]: code for code in CODE_KINDS} == KIND_CODES
    assert {CODE_NAMED[cb]: cb for cb in CODE_NAMED} == NAMED_CODES
    for name, (code, bits) in NAMED_CODES.items():
        assert dx.dl_dtype(np.dtype("V1"), name) == (code, bits, 1)
        assert typestr_of(_Type(code, bits)) == name
    for typestr in ("<i4", "<u8", "<f2", "<c16", "|b1", "|u1"):
        code, bits, lanes = dx.dl_dtype(np.dtype(typestr))
        assert typestr_of(_Type(code, bits, lanes)) == typestr
    assert typestr_of(_Type(2, 32, 4)) == "?" and typestr_of(_Type(17, 4)) == "?"


class _Type:
    def __init__(self, code, bits, lanes=1):
        self.code, self.bits, self.lanes = code, bits, lanes


# --- the one element reader -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "bits", "lanes", "wanted"),
    [(2, 32, 1, "<f4"), (6, 8, 1, "|b1"), (4, 16, 1, "|V2"), (10, 8, 1, "|V1"), (3, 64, 1, "|V8")],
)
def test_the_element_type_is_the_capsules_own_or_raw_bytes(code, bits, lanes, wanted) -> None:
    assert element_type(_Parsed(code, bits, lanes)).str == wanted


@pytest.mark.parametrize(("code", "bits", "lanes"), [(2, 32, 4), (15, 6, 1), (17, 4, 1)])
def test_vector_and_sub_byte_types_have_no_element_type(code, bits, lanes) -> None:
    """Legal types the reader does not hold: a portability refusal, not the producer's fault."""
    with pytest.raises(UnreadableType) as raised:
        element_type(_Parsed(code, bits, lanes))
    assert raised.value.rule == "DLPACK-PORT-DTYPE"


def _Parsed(code, bits, lanes):
    capsule, export = dx.make_capsule(0, (0,), (code, bits, lanes), (1, 0))
    parsed = read_capsule(capsule)
    del capsule
    return parsed


@pytest.mark.parametrize(
    "array",
    [
        np.arange(12, dtype="<i4").reshape(3, 4),
        np.arange(24, dtype="<f8").reshape(4, 6)[::-1, 1::2],
        np.arange(6, dtype="<u2")[::-2],
        np.zeros((0, 3), dtype="<f4"),
        np.array(7.5),
    ],
)
def test_host_memory_is_read_as_it_is_described(array) -> None:
    capsule, _export = dx.host_capsule(array)
    parsed = read_capsule(capsule)
    for got in (
        read_host(parsed, array.dtype),
        read_elements(parsed, array.dtype),
        _dlpack_calls.read(parsed, array.dtype.str),
    ):
        assert got.shape == array.shape and np.array_equal(got, array)
        assert got.flags.owndata or got.base is not None  # a copy, not a view of the tensor
    imported = import_dlpack(_Exporting((1, 0)))  # the reference consumer reads the same way
    assert np.array_equal(imported.values, np.arange(4.0))


def test_no_reader_for_a_device_neither_host_nor_cuda() -> None:
    capsule, _export = dx.make_capsule(8, (2,), (2, 32, 1), (header.kDLVulkan, 0))
    with pytest.raises(ValueError, match="no reader for device type 7"):
        read_elements(read_capsule(capsule), np.dtype("<f4"))


# --- the one producer-refused helper --------------------------------------------------------


def test_a_family_s_own_call_refused_with_buffererror_is_the_producers() -> None:
    refused = _dlpack_refusals.producer_refused(BufferError("no"), "lib", "ctx")
    assert (refused.outcome, refused.rule) == (REJECTED, "DLPACK-EXPORT-BUFFERERROR")
    assert refused.culprit["library"] == "lib"
    assert "what the consumer asked" in refused.culprit["why"]
    unnamed = _dlpack_refusals.producer_refused(BufferError("no"), None, "ctx")
    assert unnamed.outcome == REJECTED and not unnamed.culprit


def test_a_family_s_own_call_refused_otherwise_breaks_export_buffererror() -> None:
    failed = _dlpack_refusals.producer_refused(ValueError("no"), "lib", "ctx")
    assert (failed.outcome, failed.rule) == (FAIL, "DLPACK-EXPORT-BUFFERERROR")
    assert not failed.culprit


@pytest.mark.parametrize(
    ("request_", "rule"),
    [
        ({"stream": 5}, "DLPACK-STREAM-OPTIONAL"),
        ({"max_version": (1, 1)}, "DLPACK-EXPORT-BUFFERERROR"),
    ],
)
def test_a_consumer_s_request_refused_is_rejected_and_the_producers(request_, rule) -> None:
    refused = _dlpack_refusals.producer_refused(ValueError("no"), "lib", "ctx", request=request_)
    assert (refused.outcome, refused.rule) == (REJECTED, rule)
    assert refused.seen == f"__dlpack__({request_}) raised ValueError: no"
    assert refused.culprit == {
        "library": "lib",
        "role": "producer",
        "why": "the producer's __dlpack__ refused the consumer's request",
    }


def test_a_verdict_is_named_the_producers_only_for_a_refusal_of_valid_input() -> None:
    def named(outcome, expected="a capsule"):
        result = Result(outcome, "DLPACK-COPY-TRUE", "m", "s", expected)
        return _dlpack_refusals.producer_refused(result, "lib").culprit

    assert named(REJECTED)["library"] == "lib"
    assert not named(REJECTED, EXPECT_REJECTION)
    assert not named(PASS) and not named(FAIL)


# --- the scripts' structs are the home's ----------------------------------------------------


def test_the_scripts_inline_structs_are_the_homes() -> None:
    from caiconform.report.standalone._dlpack_helpers import HELPERS, flat_fields

    space: dict = {"ctypes": ctypes}
    exec(HELPERS["dlpack_structs"], space)
    for home in (header.DLTensor, header.DLManagedTensor, header.DLManagedTensorVersioned):
        script = space[home.__name__]
        assert [(n, t) for n, t in script._fields_] == [
            (n, space.get(t.__name__, t)) if t is header.DLTensor else (n, t)
            for n, t in flat_fields(home)
        ]
        assert ctypes.sizeof(script) == ctypes.sizeof(home)
        assert [_offsets(home)[n] for n, _ in script._fields_] == [
            getattr(script, n).offset for n, _ in script._fields_
        ]
    assert space["STRUCTS"].keys() == {header.VERSIONED, header.LEGACY}


def test_the_agreement_scripts_structs_have_the_homes_layout() -> None:
    """report/standalone/agreement.py writes its own compact structs (device and dtype as
    arrays): each field lies where the home's does."""
    from caiconform.report.standalone import agreement

    space: dict = {}
    exec(agreement._DLPACK.split("\ndef ")[0], space)
    pairs = {
        "DLTensor": (header.DLTensor, ["data", "device", "ndim", "dtype", "shape", "strides"]),
        "Versioned": (
            header.DLManagedTensorVersioned,
            ["version", "manager_ctx", "deleter", "flags", "dl_tensor"],
        ),
        "Unversioned": (header.DLManagedTensor, ["dl_tensor", "manager_ctx", "deleter"]),
    }
    for name, (home, fields) in pairs.items():
        script = space[name]
        assert ctypes.sizeof(script) == ctypes.sizeof(home)
        got = [getattr(script, n).offset for n, _ in script._fields_][: len(fields)]
        assert got == [getattr(home, n).offset for n in fields], name


def _offsets(struct, base=0) -> dict[str, int]:
    """Every leaf field of `struct` by name, at its offset from the outermost struct's start."""
    out: dict[str, int] = {}
    for name, kind in struct._fields_:
        offset = base + getattr(struct, name).offset
        if kind in (header.DLDevice, header.DLDataType, header.DLPackVersion):
            out.update(_offsets(kind, offset))
        else:
            out[name] = offset
    return out


# --- the C exchange API reader --------------------------------------------------------------

_new = capi("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
#: never called: C function pointers of each entry's type, for the table to hold
_ENTRIES = {name: proto(lambda *args: 0) for name, proto in header.EXCHANGE_API_ENTRIES}
_WRONG_NAME = b"dltensor"


def _table(version=(1, 3), null=()) -> header.DLPackExchangeAPI:
    table = header.DLPackExchangeAPI()
    table.header.version.major, table.header.version.minor = version
    for name, function in _ENTRIES.items():
        if name not in null:
            setattr(table, name, function)
    return table


def _address(function) -> int:
    return ctypes.cast(function, ctypes.c_void_p).value


def _exposing(table, name: bytes = header.EXCHANGE_API_NAME) -> type:
    """A class whose `__dlpack_c_exchange_api__` is a capsule over `table` named `name`."""
    kind = type("Exposing", (), {})
    kind.__dlpack_c_exchange_api__ = _new(ctypes.addressof(table), name, None)
    kind.table = table  # alive as long as the class
    return kind


def test_a_table_is_read_on_the_type_with_null_entries_as_zero() -> None:
    table = _table(null=("dltensor_from_py_object_no_sync",))
    kind = _exposing(table)
    for given in (kind, kind()):
        api = read_exchange_api(given)
        assert isinstance(api, ExchangeAPI)
        assert api.address == ctypes.addressof(table) and api.version == (1, 3)
        assert api.dltensor_from_py_object_no_sync == 0
        assert api.entries == {
            name: 0 if name == "dltensor_from_py_object_no_sync" else _address(function)
            for name, function in _ENTRIES.items()
        }
        assert list(api.entries) == [name for name, _ in header.EXCHANGE_API_ENTRIES]
        assert api.prev == ()
    with pytest.raises(AttributeError):
        api.version = (2, 0)  # frozen


def test_the_prev_api_chain_is_walked_in_order() -> None:
    newest, older, oldest = _table((2, 0)), _table((1, 3)), _table((1, 1))
    newest.header.prev_api = ctypes.pointer(older.header)
    older.header.prev_api = ctypes.pointer(oldest.header)
    api = read_exchange_api(_exposing(newest))
    assert api.version == (2, 0)
    assert api.prev == (
        (ctypes.addressof(older), (1, 3)),
        (ctypes.addressof(oldest), (1, 1)),
    )


def test_a_cycle_in_the_chain_stops_at_the_repeat_and_a_long_chain_at_max_chain() -> None:
    newest, older = _table((2, 0)), _table((1, 3))
    newest.header.prev_api = ctypes.pointer(older.header)
    older.header.prev_api = ctypes.pointer(newest.header)
    cycle = read_exchange_api(_exposing(newest))
    assert cycle.prev == ((ctypes.addressof(older), (1, 3)),)
    assert cycle.prev_cut == f"prev_api {ctypes.addressof(newest):#x} points back into the chain"
    itself = _table()
    itself.header.prev_api = ctypes.pointer(itself.header)
    assert read_exchange_api(_exposing(itself)).prev == ()
    assert "points back" in read_exchange_api(_exposing(itself)).prev_cut
    chain = [_table((1, i)) for i in range(MAX_CHAIN + 5)]
    for newer, older in zip(chain, chain[1:], strict=False):
        newer.header.prev_api = ctypes.pointer(older.header)
    walked = read_exchange_api(_exposing(chain[0]))
    assert (
        walked.prev
        == tuple((ctypes.addressof(t), (1, i)) for i, t in enumerate(chain) if i)[:MAX_CHAIN]
    )
    assert walked.prev_cut == f"longer than {MAX_CHAIN} tables"
    assert read_exchange_api(_exposing(chain[-2])).prev_cut == ""


def test_what_is_no_readable_table_raises_with_its_reason() -> None:
    table = _table()
    with pytest.raises(ExchangeAPIError, match="named 'dltensor', expected 'dlpack_exchange_api'"):
        read_exchange_api(_exposing(table, _WRONG_NAME))
    with pytest.raises(ExchangeAPIError, match="is a int, not a PyCapsule"):
        read_exchange_api(type("Number", (), {"__dlpack_c_exchange_api__": 5}))
    with pytest.raises(ExchangeAPIError, match="has no __dlpack_c_exchange_api__ on the type$"):
        read_exchange_api(np.arange(3))
    on_instance = type("Instance", (), {})()
    on_instance.__dlpack_c_exchange_api__ = _exposing(table).__dlpack_c_exchange_api__
    with pytest.raises(ExchangeAPIError, match="set on the instance only"):
        read_exchange_api(on_instance)
    assert issubclass(ExchangeAPIError, ValueError)
    for message in _messages(table):
        assert "\n" not in message


def _messages(table) -> list[str]:
    out = []
    for given in (_exposing(table, _WRONG_NAME), object(), type("N", (), {"x": 1})):
        try:
            read_exchange_api(given)
        except ExchangeAPIError as exc:
            out.append(str(exc))
    return out


def test_the_exchange_api_vocabulary_is_dlpack_h_s() -> None:
    assert header.EXCHANGE_API_ATTRIBUTE == "__dlpack_c_exchange_api__"
    assert [name for name, _ in header.DLPackExchangeAPI._fields_] == [
        "header",
        "managed_tensor_allocator",
        "managed_tensor_from_py_object_no_sync",
        "managed_tensor_to_py_object_no_sync",
        "dltensor_from_py_object_no_sync",
        "current_work_stream",
    ]
    assert [name for name, _ in header.DLPackExchangeAPIHeader._fields_] == ["version", "prev_api"]
    pointer = ctypes.sizeof(ctypes.c_void_p)
    assert ctypes.sizeof(header.DLPackExchangeAPIHeader) == 8 + pointer
    assert ctypes.sizeof(header.DLPackExchangeAPI) == 8 + 6 * pointer
    stream = header.DLPackCurrentWorkStream
    assert stream._restype_ is ctypes.c_int
    assert stream._argtypes_[:2] == (ctypes.c_int32, ctypes.c_int32)
    allocator = header.DLPackManagedTensorAllocator._argtypes_
    assert allocator[0]._type_ is header.DLTensor and allocator[3] is header.SetError
