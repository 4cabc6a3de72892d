"""readonly: a read-only export fed to each consumer: refused, or honoured, never written.

The reference producer exports `data: (ptr, True)`. The consumer imports it with its public
call and we try to write the complement of every byte through the view with the library's own
API; then the reference consumer reads the memory. The spec allows two answers
[CAI-DATA-READONLY-HONOURED]: refuse writable access (an exception on import or on the write)
or expose the data read-only. A write that reaches the memory is the finding.

Outcomes: `pass` (the write was refused, the view is read-only, or the library wrote to a copy
and the memory is intact); `fail` CAI-DATA-READONLY-HONOURED (the memory changed); `rejected`
naming CAI-PORT-READONLY when the import itself refuses the export (legal, and a known
portability gap); `skip` for a consumer with no write path.
"""

from __future__ import annotations

from hypothesis import strategies as st

from caiconform.adapters.base import SkipExchange
from caiconform.checks import _results, _sources, _values, _views
from caiconform.results.outcome import Result
from caiconform.spec.layout import Layout
from caiconform.spec.values import compare_values, make_values, values_source

__all__ = ["FAMILY", "ROLES", "NEEDS_GPU", "examples", "execute", "repro"]

FAMILY = "readonly"
ROLES = "consumer"
NEEDS_GPU = True
#: no example needs two streams' work to overlap (`checks` docstring)
SINGLE_QUEUE = True


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    """typestr, a nonzero C-contiguous shape and a seed (`_values.plain_arrays`)."""
    return _values.plain_arrays()


def floor(producer: str | None, consumer: str | None) -> list:
    """One C-contiguous array per dtype class (`checks._floor.plain_floor`)."""
    from caiconform.checks import _floor

    return _floor.plain_floor()


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    from caiconform.reference.consumer import consume
    from caiconform.reference.producer import ReferenceArray, sentinel_of

    typestr, shape = params["typestr"], tuple(params["shape"])
    values = make_values(typestr, shape, params["seed"])
    ref = ReferenceArray(values, Layout(shape), typestr, readonly=True)
    context = f"reference->{consumer} read-only {typestr} {shape}"
    try:
        view = _views.hold(consumer, ref)
    except SkipExchange:
        raise
    except Exception as exc:  # the import refused the read-only export: a legal answer
        rule = _results.named_refusal(ref.__cuda_array_interface__, exc) or "CAI-PORT-READONLY"
        return _results.rejected(
            rule, exc, "a read-only view, or this refusal", f"{context}: import"
        )
    try:
        write = _views.writer(consumer, view, sentinel_of(values))
    except SkipExchange:
        raise
    except Exception as exc:  # the library cannot hold the values to write (its own copy of
        # a complex256 sentinel, say): no write was tried, so nothing is known of the flag
        raise SkipExchange(
            f"{consumer} cannot hold the values to write ({_results.describe_exception(exc)})"
        ) from exc
    try:
        how = write()
    except Exception as exc:  # the library refused the write: the flag is honoured
        return _results.passed(
            f"{context}: the write was refused ({_results.describe_exception(exc)})"
        )
    after = consume(ref, sync="host").values
    mismatch = compare_values(after, values)
    if mismatch is not None:
        return _results.failed(
            "CAI-DATA-READONLY-HONOURED",
            f"the write through the {consumer} view reached read-only memory: {mismatch}",
            "the write refused or the data exposed read-only",
            context,
        )
    if how == _views.READONLY_VIEW:
        return _results.passed(f"{context}: the {consumer} view is read-only")
    return _results.passed(f"{context}: the write went to a copy; the read-only memory is intact")


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    shape = tuple(params["shape"])
    return _sources.repro_script(
        f"readonly: {consumer} imports a read-only CAI export and is asked to write through it; "
        f"the read-only memory must not change [CAI-DATA-READONLY-HONOURED].",
        values_source(params["typestr"], shape, params["seed"]),
        "from caiconform.checks._views import hold, writer\n"
        "from caiconform.reference.consumer import consume\n"
        "from caiconform.reference.producer import ReferenceArray, sentinel_of\n"
        "from caiconform.spec.layout import Layout\n\n"
        f"obj = ReferenceArray(values, Layout({shape!r}), {params['typestr']!r}, readonly=True)\n"
        "print(obj.__cuda_array_interface__)\n"
        f"view = hold({consumer!r}, obj)\n"
        f"print('write:', writer({consumer!r}, view, sentinel_of(values))())\n"
        "after = consume(obj).values\n"
        "print('memory intact:', after.tobytes() == values.tobytes())\n",
    )
