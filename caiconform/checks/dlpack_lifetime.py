"""dlpack_lifetime: who releases a DLPack tensor, and when.

DLPack hands ownership over explicitly (docs/spec/dlpack/python_spec.md): the consumer renames
the capsule "used_dltensor(_versioned)" and takes the deleter over [DLPACK-CONSUMER-RENAME];
the deleter is called exactly once [DLPACK-DELETER-ONCE], by the consumer once it no longer
needs the tensor [DLPACK-CONSUMER-CALLS-DELETER]; until then the memory stays the producer's
to keep alive, whatever the producer's own Python object does.

ROLES is "pair": the producer is any library whose objects export `__dlpack__` (the DLPack
protocol's producer capability), the consumer any that imports DLPack. The deleter
is observable only on caiconform's own export, so the two kinds of producer are judged apart:
- the reference producer (`ReferenceArray.__dlpack__`, its deleter tracked by
  `caiconform.reference.dlpack_export`): the consumer holds its import (`hold`); every capsule
  it was handed must be renamed; the producer object is dropped and collected; while the import
  is alive the deleter must not have run (unless the consumer copied: its import does not
  alias the allocation) and the import must still read the values written; once the import is
  dropped and collected, the deleter must have run exactly once;
- any other producer, whose deleter cannot be counted: a capsule asked for and dropped
  unconsumed must not crash (its destructor calls the deleter); then the consumer's import,
  held while the producer's object is dropped and collected, must still read the values
  written.
A consumer whose adapter has no held view (`hold` knows reference, torch, cupy, numpy and jax)
is judged through `consume_dlpack` alone: the import then ends inside the call, so only the
count after it (reference producer) and the values read are judged.

Outcomes: `pass`; `fail` naming the rule (a consumer that passed stream=0, which the reference
producer refuses: DLPACK-STREAM-ZERO-FORBIDDEN); `rejected` when the consumer refuses a plain
array (valid input refused); `skip` for an element type DLPack cannot carry.
"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np

from caiconform.checks import _results, _sources, _values
from caiconform.results.outcome import Result
from caiconform.spec.layout import Layout
from caiconform.spec.values import compare_values, make_values, values_source

__all__ = [
    "FAMILY",
    "ROLES",
    "NEEDS_GPU",
    "Keeping",
    "hold",
    "held_values",
    "judge_tracked",
    "refusal",
    "examples",
    "floor",
    "execute",
    "repro",
]

FAMILY = "dlpack_lifetime"
ROLES = "pair"
NEEDS_GPU = True
#: no example needs two streams' work to overlap (`checks` docstring)
SINGLE_QUEUE = True


def _expressible(typestr: str) -> bool:
    """Whether DLPack has a data type for `typestr` (native byte order, a numeric or bool kind,
    or one of the named types with a DLPack code)."""
    from caiconform.reference.dlpack_export import dl_dtype
    from caiconform.spec.dtypes import is_named, numpy_dtype

    try:
        dl_dtype(numpy_dtype(typestr), typestr if is_named(typestr) else None)
    except (BufferError, TypeError):
        return False
    return True


def examples(producer: str | None, consumer: str | None):
    """typestr DLPack can carry, a nonzero C-contiguous shape and a seed
    (`_values.plain_arrays`)."""
    return _values.plain_arrays().filter(lambda p: _expressible(p["typestr"]))


def floor(producer: str | None, consumer: str | None) -> list:
    """One C-contiguous array per dtype class DLPack can carry (`_floor.plain_floor`)."""
    from caiconform.checks import _floor

    return [e for e in _floor.plain_floor() if _expressible(e.params["typestr"])]


class Keeping:
    """The producer's object seen through DLPack only, keeping every capsule its `__dlpack__`
    returned, so the family can read their names after the consumer's import. A view of
    caiconform's (`caiconform_view`): an adapter's own bookkeeping reads past it
    (`_staging.unwrapped`), so it keeps only the consumer's capsules."""

    caiconform_view = True

    def __init__(self, producer: Any) -> None:
        self.producer = producer
        self.capsules: list[Any] = []

    def __dlpack__(self, **kwargs: Any) -> Any:
        capsule = self.producer.__dlpack__(**kwargs)
        self.capsules.append(capsule)
        return capsule

    def __dlpack_device__(self) -> Any:
        return self.producer.__dlpack_device__()


def hold(consumer: str, obj: Any) -> tuple[Any, bool]:
    """(the consumer's import of `obj`, whether it is a held view): the library's own array
    made by its public DLPack call, or the reference consumer's `DLPackImport` (a copy); for
    any other consumer `consume_dlpack`'s host values (not a held view)."""
    from caiconform.checks._exchange import adapter

    if consumer == "reference":
        return adapter("reference").import_dlpack(obj), False
    if consumer == "torch":
        import torch

        return torch.from_dlpack(obj), True
    if consumer == "cupy":
        import cupy

        return cupy.from_dlpack(obj), True
    if consumer == "numpy":  # the host side: a view of host memory, else the producer's copy
        return np.from_dlpack(obj, device="cpu"), obj.__dlpack_device__()[0] == 1
    if consumer == "jax":
        import jax.numpy as jnp

        return jnp.from_dlpack(obj), True
    return adapter(consumer).consume_dlpack(obj), False


def held_values(consumer: str, view: Any) -> np.ndarray | None:
    """The values a held view reads now (the adapter's own host copy), None when it cannot say."""
    from caiconform.adapters.base import SkipExchange
    from caiconform.checks._exchange import adapter

    if isinstance(view, np.ndarray):
        return np.array(view, copy=True)
    if hasattr(view, "values") and isinstance(view.values, np.ndarray):
        return view.values
    try:
        return np.asarray(adapter(consumer).own_values(view))
    except SkipExchange:
        return None


def refusal(
    exc: BaseException, only: Any, context: str, producer: str, typestr: str = ""
) -> Result:
    """The consumer's import raised: a `fail` of DLPACK-STREAM-ZERO-FORBIDDEN when it passed
    stream=0 (which the producer refuses); the producer's when its `__dlpack__` raised on the
    consumer's request (`_dlpack_refusals.producer_refused`); a type the consumer need not
    have refused is DLPACK-PORT-DTYPE (`dlpack_roundtrip.uncommon`); else `rejected` (a plain
    array refused)."""
    calls = only.calls
    if any(call.get("stream") == 0 for call in calls):
        return _results.failed(
            "DLPACK-STREAM-ZERO-FORBIDDEN",
            f"__dlpack__(stream=0), refused by the producer ({_results.describe_exception(exc)})",
            "1 (legacy default), 2 (per-thread) or a stream handle",
            context,
        )
    if only.refusals:
        from caiconform.checks._dlpack_refusals import producer_refused

        request, raised = only.refusals[-1]
        return producer_refused(raised, producer, context, request=request)
    from caiconform.checks.dlpack_roundtrip import uncommon

    rule = "DLPACK-PORT-DTYPE" if typestr and uncommon(typestr) else None
    return _results.rejected(
        rule or "DLPACK-CONSUMER-READS-DESCRIBED", exc, "an import of a plain array", context
    )


def _pointer(view: Any) -> int | None:
    """Where a held view's element 0 lives (`_views.view_pointer`; a numpy array's own data
    pointer for a host import), None when it cannot say."""
    from caiconform.checks import _views

    if isinstance(view, np.ndarray):
        return int(view.__array_interface__["data"][0])
    return _views.view_pointer(view)


def _collect() -> None:
    """Two passes: finalizers run in the first can release objects freed in the second."""
    gc.collect()
    gc.collect()


def judge_tracked(
    exports: list[Any],
    names: list[bytes | None],
    calls_held: list[int],
    aliased: bool,
    context: str,
) -> Result | None:
    """The verdict of the tracked exports while the import is held: `names` of the capsules the
    consumer was handed, `calls_held` each export's deleter calls counted with the import alive
    and the producer object collected, `aliased` whether the import is a view of the producer's
    memory. A consumer may ask for several capsules (numba types a kernel argument with one and
    launches with another) and release all but the one it holds: only a deleter called twice,
    or every deleter called while an aliasing import is alive, is wrong. None when nothing is
    wrong so far."""
    unrenamed = [n for n in names if n is not None and not n.startswith(b"used_")]
    if unrenamed:
        return _results.failed(
            "DLPACK-CONSUMER-RENAME",
            f"the capsule still named {unrenamed[0].decode()!r} after the import",
            "'used_...': the consumer takes ownership of the tensor",
            context,
        )
    if any(n > 1 for n in calls_held):
        return _results.failed(
            "DLPACK-DELETER-ONCE", f"deleter calls {calls_held}", "exactly once each", context
        )
    if calls_held and all(calls_held) and aliased:
        return _results.failed(
            "DLPACK-CONSUMER-CALLS-DELETER",
            "the deleter called while the consumer's array over the memory is alive",
            "the deleter called once the consumer no longer needs the tensor",
            context,
        )
    if not exports:
        return _results.failed(
            "DLPACK-CONSUMER-RENAME",
            "no capsule asked for",
            "the import taking the tensor through __dlpack__",
            context,
        )
    return None


def _tracked(consumer: str, values: np.ndarray, typestr: str, shape: tuple) -> Result:
    from caiconform.adapters._staging import dlpack_only
    from caiconform.dlpack.capsule import capsule_name
    from caiconform.reference.producer import ReferenceArray
    from caiconform.reference.tracking import AllocationLog, TrackingMemoryManager

    log = AllocationLog()
    ref = ReferenceArray(values, Layout(shape), typestr, manager=TrackingMemoryManager(log))
    base, size = ref.allocation.ptr, ref.allocation.size
    exports = ref.dlpack_exports
    keeping = Keeping(ref)
    only = dlpack_only(keeping)
    context = f"reference->{consumer} {typestr} {shape}"
    try:
        view, is_view = hold(consumer, only)
    except Exception as exc:  # noqa: BLE001 - refusing a plain array is an interop gap
        from caiconform.adapters.base import SkipExchange

        if isinstance(exc, SkipExchange):
            raise
        return refusal(exc, only, context, "reference", typestr)
    names = [capsule_name(c) for c in keeping.capsules]
    keeping.capsules.clear()
    ptr = _pointer(view) if is_view else None
    aliased = ptr is not None and base <= ptr < base + size
    del ref, keeping, only
    _collect()
    calls_held = [e.deleter_calls for e in exports]
    verdict = judge_tracked(exports, names, calls_held, aliased, context)
    if verdict is not None:
        return verdict
    if aliased and not log.is_live(base):
        return _results.failed(
            "DLPACK-DELETER-ONCE",
            "the allocation freed while the consumer's array over it is alive and the deleter "
            "was not called",
            "the memory held until the deleter runs",
            context,
        )
    if is_view:
        now = held_values(consumer, view)
        wrong = None if now is None else compare_values(now, values)
        if wrong is not None:
            return _results.failed(
                "DLPACK-DELETER-ONCE",
                f"the import read {wrong} after the producer object was collected",
                "the values written, held until the deleter runs",
                context,
            )
    del view
    _collect()
    calls = [e.deleter_calls for e in exports]
    if sum(calls) == 0:
        return _results.failed(
            "DLPACK-CONSUMER-CALLS-DELETER",
            "the deleter never called after the consumer's import was dropped and collected",
            "the deleter called once the consumer no longer needs the tensor",
            context,
        )
    if any(n > 1 for n in calls) or sum(calls) > len(exports):
        return _results.failed(
            "DLPACK-DELETER-ONCE", f"deleter calls {calls}", "exactly once per tensor", context
        )
    how = "while held: kept" if aliased else "copied on import"
    return _results.passed(f"{context}: renamed, {how}, deleter called once after")


def _untracked(
    producer: str, consumer: str, values: np.ndarray, typestr: str, shape: tuple
) -> Result:
    from caiconform import dlpack
    from caiconform.adapters._staging import dlpack_only
    from caiconform.checks._exchange import produce

    obj = produce(producer, values, Layout(shape), typestr, "none")
    context = f"{producer}->{consumer} {typestr} {shape}"
    if not hasattr(obj, "__dlpack__"):
        return _results.skipped(f"{producer} objects do not export __dlpack__")
    try:  # a capsule dropped unconsumed: its destructor releases the tensor
        _parsed, dropped = dlpack.export(obj)
    except dlpack.DLPackError as exc:
        return _results.skipped(f"{context}: no capsule to drop: {exc}")
    del dropped
    _collect()
    only = dlpack_only(obj)
    try:
        view, is_view = hold(consumer, only)
    except Exception as exc:  # noqa: BLE001 - refusing a plain array is an interop gap
        from caiconform.adapters.base import SkipExchange

        if isinstance(exc, SkipExchange):
            raise
        return refusal(exc, only, context, producer, typestr)
    del only
    del obj
    _collect()
    now = held_values(consumer, view) if is_view else np.asarray(view)
    wrong = None if now is None else compare_values(now, values)
    if wrong is not None:
        return _results.failed(
            "DLPACK-DELETER-ONCE",
            f"the import read {wrong} after the producer object was collected",
            "the values written, held until the consumer calls the deleter",
            f"{context}: {producer} freed its memory before its deleter ran, or {consumer} "
            f"released it while its import is alive",
        )
    return _results.passed(f"{context}: a dropped capsule released, the import held")


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    typestr, shape = params["typestr"], tuple(params["shape"])
    if not _expressible(typestr):
        return _results.skipped(f"DLPack has no data type for {typestr}")
    values = make_values(typestr, shape, params["seed"])
    if producer == "reference":
        return _tracked(consumer or "", values, typestr, shape)
    return _untracked(producer or "", consumer or "", values, typestr, shape)


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    shape = tuple(params["shape"])
    return _sources.repro_script(
        f"dlpack_lifetime: {consumer} imports a {producer} array over DLPack and holds it; the "
        f"producer object is dropped and collected (the import must still read the values), "
        f"then the import (the deleter must have run exactly once).",
        values_source(params["typestr"], shape, params["seed"]),
        "import gc\n\n"
        "from caiconform.adapters._staging import dlpack_only\n"
        "from caiconform.checks._exchange import produce\n"
        "from caiconform.checks.dlpack_lifetime import held_values, hold\n"
        "from caiconform.spec.layout import Layout\n\n"
        f"obj = produce({producer!r}, values, Layout({shape!r}), {params['typestr']!r}, 'none')\n"
        "exports = getattr(obj, 'dlpack_exports', None)\n"
        f"view, is_view = hold({consumer!r}, dlpack_only(obj))\n"
        "del obj\n"
        "gc.collect()\n"
        "print('deleter calls while held:', exports and [e.deleter_calls for e in exports])\n"
        f"print('read while held:', held_values({consumer!r}, view) if is_view else view)\n"
        "del view\n"
        "gc.collect()\n"
        "print('deleter calls after:', exports and [e.deleter_calls for e in exports])\n",
    )
