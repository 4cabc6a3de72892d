"""Memory kind as a dimension of the examples: drawn per example, never a cell of its own.

Producers hand out more than `cuMemAlloc` memory (`caiconform.cuda.memkinds`), and a consumer
that assumes one kind (a context owning the pointer, an address range, device memory type)
breaks on another. Multiplying every cell by seven kinds would multiply the run's cost; so a
family whose arrays a producer builds adds one param, `memory`, to each example instead:

- drawn examples draw it (`drawn`), shrinking toward "device";
- the coverage floor spreads the kinds over its fixed examples in turn (`spread`), so every
  consumer meets every kind in every run, the same in each, at no extra example.

The kinds a cell draws are the producer's `memory_kinds` (the reference producer: every kind;
a library: the kinds it makes itself, e.g. Numba's managed and mapped arrays; "device" alone
for the rest, which then draw nothing). A library's own kinds are given to examples without
pending work only (stream scenario "none"): its stream scenarios copy inside its buffer with
device-array APIs its other kinds need not offer, so those examples stay on device memory.
The worker makes the example's kind current while it runs (`memkinds.using_kind`), and the
producer allocates it.

The runner asks `examples_of` and `floor_of` rather than the family, for the families of
`FAMILIES`. Not there: zero_size (a zero-size array has no allocation), devices (a device-1
array of a pool or VMM kind is readable from device 0 only where caiconform grants it, per
pool or mapping, not by the peer access libraries enable: the family would judge those grants)
and adversarial (its mutants' memory is the rebase's; its read past an allocation always uses
the VMM kind, whose guard makes that read fault every time).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

__all__ = [
    "FAMILIES",
    "KINDS_ENV",
    "allowed_kinds",
    "kinds_for",
    "drawn",
    "spread",
    "examples_of",
    "floor_of",
]

#: environment variable naming the kinds a run may draw, comma-separated (default: every
#: kind); "device" draws none, every example on cuMemAlloc memory (to measure what the
#: dimension costs).
#: `caiconform run --memory-kinds` sets it for the run (and records it in run.json)
KINDS_ENV = "CAICONFORM_MEMORY_KINDS"

#: the families whose examples draw a memory kind
FAMILIES = frozenset(
    {"schema", "roundtrip", "agreement", "streams", "lifetime", "readonly", "mask", "versions"}
)


def kinds_for(producer: str | None) -> tuple[str, ...]:
    """The memory kinds the examples of a cell whose arrays `producer` builds draw from
    (None: the reference producer, which the consumer-role families use)."""
    from caiconform.cuda.memkinds import MEMORY_KINDS

    allowed = allowed_kinds()
    if producer is None or producer == "reference":
        kinds: tuple[str, ...] = MEMORY_KINDS
    else:
        try:
            from caiconform.adapters.registry import get

            kinds = tuple(getattr(get(producer), "memory_kinds", ("device",)))
        except Exception:  # an unknown or unloadable producer makes device memory only
            kinds = ("device",)
    return tuple(k for k in MEMORY_KINDS if k in kinds and k in allowed) or ("device",)


def allowed_kinds() -> tuple[str, ...]:
    """The kinds `KINDS_ENV` allows (every kind when unset); ValueError names unknown ones."""
    import os

    from caiconform.cuda.memkinds import MEMORY_KINDS, check_kind

    raw = os.environ.get(KINDS_ENV, "").strip()
    if not raw:
        return MEMORY_KINDS
    return tuple(check_kind(k.strip()) for k in raw.split(",") if k.strip())


def drawn(strategy: st.SearchStrategy[dict], producer: str | None) -> st.SearchStrategy[dict]:
    """`strategy`'s params with a drawn `memory` kind (shrinking toward "device"); unchanged
    when the kinds are device memory alone (one other kind is drawn every time)."""
    kinds = kinds_for(producer)
    if kinds == ("device",):
        return strategy
    library = producer not in (None, "reference")
    return st.tuples(strategy, st.sampled_from(kinds)).map(
        lambda pk: {**pk[0], "memory": _kind(pk[0], pk[1], library)}
    )


def _kind(params: dict, kind: str, library: bool) -> str:
    """`kind`, or "device" for a library's example with pending work (the module docstring)."""
    if library and params.get("stream_scenario", "none") != "none":
        return "device"
    return kind


def spread(floor: list[Any], producer: str | None) -> list[Any]:
    """The floor's examples with the producer's kinds given in turn (`memory` in params and
    coverage): each kind meets the consumer once per len(kinds) floor examples. Device
    memory alone leaves the params alone; the coverage says "device"."""
    from caiconform.checks._floor import FloorExample

    kinds = kinds_for(producer)
    if kinds == ("device",):
        return [_labelled(example) for example in floor]
    library = producer not in (None, "reference")
    out, turn = [], 0
    for example in floor:
        kind = _kind(example.params, kinds[turn % len(kinds)], library)
        if kind == kinds[turn % len(kinds)]:  # the kind's turn was taken
            turn += 1
        out.append(
            FloorExample({**example.coverage, "memory": kind}, {**example.params, "memory": kind})
        )
    return out


def examples_of(module: Any, producer: str | None, consumer: str | None) -> Any:
    """The family `module`'s examples for the cell, with a memory kind where it draws one."""
    strategy = module.examples(producer, consumer)
    return drawn(strategy, producer) if getattr(module, "FAMILY", None) in FAMILIES else strategy


def floor_of(module: Any, producer: str | None, consumer: str | None) -> list[Any]:
    """The family `module`'s coverage floor for the cell ([] when it declares none), the
    memory kinds spread over it where it draws one."""
    floor = getattr(module, "floor", None)
    examples = list(floor(producer, consumer)) if floor else []
    if getattr(module, "FAMILY", None) in FAMILIES:
        return spread(examples, producer)
    return [_labelled(example) for example in examples]


def _labelled(example: Any) -> Any:
    """`example` with its memory kind among its coverage labels (its params' kind, else
    "device"), so every floor record says which kind it exchanged."""
    from caiconform.checks._floor import FloorExample

    kind = example.params.get("memory", "device")
    return FloorExample({**example.coverage, "memory": kind}, example.params)
