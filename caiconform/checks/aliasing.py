"""aliasing: does each consumer entry point copy, or not, as its library documents?

Libraries take CAI objects through several public calls (`caiconform.adapters.entries`): some
documented as zero-copy (`cupy.asarray`, `torch.as_tensor`, `numba.cuda.as_cuda_array`, ...),
some as copying (`cupy.array(copy=True)`, `torch.tensor`, ...), some as copying only when
necessary (`jnp.asarray`). Each example takes the reference producer's export through one
entry point, checks the result reads the exported values, and then writes in one direction:

- `producer-writes`: new values are copied onto the producer's allocation with the driver
  (synchronised), and the entry's result is read again. A zero-copy result must show them
  [CAI-ENTRY-ZERO-COPY-SEES-WRITES]; a copy must still hold the old values
  [CAI-ENTRY-COPY-INDEPENDENT].
- `consumer-writes`: new values are written through the result with the library's own API
  (synchronised), and the reference consumer reads the producer's memory. A zero-copy result's
  write must be there [CAI-ENTRY-ZERO-COPY-WRITES-THROUGH] (what numba's kernel-argument tests,
  CuPy's `test_not_copied` and PyTorch's numba-integration tests rely on); a copy's must not
  [CAI-ENTRY-COPY-INDEPENDENT].

Both wrong answers are `corrupts` (caiconform.results.severity): a "copy" that aliases lets a later
write on either side change the other's data without an error; a "zero-copy" import that
copies loses every write made through it and reads stale data after the producer writes, also
without an error. Neither crashes nor refuses, so nothing would tell the user.

An entry documented as copying only when necessary may do either: its example passes, saying
which it did, with the CAI-PORT-ENTRY-MAY-COPY warning (code relying on either is not
portable). An entry whose result cannot be written (JAX arrays are immutable) skips
`consumer-writes`; one with no result outliving the call (a kernel argument) skips
`producer-writes`.

The draws are small and finite (entry x the directions it can show x three dtypes x two
shapes), values are small distinct integers (exact in every dtype, so a ufunc's multiply by one is the identity),
and the floor runs every entry x direction once: a cell costs at most a few dozen exchanges of
a few ms each. The producer is always the reference (its memory is written and read with the
driver, trusted); copy semantics are the consumer's.

Outcomes: `pass`; `fail` naming one of the rules above, or CAI-CONSUMER-READS-DESCRIBED when
the result does not read the exported values at all; `rejected` when the entry refuses the
(valid, plain C-contiguous) export: under CAI-CONSUMER-READS-DESCRIBED for the library's CAI
import (its adapter's default entry point: an interop gap), under CAI-PORT-ENTRY-REFUSED for
its other calls (no rule obliges every call to take CAI objects); `skip` for a consumer with no
entry points declared.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from hypothesis import strategies as st

from caiconform.adapters.base import SkipExchange
from caiconform.checks import _results, _sources
from caiconform.results.outcome import Result
from caiconform.spec.values import compare_values

__all__ = [
    "FAMILY",
    "ROLES",
    "NEEDS_GPU",
    "DIRECTIONS",
    "TYPESTRS",
    "SHAPES",
    "examples",
    "floor",
    "execute",
    "repro",
]

FAMILY = "aliasing"
ROLES = "consumer"
NEEDS_GPU = True
#: no example needs two streams' work to overlap (`checks` docstring)
SINGLE_QUEUE = True

PRODUCER_WRITES = "producer-writes"
CONSUMER_WRITES = "consumer-writes"
DIRECTIONS = (PRODUCER_WRITES, CONSUMER_WRITES)
#: element types drawn: one float, one wide and one narrow integer, all exact for 1..116
TYPESTRS = ("<f4", "<i8", "|u1")
SHAPES = ((16,), (4, 4))
#: what the written values add to the exported ones (every element changes)
_SHIFT = 100
#: the MAY_COPY entries' warning
MAY_COPY_RULE = "CAI-PORT-ENTRY-MAY-COPY"
#: a refusal by an entry point other than the consumer's CAI import (its default entry)
REFUSED_RULE = "CAI-PORT-ENTRY-REFUSED"
ZERO_COPY_SEES = "CAI-ENTRY-ZERO-COPY-SEES-WRITES"
ZERO_COPY_WRITES = "CAI-ENTRY-ZERO-COPY-WRITES-THROUGH"
COPY_INDEPENDENT = "CAI-ENTRY-COPY-INDEPENDENT"
READS = "CAI-CONSUMER-READS-DESCRIBED"


def exported_values(typestr: str, shape: list[int] | tuple[int, ...]) -> np.ndarray:
    """1, 2, ... n in `typestr`, laid out C-contiguously in `shape`."""
    count = int(np.prod(shape))
    return np.arange(1, count + 1).astype(np.dtype(typestr)).reshape(tuple(shape))


def written_values(values: np.ndarray) -> np.ndarray:
    """The values a write puts in: each element changed by `_SHIFT` (exact in every TYPESTR)."""
    return (values + _SHIFT).astype(values.dtype)


@functools.cache  # one strategy per consumer (flatmap validates each new one)
def _drawn(pairs: tuple[tuple[str, str], ...]) -> st.SearchStrategy[dict]:
    def example(pair: tuple[str, str], typestr: str, shape: tuple[int, ...]) -> dict:
        return {"entry": pair[0], "direction": pair[1], "typestr": typestr, "shape": list(shape)}

    return st.builds(
        example, st.sampled_from(pairs), st.sampled_from(TYPESTRS), st.sampled_from(SHAPES)
    )


def _applicable(entry: Any) -> tuple[str, ...]:
    """The directions an entry point can show: no producer write is seen through a result that
    does not outlive the call, and no write goes through an immutable one."""
    return tuple(
        d
        for d in DIRECTIONS
        if (d != PRODUCER_WRITES or entry.holds_result) and (d != CONSUMER_WRITES or entry.writable)
    )


def _names(consumer: str | None) -> tuple[str, ...]:
    from caiconform.adapters.entries import entries_of

    return tuple(e.name for e in entries_of(consumer or ""))


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    """entry (one of the consumer's), a direction it can show, typestr, shape: a finite space,
    so a cell draws a few dozen examples at most. Shrinks toward the consumer's default entry,
    its first direction, '<f4' and shape (16,). A consumer with no entry points declared
    draws one example, which skips."""
    from caiconform.adapters.entries import entries_of

    pairs = tuple((e.name, d) for e in entries_of(consumer or "") for d in _applicable(e))
    if not pairs:
        return st.just({"entry": None})
    return _drawn(pairs)


def floor(producer: str | None, consumer: str | None) -> list:
    """Every entry point x direction once ('<f4', shape (16,)), those an entry cannot show
    too: they skip, saying why (an immutable result, a kernel argument)."""
    from caiconform.checks._floor import FloorExample, coverage_of

    out = []
    for name in _names(consumer):
        for direction in DIRECTIONS:
            coverage = {**coverage_of("<f4", "C"), "entry": name}
            params = {"entry": name, "direction": direction, "typestr": "<f4", "shape": [16]}
            out.append(FloorExample(coverage, params))
    return out


# -- the producer's side, through the driver (replaced by fakes in the CPU tests) -------------
def _export(values: np.ndarray, typestr: str) -> Any:
    from caiconform.reference.producer import ReferenceArray
    from caiconform.spec.layout import Layout

    return ReferenceArray(values, Layout(values.shape), typestr)


def _write_producer(obj: Any, new: np.ndarray) -> None:
    """Copy `new` onto the producer's allocation; landed when this returns."""
    from caiconform.cuda.memory import copy_from_host

    copy_from_host(obj.ptr, new)


def _read_producer(obj: Any) -> np.ndarray:
    from caiconform.reference.consumer import consume

    return consume(obj, sync="host").values


def _take(consumer: str, entry: str, obj: Any):
    from caiconform.checks._entries import take

    return take(consumer, entry, obj)


# -- one example ------------------------------------------------------------------------------
def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    from caiconform.adapters.entries import COPY, default_entry, find

    if params.get("entry") is None:
        return _results.skipped(
            f"{consumer} declares no consumer entry points (caiconform.adapters.entries)"
        )
    entry = find(consumer or "", params["entry"])
    direction = params["direction"]
    typestr, shape = params["typestr"], tuple(params["shape"])
    context = (
        f"reference->{consumer} through {entry.name} ({entry.semantics}), {direction}, "
        f"{typestr} {shape}"
    )
    if direction == PRODUCER_WRITES and not entry.holds_result:
        return _results.skipped(
            f"{entry.name}: nothing outlives the call to see a later producer write through; "
            f"its writes are checked by {CONSUMER_WRITES}"
        )
    values = exported_values(typestr, shape)
    new = written_values(values)
    obj = _export(values, typestr)
    try:
        taken = _take(consumer or "", entry.name, obj)
    except SkipExchange:
        raise
    except Exception as exc:  # the entry point refused a valid plain export
        # the library's CAI import refusing it is an interop gap; another call refusing it,
        # a portability note (nothing obliges every call to take CAI objects)
        rule = READS if entry.name == default_entry(consumer) else REFUSED_RULE
        return _results.rejected(rule, exc, "the values read back", f"{context}: the call")
    if direction == CONSUMER_WRITES and taken.write is None:
        return _results.skipped(f"{entry.name}: its result cannot be written through (immutable)")
    if entry.holds_result:
        mismatch = compare_values(taken.read(), values)
        if mismatch is not None:
            return _results.failed(READS, mismatch, "the exported values", f"{context}: first read")
    if direction == PRODUCER_WRITES:
        _write_producer(obj, new)
        seen = taken.read()
        where = "the result after the producer's write"
    else:
        try:
            taken.write(new)
        except Exception as exc:  # the library refused to write through its own result
            rule = COPY_INDEPENDENT if entry.semantics == COPY else ZERO_COPY_WRITES
            return _results.rejected(rule, exc, "the write taken", f"{context}: the write")
        seen = _read_producer(obj)
        where = "the producer's memory after the write through the result"
    return judge(entry, direction, seen, values, new, where, context)


def judge(
    entry: Any,
    direction: str,
    seen: np.ndarray,
    old: np.ndarray,
    new: np.ndarray,
    where: str,
    context: str,
) -> Result:
    """Classify what `where` holds after the write: the new values (the result aliases the
    export), the old ones (it is a copy), or neither (a finding whatever was documented)."""
    from caiconform.adapters.entries import COPY, MAY_COPY, ZERO_COPY

    aliased = compare_values(seen, new) is None
    copied = compare_values(seen, old) is None
    zero_copy_rule = ZERO_COPY_SEES if direction == PRODUCER_WRITES else ZERO_COPY_WRITES
    if not (aliased or copied):
        rule = COPY_INDEPENDENT if entry.semantics == COPY else zero_copy_rule
        mismatch = compare_values(seen, new)
        return _results.failed(
            rule,
            f"{where} holds neither the old nor the written values ({mismatch})",
            "one or the other",
            context,
        )
    what = "aliases the export" if aliased else "is a copy"
    if entry.semantics == MAY_COPY:
        return _results.passed(
            f"{context}: {entry.name} {what} (documented: copies only when necessary); "
            f"warning {MAY_COPY_RULE}",
            seen=[MAY_COPY_RULE],
        )
    if entry.semantics == ZERO_COPY and copied:
        lost = (
            "the producer's write is not seen"
            if direction == PRODUCER_WRITES
            else "the write through it never reached the producer's memory (lost)"
        )
        return _results.failed(
            zero_copy_rule,
            f"{entry.name} returned a copy: {lost}",
            f"a view of the exported memory, as documented: {entry.quote!r} ({entry.source})",
            context,
        )
    if entry.semantics == COPY and aliased:
        leak = (
            "the producer's later write shows through it"
            if direction == PRODUCER_WRITES
            else "a write through it changed the producer's memory"
        )
        return _results.failed(
            COPY_INDEPENDENT,
            f"{entry.name} returned a view of the exported memory: {leak}",
            f"memory of its own, as documented: {entry.quote!r} ({entry.source})",
            context,
        )
    return _results.passed(f"{context}: {entry.name} {what}, as documented")


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    entry = params.get("entry")
    if entry is None:
        return _sources.repro_script(f"aliasing: {consumer} declares no consumer entry points.")
    typestr, shape = params["typestr"], list(params["shape"])
    direction = params["direction"]
    if direction == PRODUCER_WRITES:
        act = (
            "copy_from_host(obj.ptr, new)\n"
            "print('result after the producer write:', taken.read())\n"
            "print('aliases:', np.array_equal(taken.read(), new))\n"
        )
    else:
        act = (
            "taken.write(new)\n"
            "after = consume(obj).values\n"
            "print('producer memory after the write:', after)\n"
            "print('write reached the producer:', np.array_equal(after, new))\n"
        )
    return _sources.repro_script(
        f"aliasing: {consumer} takes a reference export through {entry}; {direction}. "
        f"A zero-copy entry point must alias the export, a copying one must not.",
        "import numpy as np\n\n"
        "from caiconform.adapters.entries import find\n"
        "from caiconform.checks._entries import take\n"
        "from caiconform.checks.aliasing import exported_values, written_values\n"
        "from caiconform.cuda.memory import copy_from_host\n"
        "from caiconform.reference.consumer import consume\n"
        "from caiconform.reference.producer import ReferenceArray\n"
        "from caiconform.spec.layout import Layout\n\n"
        f"values = exported_values({typestr!r}, {shape!r})\n"
        "new = written_values(values)\n"
        f"obj = ReferenceArray(values, Layout(values.shape), {typestr!r})\n"
        f"print('documented:', find({consumer!r}, {entry!r}))\n"
        f"taken = take({consumer!r}, {entry!r}, obj)\n"
        f"if find({consumer!r}, {entry!r}).holds_result:\n"
        "    print('first read:', taken.read())\n" + act,
    )
