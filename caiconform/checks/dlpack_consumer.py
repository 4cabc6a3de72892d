"""dlpack_consumer: does a DLPack consumer ask for the stream it reads on, and read before it
releases?

The counterpart, for a DLPack consumer, of what `streams` and `lifetime` ask of a CAI one. The
producer is caiconform's reference producer, whose `__dlpack__` does what the array API standard
asks (`caiconform.reference.dlpack_producer`): the stream a consumer passes has the array's
pending work ordered before it (an event wait), -1 orders nothing [DLPACK-STREAM-NO-SYNC]; every
call is recorded here (`Recorder`), so what the consumer asked is known. The consumer is a
library's own DLPack import (`Adapter.consume_dlpack`, over the object seen through DLPack
alone). Two cases:

- `stream`: the final write left pending after a spin on a stream of the producer's
  (`pending`: its own non-blocking stream; `legacy`: the legacy default stream, which orders
  blocking streams by itself): the values the consumer read must be the final ones. A
  consumer that asked for no synchronization (-1), or named a stream other than the one it
  read on, reads the sentinel: it did not pass the stream it used
  [DLPACK-STREAM-PRODUCER-SYNC, the consumer's half]. Passing 0 breaks
  [DLPACK-STREAM-ZERO-FORBIDDEN], a value below -1 [DLPACK-STREAM-MIN], whatever was read.
- `release`: a finished array whose producer overwrites the block when the tensor's deleter
  runs (`ReferenceArray.poison_on_release`, as a pool reusing a freed block would): a consumer
  that releases the last tensor it holds of it before it has read the memory reads the poison
  [DLPACK-CONSUMER-READS-DESCRIBED: the elements it read are not the ones described]; the
  deleter must run exactly once in all [DLPACK-DELETER-ONCE], here once the consumer's values
  are in hand and its import dropped.
- `copy`: from_dlpack itself asked with `copy` True, False or None, and `device` None or the
  array's own (`Adapter.consume_dlpack_with`, capability "dlpack-copy"; a consumer without it
  is skipped with that reason). The producer's memory is then overwritten and the consumer's
  result read again (`Adapter.read_result`): a result that follows the overwrite aliases the
  producer's memory, one that keeps its values is a copy (`judge_copy`). copy=True must copy
  [DLPACK-FROM-COPY-TRUE: an alias is memory it promised not to share], copy=False must not,
  or refuse with BufferError (or ValueError, the Raises section's word)
  [DLPACK-FROM-COPY-FALSE], copy=None may do either [DLPACK-FROM-COPY-NONE: reuse where it
  can, which the consumer decides; the message says which]. The result is on the device asked
  for [DLPACK-FROM-DEVICE], the array's own without one [DLPACK-FROM-DLPACK-SAME-DEVICE]
  (`judge_device`, for arrays in CUDA device or managed memory); a request with the device
  refused is asked again without it: refused then too, the refusal is the copy's (filed under
  its copy rule), else the device's [DLPACK-FROM-DEVICE]. What the consumer passed on to
  `__dlpack__` (`copy`, `dl_device`) is in the message.

Other wrong values are the consumer's misreading [DLPACK-CONSUMER-READS-DESCRIBED]; a refusal
is `rejected` (valid input refused). Outcomes: `pass` (the streams asked in its message),
`fail`, `rejected`, `skip` for a consumer without a DLPack import (in the copy case, one
without `copy` and `device` keywords).
"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
from hypothesis import strategies as st

from caiconform.checks import _dlpack_exchange, _results, _sources, _values
from caiconform.results.outcome import Result
from caiconform.spec.layout import Layout
from caiconform.spec.values import compare_values, make_values, values_source

__all__ = [
    "FAMILY",
    "ROLES",
    "NEEDS_GPU",
    "CASES",
    "Recorder",
    "judge_streams",
    "judge_values",
    "judge_copy",
    "judge_device",
    "changed_count",
    "overwrite",
    "examples",
    "floor",
    "execute",
    "repro",
]

FAMILY = "dlpack_consumer"
ROLES = "consumer"
NEEDS_GPU = True
#: SINGLE_QUEUE stays False: with one hardware queue every stream runs in issue order, and a
#: consumer reading on a stream it did not name would see the final values all the same
#: (case -> the reference producer's stream scenarios it plays)
CASES = {
    "stream": ("pending", "legacy"),
    "release": ("none",),
    "copy": ("true", "false", "none", "true-own", "false-own", "none-own"),
}
#: a copy scenario -> (copy, whether `device` is the array's own `__dlpack_device__()`)
COPIES = {
    "true": (True, False),
    "false": (False, False),
    "none": (None, False),
    "true-own": (True, True),
    "false-own": (False, True),
    "none-own": (None, True),
}
#: the rule each `copy` value of from_dlpack stands on
COPY_RULES = {
    True: "DLPACK-FROM-COPY-TRUE",
    False: "DLPACK-FROM-COPY-FALSE",
    None: "DLPACK-FROM-COPY-NONE",
}
#: the element types drawn: the common ones every DLPack consumer reads (what a consumer makes of
#: rarer types, float128 or complex256, is the roundtrip families' question, not this one's)
TYPESTRS = (
    "|b1",
    "|i1",
    "<i2",
    "<i4",
    "<i8",
    "|u1",
    "<u2",
    "<u4",
    "<u8",
    "<f2",
    "<f4",
    "<f8",
    "<c8",
    "<c16",
)
#: the reference producer's spin before the pending write (µs, nominal: `streams.spin_of`)
DELAY_US = 20_000


class Recorder:
    """The producer's array seen through DLPack alone, each `__dlpack__` call's keywords kept."""

    def __init__(self, array: Any) -> None:
        self.array = array
        self.calls: list[dict[str, Any]] = []

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append({"args": list(args), **kwargs})
        return self.array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return self.array.__dlpack_device__()

    @property
    def streams(self) -> list[Any]:
        """The stream each call passed (None where it passed none)."""
        return [c.get("stream", c["args"][0] if c["args"] else None) for c in self.calls]


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    """case and scenario, typestr (`TYPESTRS`), a nonzero C shape and a seed; shrinks toward
    the stream case on the producer's own stream, '|b1' of shape (1,)."""
    from caiconform import strategies as cst

    # the case first, then its scenario: each case is drawn as often, however many scenarios
    cases = st.sampled_from(list(CASES)).flatmap(
        lambda c: st.tuples(st.just(c), st.sampled_from(CASES[c]))
    )
    return st.fixed_dictionaries(
        {
            "case": cases,
            "typestr": st.sampled_from(TYPESTRS),
            "shape": cst.shapes(min_dims=1, allow_zero=False).map(list),
            "seed": _values.seeds(),
        }
    ).map(lambda p: {**p, "case": p["case"][0], "scenario": p["case"][1]})


def floor(producer: str | None, consumer: str | None) -> list:
    """Every case and scenario on '<f4' (64,) and on '<f8' (3, 5)."""
    from caiconform.checks import _floor

    out = []
    for case, scenarios in CASES.items():
        for scenario in scenarios:
            for typestr, shape in (("<f4", [64]), ("<f8", [3, 5])):
                out.append(
                    _floor.FloorExample(
                        {**_floor.coverage_of(typestr, "C", scenario), "case": case},
                        {
                            "case": case,
                            "scenario": scenario,
                            "typestr": typestr,
                            "shape": shape,
                            "seed": 0,
                        },
                    )
                )
    return out


def judge_streams(streams: list[Any], context: str) -> Result | None:
    """The failure the streams a consumer passed show whatever it read, or None."""
    for stream in streams:
        if stream == 0:
            return _results.failed(
                "DLPACK-STREAM-ZERO-FORBIDDEN",
                f"__dlpack__(stream=0) (streams passed: {streams})",
                "None, 1, 2, a stream handle or -1: never 0 on CUDA",
                context,
            )
        if isinstance(stream, int) and stream < -1:
            return _results.failed(
                "DLPACK-STREAM-MIN",
                f"__dlpack__(stream={stream})",
                "an integer of -1 or more",
                context,
            )
    return None


def judge_values(
    got: np.ndarray, values: np.ndarray, case: str, streams: list[Any], context: str
) -> Result | None:
    """The failure the values a consumer read show, or None when they are the array's."""
    from caiconform.checks.streams import sentinel_count
    from caiconform.reference.dlpack_producer import POISON

    wrong = compare_values(got, values)
    if wrong is None:
        return None
    if case == "stream":
        early = sentinel_count(got, values)
        if early:
            return _results.failed(
                "DLPACK-STREAM-PRODUCER-SYNC",
                f"{early} of {values.size} elements read before the producer's pending write "
                f"(sentinel), having passed stream {streams}",
                "the stream the consumer reads on passed to __dlpack__, or its own wait",
                context,
            )
    if case == "release" and _poisoned(got, values, POISON):
        return _results.failed(
            "DLPACK-CONSUMER-READS-DESCRIBED",
            f"{_poisoned(got, values, POISON)} of {values.size} elements read after the "
            "tensor's deleter ran (the producer's poison: the block was released before the read)",
            "the described elements, read before the consumer calls the deleter",
            context,
        )
    return _results.failed(
        _dlpack_exchange.CONSUMER_RULE, wrong, "the values the capsule describes", context
    )


def changed_count(before: np.ndarray, after: np.ndarray) -> int:
    """How many elements of the consumer's result read again (`after`) differ, byte for byte,
    from its first read (`before`); every element when the shapes or sizes differ."""
    size = max(before.size, after.size, 1)
    if before.shape != after.shape or before.nbytes != after.nbytes:
        return size
    first = np.ascontiguousarray(before).view(np.uint8).reshape(before.size, -1)
    again = np.ascontiguousarray(after).view(np.uint8).reshape(after.size, -1)
    return int((first != again).any(axis=1).sum())


def judge_copy(
    copy: bool | None,
    before: np.ndarray | None,
    after: np.ndarray | None,
    refusal: BaseException | None,
    context: str,
) -> Result:
    """The outcome of one from_dlpack(copy=...) import whose producer's memory was then
    overwritten: `before` the values first read, `after` the result read again, `refusal` what
    the import raised (then neither was read).

    | copy  | refused                  | result followed the overwrite | kept its values |
    | True  | rejected                 | fail DLPACK-FROM-COPY-TRUE    | pass            |
    | False | BufferError/ValueError: pass, else rejected | pass       | fail DLPACK-FROM-COPY-FALSE |
    | None  | rejected                 | pass (a view)                 | pass (a copy)   |
    """
    rule = COPY_RULES[copy]
    expected = {
        True: "a copy: the result keeps its values when the producer's memory changes",
        False: "a view of the producer's memory, or BufferError where a copy is needed",
        None: "the producer's memory reused where possible, a copy otherwise",
    }[copy]
    if refusal is not None:
        if copy is False and isinstance(refusal, (BufferError, ValueError)):
            return _results.passed(
                f"{context}: copy=False refused with {type(refusal).__name__}: {refusal}"
            )
        return _results.rejected(rule, refusal, expected, context)
    changed = changed_count(before, after)
    size = max(before.size, 1)
    if copy is True and changed:
        return _results.failed(
            rule,
            f"{changed} of {size} elements of the copy=True result changed when the producer's "
            "memory was overwritten: it aliases memory it promised to copy",
            expected,
            context,
        )
    if copy is False and not changed:
        return _results.failed(
            rule,
            f"none of {size} elements of the copy=False result changed when the producer's "
            "memory was overwritten: it is a copy",
            expected,
            context,
        )
    how = f"a view ({changed} of {size} elements followed the overwrite)" if changed else "a copy"
    return _results.passed(f"{context}: copy={copy} gave {how}")


def _cuda_device(device: Any) -> tuple[int, int] | None:
    """(2, id) for a DLPack device of CUDA device or managed memory, else None."""
    kind, number = int(device[0]), int(device[1])
    return (2, number) if kind in (2, 13) else None  # kDLCUDA, kDLCUDAManaged


def judge_device(
    device: tuple[int, int] | None, source: Any, result_device: Any, context: str
) -> Result | None:
    """The failure the device of a from_dlpack result shows, or None: it is `device`, the one
    asked, or without one `source`, the input's [DLPACK-FROM-DEVICE,
    DLPACK-FROM-DLPACK-SAME-DEVICE]. Judged only for arrays in CUDA device or managed memory
    (one GPU's memory, of either device type); None when the result's device is unknown."""
    if result_device is None or _cuda_device(source) is None:
        return None
    want = device if device is not None else source
    if _cuda_device(result_device) == _cuda_device(want):
        return None
    rule = "DLPACK-FROM-DEVICE" if device is not None else "DLPACK-FROM-DLPACK-SAME-DEVICE"
    return _results.failed(
        rule,
        f"the result is on DLPack device {tuple(result_device)}",
        f"the device {tuple(want)} ({'asked' if device is not None else 'of the input'})",
        context,
    )


def _poisoned(got: np.ndarray, values: np.ndarray, poison: int) -> int:
    """How many elements of `got` are the poison byte throughout (and were not that already)."""
    if got.shape != values.shape or got.dtype != values.dtype or values.size == 0:
        return 0
    size = values.dtype.itemsize
    read = np.ascontiguousarray(got).view(np.uint8).reshape(-1, size)
    final = np.ascontiguousarray(values).view(np.uint8).reshape(-1, size)
    hit = (read == poison).all(axis=1) & ~(final == poison).all(axis=1)
    return int(hit.sum())


def _warm_up(consumer: str, typestr: str) -> None:
    """One finished array through the consumer's DLPack import, once per process and pair: a
    first import that compiles or initialises can outlast the spin (a false pass)."""
    key = (consumer, typestr)
    if key in _warmed:
        return
    _warmed.add(key)
    from caiconform.reference.producer import ReferenceArray

    values = make_values(typestr, (4,), 0)
    _dlpack_exchange.consume_dlpack_with(consumer, ReferenceArray(values, Layout((4,)), typestr))


_warmed: set[tuple[str, str]] = set()


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    """One example (the module docstring)."""
    from caiconform.checks import streams
    from caiconform.reference.producer import ReferenceArray

    case, scenario = params["case"], params["scenario"]
    typestr, shape = params["typestr"], tuple(params["shape"])
    values = make_values(typestr, shape, params["seed"])
    if case == "copy":
        return _execute_copy(scenario, values, typestr, shape, consumer)
    _warm_up(consumer, typestr)
    streams._free_garbage()
    context = f"reference->{consumer} {case} {scenario} {typestr} {shape}"
    array = ReferenceArray(
        values,
        Layout(shape),
        typestr,
        stream_scenario=scenario,
        delay_us=streams.spin_of(DELAY_US),
    )
    array.poison_on_release = case == "release"
    recorder = Recorder(array)
    try:
        got, exc = _dlpack_exchange.consume_dlpack_with(consumer, recorder)
        got = None if got is None else np.array(got, copy=True)
    finally:
        streams._finish()
    exports, passed = array.dlpack_exports, recorder.streams
    del recorder, array
    gc.collect()
    context += f" (streams passed {passed})"
    failure = judge_streams(passed, context)
    if failure is not None:
        return failure
    if exc is not None:
        return _results.rejected(
            _dlpack_exchange.CONSUMER_RULE, exc, "the values the capsule describes", context
        )
    if not exports:
        return _results.skipped(f"{context}: the consumer read without calling __dlpack__")
    failure = judge_values(got, values, case, passed, context)
    if failure is not None:
        return failure
    calls = [e.deleter_calls for e in exports]
    if any(n > 1 for n in calls):
        return _results.failed(
            "DLPACK-DELETER-ONCE",
            f"deleter calls per capsule {calls}",
            "each tensor's deleter called exactly once",
            context,
        )
    return _results.passed(f"{context}: the final values read; deleter calls {calls}")


def overwrite(array: Any) -> None:
    """Rewrite every byte of a C-contiguous reference array's elements on the device: each
    flipped (a bool's lowest bit only, so it stays a bool), so no element keeps its value; done
    when it returns."""
    from caiconform.cuda.device import synchronize
    from caiconform.cuda.memory import copy_from_host

    values = array.values
    flip = 0x01 if values.dtype.kind == "b" else 0xFF
    copy_from_host(array.ptr, np.ascontiguousarray(values).view(np.uint8) ^ np.uint8(flip))
    synchronize()


def _result_device(result: Any) -> Any:
    """The DLPack device of a library's result, None where it does not say."""
    try:
        return tuple(int(d) for d in result.__dlpack_device__())
    except Exception:  # a result without __dlpack_device__: its device is not judged
        return None


def _execute_copy(
    scenario: str, values: np.ndarray, typestr: str, shape: tuple, consumer: str
) -> Result:
    """The copy case (the module docstring)."""
    from caiconform.checks import _exchange
    from caiconform.reference.producer import ReferenceArray

    copy, own = COPIES[scenario]
    context = f"reference->{consumer} copy={copy} {typestr} {shape}"
    adapter = _exchange.adapter(consumer)
    if "dlpack-copy" not in adapter.capabilities:
        return _results.skipped(
            f"{context}: {consumer}'s DLPack import takes no copy or device (capability "
            "dlpack-copy)"
        )
    array = ReferenceArray(values, Layout(shape), typestr)
    source = tuple(int(d) for d in array.__dlpack_device__())
    device = source if own else None
    context += f" device={device}"
    recorder = Recorder(array)
    got, result, exc = _dlpack_exchange.import_with(consumer, recorder, copy, device)
    asked = [
        (c.get("copy", "not passed"), c.get("dl_device", "not passed")) for c in recorder.calls
    ]
    context += f" (__dlpack__ asked (copy, dl_device): {asked})"
    if exc is None:
        got = np.array(got, copy=True)
        failure = judge_values(got, values, "copy", recorder.streams, context)
        if failure is not None:
            return failure
        failure = judge_device(device, source, _result_device(result), context)
        if failure is not None:
            return failure
        overwrite(array)
        again = np.array(adapter.read_result(result), copy=True)
    else:
        again = None
    del result, recorder
    gc.collect()
    if exc is not None and device is not None:
        # which keyword was refused: the same `copy` asked without the device tells (one bug
        # under one rule, not filed again under the other)
        _, plain, plain_exc = _dlpack_exchange.import_with(consumer, Recorder(array), copy, None)
        del plain
        gc.collect()
        if plain_exc is None:
            return _results.rejected(
                "DLPACK-FROM-DEVICE",
                exc,
                f"the array placed on device {device}",
                f"{context}; the same copy={copy} without device imported",
            )
        context += f"; refused without device too ({type(plain_exc).__name__})"
    return judge_copy(copy, got, again, exc, context)


_REPRO_BODY = """
from caiconform.checks.dlpack_consumer import Recorder
from caiconform.checks._dlpack_exchange import consume_dlpack_with

obj.poison_on_release = {poison}
recorder = Recorder(obj)
got, exc = consume_dlpack_with({consumer!r}, recorder)
print("streams passed to __dlpack__:", recorder.streams, "refused:", exc)
print("read:", got)
print("expected:", values)
"""


_REPRO_COPY = """
from caiconform.adapters import registry
from caiconform.checks.dlpack_consumer import Recorder, overwrite

adapter = registry.get({consumer!r})
recorder = Recorder(obj)
device = obj.__dlpack_device__() if {own} else None
got, result = adapter.consume_dlpack_with(recorder, copy={copy}, device=device)
print("__dlpack__ calls:", recorder.calls)
print("read:", got)
overwrite(obj)  # every element of the producer's memory changed
print("read again after the producer's memory changed:", adapter.read_result(result))
print("a copy keeps the first values; a view follows the producer's memory")
"""


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    """A script replaying the example through caiconform's reference producer and the
    consumer's adapter."""
    shape = tuple(params["shape"])
    if params["case"] == "copy":
        copy, own = COPIES[params["scenario"]]
        return _sources.repro_script(
            f"dlpack_consumer: {consumer}'s from_dlpack(copy={copy}) of a reference array: "
            "copy=True must copy, copy=False must not [DLPACK-FROM-COPY-TRUE, "
            "DLPACK-FROM-COPY-FALSE].",
            values_source(params["typestr"], shape, params["seed"]),
            "from caiconform.reference.producer import ReferenceArray\n"
            "from caiconform.spec.layout import Layout\n"
            f"obj = ReferenceArray(values, Layout({shape!r}), {params['typestr']!r})\n",
            _REPRO_COPY.format(consumer=consumer, own=own, copy=copy),
        )
    return _sources.repro_script(
        f"dlpack_consumer: {consumer}'s DLPack import of a reference array ({params['case']}, "
        f"{params['scenario']}): the final values, read on the stream it passes "
        "[DLPACK-STREAM-PRODUCER-SYNC], before it releases the tensor "
        "[DLPACK-CONSUMER-READS-DESCRIBED].",
        values_source(params["typestr"], shape, params["seed"]),
        "from caiconform.reference.producer import ReferenceArray\n"
        "from caiconform.spec.layout import Layout\n"
        f"obj = ReferenceArray(values, Layout({shape!r}), {params['typestr']!r}, "
        f"stream_scenario={params['scenario']!r})\n",
        _REPRO_BODY.format(poison=params["case"] == "release", consumer=consumer),
    )
