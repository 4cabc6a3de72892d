"""dlpack_copy: does a producer honour `copy`, `dl_device` and the capsule flags?

The array API standard's `__dlpack__` (docs/spec/dlpack/array_api_dlpack.md, 2023.12) takes
`copy` and `dl_device`, and dlpack.h's versioned capsule carries flags. The producer's object
is asked once per example (always with `max_version=(1, 1)`, so the capsule can carry flags,
and no stream: None, the legacy default stream) in one of `CASES`:
- `copy-true`: copy=True: a capsule whose memory is not the object's [DLPACK-COPY-TRUE], with
  IS_COPIED set [DLPACK-COPY-FLAG] and the same values;
- `copy-false`: copy=False: the object's own memory, not flagged copied, or BufferError
  [DLPACK-COPY-FALSE];
- `copy-none`: copy=None: the object's own memory, which can be reused here [DLPACK-COPY-NONE];
- `device-none` / `device-own`: dl_device None or the object's own `__dlpack_device__`: a
  capsule on that device [DLPACK-DL-DEVICE-DEFAULT];
- `device-cpu` / `device-cpu-pending`: dl_device=(kDLCPU, 0): a host capsule holding the
  values, flagged copied when it is a copy, or BufferError [DLPACK-DL-DEVICE-CPU, a SHOULD:
  a refusal is `rejected`; DLPACK-DL-DEVICE-BUFFERERROR]; `-pending` leaves the producer's
  final write pending on its current stream (scenario `nonblocking`; the reference producer's
  `pending`): the host capsule must hold the final values, "a synchronization must be
  performed" [DLPACK-STREAM-DL-DEVICE-CPU];
- `device-cpu-no-copy`: dl_device=(kDLCPU, 0) and copy=False for device memory: BufferError
  [DLPACK-COPY-FALSE-CPU-BUFFERERROR];
- `device-unknown`: a device type dlpack.h does not define: BufferError
  [DLPACK-DL-DEVICE-BUFFERERROR];
- `readonly`: a read-only export (producers with the `readonly` capability): READ_ONLY set
  [DLPACK-READONLY-FLAG].
Every capsule of the object's own memory is also held to its flags: READ_ONLY when the
object's CAI says read-only [DLPACK-READONLY-FLAG], never IS_COPIED (a consumer would take the
producer's memory as its own [DLPACK-COPIED-OWNED]), else no flag at all [DLPACK-FLAGS-DEFAULT,
SHOULD: a warning]. Values read from a capsule that differ are the capsule not describing the
array [DLPACK-PRODUCER-DESCRIBES-DATA], or, with the producer's work pending, a host copy made
before it ended [DLPACK-STREAM-DL-DEVICE-CPU]. A producer predating the 2023.12 keywords (a TypeError on them) is
`rejected` saying so, not failed. An unversioned capsule has no flags field: what it cannot say
is not judged, and it is a DLPACK-VERSIONED-STRUCT warning.

The judging is pure (`judge`, on the facts of one call: `Facts`), so it is tested on the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from caiconform.checks import _dlpack_calls, _dlpack_refusals, _results, _sources, _values
from caiconform.dlpack.header import kDLCPU
from caiconform.results.outcome import PASS, Result
from caiconform.spec.layout import Layout
from caiconform.spec.values import compare_values, make_values, values_source

__all__ = [
    "FAMILY",
    "ROLES",
    "NEEDS_GPU",
    "CASES",
    "UNKNOWN_DEVICE",
    "Facts",
    "crash_kind",
    "examples",
    "floor",
    "call_kwargs",
    "judge",
    "execute",
    "repro",
]

FAMILY = "dlpack_copy"
ROLES = "producer"
NEEDS_GPU = True
#: a DLDeviceType value dlpack.h does not define
UNKNOWN_DEVICE = (4242, 0)
CASES = (
    "copy-none",
    "copy-true",
    "copy-false",
    "device-none",
    "device-own",
    "device-cpu",
    "device-cpu-pending",
    "device-cpu-no-copy",
    "device-unknown",
    "readonly",
)
#: the cases whose producer leaves work pending (`_scenario_of`; others: scenario "none")
_PENDING = ("device-cpu-pending",)
#: the array API version that added copy, dl_device and max_version
_KEYWORDS_SINCE = "array API 2023.12 (copy, dl_device, max_version)"


def crash_kind(params: dict) -> str:
    """What the runner's crash cap counts a drawn example by: its case (a producer that dies
    on one keyword must not skip the cell's other cases)."""
    return f"case {params['case']}"


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    """case, typestr, a nonzero C shape and a seed (`_values.plain_arrays`); shrinks toward
    copy-none on '|b1' of shape (1,)."""
    return st.tuples(st.sampled_from(CASES), _values.plain_arrays()).map(
        lambda pair: {"case": pair[0], **pair[1]}
    )


def floor(producer: str | None, consumer: str | None) -> list:
    """Every case on a '<f4' (4, 3) array; copy-true and device-cpu on every dtype class."""
    from caiconform.checks import _floor

    out = [
        _floor.FloorExample(
            {**_floor.coverage_of("<f4", "C", _scenario_of(case, producer)), "case": case},
            {"case": case, "typestr": "<f4", "shape": [4, 3], "seed": 0},
        )
        for case in CASES
    ]
    for case in ("copy-true", "device-cpu"):
        out += [
            _floor.FloorExample(
                {**example.coverage, "case": case}, {"case": case, **example.params}
            )
            for example in _floor.plain_floor()
            if example.params["typestr"] != "<f4"
        ]
    return out


def _scenario_of(case: str, producer: str | None) -> str:
    """The stream scenario a case's producer plays: its last pending one (a library's own
    non-blocking stream, the reference producer's `pending`) for a `-pending` case; "none"
    otherwise, and for a producer without pending scenarios (whose `-pending` example is
    skipped: `execute`)."""
    scenarios = _dlpack_calls.pending_scenarios(producer)
    return scenarios[-1] if case in _PENDING and scenarios else "none"


def call_kwargs(case: str, own_device: tuple[int, int] | None) -> dict[str, Any]:
    """The keywords of the `__dlpack__` call of `case` (`own_device`: the object's
    `__dlpack_device__`, for device-own)."""
    kwargs: dict[str, Any] = {"max_version": (1, 1)}
    if case == "copy-true":
        kwargs["copy"] = True
    elif case == "copy-false":
        kwargs["copy"] = False
    elif case == "copy-none":
        kwargs["copy"] = None
    elif case == "device-none":
        kwargs["dl_device"] = None
    elif case == "device-own":
        kwargs["dl_device"] = own_device
    elif case in ("device-cpu", "device-cpu-pending"):
        kwargs["dl_device"] = (kDLCPU, 0)
    elif case == "device-cpu-no-copy":
        kwargs["dl_device"] = (kDLCPU, 0)
        kwargs["copy"] = False
    elif case == "device-unknown":
        kwargs["dl_device"] = UNKNOWN_DEVICE
    return kwargs


@dataclass
class Facts:
    """What one `__dlpack__` call of a case showed.

    error: what the call raised (None: a capsule came back); device: the capsule's
    (device_type, device_id); own_device: the object's `__dlpack_device__`; pointer: the
    capsule's element 0 address; own_pointer: the object's (None: unknown); size: elements;
    has_flags: a versioned capsule; readonly / copied: its flags (False when it has none);
    other_flags: flag bits beyond those two; readonly_export: the object is read-only;
    mismatch: how the values read from the capsule differ (None: equal; "" not read);
    pending: the producer had work pending when asked; undescribable: why DLPack cannot
    describe the array (`_dlpack_calls.undescribable`: a BufferError is then right).
    """

    error: BaseException | None = None
    device: tuple[int, int] | None = None
    own_device: tuple[int, int] | None = None
    pointer: int | None = None
    own_pointer: int | None = None
    size: int = 1
    has_flags: bool = True
    readonly: bool = False
    copied: bool = False
    other_flags: int = 0
    readonly_export: bool = False
    mismatch: str | None = None
    pending: bool = False
    undescribable: str | None = None


def _is_host(device: tuple[int, int] | None) -> bool:
    return device is not None and device[0] == kDLCPU


def _same_memory(facts: Facts) -> bool | None:
    """True when the capsule's element 0 is the object's; None when it cannot be told (no
    pointer known, or a zero-size array, whose data pointer says nothing)."""
    if facts.own_pointer is None or facts.pointer is None or facts.size == 0:
        return None
    return facts.pointer == facts.own_pointer


def _refusal(case: str, exc: BaseException, context: str, why_not: str | None = None) -> Result:
    """A `__dlpack__` call of `case` that raised (`why_not`: `Facts.undescribable`)."""
    if isinstance(exc, BufferError) and why_not:
        return _results.passed(f"{context}: refused with BufferError, as {why_not}")
    if _dlpack_calls.keyword_refused(exc):
        return _results.rejected(
            _CASE_RULE[case], exc, f"a capsule: the producer predates {_KEYWORDS_SINCE}", context
        )
    buffer_error = isinstance(exc, BufferError)
    if case in ("device-unknown", "device-cpu-no-copy"):
        rule = _CASE_RULE[case]
        if buffer_error:
            return _results.passed(f"{context}: BufferError, as the standard asks [{rule}]")
        return _results.failed(rule, _results.describe_exception(exc), "BufferError", context)
    if case in ("device-cpu", "device-cpu-pending"):
        if buffer_error:
            return _results.rejected(
                "DLPACK-DL-DEVICE-CPU", exc, "a host capsule, or this BufferError", context
            )
        return _results.failed(
            "DLPACK-DL-DEVICE-BUFFERERROR",
            _results.describe_exception(exc),
            "a host capsule, or BufferError for a device it cannot handle",
            context,
        )
    if case == "copy-false" and buffer_error:
        return _results.rejected(
            "DLPACK-COPY-FALSE", exc, "the array's own memory, or this BufferError", context
        )
    return _dlpack_refusals.producer_refused(exc, None, context)


#: the rule a case is about: what a refusal or a wrong answer of that case is filed under
_CASE_RULE = {
    "copy-none": "DLPACK-COPY-NONE",
    "copy-true": "DLPACK-COPY-TRUE",
    "copy-false": "DLPACK-COPY-FALSE",
    "device-none": "DLPACK-DL-DEVICE-DEFAULT",
    "device-own": "DLPACK-DL-DEVICE-DEFAULT",
    "device-cpu": "DLPACK-DL-DEVICE-CPU",
    "device-cpu-pending": "DLPACK-STREAM-DL-DEVICE-CPU",
    "device-cpu-no-copy": "DLPACK-COPY-FALSE-CPU-BUFFERERROR",
    "device-unknown": "DLPACK-DL-DEVICE-BUFFERERROR",
    "readonly": "DLPACK-READONLY-FLAG",
}


def judge(case: str, facts: Facts, context: str) -> Result:
    """The verdict on one call of `case` (see the module docstring)."""
    if facts.error is not None:
        return _refusal(case, facts.error, context, facts.undescribable)
    same = _same_memory(facts)
    copied = same is False
    if case == "device-unknown":
        return _results.failed(
            "DLPACK-DL-DEVICE-BUFFERERROR",
            f"a capsule on device {facts.device} for dl_device {UNKNOWN_DEVICE}",
            "BufferError: the device type cannot be handled",
            context,
        )
    host_asked = case in ("device-cpu", "device-cpu-pending", "device-cpu-no-copy")
    wanted_device = (kDLCPU, 0) if host_asked else facts.own_device
    if wanted_device is not None and facts.device != wanted_device:
        rule = (
            "DLPACK-DL-DEVICE-BUFFERERROR"
            if _is_host(wanted_device) and not _is_host(facts.own_device)
            else "DLPACK-DL-DEVICE-DEFAULT"
        )
        return _results.failed(
            rule,
            f"a capsule on device {facts.device}",
            f"device {wanted_device}, or BufferError",
            context,
        )
    if case == "copy-true" and same is True:
        return _results.failed(
            "DLPACK-COPY-TRUE",
            f"the array's own memory {facts.pointer:#x}",
            "a copy in other memory",
            context,
        )
    if case in ("copy-false", "device-cpu-no-copy") and copied:
        return _results.failed(
            _CASE_RULE[case],
            f"memory {facts.pointer:#x}, not the array's {facts.own_pointer:#x}",
            "the array's own memory, or BufferError",
            context,
        )
    if case in ("copy-none", "device-none", "device-own", "readonly") and copied:
        return _results.failed(
            _CASE_RULE[case] if case != "readonly" else "DLPACK-COPY-NONE",
            f"a copy at {facts.pointer:#x}, not the array's memory {facts.own_pointer:#x}",
            "the array's own memory, reused as it can be",
            context,
        )
    if facts.mismatch:
        rule = "DLPACK-STREAM-DL-DEVICE-CPU" if facts.pending else "DLPACK-PRODUCER-DESCRIBES-DATA"
        return _results.failed(
            rule, f"other values: {facts.mismatch}", "the array's values", context
        )
    return _judge_flags(case, facts, copied or (case == "copy-true" and same is None), context)


def _judge_flags(case: str, facts: Facts, copied: bool, context: str) -> Result:
    """The flags of a capsule whose memory and values are right."""
    if not facts.has_flags:
        return Result(
            PASS,
            message=f"{context}: an unversioned capsule for max_version (1, 1): no flags to "
            f"say copied or read-only [DLPACK-VERSIONED-STRUCT]",
            seen=["DLPACK-VERSIONED-STRUCT"],
        )
    if copied and not facts.copied:
        return _results.failed(
            "DLPACK-COPY-FLAG", "IS_COPIED unset on a copy", "IS_COPIED set", context
        )
    if facts.copied and not copied and _same_memory(facts) is True:
        return _results.failed(
            "DLPACK-COPIED-OWNED",
            "IS_COPIED set on the array's own memory, which the consumer would take as its own",
            "IS_COPIED only on a copy",
            context,
        )
    if facts.readonly_export and not copied and not facts.readonly:
        return _results.failed(
            "DLPACK-READONLY-FLAG",
            "READ_ONLY unset on a read-only array's memory",
            "READ_ONLY set",
            context,
        )
    if not facts.readonly_export and not copied and (facts.readonly or facts.other_flags):
        return Result(
            PASS,
            message=f"{context}: {_flag_words(facts)} on a writable array's own memory, "
            f"expected none [DLPACK-FLAGS-DEFAULT]",
            seen=["DLPACK-FLAGS-DEFAULT"],
        )
    return _results.passed(f"{context}: {_flag_words(facts)}")


def _flag_words(facts: Facts) -> str:
    words = [w for w, on in (("READ_ONLY", facts.readonly), ("IS_COPIED", facts.copied)) if on]
    if facts.other_flags:
        words.append(f"{facts.other_flags:#x}")
    return "flags " + ("|".join(words) if words else "0")


def _produce(producer: str, params: dict, values: np.ndarray) -> tuple[Any, bool]:
    """(the producer's object, whether it is read-only)."""
    from caiconform.adapters.base import SkipExchange

    shape, typestr = tuple(params["shape"]), params["typestr"]
    scenario = _scenario_of(params["case"], producer)
    if params["case"] == "readonly":
        if "readonly" not in _dlpack_calls.capabilities(producer):
            raise SkipExchange(f"{producer} cannot export read-only (no readonly capability)")
        return _readonly_produce(producer, values, Layout(shape), typestr), True
    obj = _dlpack_calls.produce(producer, values, Layout(shape), typestr, scenario)
    try:
        readonly = bool(obj.__cuda_array_interface__["data"][1])
    except Exception:  # noqa: BLE001 - no CAI: the capsule's own say is all there is
        readonly = False
    return obj, readonly


def _readonly_produce(producer: str, values: np.ndarray, layout: Layout, typestr: str) -> Any:
    """A read-only export of a producer with the `readonly` capability (the reference
    producer's `produce(..., readonly=True)`)."""
    return _dlpack_calls.adapter(producer).produce(values, layout, typestr, "none", readonly=True)


def facts_of(
    answer: _dlpack_calls.Answer, obj: Any, values: np.ndarray, typestr: str, readonly: bool
) -> Facts:
    """The facts of one call: the capsule's fields, the object's own, and the values read
    from the capsule when it is on the host or a CUDA device."""
    capsule = answer.capsule
    facts = Facts(
        error=answer.error,
        own_device=_dlpack_calls.device_of(obj),
        own_pointer=_dlpack_calls.own_pointer(obj),
        size=int(values.size),
        readonly_export=readonly,
    )
    if capsule is None:
        return facts
    facts.device, facts.pointer = capsule.device, capsule.pointer
    facts.has_flags = capsule.has_flags
    facts.readonly, facts.copied = capsule.readonly, capsule.copied
    try:
        got = _dlpack_calls.read(capsule, typestr)
    except Exception as exc:  # noqa: BLE001 - an unreadable description is other values
        facts.mismatch = f"unreadable ({_results.describe_exception(exc)})"
    else:
        facts.mismatch = compare_values(got, values)
    return facts


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    """One example (the module docstring); a refusal is laid on the producer."""
    return _dlpack_refusals.producer_refused(_execute(params, producer), producer)


def _execute(params: dict, producer: str | None) -> Result:
    case, typestr, shape = params["case"], params["typestr"], tuple(params["shape"])
    values = make_values(typestr, shape, params["seed"])
    pending = case in _PENDING
    if pending and _scenario_of(case, producer) == "none":
        from caiconform.adapters.base import SkipExchange

        raise SkipExchange(f"{producer} leaves no work pending on a stream (no streams capability)")
    if pending:
        from caiconform.checks import streams

        streams._warm_up("reference", typestr)
        streams._free_garbage()
    try:
        obj, readonly = _produce(producer, params, values)
        own_device = _dlpack_calls.device_of(obj)
        context = f"{producer} {case} {typestr} {shape}"
        answer = _dlpack_calls.ask(obj, **call_kwargs(case, own_device))
        if answer.unreadable is not None:
            return _results.failed(
                "DLPACK-CAPSULE-NAME", answer.unreadable, "a DLPack capsule", context
            )
        facts = facts_of(answer, obj, values, typestr, readonly)
        facts.pending = pending
        facts.undescribable = _dlpack_calls.undescribable(typestr)
        return judge(case, facts, context)
    finally:
        if pending:
            from caiconform.checks import streams

            streams._finish()


_REPRO_BODY = """
import contextlib

# an object made inside the library's `with stream:` block is asked inside it again
target, enter = getattr(obj, "array", obj), getattr(obj, "enter", contextlib.nullcontext)
print("object's own device:", target.__dlpack_device__())
kwargs = {kwargs}
with enter():
    capsule = target.__dlpack__(**kwargs)
parsed = read_capsule(capsule)
print("__dlpack__(**%r) ->" % (kwargs,), parsed)
print("pointer", hex(parsed.pointer), "read-only", parsed.readonly, "copied", parsed.copied)
"""


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    from caiconform.checks.agreement import _reader_source

    case = params["case"]
    shape = tuple(params["shape"])
    kwargs = call_kwargs(case, None)
    if case == "device-own":
        kwargs_source = "{'max_version': (1, 1), 'dl_device': target.__dlpack_device__()}"
    else:
        kwargs_source = repr(kwargs)
    return _sources.repro_script(
        f"dlpack_copy: {producer}'s __dlpack__ asked {case} ({kwargs_source}); the capsule's "
        f"device, memory and flags are printed, parsed with ctypes [{_CASE_RULE[case]}].",
        values_source(params["typestr"], shape, params["seed"]),
        _sources.producer_source(
            producer, Layout(shape), params["typestr"], _scenario_of(case, producer)
        ),
        _reader_source(),
        _REPRO_BODY.format(kwargs=kwargs_source),
    )
