"""lifetime: drop the producer while a consumer holds its data; then drop the consumer.

The reference producer allocates through a tracking memory manager with a log of its own, so
each free is observed (docs/internals.md, Lifetime observed). The consumer imports the array
with its public call and keeps the view; we drop our reference to the producer and run the garbage collector. A view
that aliases the allocation must keep it alive [CAI-LIFETIME-DATA-HELD], and the data must be
intact; once the view is dropped too, the memory must be freed [CAI-LIFETIME-RELEASED]. A
consumer that copied on import (its view lies elsewhere) does not need the producer at all.

Outcomes: `pass`; `fail` CAI-LIFETIME-DATA-HELD (freed under an aliasing view, or data changed
while held) or CAI-LIFETIME-RELEASED (still allocated after every view was dropped); `rejected`
(CAI-CONSUMER-READS-DESCRIBED) when the consumer refuses a plain array.
"""

from __future__ import annotations

import gc

from hypothesis import strategies as st

from caiconform.adapters.base import SkipExchange
from caiconform.checks import _encoding, _results, _sources, _values, _views
from caiconform.results.outcome import Result
from caiconform.spec.layout import Layout
from caiconform.spec.values import compare_values, make_values, values_source

__all__ = ["FAMILY", "ROLES", "NEEDS_GPU", "examples", "execute", "repro"]

FAMILY = "lifetime"
ROLES = "consumer"
NEEDS_GPU = True
#: no example needs two streams' work to overlap (`checks` docstring)
SINGLE_QUEUE = True


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    """typestr, a nonzero C-contiguous shape and a seed (`_values.plain_arrays`)."""
    return _values.plain_arrays()


def _collect() -> None:
    """Two passes: finalizers run in the first can release objects freed in the second."""
    gc.collect()
    gc.collect()


def floor(producer: str | None, consumer: str | None) -> list:
    """One C-contiguous array per dtype class (`checks._floor.plain_floor`)."""
    from caiconform.checks import _floor

    return _floor.plain_floor()


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    from caiconform.adapters.numba_impls import role
    from caiconform.reference.consumer import consume
    from caiconform.reference.producer import ReferenceArray
    from caiconform.reference.tracking import AllocationLog, TrackingMemoryManager

    if role(consumer) == "numba-kernel":
        raise SkipExchange(
            "a numba kernel launch keeps no view of its arguments once it returns; the view a "
            "user keeps is numba's as_cuda_array (consumer numba)"
        )
    typestr, shape = params["typestr"], tuple(params["shape"])
    values = make_values(typestr, shape, params["seed"])
    log = AllocationLog()
    ref = ReferenceArray(values, Layout(shape), typestr, manager=TrackingMemoryManager(log))
    base, size = ref.allocation.ptr, ref.allocation.size
    interface = dict(ref.__cuda_array_interface__)
    context = f"reference->{consumer} {typestr} {shape}"
    try:
        view = _views.hold(consumer, ref)
    except SkipExchange:
        raise
    except Exception as exc:  # refusing a plain C array is an interop gap ...
        # ... unless the refusal names its own reason (a type few consumers hold)
        rule = _results.named_refusal(interface, exc) or "CAI-CONSUMER-READS-DESCRIBED"
        return _results.rejected(rule, exc, "a view", context)
    ptr = _views.view_pointer(view)
    aliased = ptr is not None and base <= ptr < base + size
    del ref
    _collect()
    if not log.is_live(base):
        if aliased:
            del view
            return _results.failed(
                "CAI-LIFETIME-DATA-HELD",
                "the allocation was freed while the consumer's view of it was alive",
                "the owner kept alive by the view",
                context,
            )
        del view
        return _results.passed(f"{context}: the consumer copied on import; the producer was freed")
    held = consume(_encoding.InterfaceObject(interface), sync="host").values
    mismatch = compare_values(held, values)
    if mismatch is not None:
        return _results.failed(
            "CAI-LIFETIME-DATA-HELD",
            f"the data changed while held: {mismatch}",
            "the data intact while the view lives",
            context,
        )
    del view, held
    _collect()
    if log.is_live(base):
        return _results.failed(
            "CAI-LIFETIME-RELEASED",
            "the allocation still live after the consumer's view was dropped",
            "the memory freed once no view holds it",
            context,
        )
    return _results.passed(f"{context}: held while viewed, freed after")


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    shape = tuple(params["shape"])
    return _sources.repro_script(
        f"lifetime: {consumer} holds a view of a reference array; the producer is dropped and "
        f"collected (memory must stay), then the view (memory must be freed).",
        values_source(params["typestr"], shape, params["seed"]),
        "import gc\n\n"
        "from caiconform.checks._views import hold\n"
        "from caiconform.reference.producer import ReferenceArray\n"
        "from caiconform.reference.tracking import AllocationLog, TrackingMemoryManager\n"
        "from caiconform.spec.layout import Layout\n\n"
        "log = AllocationLog()\n"
        f"obj = ReferenceArray(values, Layout({shape!r}), {params['typestr']!r}, "
        "manager=TrackingMemoryManager(log))\n"
        "base = obj.allocation.ptr\n"
        f"view = hold({consumer!r}, obj)\n"
        "del obj\n"
        "gc.collect()\n"
        "print('live while the view is held:', log.is_live(base))\n"
        "del view\n"
        "gc.collect()\n"
        "print('live after the view is dropped:', log.is_live(base))\n",
    )
