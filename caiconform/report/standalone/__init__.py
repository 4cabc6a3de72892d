"""Standalone reproducers: for a catalogue group, a script that shows its defect with numpy,
cuda-bindings and the libraries of the exchange alone, printing one `BUG: ...` or `OK: ...` line
(exit 1 or 0).

`script_for_group(group)` takes one group of a run's findings.json (its `reproducer` names the
cell "family/producer/consumer" and carries the example's params) and returns the script, or
None where no template covers the group (`NOT_COVERED` says why, per case). One module per
check family writes its scripts; `libraries` finds each library's snippets in its adapter
(`adapter.repro`, declared beside the calls it mirrors), `exchange` the parts they share
(`dlpack_exchange` those of the DLPack families), `_text` the helpers the scripts are written
from (`_dlpack_helpers` the DLPack ones: dlpack.h's structs in ctypes, a capsule's reader, a
capsule builder whose deleter counts its calls). Nothing in a script imports caiconform: a
script runs where caiconform is not installed.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

__all__ = ["FAMILIES", "NOT_COVERED", "NO_CULPRIT", "script_for_group", "why_none"]

#: why a group of no single library gets no script
NO_CULPRIT = (
    "no single culprit: the run could not tell which library is at fault, and a script is "
    "filed against one library"
)
#: what gets no script, and why
NOT_COVERED = [
    NO_CULPRIT,
    "caiconform's own defects: the PyCUDA 0-d producer group (its adapter uploads a 0-d "
    "array as shape (1,)) and the JAX DLPack read-only comparison on an unversioned capsule "
    "(a `dltensor` capsule has no read-only flag to compare) are the harness's, not the "
    "library's: no script would show a library defect",
    "families aliasing and devices: their examples need several entry points or GPUs and no "
    "group at or above refuses-valid has come from them",
    "Numba's own stream scenarios numba-sync, numba-stream-none and numba-sync-off: judged by "
    "a sequence of Numba calls, not one exchange (numba-export's groups are producer checks)",
    "consumers without a snippet (dali, mpi4py, pyarrow), and layouts a library producer "
    "cannot make (a strided JAX, RMM, PyCUDA or Warp array; negative or odd strides in torch)",
    "dicts holding objects the journal could not record ($raising, $opaque values)",
    "a producer's group under a rule the producer checks do not read off the dict "
    "(schema.CHECKS lists those they do), and the streams family's producer groups other than "
    "stream 0, a version 2 export of pending work and an insufficient exported stream",
    "DLPack producer groups of caiconform's reference producer (its own defects), and a DLPack "
    "producer's capsule judged on anything but its shape, strides, element 0 and values (its "
    "name, version, dtype code, device type, flags beyond dlpack_copy's): the scripts hold a "
    "capsule to the array it comes from, not to the whole capsule validator",
    "dlpack_copy's device-cpu-pending and readonly cases, dlpack_streams' and dlpack_capi's "
    "pending scenarios: they need the producer's work left pending or a read-only export, "
    "which the scripts rebuild for no library",
    "dlpack_lifetime's groups of a library producer (its deleter cannot be counted), and "
    "element types a library producer cannot make here (bfloat16 and float8 but in torch and "
    "JAX; a strided JAX, RMM, PyCUDA or Warp array) nor the numba kernels read (ndim above 3, "
    "no numpy dtype)",
]

#: harness defects (see NOT_COVERED): (library, role, rule) -> how to recognise its example
_HARNESS = {
    ("pycuda", "producer", "CAI-PRODUCER-DESCRIBES-DATA"): lambda p: _shape(p) == [],
    ("jax", "producer", "CAI-DLPACK-AGREE"): lambda p: True,
}


def _shape(params: dict) -> Any:
    layout = params.get("layout")
    return (layout or {}).get("shape", params.get("shape"))


def _families() -> dict[str, ModuleType]:
    from caiconform.report.standalone import (
        adversarial,
        agreement,
        dlpack_adversarial,
        dlpack_capi,
        dlpack_consumer,
        dlpack_copy,
        dlpack_lifetime,
        dlpack_roundtrip,
        dlpack_streams,
        dlpack_versions,
        lifetime,
        mask,
        readonly,
        roundtrip,
        schema,
        streams,
        versions,
    )

    return {
        "roundtrip": roundtrip,
        "zero_size": roundtrip,
        "versions": versions,
        "mask": mask,
        "readonly": readonly,
        "lifetime": lifetime,
        "streams": streams,
        "agreement": agreement,
        "schema": schema,
        "adversarial": adversarial,
        "dlpack_roundtrip": dlpack_roundtrip,
        "dlpack_copy": dlpack_copy,
        "dlpack_versions": dlpack_versions,
        "dlpack_lifetime": dlpack_lifetime,
        "dlpack_adversarial": dlpack_adversarial,
        "dlpack_streams": dlpack_streams,
        "dlpack_capi": dlpack_capi,
        "dlpack_consumer": dlpack_consumer,
    }


FAMILIES = (
    "roundtrip",
    "zero_size",
    "versions",
    "mask",
    "readonly",
    "lifetime",
    "streams",
    "agreement",
    "schema",
    "adversarial",
    "dlpack_roundtrip",
    "dlpack_copy",
    "dlpack_versions",
    "dlpack_lifetime",
    "dlpack_adversarial",
    "dlpack_streams",
    "dlpack_capi",
    "dlpack_consumer",
)


def why_none(group: dict) -> str | None:
    """Why `group` gets no script before any template is tried (None: a template may)."""
    rep = group.get("reproducer") or {}
    cell, params = rep.get("cell"), rep.get("params")
    if not isinstance(cell, str) or cell.count("/") != 2 or not isinstance(params, dict):
        return "the group carries no example (reproducer cell and params)"
    family = cell.split("/")[0]
    if family not in FAMILIES:
        return f"no template for family {family!r}"
    check = _HARNESS.get((group.get("library"), group.get("role"), group.get("rule")))
    if check is not None and check(params):
        return "caiconform's own defect, not the library's"
    if group.get("library") is None:
        return NO_CULPRIT
    return None


def script_for_group(group: dict) -> str | None:
    """The standalone reproducer of one findings.json group, or None (see NOT_COVERED)."""
    if why_none(group) is not None:
        return None
    rep = group["reproducer"]
    family, producer, consumer = rep["cell"].split("/")
    module = _families()[family]
    try:
        return module.script(
            group,
            rep["params"],
            None if producer == "-" else producer,
            None if consumer == "-" else consumer,
        )
    except (KeyError, TypeError, ValueError):  # params of another shape than the family's
        return None
