"""zero_size: zero-size arrays, multi-dimensional zero shapes and empty views, both ways.

The producer is asked for an array with at least one zero side, laid out C, F, padded or as an
empty slice of a larger allocation. Its export must carry data pointer 0
[CAI-DATA-ZERO-SIZE-NULL, v2+] and otherwise validate; the consumer must accept it and read an
empty array of the same shape and dtype. A pair cell covers one direction; the matrix has both.

Outcomes: `fail` with the validator's first MUST finding (a nonzero pointer is
CAI-DATA-ZERO-SIZE-NULL) or CAI-CONSUMER-READS-DESCRIBED when the consumer reads another
shape or dtype; `rejected` naming CAI-DATA-ZERO-SIZE-NULL when the consumer refuses a valid
zero-size export (pointer 0 is what the spec prescribes, so refusing it is an interop gap).
"""

from __future__ import annotations

import functools

from hypothesis import strategies as st

from caiconform.checks import _exchange, _results, _sources
from caiconform.results.outcome import Result
from caiconform.spec.layout import Layout
from caiconform.spec.values import make_values, values_source

__all__ = ["FAMILY", "ROLES", "NEEDS_GPU", "KINDS", "zero_shapes", "examples", "execute", "repro"]

FAMILY = "zero_size"
ROLES = "pair"
NEEDS_GPU = True
#: no example needs two streams' work to overlap (`checks` docstring)
SINGLE_QUEUE = True
#: layout kinds that make sense for an empty array (an empty slice is `sliced`)
KINDS = ("C", "F", "padded", "sliced")


def zero_shapes() -> st.SearchStrategy[tuple[int, ...]]:
    """Shapes of 1-4 dims with a zero side at a drawn position; shrinks toward (0,)."""
    from caiconform import strategies as cst

    return st.tuples(cst.shapes(min_dims=1, max_dims=4), st.integers(0, 3)).map(
        lambda si: si[0][: si[1] % len(si[0])] + (0,) + si[0][si[1] % len(si[0]) + 1 :]
    )


@functools.cache  # _params: one strategy per value (flatmap validates each new one)
def _params(typestr: str) -> st.SearchStrategy[dict]:
    from caiconform import strategies as cst
    from caiconform.spec.typestr import parse_typestr

    itemsize = parse_typestr(typestr).itemsize
    return st.fixed_dictionaries(
        {
            "typestr": st.just(typestr),
            "layout": cst.layouts(shape=zero_shapes(), itemsize=itemsize, kinds=KINDS).map(
                Layout.to_dict
            ),
        }
    )


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    """typestr and a zero-size layout; shrinks toward '|b1', shape (0,), C layout."""
    from caiconform import strategies as cst

    return cst.typestrs().flatmap(_params)


def floor(producer: str | None, consumer: str | None) -> list:
    """Every zero-size shape x strides None / explicit x four dtype classes."""
    from caiconform.checks import _floor

    return _floor.zero_size_floor()


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    from caiconform import validate
    from caiconform.checks.schema import judge

    layout = Layout.from_dict(params["layout"])
    typestr = params["typestr"]
    values = make_values(typestr, layout.shape, 0)
    obj = _exchange.produce(producer, values, layout, typestr, "none")
    context = f"{producer}->{consumer} {typestr} shape {layout.shape} {layout.kind}"
    ended, _warnings = _results.named_export(obj, typestr, context)
    if ended is not None:
        return ended
    report = validate(obj)
    if not report.ok:
        return judge(report.errors, f"{context}: invalid zero-size export")
    return _exchange.judge_exchange(
        consumer, obj, values, None, context, reject_rule="CAI-DATA-ZERO-SIZE-NULL"
    )


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    layout = Layout.from_dict(params["layout"])
    typestr = params["typestr"]
    return _sources.repro_script(
        f"zero_size: an empty {typestr} array of shape {layout.shape} ({layout.kind}) from "
        f"{producer}, read by {consumer}: the export must have data pointer 0 and the consumer "
        f"must read an empty array of the same shape.",
        values_source(typestr, layout.shape, 0),
        _sources.producer_source(producer, layout, typestr),
        "print(obj.__cuda_array_interface__)\n",
        _sources.consumer_source(consumer),
        _sources.COMPARE_SOURCE,
    )
