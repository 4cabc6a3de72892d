"""roundtrip and zero_size: the producer's array in the example's layout, read by the consumer.

A consumer's group (misread, refused, crashed) gets the exchange itself: the producer's own
upload or strided view (the reference producer: the driver and a literal dict), the consumer's
read after its warm-up, the verdict. A producer's group is a claim about its dict, judged by
`schema.producer_script`.
"""

from __future__ import annotations

from caiconform.report.standalone import exchange as ex
from caiconform.report.standalone._text import Script, array_of

__all__ = ["script"]


def script(group: dict, params: dict, producer: str | None, consumer: str | None) -> str | None:
    array = array_of(params)
    if array is None:
        return None
    if group.get("role") == "producer":
        from caiconform.report.standalone import schema

        return schema.producer_script(group, params, producer, consumer)
    if consumer is None:
        return None
    context = ex.context_of(array, f" from {producer or 'the reference producer'}")
    s = Script(
        f"{group.get('library')} as consumer: an array of {context} read back "
        f"[{group.get('rule') or group.get('input_rule')}]."
    )
    ex.header(s, group)
    ex.values(s, array)
    if producer in (None, "reference"):
        ex.reference_export(s, array)
    elif ex.library_export(s, producer, array):
        s.add(
            "obj = Exported(obj.__cuda_array_interface__, owner=obj)  # the consumer sees the CAI only"
        )
    else:
        return None
    if not ex.reader(s, consumer, array):
        return None
    if group.get("outcome") in ex.CRASH_OUTCOMES:
        return ex.crash_script(s, group, consumer, context)
    ex.judge_read(s, group, consumer, context)
    return s.render()
