"""roundtrip: do the values survive producer -> consumer, over layouts and dtypes?

The producer lays random bit patterns out at a hypothesis-drawn layout (C, F, padded, sliced,
negative, broadcast, odd strides) and typestr; the consumer reads them back through its own
public CAI path; the two must agree bit for bit (NaN-aware: a NaN's payload is not data).

A third-party producer's export is first checked live (pointer attributes, the byte extent
inside one allocation, `reference.live`): a MUST finding there is the producer's `fail`, so a
consumer refusing such an export is not blamed for it.

Beyond the coverage floor every data family shares, this family's floor exchanges timedelta
and datetimes of units other than nanoseconds (`UNIT_TYPESTRS`, numpy's `m8`/`M8[unit]`): read
with another unit is other values, a `fail`; refused is a portability gap
(CAI-PORT-TYPESTR-KIND). And, from the reference producer only, one array whose byte extent
passes 2**32 (`BIG_LAYOUT`: two rows 4 GiB apart, six elements in all, so only the allocation
is large): a consumer computing byte offsets in 32 bits reads the first row twice. It is
skipped when the device has not twice its allocation free.

Outcomes: `pass`; `fail` naming CAI-CONSUMER-READS-DESCRIBED when the reference consumer reads
the same object correctly (the consumer misread it) or CAI-PRODUCER-DESCRIBES-DATA when it does
not (the dict does not describe the producer's values), or the validator's first MUST finding
when the export is invalid; `rejected` when the consumer refuses a valid export, naming the
portability rule that explains it (e.g. CAI-PORT-NEGATIVE-STRIDES) or, failing one,
CAI-CONSUMER-READS-DESCRIBED (an interop gap).
"""

from __future__ import annotations

import functools
from typing import Any

from hypothesis import strategies as st

from caiconform.checks import _encoding, _exchange, _results, _sources, _values
from caiconform.results.outcome import FAIL, Result
from caiconform.spec.layout import Layout
from caiconform.spec.values import compare_values, make_values, values_source

__all__ = [
    "FAMILY",
    "ROLES",
    "NEEDS_GPU",
    "UNIT_TYPESTRS",
    "BIG_LAYOUT",
    "examples",
    "floor",
    "execute",
    "repro",
]

FAMILY = "roundtrip"
ROLES = "pair"
NEEDS_GPU = True
#: no example needs two streams' work to overlap (`checks` docstring)
SINGLE_QUEUE = True
#: timedelta and datetimes of units the data floor's `<M8[ns]` does not cover, on a C layout
UNIT_TYPESTRS = ("<m8[ns]", "<M8[s]", "<M8[D]")
#: byte offsets past 2**32: rows 2**32 + 16 bytes apart (int32 items), a 4 GiB allocation
BIG_TYPESTR = "<i4"
BIG_LAYOUT = Layout((2, 3), (2**32 + 16, 4), kind="sliced")


@functools.cache  # _params: one strategy per value (flatmap validates each new one)
def _params(typestr: str) -> st.SearchStrategy[dict]:
    from caiconform import strategies as cst
    from caiconform.spec.typestr import parse_typestr

    itemsize = parse_typestr(typestr).itemsize
    return st.fixed_dictionaries(
        {
            "typestr": st.just(typestr),
            "layout": cst.layouts(itemsize=itemsize, portable_only=False).map(Layout.to_dict),
            "seed": _values.seeds(),
        }
    )


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    """typestr (numeric kinds), layout (every kind, odd strides included where the item size
    allows), seed. Shrinks toward '|b1', a C layout with strides None, fewer and smaller dims."""
    from caiconform import strategies as cst

    return cst.typestrs().flatmap(_params)


def floor(producer: str | None, consumer: str | None) -> list:
    """Every layout kind x dtype class x byte order (`checks._floor.data_floor`), the views of
    every 8th item (`checks._floor.read_floor`), each of `UNIT_TYPESTRS` on a C layout, and
    `BIG_LAYOUT` when the reference produces."""
    from caiconform.checks import _floor
    from caiconform.spec.dtypes import dtype_class

    out = _floor.data_floor() + _floor.read_floor()
    layout = _floor.floor_layout("C", 8).to_dict()
    for typestr in UNIT_TYPESTRS:
        unit = typestr[typestr.index("[") :]
        coverage = {**_floor.coverage_of(typestr, "C"), "dtype": dtype_class(typestr) + unit}
        out.append(_floor.FloorExample(coverage, {"typestr": typestr, "layout": layout, "seed": 0}))
    if producer == "reference":
        out.append(
            _floor.FloorExample(
                {**_floor.coverage_of(BIG_TYPESTR, "extent > 4 GiB")},
                {"typestr": BIG_TYPESTR, "layout": BIG_LAYOUT.to_dict(), "seed": 0},
            )
        )
    return out


def _room_for(nbytes: int) -> str | None:
    """None when the device has twice `nbytes` free (the producer's allocation, and as much
    again for a consumer's own copy), else why an example that big is skipped."""
    from cuda.bindings import driver as cu

    from caiconform.cuda.device import ensure_context
    from caiconform.cuda.errors import call

    ensure_context(0)
    free = int(call(cu.cuMemGetInfo)[0])
    if free >= 2 * nbytes:
        return None
    return f"an extent past 4 GiB needs {2 * nbytes >> 20} MiB free on the device, {free >> 20} MiB are"


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    from caiconform import validate
    from caiconform.checks.schema import judge

    layout = Layout.from_dict(params["layout"])
    typestr = params["typestr"]
    values = make_values(typestr, layout.shape, params["seed"], layout.strides)
    nbytes = layout.allocation_bytes(values.dtype.itemsize)
    if nbytes > 2**32:
        short = _room_for(nbytes)
        if short is not None:
            return _results.skipped(short)
    obj = _exchange.produce(producer, values, layout, typestr, "none")
    context = f"{producer}->{consumer} {typestr} {layout.kind} {layout.shape}"
    ended, _warnings = _results.named_export(obj, typestr, context)
    if ended is not None:
        return ended
    report = validate(obj)
    if not report.ok:
        misread = _misdescribed(obj, values, report.errors, context)
        return misread or judge(report.errors, f"{context}: invalid export")
    if producer != "reference":
        # what the dict alone cannot show (the extent inside the allocation, a device pointer):
        # an export failing it is the producer's finding, not the consumer's refusal
        from caiconform.reference.live import live_check
        from caiconform.spec.rules import Level

        live, _why = live_check(obj)
        errors = [f for f in live if f.level is Level.MUST]
        if errors:
            return judge(errors, f"{context}: invalid export")
    read_rule = (
        "CAI-PRODUCER-DESCRIBES-DATA" if consumer == "reference" else "CAI-CONSUMER-READS-DESCRIBED"
    )
    result = _exchange.judge_exchange(consumer, obj, values, None, context, read_rule)
    if result.outcome != FAIL or consumer == "reference":
        return result
    baseline, exc = _exchange.consume_with("reference", obj)
    if exc is not None:
        return result
    mismatch = compare_values(baseline, values)
    if mismatch is None:
        return result
    if producer == "reference":
        # the reference producer's export is right by construction (tests/gpu): memory that no
        # longer holds the values after the consumer read it was changed or released by it
        return _results.failed(
            "CAI-CONSUMER-READS-DESCRIBED",
            f"{result.seen}; afterwards the producer's memory no longer holds the values "
            f"written ({mismatch}): {consumer} wrote to or released memory it only imported",
            "the values the dict describes, the producer's memory untouched",
            context,
        )
    return _results.failed(
        "CAI-PRODUCER-DESCRIBES-DATA",
        f"the reference consumer also reads a mismatch: {mismatch}",
        "the dict to describe the values written",
        context,
    )


#: rules whose break leaves the dict readable by its typestr alone: `descr` is secondary ("This
#: is for describing more complicated types"), a conforming consumer reads the typestr
_DESCR_RULES = frozenset({"CAI-DESCR-GRAMMAR", "CAI-DESCR-CONSISTENT"})


def _misdescribed(obj: Any, values: Any, errors: list, context: str) -> Result | None:
    """A producer's dict invalid only in its `descr`: what a conforming consumer reads from the
    rest (typestr, shape, strides, data), by the reference consumer on the dict without descr.
    Other values than the array holds are the producer's corruption (CAI-PRODUCER-DESCRIBES-DATA:
    a consumer trusting the typestr reads them without an error); None when it reads the values
    written, or the dict breaks more than its descr (then the schema finding stands)."""
    if not errors or any(e.rule not in _DESCR_RULES for e in errors):
        return None
    interface = getattr(obj, "__cuda_array_interface__", None)
    if not isinstance(interface, dict):
        return None
    plain = _encoding.InterfaceObject(
        {k: v for k, v in interface.items() if k != "descr"}, keepalive=obj
    )
    read, exc = _exchange.consume_with("reference", plain)
    if exc is not None:
        return None
    mismatch = compare_values(read, values)
    if mismatch is None:
        return None
    broken = ", ".join(sorted({e.rule for e in errors}))
    return _results.failed(
        "CAI-PRODUCER-DESCRIBES-DATA",
        f"the dict's typestr {interface.get('typestr')!r} describes other values than the array "
        f"holds ({mismatch}); its descr also breaks {broken}",
        "a typestr describing the values written",
        context,
    )


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    layout = Layout.from_dict(params["layout"])
    typestr = params["typestr"]
    return _sources.repro_script(
        f"roundtrip: a {typestr} array, layout {layout.kind} {layout.shape} strides "
        f"{layout.strides}, produced by {producer} and read by {consumer}, should read back "
        f"bit for bit.",
        values_source(typestr, layout.shape, params["seed"], layout.strides),
        _sources.producer_source(producer, layout, typestr),
        _sources.consumer_source(consumer),
        _sources.COMPARE_SOURCE,
    )
