"""An object's DLPack device: `__dlpack_device__()` read once, the same way for every caller.

The capsule validator judges the answer (the array API standard: "a tuple (device_type,
device_id)", so a list or a bool is a DLPACK-DEVICE-TUPLE finding); the reference consumer and
the checks read what they can (any pair `int()` takes). Both are `dlpack_device(obj, exact=...)`:
what the method raises propagates, an answer that is no pair raises `DeviceTupleError`, whose
`seen` quotes it for a finding.
"""

from __future__ import annotations

from typing import Any

from caiconform.dlpack.errors import DLPackError

__all__ = ["dlpack_device", "DeviceTupleError"]


class DeviceTupleError(DLPackError):
    """`__dlpack_device__()` answered something other than (device_type, device_id); `seen`
    is the answer quoted (at most 80 characters)."""

    def __init__(self, seen: str) -> None:
        super().__init__(f"__dlpack_device__() returned {seen}, not (device_type, device_id)")
        self.seen = seen


def dlpack_device(obj: Any, *, exact: bool = True) -> tuple[int, int]:
    """`obj.__dlpack_device__()` as (device_type, device_id).

    exact: the answer must be a tuple of two ints (bools are not), as the array API standard
    says; exact=False reads any pair whose items `int()` takes (a list, numpy integers).
    Whatever the method raises propagates; DeviceTupleError for an answer that is no pair.
    """
    answer = obj.__dlpack_device__()
    if exact:
        if (
            isinstance(answer, tuple)
            and len(answer) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in answer)
        ):
            return int(answer[0]), int(answer[1])
        raise DeviceTupleError(f"{answer!r:.80}")
    try:
        kind, ident = answer
        return int(kind), int(ident)
    except (TypeError, ValueError):
        raise DeviceTupleError(f"{answer!r:.80}") from None
