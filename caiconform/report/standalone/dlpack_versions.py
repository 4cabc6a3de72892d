"""dlpack_versions: a producer's capsule for each `max_version` a consumer may pass.

A producer's group (the only kind this family has) is a claim about the capsule it returned:
the producer's array, in the example's layout, is asked `__dlpack__` with the example's
`max_version` (left out, None, (1, 0), (1, 1), (1, 3), (2, 0)) and the capsule, read with ctypes, is
held to the array it comes from (shape, element strides, element 0, the values). A BufferError
is the right answer for an array DLPack cannot describe; any other refusal is not this
family's defect and prints OK.
"""

from __future__ import annotations

from typing import Any

from caiconform.report.standalone import dlpack_exchange as dx
from caiconform.report.standalone import exchange as ex
from caiconform.report.standalone._text import Script, array_of

__all__ = ["script", "kwargs_source"]


def kwargs_source(max_version: Any) -> str:
    """Source of the `__dlpack__` keywords for an example's max_version ("omitted": none)."""
    if max_version == "omitted":
        return "{}"
    if max_version is None:
        return '{"max_version": None}'
    major, minor = (int(v) for v in max_version)
    return f'{{"max_version": ({major}, {minor})}}'


def script(group: dict, params: dict, producer: str | None, consumer: str | None) -> str | None:
    array = array_of(params)
    if array is None or producer in (None, "reference") or group.get("role") != "producer":
        return None
    kwargs = kwargs_source(params["max_version"])
    context = ex.context_of(array, f" from {producer}, max_version {params['max_version']}")
    s = Script(
        f"{producer} as DLPack producer: the capsule of an array of {context} "
        f"[{group.get('rule')}]."
    )
    ex.header(s, group)
    if not dx.producer_capsule(s, group, producer, array, kwargs, context):
        return None
    return s.render()
