"""What the producer-side DLPack families (dlpack_streams, dlpack_copy, dlpack_versions) share:
asking a producer's object for a capsule with chosen keywords (`ask`), the object's own device
and data pointer (`device_of`, `own_pointer`), and the elements a capsule describes, read into
host memory (`read`).

`ask` calls `__dlpack__` exactly as a consumer would, and returns what came back without
judging it: the families judge (docs/spec/dlpack/array_api_dlpack.md says what each keyword
asks of the producer). An object a stream scenario hands out inside the library's `with
stream:` block (`adapters._scenarios.UnderStream`) is asked inside that block too: DLPack
producers order their work on the stream that is current when `__dlpack__` is called, as
user code does when it exports inside `with stream:`.

`read` is the reference consumer's read (`caiconform.reference.dlpack_read`): host memory
(kDLCPU) with ctypes, CUDA memory with the reference CAI consumer (which checks every byte lies
in one allocation before it reads), on the stream the capsule was asked for: the consumer's own
stream waits on an event recorded on that stream after `__dlpack__` returned, so what the
producer ordered before that stream is finished, and nothing else is waited for.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from caiconform.dlpack.capsule import Capsule, read_capsule
from caiconform.dlpack.devices import dlpack_device
from caiconform.dlpack.errors import DLPackError

__all__ = [
    "produce",
    "adapter",
    "capabilities",
    "pending_scenarios",
    "undescribable",
    "Answer",
    "ask",
    "device_of",
    "own_pointer",
    "keyword_refused",
    "read",
    "LEGACY",
]

#: the CUDA legacy default stream, which `stream=None` names (the producer "must assume the
#: legacy default stream")
LEGACY = 1


@dataclass
class Answer:
    """What one `__dlpack__` call gave: `capsule` (parsed) and `raw` (the capsule object: keep
    it alive while its memory is read), or `error` (what the call raised), or `unreadable` (a
    return value `caiconform.dlpack.capsule.read_capsule` could not parse, and why)."""

    capsule: Capsule | None = None
    raw: Any = None
    error: BaseException | None = None
    unreadable: str | None = None


def produce(name: str, values: np.ndarray, layout: Any, typestr: str, scenario: str) -> Any:
    """Producer `name`'s object for the example (`_exchange.produce`: a failure there is the
    producer's, SkipExchange passes through)."""
    from caiconform.checks import _exchange

    return _exchange.produce(name, values, layout, typestr, scenario)


def adapter(name: str) -> Any:
    """The registry's adapter of `name` (`_exchange.adapter`)."""
    from caiconform.checks import _exchange

    return _exchange.adapter(name)


def capabilities(name: str | None) -> frozenset[str]:
    """The capabilities of adapter `name`; none when it cannot be loaded."""
    if name is None:
        return frozenset()
    try:
        return frozenset(adapter(name).capabilities)
    except Exception:  # noqa: BLE001 - an adapter that cannot load offers nothing
        return frozenset()


def pending_scenarios(name: str | None) -> tuple[str, ...]:
    """The stream scenarios in which producer `name` leaves its final write pending on a stream
    it orders before the consumer's when `__dlpack__` is called: for a library, its default
    stream and a non-blocking stream of its own, each current at the call (`library-default`,
    `nonblocking`); for the reference producer, its own non-blocking streams (`pending`), which
    its `__dlpack__` orders by events; none for a producer without the `streams` capability."""
    if name == "reference":
        return ("pending",)
    if "streams" in capabilities(name):
        return ("library-default", "nonblocking")
    return ()


def undescribable(typestr: str, layout: Any = None) -> str | None:
    """Why DLPack cannot describe an array of `typestr` at `layout` (a `Layout`; None: C
    contiguous), so that a BufferError is the right answer: no type code or a non-native byte
    order (`dlpack_roundtrip.exportable`), or byte strides that are no multiple of the item
    size (DLPack strides count elements). None when it can."""
    from caiconform.checks.dlpack_roundtrip import exportable
    from caiconform.spec.dtypes import numpy_dtype

    ok, why = exportable(typestr)
    if not ok:
        return why
    if layout is not None:
        itemsize = numpy_dtype(typestr).itemsize
        strides = layout.effective_strides(itemsize)
        if itemsize and any(stride % itemsize for stride in strides):
            return (
                f"DLPACK-STRIDES-ELEMENTS: byte strides {tuple(strides)} are no multiple of "
                f"the item size {itemsize}"
            )
    return None


def _target(obj: Any) -> tuple[Any, Any]:
    """(the object whose methods are called, a zero-argument context-manager factory)."""
    from caiconform.adapters._scenarios import UnderStream

    if isinstance(obj, UnderStream):
        return obj.array, obj.enter
    return obj, contextlib.nullcontext


def ask(obj: Any, **kwargs: Any) -> Answer:
    """`obj.__dlpack__(**kwargs)`, inside the library's current-stream block for an
    `UnderStream`; never raises for what the producer does."""
    target, enter = _target(obj)
    try:
        with enter():
            raw = target.__dlpack__(**kwargs)
    except Exception as exc:  # noqa: BLE001 - the producer's answer, judged by the family
        return Answer(error=exc)
    try:
        return Answer(capsule=read_capsule(raw), raw=raw)
    except DLPackError as exc:
        return Answer(raw=raw, unreadable=str(exc))


def device_of(obj: Any) -> tuple[int, int] | None:
    """`obj.__dlpack_device__()` as (device_type, device_id) (`dlpack_device`, any pair read),
    None when it cannot be had."""
    target, _enter = _target(obj)
    try:
        return dlpack_device(target, exact=False)
    except Exception:  # noqa: BLE001 - judged by the capsule validator, not here
        return None


def own_pointer(obj: Any) -> int | None:
    """The address of element 0 of the object's own memory, from its CUDA Array Interface
    (or, on the host, numpy's array interface); None when it has neither or it is 0."""
    for name in ("__cuda_array_interface__", "__array_interface__"):
        try:
            described = getattr(obj, name)
            pointer = int(described["data"][0])
        except Exception:  # noqa: BLE001 - no such interface: try the next
            continue
        return pointer or None
    return None


def keyword_refused(exc: BaseException | None) -> bool:
    """True for a TypeError about the call's keywords: a `__dlpack__` whose signature predates
    them (array API 2023.12 added `max_version`, `dl_device` and `copy`), not a refusal of the
    data."""
    if not isinstance(exc, TypeError):
        return False
    said = str(exc).lower()
    return any(word in said for word in ("keyword", "argument", "max_version", "dl_device", "copy"))


def read(capsule: Capsule, typestr: str, stream: int | None = None) -> np.ndarray:
    """The elements `capsule` describes, as a host array of `typestr`'s numpy dtype.

    stream: the CUDA stream the read is ordered after (None: the legacy default stream); not
    used for host memory. ValueError when the capsule's element size is not `typestr`'s or its
    device is neither the host nor CUDA; the reference consumer's ConsumerRefused when the
    memory it describes cannot be read safely.
    """
    from caiconform.reference.dlpack_read import read_elements
    from caiconform.spec.dtypes import numpy_dtype

    dtype = numpy_dtype(typestr)
    if capsule.itemsize != dtype.itemsize:
        raise ValueError(
            f"the capsule's element type {capsule.type_name} is {capsule.itemsize} bytes, "
            f"{typestr} is {dtype.itemsize}"
        )
    return read_elements(capsule, dtype, LEGACY if stream is None else stream)
