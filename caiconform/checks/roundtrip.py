"""roundtrip: do the values survive producer -> consumer, over layouts and dtypes?

The producer lays random bit patterns out at a hypothesis-drawn layout (C, F, padded, sliced,
negative, broadcast, odd strides) and typestr; the consumer reads them back through its own
public CAI path; the two must agree bit for bit (NaN-aware: a NaN's payload is not data).

A third-party producer's export is first checked live (pointer attributes, the byte extent
inside one allocation, `reference.live`): a MUST finding there is the producer's `fail`, so a
consumer refusing such an export is not blamed for it.

Outcomes: `pass`; `fail` naming CAI-CONSUMER-READS-DESCRIBED when the reference consumer reads
the same object correctly (the consumer misread it) or CAI-PRODUCER-DESCRIBES-DATA when it does
not (the dict does not describe the producer's values), or the validator's first MUST finding
when the export is invalid; `rejected` when the consumer refuses a valid export, naming the
portability rule that explains it (e.g. CAI-PORT-NEGATIVE-STRIDES) or, failing one,
CAI-CONSUMER-READS-DESCRIBED (an interop gap).
"""

from __future__ import annotations

import functools

from hypothesis import strategies as st

from caiconform.checks import _support as sup
from caiconform.runner.outcome import FAIL, Result
from caiconform.spec.layout import Layout

__all__ = ["FAMILY", "ROLES", "NEEDS_GPU", "examples", "floor", "execute", "repro"]

FAMILY = "roundtrip"
ROLES = "pair"
NEEDS_GPU = True
#: no example needs two streams' work to overlap (`checks` docstring)
SINGLE_QUEUE = True


@functools.cache  # _params: one strategy per value (flatmap validates each new one)
def _params(typestr: str) -> st.SearchStrategy[dict]:
    from caiconform import strategies as cst
    from caiconform.spec.typestr import parse_typestr

    itemsize = parse_typestr(typestr).itemsize
    return st.fixed_dictionaries(
        {
            "typestr": st.just(typestr),
            "layout": cst.layouts(itemsize=itemsize, portable_only=False).map(Layout.to_dict),
            "seed": sup.seeds(),
        }
    )


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    """typestr (numeric kinds), layout (every kind, odd strides included where the item size
    allows), seed. Shrinks toward '|b1', a C layout with strides None, fewer and smaller dims."""
    from caiconform import strategies as cst

    return cst.typestrs().flatmap(_params)


def floor(producer: str | None, consumer: str | None) -> list:
    """Every layout kind x dtype class x byte order (`checks._floor.data_floor`)."""
    from caiconform.checks import _floor

    return _floor.data_floor()


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    from caiconform import validate
    from caiconform.checks.schema import judge

    layout = Layout.from_dict(params["layout"])
    typestr = params["typestr"]
    values = sup.make_values(typestr, layout.shape, params["seed"], layout.strides)
    obj = sup.produce(producer, values, layout, typestr, "none")
    context = f"{producer}->{consumer} {typestr} {layout.kind} {layout.shape}"
    ended, _warnings = sup.named_export(obj, typestr, context)
    if ended is not None:
        return ended
    report = validate(obj)
    if not report.ok:
        return judge(report.errors, f"{context}: invalid export")
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
    result = sup.judge_exchange(consumer, obj, values, None, context, read_rule)
    if result.outcome != FAIL or consumer == "reference":
        return result
    baseline, exc = sup.consume_with("reference", obj)
    if exc is not None:
        return result
    mismatch = sup.compare_values(baseline, values)
    if mismatch is None:
        return result
    if producer == "reference":
        # the reference producer's export is right by construction (tests/gpu): memory that no
        # longer holds the values after the consumer read it was changed or released by it
        return sup.failed(
            "CAI-CONSUMER-READS-DESCRIBED",
            f"{result.seen}; afterwards the producer's memory no longer holds the values "
            f"written ({mismatch}): {consumer} wrote to or released memory it only imported",
            "the values the dict describes, the producer's memory untouched",
            context,
        )
    return sup.failed(
        "CAI-PRODUCER-DESCRIBES-DATA",
        f"the reference consumer also reads a mismatch: {mismatch}",
        "the dict to describe the values written",
        context,
    )


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    layout = Layout.from_dict(params["layout"])
    typestr = params["typestr"]
    return sup.repro_script(
        f"roundtrip: a {typestr} array, layout {layout.kind} {layout.shape} strides "
        f"{layout.strides}, produced by {producer} and read by {consumer}, should read back "
        f"bit for bit.",
        sup.values_source(typestr, layout.shape, params["seed"], layout.strides),
        sup.producer_source(producer, layout, typestr),
        sup.consumer_source(consumer),
        sup.COMPARE_SOURCE,
    )
