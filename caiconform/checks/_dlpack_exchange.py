"""The DLPack families' exchange: a consumer's import over DLPack, and who is at fault when the
values read are not the values written.

`consume_dlpack_with(name, obj)` hands the producer's object to consumer `name` behind
`_staging.dlpack_only` (only `__dlpack__` and `__dlpack_device__` visible, so no library can
fall back to the CAI or return its own array unchanged) and calls its `consume_dlpack`.
`import_with(name, obj, copy, device)` is the same import with from_dlpack's `copy` and
`device` (`Adapter.consume_dlpack_with`), the library's result kept to be read again.
`reference_read(obj)` is the same object read by caiconform's own reading of the capsule (the
reference consumer, `ReferenceAdapter.consume_dlpack`), or, where that cannot run, through the
object's CAI by the reference CAI consumer: what decides between "the consumer misread the
capsule" (DLPACK-CONSUMER-READS-DESCRIBED) and "the capsule does not describe the array"
(DLPACK-PRODUCER-DESCRIBES-DATA), as `roundtrip` decides it for the CAI.
"""

from __future__ import annotations

from typing import Any

from caiconform.adapters.base import SkipExchange
from caiconform.checks import _exchange

__all__ = [
    "consume_dlpack_with",
    "import_with",
    "reference_read",
    "CONSUMER_RULE",
    "PRODUCER_RULE",
]

CONSUMER_RULE = "DLPACK-CONSUMER-READS-DESCRIBED"
PRODUCER_RULE = "DLPACK-PRODUCER-DESCRIBES-DATA"


def consume_dlpack_with(name: str, obj: Any) -> tuple[Any, BaseException | None]:
    """Run consumer `name`'s DLPack import on `obj`: (values, None) or (None, the exception).

    SkipExchange is not caught (the consumer cannot take part: a skip with its reason), nor is a
    missing CUDA driver an answer (`cuda.device.missing_driver`), as in `_exchange.consume_with`.
    """
    from caiconform.adapters._staging import dlpack_only

    try:
        return _exchange.adapter(name).consume_dlpack(dlpack_only(obj)), None
    except SkipExchange:
        raise
    except Exception as exc:  # any clean exception is the consumer's answer
        from caiconform.cuda.device import missing_driver

        why = missing_driver(exc)
        if why is not None:
            raise SkipExchange(f"consumer {name} cannot run here: {why}") from exc
        return None, exc


def import_with(
    name: str, obj: Any, copy: bool | None, device: tuple[int, int] | None
) -> tuple[Any, Any, BaseException | None]:
    """Consumer `name`'s from_dlpack of `obj` with `copy` and `device`
    (`Adapter.consume_dlpack_with`): (values, its result, None) or (None, None, the exception),
    SkipExchange and a missing driver handled as `consume_dlpack_with` handles them."""
    from caiconform.adapters._staging import dlpack_only

    try:
        values, result = _exchange.adapter(name).consume_dlpack_with(
            dlpack_only(obj), copy=copy, device=device
        )
        return values, result, None
    except SkipExchange:
        raise
    except Exception as exc:  # any clean exception is the consumer's answer
        from caiconform.cuda.device import missing_driver

        why = missing_driver(exc)
        if why is not None:
            raise SkipExchange(f"consumer {name} cannot run here: {why}") from exc
        return None, None, exc


def reference_read(obj: Any) -> tuple[Any, str]:
    """(values, how) read by caiconform itself: the reference consumer's reading of the capsule,
    else the reference CAI consumer on the object's CAI; (None, why) when neither can read."""
    try:
        values, exc = consume_dlpack_with("reference", obj)
    except SkipExchange as skip:
        values, exc = None, skip
    if exc is None:
        return values, "caiconform's own reading of the capsule"
    if hasattr(obj, "__cuda_array_interface__"):
        values, cai_exc = _exchange.consume_with("reference", obj)
        if cai_exc is None:
            return values, "the reference consumer reading the same array's CAI"
    return None, f"the reference consumer could not read it: {type(exc).__name__}: {exc}"
