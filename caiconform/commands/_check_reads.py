"""`caiconform check`'s repeated reads: an export read more than once must not change.

A consumer may read `__cuda_array_interface__` (or call `__dlpack__`) again after judging it; an
export that is valid on the first read and something else on the next is no export to rely on:
`check` reports the change as a MUST finding naming the entry (CAI-ATTR-DICT for the dict;
DLPACK-CAPSULE-NAME or DLPACK-PRODUCER-DESCRIBES-DATA for the capsule), and its producer must
describe the same memory on every read.
`snapshot` turns what a read gave into plain builtins (dict, tuple, list, int, str, None) using
only the builtin types' own methods, so a value whose `__eq__`, `__hash__` or `__repr__` raises
or is huge is compared and quoted safely; `difference` names the first entry that changed.
`Watched` stands for an object judged by its DLPack export: it tells `check` which method runs
(so a process that ends there is that method's finding) and summarizes each capsule returned.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from caiconform.dlpack.capsule import STRUCTS, capsule_name, capsule_pointer
from caiconform.dlpack.header import VERSIONED

__all__ = ["snapshot", "difference", "shown", "Watched", "capsule_summary", "READS"]

#: how many times `check` reads an export in all (the judged read included)
READS = 3
#: how deep a snapshot follows nested containers
_DEPTH = 32
#: characters of a value a finding quotes
_SHOWN = 80
#: the most dimensions a capsule summary reads
_MAX_NDIM = 64


def snapshot(value: Any, depth: int = 0) -> Any:
    """`value` as plain builtins, read through the builtin types' own methods (a subclass's
    overrides are not called); an object of another type stands as "<module.Name object>"."""
    kind = type(value)
    if depth > _DEPTH:
        return "<nested too deeply>"
    if value is None or kind is bool:
        return value
    if issubclass(kind, dict):
        return {snapshot(k, depth + 1): snapshot(v, depth + 1) for k, v in dict.items(value)}
    if issubclass(kind, tuple):
        return tuple(snapshot(v, depth + 1) for v in tuple.__iter__(value))
    if issubclass(kind, list):
        return [snapshot(v, depth + 1) for v in list.__iter__(value)]
    if issubclass(kind, int):
        return int.__int__(value)
    if issubclass(kind, float):
        return f"<float {float.__repr__(value)}>"
    if issubclass(kind, str):
        return str.__str__(value)
    return f"<{kind.__module__}.{kind.__qualname__} object>"


def shown(value: Any) -> str:
    """A snapshot quoted on one line, cut to `_SHOWN` characters."""
    if isinstance(value, str) and len(value) > _SHOWN:
        value = value[:_SHOWN]
    text = " ".join(repr(value).split())
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def difference(first: Any, later: Any) -> tuple[str, Any, Any] | None:
    """(the entry that changed, its first value, its later value) for two snapshots, or None
    when they are equal; the entry is "['key']" for a dict's key, "" for the whole value."""
    if first == later:
        return None
    if type(first) is dict and type(later) is dict:
        for key in [*first, *(k for k in later if k not in first)]:
            missing = "<no such entry>"
            if first.get(key, missing) != later.get(key, missing):
                return f"[{shown(key)}]", first.get(key, missing), later.get(key, missing)
    return "", first, later


def capsule_summary(capsule: Any) -> Any:
    """What a capsule says, as plain builtins: its name and, for a 'dltensor' or a version-1
    'dltensor_versioned' capsule, its tensor's fields (each read only where the one before it
    allows); anything else stands as its type."""
    name = capsule_name(capsule)
    if name is None:
        return {"capsule": f"a {type(capsule).__qualname__}, not a PyCapsule"}
    summary: dict[str, Any] = {"capsule": name.decode(errors="replace")}
    if name not in STRUCTS:
        return summary
    managed: Any = STRUCTS[name].from_address(capsule_pointer(capsule, name))
    if name == VERSIONED:
        summary["version"] = (int(managed.version.major), int(managed.version.minor))
        if summary["version"][0] != 1:
            return summary
        summary["flags"] = int(managed.flags)
    tensor = managed.dl_tensor
    ndim = int(tensor.ndim)
    summary.update(
        data=int(tensor.data or 0),
        byte_offset=int(tensor.byte_offset),
        device=(int(tensor.device.device_type), int(tensor.device.device_id)),
        dtype=(int(tensor.dtype.code), int(tensor.dtype.bits), int(tensor.dtype.lanes)),
        ndim=ndim,
    )
    if 0 <= ndim <= _MAX_NDIM:
        for field in ("shape", "strides"):
            pointer = getattr(tensor, field)
            summary[field] = (
                tuple(int(pointer[i]) for i in range(ndim))
                if ctypes.cast(pointer, ctypes.c_void_p).value
                else None
            )
    return summary


class Watched:
    """Stands for `obj`, an object judged by its DLPack export: `phase(name)` is told before
    its `__dlpack_device__` or `__dlpack__` runs, `calling` names the method running (left set
    when it raises), `asked` holds the keywords of the last call that returned, and `capsules`
    the summary of each capsule returned."""

    def __init__(self, obj: Any, phase: Callable[[str], None]) -> None:
        self._obj = obj
        self._phase = phase
        self.calling: str | None = None
        self.asked: dict[str, Any] | None = None
        self.capsules: list[Any] = []

    def __dlpack_device__(self) -> Any:
        self.calling = "__dlpack_device__"
        self._phase(self.calling)
        answer = self._obj.__dlpack_device__()
        self.calling = None
        return answer

    def __dlpack__(self, **kwargs: Any) -> Any:
        self.calling = "__dlpack__"
        self._phase(self.calling)
        capsule = self._obj.__dlpack__(**kwargs)
        self.calling = None
        self.asked = kwargs
        self.capsules.append(capsule_summary(capsule))
        return capsule
