"""The standalone reproducers' per-library lines, found by adapter name.

A library is described once, in its adapter module: `adapter.repro` (a
`caiconform.adapters._repro.Repro`, whose docstring lists what each kind of snippet does) holds
the lines a user of that library writes for the calls the adapter makes, beside those calls.
This module only finds them, through the registry (importing an adapter module imports no
library), and asks for one kind of snippet per function. Each returns None where the library
has no such path, the reproducers do not know it, or no adapter has that name: the caller
then writes no script and says why.
"""

from __future__ import annotations

from caiconform.adapters import registry
from caiconform.adapters._repro import Array, Pending, Repro, Snip
from caiconform.spec.dtypes import OPAQUE

__all__ = [
    "lines",
    "consume",
    "consume_dlpack",
    "from_dlpack",
    "reread",
    "hold",
    "write",
    "hold_dlpack",
    "produce",
    "produce_named",
    "produce_named_dlpack",
    "pending",
    "unexportable",
    "export_setting",
    "distributions",
]

_NONE = Repro()


def lines(name: str) -> Repro:
    """The reproducer lines of adapter `name` (none for a name no adapter has)."""
    try:
        return registry.get(name).repro
    except KeyError:
        return _NONE


def consume(name: str, array: Array | None = None) -> Snip | None:
    """Lines reading `obj` into the host array `result` with consumer `name`."""
    return lines(name).consume(array)


def consume_dlpack(name: str, array: Array) -> Snip | None:
    """Lines reading `obj` into the host array `result` with consumer `name`'s DLPack import
    (the adapters' `consume_dlpack`); `obj` may expose the CAI too, which they never read."""
    return lines(name).consume_dlpack(array)


def from_dlpack(name: str, copy: bool | None, own_device: bool) -> Snip | None:
    """Lines making `kept`, consumer `name`'s from_dlpack(obj, copy=copy, device=...) (the
    device `dev` when `own_device`), and `result`, its host values."""
    return lines(name).from_dlpack(copy, own_device)


def reread(name: str) -> Snip | None:
    """Lines reading `kept` (made by `from_dlpack`) once more into the host array `again`."""
    return lines(name).reread()


def hold(name: str) -> Snip | None:
    """Lines making `view`, the library's own device object over `obj`."""
    return lines(name).hold()


def write(name: str, ndim: int) -> Snip | None:
    """Lines writing the host array `new` through `view` with the library's own API (an
    exception: the library refused the write)."""
    return lines(name).write(ndim)


def hold_dlpack(name: str) -> Snip | None:
    """Lines keeping `view`, the library's import of the capsule `obj` hands out, and `at`,
    the address of its element 0."""
    return lines(name).hold_dlpack()


def produce(name: str, array: Array) -> Snip | None:
    """Lines making the producer's object `obj` over `values` (and, for a strided layout, the
    host `image` of the allocation) in `array`'s layout; None when the library cannot express
    that layout here, and for an element type numpy has no code for (no upload of `values`
    makes one)."""
    if array.typestr in OPAQUE:
        return None
    return lines(name).produce(array)


def produce_named(name: str, array: Array) -> Snip | None:
    """Lines making producer `name`'s `obj` of an element type numpy has no code for
    (bfloat16, float8), exported over the CAI."""
    return lines(name).produce_named(array)


def produce_named_dlpack(name: str, array: Array) -> Snip | None:
    """Lines making producer `name`'s plain `obj` of such a type, to be seen through DLPack."""
    return lines(name).produce_named_dlpack(array)


def pending(name: str, scenario: str, array: Array) -> Pending | Snip | None:
    """How library `name` leaves its final write pending in `scenario` (the adapters'
    `_scenarios.produce_staged`): its stream and copy (a `Pending`), or lines making `obj`
    with its work still running (a `Snip`); None where it cannot (or the reproducers do not
    know how)."""
    return lines(name).pending(scenario, array)


def unexportable(name: str, kind: str) -> Snip | None:
    """Lines making producer `name`'s object of `kind`, which cannot export (the adapters'
    `unexportable`)."""
    return lines(name).unexportable(kind)


def export_setting(name: str, setting: str) -> str | None:
    """The line putting producer `name`'s export setting `setting` in force (before the
    library's import, which reads it)."""
    return lines(name).export_setting(setting)


def distributions() -> dict[str, str]:
    """Import prefix -> distribution, for the libraries of every adapter."""
    found: dict[str, str] = {}
    for name in registry.names():
        found.update(lines(name).distributions)
    return found
