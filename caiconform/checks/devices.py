"""devices: an array on device 1 consumed while device 0 is current.

The reference producer allocates and fills on device 1; device 0's context is then made current
and the consumer reads the export. The spec's answer is that a consumer obtains a pointer usable
in its current context (cuPointerGetAttribute with CU_POINTER_ATTRIBUTE_DEVICE_POINTER)
[CAI-DATA-POINTER-CONTEXT] and reads the right bytes, or refuses cleanly. Needs two GPUs
(`MIN_GPUS`): the runner skips the cells on a machine with one, and `execute` skips too.

Outcomes: `pass`; `fail` CAI-DATA-POINTER-CONTEXT (wrong values); `rejected` naming
CAI-DATA-POINTER-CONTEXT (refused a valid export from another device).

Every example is the same exchange (one C-contiguous array, no pending work): a consumer that
poisons its context or crashes on one does so on the others. Its drawn examples name no kind
the runner's crash cap counts by (no `layout`, `mutation`, `rule`), so uncapped, a consumer
that poisons its context on every cross-device read would cost a new process (a context on
each GPU and a faulting kernel) per example, a long tail of the run (docs/performance.md).
`crash_kind` makes them one kind, capped as any other family's (`config.DRAWN_CRASH_CAP`). No example needs
two streams' work to overlap, so its workers' contexts have one hardware queue
(`SINGLE_QUEUE`): each replacement makes two contexts, one per GPU.
"""

from __future__ import annotations

from hypothesis import strategies as st

from caiconform.checks import _exchange, _results, _sources, _values
from caiconform.results.outcome import Result
from caiconform.spec.layout import Layout
from caiconform.spec.values import make_values, values_source

__all__ = [
    "FAMILY",
    "ROLES",
    "NEEDS_GPU",
    "MIN_GPUS",
    "SINGLE_QUEUE",
    "crash_kind",
    "examples",
    "execute",
    "repro",
]

FAMILY = "devices"
ROLES = "consumer"
NEEDS_GPU = True
MIN_GPUS = 2
SINGLE_QUEUE = True
#: the one kind of the family's drawn examples (`crash_kind`)
DRAWN_KIND = "drawn arrays on device 1"


def crash_kind(params: dict) -> str:
    """What the runner's crash cap counts a drawn example by: every one is the same exchange
    (DRAWN_KIND), so a consumer's third lost one skips the rest of the cell's."""
    return DRAWN_KIND


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    """typestr, a nonzero C-contiguous shape and a seed (`_values.plain_arrays`)."""
    return _values.plain_arrays()


def floor(producer: str | None, consumer: str | None) -> list:
    """One C-contiguous array per dtype class (`checks._floor.plain_floor`)."""
    from caiconform.checks import _floor

    return _floor.plain_floor()


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    from caiconform.cuda import device_count, ensure_context
    from caiconform.reference.producer import ReferenceArray

    count = device_count()
    if count < MIN_GPUS:
        return _results.skipped(f"devices needs {MIN_GPUS} GPUs; {count} visible")
    typestr, shape = params["typestr"], tuple(params["shape"])
    values = make_values(typestr, shape, params["seed"])
    ref = ReferenceArray(values, Layout(shape), typestr, device=1)
    ensure_context(0)
    return _exchange.judge_exchange(
        consumer,
        ref,
        values,
        None,
        f"reference(device 1)->{consumer}(device 0 current) {typestr} {shape}",
        read_rule="CAI-DATA-POINTER-CONTEXT",
    )


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    shape = tuple(params["shape"])
    return _sources.repro_script(
        f"devices: an array on device 1 read by {consumer} while device 0 is current.",
        values_source(params["typestr"], shape, params["seed"]),
        "from caiconform.cuda import ensure_context\n"
        "from caiconform.reference.producer import ReferenceArray\n"
        "from caiconform.spec.layout import Layout\n\n"
        f"obj = ReferenceArray(values, Layout({shape!r}), {params['typestr']!r}, device=1)\n"
        "ensure_context(0)\n",
        _sources.consumer_source(consumer),
        _sources.COMPARE_SOURCE,
    )
