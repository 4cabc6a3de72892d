"""dlpack_capi: does a producer's DLPack C exchange API table keep the promises of dlpack.h 1.3?

DLPack 1.3 lets a type carry a C function table, `__dlpack_c_exchange_api__`
(docs/spec/dlpack/dlpack_h_exchange_api.md), so that a consumer written in C exchanges a tensor
in tens of nanoseconds instead of a `__dlpack__` call's microsecond. The family is the
protocol `dlpack-c` (`caiconform.spec.protocols.DLPACK_C`); its producers are the libraries
whose objects' type carries the table (the adapters' "dlpack-c" capability: torch, cuda.core's
StridedMemoryView, the reference producer). One example is one array, laid out as drawn,
maybe with its final write pending on the library's current stream; what is judged, first
failure first:

- the table: on the type, a capsule named "dlpack_exchange_api" [DLPACK-CAPI-ON-TYPE]; its
  header of major version 1 [DLPACK-CAPI-VERSION], its `prev_api` chain older at each step and
  ending [DLPACK-CAPI-PREV-CHAIN], its required entries not NULL [DLPACK-CAPI-ENTRY-NON-NULL]
  (dltensor_from_py_object_no_sync may be [DLPACK-CAPI-DLTENSOR-OPTIONAL]);
- `managed_tensor_from_py_object_no_sync`: 0 and a tensor, or -1 with an exception
  [DLPACK-CAPI-RETURN] (a BufferError for an array DLPack cannot describe is right; any other
  refusal of a valid array is `rejected`); it must not wait for the pending write: the stream
  the table names as current is still busy after the call when it was busy before
  [DLPACK-CAPI-NO-SYNC];
- the tensor's elements, read on the stream `current_work_stream` names (as the header tells a
  consumer to do), are the array's values [DLPACK-CAPI-SAME-TENSOR]; read right there but
  stale, the work stream was not the library's current one [DLPACK-CAPI-WORK-STREAM]; the
  non-owning `dltensor_from_py_object_no_sync`, where offered, describes the same elements;
- `managed_tensor_to_py_object_no_sync` turns the tensor back into an object of the
  producer's type with the same elements [DLPACK-CAPI-TO-PY-OBJECT];
- the allocator gives a tensor of the prototype's shape, dtype and device, or fails having
  called SetError, and calls it on no other occasion [DLPACK-CAPI-ALLOCATOR-SETERROR];
- the table read again from the type, after the array is gone, is the same table
  [DLPACK-CAPI-ALIVE].

Every tensor the table hands out is released through its own deleter exactly once here (one
that `managed_tensor_to_py_object_no_sync` took is the new object's). Outcomes: `pass` (what
was noted in its message), `fail` naming the first broken rule, `rejected` for a refusal of a
describable array, `skip` for a producer whose objects have no table (said once per cell).
"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
from hypothesis import strategies as st

from caiconform.checks import (
    _capi_calls,
    _dlpack_calls,
    _dlpack_refusals,
    _results,
    _sources,
    _values,
)
from caiconform.dlpack.capsule import read_managed
from caiconform.dlpack.header import kDLCPU
from caiconform.results.outcome import PASS, Result
from caiconform.spec.layout import Layout
from caiconform.spec.values import compare_values, make_values, values_source

__all__ = [
    "FAMILY",
    "ROLES",
    "NEEDS_GPU",
    "crash_kind",
    "examples",
    "floor",
    "judge_table",
    "execute",
    "repro",
]

FAMILY = "dlpack_capi"
ROLES = "producer"
NEEDS_GPU = True
#: SINGLE_QUEUE stays False: with one hardware queue every stream runs in issue order, and a
#: read on a work stream other than the pending write's would see the final values all the same
#: the prototype the allocator is asked for: float32 (code 2, 32 bits, 1 lane), shape (4,)
ALLOCATION = ((4,), (2, 32, 1))
#: the entries a table must not leave NULL, in the header's order
REQUIRED = (
    "managed_tensor_allocator",
    "managed_tensor_from_py_object_no_sync",
    "managed_tensor_to_py_object_no_sync",
    "current_work_stream",
)


def _scenarios(producer: str | None) -> tuple[str, ...]:
    """Scenario "none", then the producer's pending scenarios played on a stream of its own
    (`_dlpack_calls.pending_scenarios`, those of `LIBRARY_STREAM_SCENARIOS`): the table's
    `current_work_stream` names the library's current stream, so only work queued there is
    what a consumer of the table must find finished (the reference producer's pending work is on
    streams of its own, ordered by its `__dlpack__`'s events, and its table names no stream)."""
    from caiconform.spec.scenarios import LIBRARY_STREAM_SCENARIOS

    pending = _dlpack_calls.pending_scenarios(producer)
    return ("none", *(s for s in pending if s in LIBRARY_STREAM_SCENARIOS))


def crash_kind(params: dict) -> str:
    """What the runner's crash cap counts a drawn example by: its scenario and layout kind."""
    return f"{params['scenario']} layout {params['layout'].get('kind')}"


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    """scenario, typestr, a layout and a seed; shrinks toward no pending work, '|b1' in a C
    layout."""
    from caiconform import strategies as cst
    from caiconform.spec.dtypes import numpy_dtype

    def params(typestr: str) -> st.SearchStrategy[dict]:
        return _describable(
            st.fixed_dictionaries(
                {
                    "scenario": st.sampled_from(_scenarios(producer)),
                    "typestr": st.just(typestr),
                    "layout": cst.layouts(itemsize=numpy_dtype(typestr).itemsize).map(
                        Layout.to_dict
                    ),
                    "seed": _values.seeds(),
                }
            )
        )

    return cst.typestrs().filter(lambda t: _dlpack_calls.undescribable(t) is None).flatmap(params)


def _describable(params: st.SearchStrategy[dict]) -> st.SearchStrategy[dict]:
    """Only arrays DLPack can describe: what a producer must refuse (BufferError) is the
    `__dlpack__` families' to judge, and a table's refusal is no more than theirs."""
    return params.filter(
        lambda p: _dlpack_calls.undescribable(p["typestr"], Layout.from_dict(p["layout"])) is None
    )


def floor(producer: str | None, consumer: str | None) -> list:
    """Every scenario on a '<f4' C array; every dtype class DLPack describes and every floor
    layout kind DLPack describes, without pending work."""
    from caiconform.checks import _floor

    out = []
    c_layout = _floor.floor_layout("C", 4).to_dict()
    for scenario in _scenarios(producer):
        out.append(
            _floor.FloorExample(
                _floor.coverage_of("<f4", "C", scenario),
                {"scenario": scenario, "typestr": "<f4", "layout": c_layout, "seed": 0},
            )
        )
    for typestr in _floor.PLAIN_TYPESTRS:
        layout = _floor.floor_layout("C", 1).to_dict()
        if _dlpack_calls.undescribable(typestr) is not None:
            continue
        out.append(
            _floor.FloorExample(
                _floor.coverage_of(typestr, "C"),
                {"scenario": "none", "typestr": typestr, "layout": layout, "seed": 0},
            )
        )
    for kind in _floor.FLOOR_LAYOUTS:
        layout = _floor.floor_layout(kind, 4)
        if layout is None or kind == "C" or _dlpack_calls.undescribable("<f4", layout):
            continue
        out.append(
            _floor.FloorExample(
                _floor.coverage_of("<f4", kind),
                {"scenario": "none", "typestr": "<f4", "layout": layout.to_dict(), "seed": 0},
            )
        )
    return out


def judge_table(table: Any, context: str) -> Result | None:
    """The verdict on the table's header and entries; None when they keep dlpack.h's text."""
    major, minor = table.version
    if major != 1:
        return _results.failed(
            "DLPACK-CAPI-VERSION",
            f"header version {major}.{minor}",
            "major version 1, the layout dlpack.h 1.x defines",
            context,
        )
    older = table.version
    for address, version in table.prev:
        if version >= older:
            return _results.failed(
                "DLPACK-CAPI-PREV-CHAIN",
                f"prev_api {address:#x} of version {version[0]}.{version[1]} after "
                f"{older[0]}.{older[1]}",
                "each older table of an older version",
                context,
            )
        older = version
    if table.prev_cut:
        return _results.failed(
            "DLPACK-CAPI-PREV-CHAIN",
            f"a prev_api chain that does not end ({table.prev_cut})",
            "a chain ending in NULL",
            context,
        )
    missing = [name for name in REQUIRED if not table.entries[name]]
    if missing:
        return _results.failed(
            "DLPACK-CAPI-ENTRY-NON-NULL",
            f"NULL {', '.join(missing)}",
            "every entry but dltensor_from_py_object_no_sync set",
            context,
        )
    return None


def _refusal(call: _capi_calls.Call, what: str, context: str, why_not: str | None) -> Result:
    """The verdict on a table function that did not succeed: one that returned without an
    exception set and not 0 breaks the return convention; one that left an exception set
    (`Call.error`: ctypes raises it, its return code unseen) refused, rightly for an array
    DLPack cannot describe when it is a BufferError."""
    if call.error is None:
        return _results.failed(
            "DLPACK-CAPI-RETURN",
            f"{what} returned {call.rc} with no exception set",
            "0, or -1 with a Python exception set",
            context,
        )
    if isinstance(call.error, BufferError) and why_not:
        return _results.passed(f"{context}: {what} refused with BufferError, as {why_not}")
    return _results.rejected(
        "DLPACK-CAPI-SAME-TENSOR", call.error, f"a tensor from {what}", context
    )


def _read(capsule: Any, typestr: str, stream: int | None, context: str, rule: str):
    """(the elements `capsule` describes read after `stream`, None) or (None, a failure)."""
    try:
        return _dlpack_calls.read(capsule, typestr, stream), None
    except Exception as exc:  # noqa: BLE001 - a description that cannot be read
        return None, _results.failed(
            rule,
            f"unreadable ({_results.describe_exception(exc)})",
            "a tensor describing readable memory",
            context,
        )


def _judge_values(read: np.ndarray, values: np.ndarray, waited: bool, context: str):
    """The failure a read of the table's tensor shows, or None: stale values read on the work
    stream are the work stream's fault; other wrong values the tensor's."""
    wrong = compare_values(read, values)
    if wrong is None:
        return None
    from caiconform.checks.streams import sentinel_count

    early = sentinel_count(read, values) if waited else 0
    if early:
        return _results.failed(
            "DLPACK-CAPI-WORK-STREAM",
            f"{early} of {values.size} elements read on the stream current_work_stream named "
            "before the producer's pending write (sentinel)",
            "the library's current stream, on which its pending write is queued",
            context,
        )
    return _results.failed("DLPACK-CAPI-SAME-TENSOR", wrong, "the values the array holds", context)


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    """One example (the module docstring); a refusal is laid on the producer."""
    return _dlpack_refusals.producer_refused(_execute(params, producer), producer)


def _execute(params: dict, producer: str | None) -> Result:
    from caiconform.checks import streams
    from caiconform.dlpack.exchange_api import ExchangeAPIError, read_exchange_api

    layout = Layout.from_dict(params["layout"])
    typestr, scenario = params["typestr"], params["scenario"]
    values = make_values(typestr, layout.shape, params["seed"], layout.strides)
    context = f"{producer} {scenario} {typestr} {layout.kind} {layout.shape}"
    if scenario != "none":
        streams._warm_up("reference", typestr)
    streams._free_garbage()
    try:
        obj = _dlpack_calls.produce(producer, values, layout, typestr, scenario)
        target, enter = _dlpack_calls._target(obj)
        try:
            table = read_exchange_api(target)
        except ExchangeAPIError as exc:
            if not _offers_a_table(target):  # this release has none: nothing to judge
                return _results.skipped(f"{context}: {exc}")
            return _results.failed("DLPACK-CAPI-ON-TYPE", str(exc), "the table", context)
        broken = judge_table(table, context)
        if broken is not None:
            return broken
        with enter():
            result = _exchange(table, target, values, typestr, layout, scenario, context)
        if result.outcome != PASS:
            return result
        kind, address = type(target), table.address
        del obj, target
        gc.collect()
        again = read_exchange_api(kind).address
        if again != address:
            return _results.failed(
                "DLPACK-CAPI-ALIVE",
                f"the table at {again:#x} after the array was collected",
                f"the table at {address:#x}, alive for the life of the process",
                context,
            )
        return result
    finally:
        if scenario != "none":
            streams._finish()


def _offers_a_table(obj: Any) -> bool:
    """Whether `obj` has `__dlpack_c_exchange_api__` anywhere, its type or itself (one that is
    only on the object, or not a table, is offered wrongly; none at all, not offered)."""
    from caiconform.dlpack.header import EXCHANGE_API_ATTRIBUTE

    try:
        return hasattr(obj, EXCHANGE_API_ATTRIBUTE)
    except Exception:  # noqa: BLE001 - a lookup that raises: offered, and broken
        return True


def _exchange(
    table: Any,
    obj: Any,
    values: np.ndarray,
    typestr: str,
    layout: Layout,
    scenario: str,
    context: str,
) -> Result:
    """The calls of one example, inside the library's current-stream block."""
    from caiconform.cuda.streams import stream_query

    device = _dlpack_calls.device_of(obj)
    host = device is None or device[0] == kDLCPU
    why_not = _dlpack_calls.undescribable(typestr, layout)
    entries = table.entries
    stream = handle = None
    busy_before = False
    if not host:
        named = _capi_calls.work_stream(entries["current_work_stream"], device)
        if not named.succeeded:
            return _refusal(named, "current_work_stream", context, None)
        handle = named.out  # 0: NULL, the legacy default stream
        stream = handle or None  # what the reads are ordered after (None: the legacy stream)
        busy_before = scenario != "none" and not stream_query(handle)
    made = _capi_calls.tensor_from_object(entries["managed_tensor_from_py_object_no_sync"], obj)
    if not made.succeeded or not made.out:
        if made.succeeded:
            return _results.failed(
                "DLPACK-CAPI-RETURN",
                "managed_tensor_from_py_object_no_sync returned 0 and a NULL tensor",
                "a tensor with 0",
                context,
            )
        return _refusal(made, "managed_tensor_from_py_object_no_sync", context, why_not)
    notes = []
    handed_over = False
    try:
        if busy_before and stream_query(handle):
            return _results.failed(
                "DLPACK-CAPI-NO-SYNC",
                "the work stream, busy with the pending write before the call, idle after it",
                "managed_tensor_from_py_object_no_sync returning without waiting",
                context,
            )
        tensor = read_managed(made.out)
        read, failure = _read(tensor, typestr, stream, context, "DLPACK-CAPI-SAME-TENSOR")
        if failure is not None:
            return failure
        failure = _judge_values(read, values, scenario != "none", context)
        if failure is not None:
            return failure
        failure = _borrowed(entries, obj, table.version, values, typestr, stream, context, notes)
        if failure is not None:
            return failure
        back = _capi_calls.tensor_to_object(
            entries["managed_tensor_to_py_object_no_sync"], made.out
        )
        handed_over = back.rc == 0
        failure = _judge_object(back, obj, values, typestr, context)
        if failure is not None:
            return failure
    finally:
        if not handed_over:
            _capi_calls.release(made.out)
    failure = _judge_allocator(entries["managed_tensor_allocator"], device, context, notes)
    if failure is not None:
        return failure
    said = f"{context}: table {table.version[0]}.{table.version[1]}, values read"
    return Result(PASS, message="; ".join([said, *notes]))


def _borrowed(entries, obj, version, values, typestr, stream, context, notes) -> Result | None:
    """The non-owning export, where the table offers one: the same elements."""
    if not entries["dltensor_from_py_object_no_sync"]:
        notes.append("no dltensor_from_py_object_no_sync [DLPACK-CAPI-DLTENSOR-OPTIONAL]")
        return None
    lent = _capi_calls.dltensor_from_object(entries["dltensor_from_py_object_no_sync"], obj)
    if not lent.succeeded:
        return _refusal(lent, "dltensor_from_py_object_no_sync", context, None)
    read, failure = _read(
        _capi_calls.read_dltensor(lent.out, version),
        typestr,
        stream,
        context,
        "DLPACK-CAPI-SAME-TENSOR",
    )
    if failure is not None:
        return failure
    wrong = compare_values(read, values)
    if wrong is not None:
        return _results.failed(
            "DLPACK-CAPI-SAME-TENSOR",
            f"dltensor_from_py_object_no_sync: {wrong}",
            "the values the array holds",
            context,
        )
    return None


def _judge_object(back: Any, obj: Any, values, typestr: str, context: str) -> Result | None:
    """`managed_tensor_to_py_object_no_sync`'s object: the producer's type, the same values."""
    if not back.succeeded or back.out is None:
        return _results.failed(
            "DLPACK-CAPI-TO-PY-OBJECT",
            f"rc {back.rc}"
            + (f", {_results.describe_exception(back.error)}" if back.error else "")
            + ("" if back.out is not None else ", no object"),
            "an object of the producer's type",
            context,
        )
    if not isinstance(back.out, type(obj)):
        return _results.failed(
            "DLPACK-CAPI-TO-PY-OBJECT",
            f"a {type(back.out).__module__}.{type(back.out).__qualname__}",
            f"a {type(obj).__module__}.{type(obj).__qualname__}, the producer's own type",
            context,
        )
    answer = _dlpack_calls.ask(back.out, max_version=(1, 3))
    if answer.capsule is None:
        return None  # its __dlpack__ is the other families' to judge
    read, failure = _read(answer.capsule, typestr, None, context, "DLPACK-CAPI-TO-PY-OBJECT")
    if failure is not None:
        return failure
    wrong = compare_values(read, values)
    if wrong is not None:
        return _results.failed(
            "DLPACK-CAPI-TO-PY-OBJECT", wrong, "the elements the tensor described", context
        )
    return None


def _judge_allocator(entry: int, device, context: str, notes: list) -> Result | None:
    """The allocator on the array's device: a tensor of the prototype, or NULL after exactly
    one SetError; SetError on no other occasion."""
    shape, dtype = ALLOCATION
    call, log = _capi_calls.allocate(entry, shape, dtype, device or (1, 0))
    if call.rc == 0 and call.out:
        try:
            tensor = read_managed(call.out)
        finally:
            _capi_calls.release(call.out)
        got = (tensor.shape, (tensor.code, tensor.bits, tensor.lanes), tensor.device)
        if log.calls or got != (shape, dtype, tuple(device or (1, 0))):
            return _results.failed(
                "DLPACK-CAPI-ALLOCATOR-SETERROR",
                f"a tensor of {got} with {len(log.calls)} SetError call(s)",
                f"a tensor of {(shape, dtype, device)} and no SetError",
                context,
            )
        return None
    if call.out or len(log.calls) != 1:
        return _results.failed(
            "DLPACK-CAPI-ALLOCATOR-SETERROR",
            f"rc {call.rc}, tensor {call.out:#x}, {len(log.calls)} SetError call(s)",
            "NULL after exactly one SetError",
            context,
        )
    kind, message = log.calls[0]
    notes.append(f"allocator refused: {kind}: {message}")
    return None


_REPRO_BODY = """
from caiconform.checks import _capi_calls
from caiconform.dlpack.capsule import read_managed
from caiconform.dlpack.exchange_api import read_exchange_api

table = read_exchange_api(obj)
print("table:", table)
made = _capi_calls.tensor_from_object(table.entries["managed_tensor_from_py_object_no_sync"], obj)
print("managed_tensor_from_py_object_no_sync:", made)
if made.succeeded and made.out:
    print("tensor:", read_managed(made.out))
    _capi_calls.release(made.out)
"""


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    """A script replaying the example's table calls through caiconform's ctypes caller (the
    standalone reproducer of a finding, `report/standalone/dlpack_capi.py`, needs no caiconform)."""
    layout = Layout.from_dict(params["layout"])
    return _sources.repro_script(
        f"dlpack_capi: {producer}'s __dlpack_c_exchange_api__ table called as a C consumer "
        "would: its tensor should hold the array's values [DLPACK-CAPI-SAME-TENSOR].",
        values_source(params["typestr"], layout.shape, params["seed"], layout.strides),
        _sources.producer_source(producer, layout, params["typestr"], params["scenario"]),
        _REPRO_BODY,
    )
