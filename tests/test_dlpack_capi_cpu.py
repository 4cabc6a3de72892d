"""DLPack's C exchange API on a machine without a GPU: the reference producer's table
(`reference.dlpack_capi.exchange_table`) on a host array type, called through the family's ctypes
caller (`checks._capi_calls`) and judged by `checks.dlpack_capi`; tables that break dlpack.h's
text each failing on the rule they break; and, where cuda.core is installed, its
StridedMemoryView's own table over host memory, a real library's, judged the same way."""

from __future__ import annotations

import ctypes
import gc

import numpy as np
import pytest

from caiconform.checks import _capi_calls, dlpack_capi
from caiconform.dlpack import header
from caiconform.dlpack.capsule import read_managed
from caiconform.dlpack.exchange_api import read_exchange_api
from caiconform.reference.dlpack_capi import exchange_table
from caiconform.spec.layout import Layout
from caiconform.spec.protocols import DLPACK_C

VALUES = np.arange(12, dtype=np.float32).reshape(3, 4) * 1.5


class HostArray:
    """A numpy array behind `__dlpack__` alone, its type carrying the reference table."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self.values.__dlpack__(stream=stream, max_version=max_version)

    def __dlpack_device__(self):
        return self.values.__dlpack_device__()


def _host_array_of(address: int) -> HostArray:
    """The table's to_py_object: a HostArray over the owning tensor's elements (copied), the
    tensor released."""
    tensor = read_managed(address)
    from caiconform.dlpack.elements import element_type, read_host

    values = read_host(tensor, element_type(tensor))
    _capi_calls.release(address)
    return HostArray(values)


HostArray.__dlpack_c_exchange_api__ = exchange_table(_host_array_of)


def _run(obj, values=VALUES, typestr="<f4"):
    table = read_exchange_api(obj)
    assert dlpack_capi.judge_table(table, "ctx") is None
    return dlpack_capi._exchange(table, obj, values, typestr, Layout(values.shape), "none", "ctx")


def test_the_reference_table_reads_on_the_type_and_keeps_dlpack_h_s_text() -> None:
    table = read_exchange_api(HostArray(VALUES))
    assert table.version == header.HEADER_VERSION == (1, 3) and table.prev == ()
    assert table.dltensor_from_py_object_no_sync == 0  # the MAY: not offered
    assert all(table.entries[name] for name in dlpack_capi.REQUIRED)
    assert read_exchange_api(HostArray).address == table.address


def test_the_reference_table_passes_the_family() -> None:
    result = _run(HostArray(VALUES))
    assert result.outcome == "pass", result.message
    assert "DLPACK-CAPI-DLTENSOR-OPTIONAL" in result.message
    assert "allocator refused: NotImplementedError" in result.message


def test_from_py_object_hands_over_the_same_tensor_and_to_py_object_takes_it_back() -> None:
    obj = HostArray(VALUES)
    entries = read_exchange_api(obj).entries
    made = _capi_calls.tensor_from_object(entries["managed_tensor_from_py_object_no_sync"], obj)
    assert made.succeeded and made.out
    tensor = read_managed(made.out)
    assert tensor.shape == (3, 4) and tensor.pointer == VALUES.ctypes.data
    back = _capi_calls.tensor_to_object(entries["managed_tensor_to_py_object_no_sync"], made.out)
    assert back.succeeded and isinstance(back.out, HostArray)
    assert np.array_equal(back.out.values, VALUES)
    stream = _capi_calls.work_stream(entries["current_work_stream"], (1, 0))
    assert stream.succeeded and stream.out == 0


def test_a_refusal_without_an_exception_set_breaks_the_return_rule() -> None:
    """A ctypes callback cannot leave a Python exception for its C caller: the reference
    table's refusal is -1 alone, which the family holds to the header's convention."""

    class Refusing(HostArray):
        def __dlpack__(self, **kwargs):
            raise BufferError("no capsule for you")

    obj = Refusing(VALUES)
    entries = read_exchange_api(obj).entries
    made = _capi_calls.tensor_from_object(entries["managed_tensor_from_py_object_no_sync"], obj)
    assert (made.rc, made.error, made.out) == (-1, None, 0)
    result = _run(obj)
    assert (result.outcome, result.rule) == ("fail", "DLPACK-CAPI-RETURN"), result.message


def test_the_family_draws_only_arrays_dlpack_describes() -> None:
    from hypothesis import given, settings

    from caiconform.checks import _dlpack_calls

    @settings(max_examples=60, deadline=None, database=None)
    @given(dlpack_capi.examples("reference", None))
    def drawn(params):
        layout = Layout.from_dict(params["layout"])
        assert _dlpack_calls.undescribable(params["typestr"], layout) is None, params

    drawn()
    for example in dlpack_capi.floor("reference", None):
        layout = Layout.from_dict(example.params["layout"])
        assert _dlpack_calls.undescribable(example.params["typestr"], layout) is None


def test_a_tensor_of_other_values_is_the_producer_s_corruption() -> None:
    class Lying(HostArray):
        def __dlpack__(self, **kwargs):
            return (self.values + 1).__dlpack__(**kwargs)

    result = _run(Lying(VALUES))
    assert (result.outcome, result.rule) == ("fail", "DLPACK-CAPI-SAME-TENSOR"), result.message


def _table(version=(1, 3), null=(), prev=None) -> header.DLPackExchangeAPI:
    """A table copied from the reference one, with `version`, entries `null` and `prev`."""
    source = header.DLPackExchangeAPI.from_address(read_exchange_api(HostArray).address)
    table = header.DLPackExchangeAPI()
    ctypes.memmove(ctypes.addressof(table), ctypes.addressof(source), ctypes.sizeof(table))
    table.header.version.major, table.header.version.minor = version
    for name in null:
        setattr(table, name, ctypes.cast(None, dict(header.EXCHANGE_API_ENTRIES)[name]))
    if prev is not None:
        table.header.prev_api = ctypes.pointer(prev.header)
    return table


def _kind(table) -> type:
    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = (
        ctypes.py_object,
        [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p],
    )
    kind = type("Other", (HostArray,), {"table": table})
    kind.__dlpack_c_exchange_api__ = new(ctypes.addressof(table), header.EXCHANGE_API_NAME, None)
    return kind


@pytest.mark.parametrize(
    ("table", "rule"),
    [
        (lambda: _table((2, 0)), "DLPACK-CAPI-VERSION"),
        (lambda: _table((1, 3), prev=_table((1, 3))), "DLPACK-CAPI-PREV-CHAIN"),
        (lambda: _table(null=("current_work_stream",)), "DLPACK-CAPI-ENTRY-NON-NULL"),
    ],
    ids=["major-2", "prev-not-older", "null-work-stream"],
)
def test_a_table_breaking_the_header_fails_its_rule(table, rule) -> None:
    made = table()
    result = dlpack_capi.judge_table(read_exchange_api(_kind(made)), "ctx")
    assert result is not None and (result.outcome, result.rule) == ("fail", rule), result


def test_a_cycle_in_the_chain_fails_the_chain_rule() -> None:
    newest, older = _table((1, 3)), _table((1, 1))
    newest.header.prev_api = ctypes.pointer(older.header)
    older.header.prev_api = ctypes.pointer(newest.header)
    result = dlpack_capi.judge_table(read_exchange_api(_kind(newest)), "ctx")
    assert result.rule == "DLPACK-CAPI-PREV-CHAIN" and "points back" in result.message


def test_an_allocator_that_sets_no_error_when_it_fails_breaks_its_rule() -> None:
    silent = header.DLPackManagedTensorAllocator(lambda prototype, out, ctx, set_error: -1)
    table = _table()
    table.managed_tensor_allocator = silent
    kind = _kind(table)
    kind.keep = silent
    entry = read_exchange_api(kind).entries["managed_tensor_allocator"]
    result = dlpack_capi._judge_allocator(entry, (1, 0), "ctx", [])
    assert (result.outcome, result.rule) == ("fail", "DLPACK-CAPI-ALLOCATOR-SETERROR"), result
    assert "0 SetError call(s)" in result.message


def test_a_function_returning_minus_one_without_an_exception_breaks_the_return_rule() -> None:
    bare = header.DLPackManagedTensorFromPyObjectNoSync(lambda obj, out: -1)
    table = _table()
    table.managed_tensor_from_py_object_no_sync = bare
    kind = _kind(table)
    kind.keep = bare
    result = _run(kind(VALUES))
    assert (result.outcome, result.rule) == ("fail", "DLPACK-CAPI-RETURN"), result


def test_the_reference_array_type_carries_the_reference_table() -> None:
    from caiconform.reference.producer import ReferenceArray

    table = read_exchange_api(ReferenceArray)
    assert table.version == (1, 3) and dlpack_capi.judge_table(table, "ctx") is None
    from caiconform.reference.dlpack_capi import typestr_for

    assert (
        typestr_for((2, 32, 1), (2, 0)) == "<f4" and typestr_for((4, 16, 1), (2, 0)) == "bfloat16"
    )
    with pytest.raises(ValueError):
        typestr_for((2, 32, 1), (1, 0))


def test_the_protocol_s_producers_are_the_adapters_claiming_its_table() -> None:
    from caiconform.adapters import registry

    claiming = {n for n in registry.names() if "dlpack-c" in registry.get(n).capabilities}
    assert DLPACK_C.producer_needs == "dlpack-c"
    assert {"reference", "torch", "cuda.core"} <= claiming


def _strided_memory_view():
    pytest.importorskip("cuda.core", reason="cuda.core is not installed")
    from cuda.core.utils import StridedMemoryView

    if not hasattr(StridedMemoryView, "__dlpack_c_exchange_api__"):
        pytest.skip("this cuda.core has no C exchange API table")
    return StridedMemoryView


def test_cuda_core_s_own_table_over_host_memory_is_judged_by_the_family() -> None:
    """A real library's table (cuda.core's StridedMemoryView, read on the host): the family
    runs it end to end, whatever it finds, and what it finds names a DLPACK-CAPI rule."""
    view = _strided_memory_view().from_dlpack(VALUES, stream_ptr=-1)
    table = read_exchange_api(view)
    assert table.version[0] == 1 and all(table.entries.values())
    result = dlpack_capi._exchange(table, view, VALUES, "<f4", Layout((3, 4)), "none", "ctx")
    assert result.outcome == "pass" or (result.rule or "").startswith("DLPACK-CAPI-"), result
    other = _capi_calls.tensor_from_object(
        table.entries["managed_tensor_from_py_object_no_sync"], 7
    )
    assert other.rc is None and isinstance(other.error, TypeError), other  # -1, exception set
    del view
    gc.collect()
    assert read_exchange_api(_strided_memory_view()).address == table.address


def test_the_exchange_benchmark_times_both_paths_of_each_library_it_finds(capsys) -> None:
    import importlib.util
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_dlpack_capi.py"
    spec = importlib.util.spec_from_file_location("bench_dlpack_capi", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--rounds", "1", "--number", "20", "--json"]) == 0
    rows = {row["library"]: row for row in json.loads(capsys.readouterr().out)["rows"]}
    assert set(rows) == set(bench.LIBRARIES)
    reference = rows["reference (Python table)"]
    assert reference["dlpack_us"] > 0 and reference["table_us"] > 0 and reference["ratio"] > 0
    assert all("skipped" in row or row["table_version"][0] == 1 for row in rows.values())


@pytest.mark.parametrize(
    ("made", "outcome", "rule"),
    [
        (lambda: HostArray(VALUES), "pass", None),
        (lambda: Bare(VALUES), "skip", None),
        (lambda: OnInstance(VALUES), "fail", "DLPACK-CAPI-ON-TYPE"),
    ],
    ids=["reference-table", "no-table", "table-on-the-instance"],
)
def test_execute_judges_the_producer_s_object_end_to_end(monkeypatch, made, outcome, rule) -> None:
    """`execute` on the host (scenario "none" needs no GPU), the producer's object made here."""
    from caiconform.checks import _dlpack_calls

    monkeypatch.setattr(_dlpack_calls, "produce", lambda *args: made())
    params = {
        "scenario": "none",
        "typestr": "<f4",
        "seed": 0,
        "layout": Layout(VALUES.shape).to_dict(),
    }
    monkeypatch.setattr(dlpack_capi, "make_values", lambda *args: VALUES)
    result = dlpack_capi.execute(params, "mylib", None)
    assert (result.outcome, result.rule) == (outcome, rule), result.message


class Bare:
    """An array type of a release without the C exchange API."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values

    def __dlpack__(self, **kwargs):
        return self.values.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.values.__dlpack_device__()


class OnInstance(Bare):
    """The table set on the object alone, which dlpack.h forbids."""

    def __init__(self, values: np.ndarray) -> None:
        super().__init__(values)
        self.__dlpack_c_exchange_api__ = HostArray.__dlpack_c_exchange_api__
