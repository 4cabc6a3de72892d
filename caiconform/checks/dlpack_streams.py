"""dlpack_streams: does a producer order its pending work before the stream a DLPack consumer
names?

Over DLPack the consumer passes the stream it will use, and "the producer must synchronize or
wait on the stream when necessary" [DLPACK-STREAM-PRODUCER-SYNC] (docs/spec/dlpack/
python_spec.md; array_api_dlpack.md lists the CUDA values). Stream semantics are tested live
(docs/internals.md, Streams live): the producer leaves its final write pending on its current
stream behind a spin, over the sentinel, as in the CAI streams family (adapter scenarios
`library-default` and `nonblocking`, whose objects are asked inside the library's `with
stream:` block, `_dlpack_calls.ask`; the reference producer's own `pending`); without the
`streams` capability the work is finished first (scenario `none`), and only the producer's
answer to each value is judged. caiconform,
as the consumer, then calls `__dlpack__(stream=<value>, max_version=(1, 1))` and reads the
capsule's memory ordered after that stream only (the reference consumer's own stream waits on an
event recorded there; `_dlpack_calls.read`). Stream values (`STREAM_VALUES`):
- None, the legacy default stream [DLPACK-STREAM-NONE-LEGACY], 1 [DLPACK-STREAM-ONE-LEGACY],
  2, the per-thread default stream [DLPACK-STREAM-TWO-PER-THREAD], and "handle", a
  non-blocking stream caiconform makes with cuda-python [DLPACK-STREAM-HANDLE]: the values
  read must be the final ones; the sentinel is a DLPACK-STREAM-PRODUCER-SYNC failure (for
  None the producer "must assume the legacy default stream": DLPACK-STREAM-NONE-LEGACY);
- -1: "producer must not perform any synchronization": only that a capsule comes back
  [DLPACK-STREAM-NO-SYNC]; nothing is read (no order was asked);
- 0: "disallowed due to its ambiguity" [DLPACK-STREAM-ZERO-FORBIDDEN]. The sentence binds the
  consumer and asks nothing of the producer: a refusal is the right answer to invalid input
  (`rejected`, expected the rejection), a capsule is a `pass` saying it was taken.
Support for any value but None is optional [DLPACK-STREAM-OPTIONAL, MAY]: a refusal is
`rejected` under that rule, not a failure. On the host (kDLCPU) "only None is accepted"
[DLPACK-STREAM-CPU-NONE]: another value must be refused.

The judging is pure (`judge`, on the facts of one call), so it is tested on the CPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from caiconform.checks import _dlpack_calls, _dlpack_refusals, _results, _sources, _values
from caiconform.dlpack.header import kDLCPU
from caiconform.results.outcome import PASS, REJECTED, Result
from caiconform.results.record import EXPECT_REJECTION
from caiconform.spec.layout import Layout
from caiconform.spec.values import compare_values, make_values, values_source

__all__ = [
    "FAMILY",
    "ROLES",
    "NEEDS_GPU",
    "STREAM_VALUES",
    "crash_kind",
    "examples",
    "floor",
    "value_rule",
    "judge",
    "execute",
    "repro",
]

FAMILY = "dlpack_streams"
ROLES = "producer"
NEEDS_GPU = True
#: the `stream` values a consumer passes; "handle" is a non-blocking stream of caiconform's
STREAM_VALUES: tuple[Any, ...] = (None, 1, 2, "handle", -1, 0)
#: the floor's dtype classes (C layout: the pending write is a byte copy)
_FLOOR_TYPESTRS = ("|b1", "<f4", "<c8", "bfloat16")
#: the rule naming what each value means
_VALUE_RULES = {
    None: "DLPACK-STREAM-NONE-LEGACY",
    1: "DLPACK-STREAM-ONE-LEGACY",
    2: "DLPACK-STREAM-TWO-PER-THREAD",
    "handle": "DLPACK-STREAM-HANDLE",
    -1: "DLPACK-STREAM-NO-SYNC",
    0: "DLPACK-STREAM-ZERO-FORBIDDEN",
}


def value_rule(value: Any) -> str:
    """The rule saying what stream `value` names (or, for -1 and 0, what it asks)."""
    return _VALUE_RULES[value]


def _scenarios(producer: str | None) -> tuple[str, ...]:
    """The producer's pending scenarios (`_dlpack_calls.pending_scenarios`), then "none"."""
    return (*_dlpack_calls.pending_scenarios(producer), "none")


def crash_kind(params: dict) -> str:
    """What the runner's crash cap counts a drawn example by: its stream value and scenario
    (a producer that dies on one stream value must not skip the cell's other values)."""
    return f"stream {params['stream']!r} {params['scenario']}"


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    """stream value, scenario, typestr, a nonzero C shape and a seed; shrinks toward
    stream None with the library's default stream, '|b1' of shape (1,)."""
    from caiconform import strategies as cst

    return st.fixed_dictionaries(
        {
            "stream": st.sampled_from(STREAM_VALUES),
            "scenario": st.sampled_from(_scenarios(producer)),
            "typestr": cst.typestrs(),
            "shape": cst.shapes(min_dims=1, allow_zero=False).map(list),
            "seed": _values.seeds(),
        }
    )


def floor(producer: str | None, consumer: str | None) -> list:
    """Every stream value x every scenario the producer plays on '<f4' (64,); stream None and
    "handle" on its last pending scenario (non-blocking for a library) x three more dtype
    classes."""
    from caiconform.checks import _floor

    scenarios = _scenarios(producer)
    out = []
    for scenario in scenarios:
        for value in STREAM_VALUES:
            out.append(
                _floor.FloorExample(
                    {**_floor.coverage_of("<f4", "C", scenario), "stream": str(value)},
                    {
                        "stream": value,
                        "scenario": scenario,
                        "typestr": "<f4",
                        "shape": [64],
                        "seed": 0,
                    },
                )
            )
    typed = scenarios[-2] if len(scenarios) > 1 else "none"
    for typestr in _FLOOR_TYPESTRS:
        if typestr == "<f4":
            continue
        for value in (None, "handle"):
            out.append(
                _floor.FloorExample(
                    {**_floor.coverage_of(typestr, "C", typed), "stream": str(value)},
                    {
                        "stream": value,
                        "scenario": typed,
                        "typestr": typestr,
                        "shape": [64],
                        "seed": 0,
                    },
                )
            )
    return out


def judge(
    value: Any,
    device: tuple[int, int] | None,
    error: BaseException | None,
    read: np.ndarray | None,
    values: np.ndarray,
    context: str,
    why_not: str | None = None,
) -> Result:
    """The verdict on `__dlpack__(stream=value)`: `device` the object's `__dlpack_device__`,
    `error` what the call raised, `read` what was read from the capsule on that stream (None
    when nothing was read: -1, 0, a host capsule asked with another value); `why_not`: why
    DLPack cannot describe the array, which makes a BufferError the right answer."""
    if isinstance(error, BufferError) and why_not:
        return _results.passed(f"{context}: refused with BufferError, as {why_not}")
    host = device is not None and device[0] == kDLCPU
    if host and value is not None:
        if error is not None:
            return _results.passed(
                f"{context}: stream {value!r} refused on the host, as the text asks "
                f"[DLPACK-STREAM-CPU-NONE] ({_results.describe_exception(error)})"
            )
        return _results.failed(
            "DLPACK-STREAM-CPU-NONE",
            f"a capsule for stream {value!r} on device {device}",
            "a refusal: only None is accepted on the host",
            context,
        )
    if error is not None:
        if value == 0:
            seen = _results.describe_exception(error)
            return Result(
                REJECTED,
                "DLPACK-STREAM-ZERO-FORBIDDEN",
                f"{context}: got {seen}, expected {EXPECT_REJECTION} "
                f"[DLPACK-STREAM-ZERO-FORBIDDEN]",
                seen,
                EXPECT_REJECTION,
            )
        if value is None:
            return _dlpack_refusals.producer_refused(error, None, context)
        return _results.rejected(
            "DLPACK-STREAM-OPTIONAL",
            error,
            f"a capsule, or this refusal (stream {value!r} is optional to support)",
            context,
        )
    if value == 0:
        return Result(
            PASS,
            message=f"{context}: stream 0 taken; the text forbids consumers to pass it and asks "
            f"nothing of the producer [DLPACK-STREAM-ZERO-FORBIDDEN]",
        )
    if value == -1:
        return _results.passed(
            f"{context}: a capsule, no synchronization asked [DLPACK-STREAM-NO-SYNC]"
        )
    if read is None:
        return _results.passed(f"{context}: a capsule (not read)")
    mismatch = compare_values(read, values)
    if mismatch is None:
        return _results.passed(f"{context}: final values read on stream {value!r}")
    from caiconform.checks.streams import sentinel_count

    early = sentinel_count(read, values)
    if early:
        rule = "DLPACK-STREAM-NONE-LEGACY" if value is None else "DLPACK-STREAM-PRODUCER-SYNC"
        return _results.failed(
            rule,
            f"{early} of {values.size} elements read before the producer's pending write "
            f"(sentinel) on stream {value!r} [{value_rule(value)}]",
            "the producer's work ordered before the consumer's stream",
            context,
        )
    return _results.failed(
        "DLPACK-PRODUCER-DESCRIBES-DATA", mismatch, "the values the array holds", context
    )


def _stream_argument(value: Any, own: Any) -> Any:
    """The `stream` passed for `value`: the handle of caiconform's own stream for "handle"
    (on the host, where no stream is made, a handle-sized integer: only None is accepted
    there, so it is never used)."""
    if value != "handle":
        return value
    return own.handle if own is not None else 0x7F0000000000


def _read_stream(value: Any, own: Any) -> int | None:
    """The stream the read is ordered after (None: the legacy default stream)."""
    if value == "handle":
        return own.handle if own is not None else None
    return value if value in (1, 2) else None


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    """One example (the module docstring); a refusal is laid on the producer."""
    return _dlpack_refusals.producer_refused(_execute(params, producer), producer)


def _execute(params: dict, producer: str | None) -> Result:
    from caiconform.checks import streams

    value, scenario = params["stream"], params["scenario"]
    typestr, shape = params["typestr"], tuple(params["shape"])
    values = make_values(typestr, shape, params["seed"])
    own = None
    if scenario != "none":
        streams._warm_up("reference", typestr)
    streams._free_garbage()
    try:
        obj = _dlpack_calls.produce(producer, values, Layout(shape), typestr, scenario)
        device = _dlpack_calls.device_of(obj)
        host = device is not None and device[0] == kDLCPU
        if value == "handle" and not host:  # made after the pending work: no synchronization
            from caiconform.cuda.streams import OwnedStream

            own = OwnedStream()
        context = f"{producer} {scenario} stream={value!r} {typestr} {shape}"
        kwargs = {"stream": _stream_argument(value, own), "max_version": (1, 1)}
        answer = _dlpack_calls.ask(obj, **kwargs)
        if answer.error is not None and _dlpack_calls.keyword_refused(answer.error):
            del kwargs["max_version"]  # a producer predating max_version: streams still apply
            answer = _dlpack_calls.ask(obj, **kwargs)
        if answer.unreadable is not None:
            return _results.failed(
                "DLPACK-CAPSULE-NAME", answer.unreadable, "a DLPack capsule", context
            )
        read = None
        if answer.capsule is not None and value not in (-1, 0) and (value is None or not host):
            try:
                read = _dlpack_calls.read(answer.capsule, typestr, _read_stream(value, own))
            except Exception as exc:  # noqa: BLE001 - an unreadable description
                return _results.failed(
                    "DLPACK-PRODUCER-DESCRIBES-DATA",
                    f"unreadable ({_results.describe_exception(exc)})",
                    "a capsule describing readable memory",
                    context,
                )
        why_not = _dlpack_calls.undescribable(typestr)
        return judge(value, device, answer.error, read, values, context, why_not)
    finally:
        if scenario != "none" or own is not None:
            streams._finish()
        if own is not None:
            own.close()


_REPRO_BODY = """
import contextlib

import numpy as np
from cuda.bindings import driver

stream_value = {value!r}
if stream_value == "handle":  # a non-blocking stream of the consumer's own
    err, handle = driver.cuStreamCreate(driver.CUstream_flags.CU_STREAM_NON_BLOCKING.value)
    stream_value = int(handle)
# an object made inside the library's `with stream:` block is asked inside it again
target, enter = getattr(obj, "array", obj), getattr(obj, "enter", contextlib.nullcontext)
with enter():
    capsule = target.__dlpack__(stream=stream_value, max_version=(1, 1))
parsed = read_capsule(capsule)
print("__dlpack__(stream=%r) ->" % (stream_value,), parsed)
if stream_value not in (-1, 0):  # read on the consumer's stream (None: the legacy default)
    consumer_stream = driver.CUstream(1 if stream_value is None else stream_value)
    host = np.empty(values.nbytes, np.uint8)
    driver.cuMemcpyDtoHAsync(host.ctypes.data, parsed.pointer, values.nbytes, consumer_stream)
    driver.cuStreamSynchronize(consumer_stream)
    if host.tobytes() == np.ascontiguousarray(values).tobytes():
        print("OK: the final values were read on the consumer's stream")
    else:
        print("BUG: the read on the consumer's stream did not see the producer's final write")
"""


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    from caiconform.checks.agreement import _reader_source

    shape = tuple(params["shape"])
    value = params["stream"]
    return _sources.repro_script(
        f"dlpack_streams: {producer} leaves its final write pending ({params['scenario']}) and "
        f"is asked __dlpack__(stream={value!r}); a consumer reading on that stream must see "
        f"the final values [{value_rule(value)}, DLPACK-STREAM-PRODUCER-SYNC]. The capsule is "
        f"parsed with ctypes and its memory copied to the host on that stream.",
        values_source(params["typestr"], shape, params["seed"]),
        _sources.producer_source(producer, Layout(shape), params["typestr"], params["scenario"]),
        _reader_source(),
        _REPRO_BODY.format(value=value),
    )
