"""dlpack_roundtrip: an array handed over DLPack alone, read by the consumer's DLPack import.

A consumer's group (a valid capsule refused, misread, or a crash) gets the exchange itself: the
producer's array in the example's layout (caiconform's reference producer rebuilt with ctypes:
the values uploaded with the driver and a capsule per `__dlpack__` call; a library's own
upload or strided view behind `DLPackOnly`), the consumer's DLPack import, the verdict. A
producer's group is a claim about its capsule: the producer's array is asked `__dlpack__` as
the run asked it (stream -1, max_version (1, 0)) and the capsule, read with ctypes, is held to
the array it comes from (shape, element strides, element 0, the values).
"""

from __future__ import annotations

from caiconform.report.standalone import dlpack_exchange as dx
from caiconform.report.standalone import exchange as ex
from caiconform.report.standalone._text import Script, array_of

__all__ = ["script", "consumer_script"]

#: the keywords the run's capsule check asked a producer with (`dlpack.validate.check_dlpack`)
_ASKED = '{"stream": -1, "max_version": (1, 0)}'


def script(group: dict, params: dict, producer: str | None, consumer: str | None) -> str | None:
    array = array_of(params)
    if array is None:
        return None
    if group.get("role") == "producer":
        if producer in (None, "reference"):
            return None
        context = ex.context_of(array, f" from {producer}")
        s = Script(
            f"{producer} as DLPack producer: the capsule of an array of {context} "
            f"[{group.get('rule')}]."
        )
        ex.header(s, group)
        if not dx.producer_capsule(s, group, producer, array, _ASKED, context, fallback=True):
            return None
        return s.render()
    return consumer_script(group, array, producer, consumer)


def consumer_script(group: dict, array, producer: str | None, consumer: str | None) -> str | None:
    """The consumer's DLPack import of the producer's array (also the dlpack_lifetime family's
    refusals of a plain array)."""
    if consumer is None:
        return None
    context = ex.context_of(array, f" from {producer or 'the reference producer'}")
    s = Script(
        f"{consumer} as DLPack consumer: an array of {context} imported over DLPack "
        f"[{group.get('rule') or group.get('input_rule')}]."
    )
    ex.header(s, group)
    if not dx.producer(s, producer, array):
        return None
    if not dx.reader(s, consumer, array):
        return None
    if group.get("outcome") in ex.CRASH_OUTCOMES:
        dx.show_capsule(s)
        return ex.crash_script(s, group, consumer, context, shown="obj.__dlpack_device__()")
    dx.judge_import(s, group, consumer, context)
    return s.render()
