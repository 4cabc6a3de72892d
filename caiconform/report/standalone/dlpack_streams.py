"""dlpack_streams: a producer asked `__dlpack__(stream=...)` for a finished array.

Only the examples of scenario "none" are written (the producer's work finished before the
call): the producer's plain array is asked with the example's stream value (None, 1, 2, a
non-blocking stream the script makes, -1, 0) and max_version (1, 1), as the family asks
(`caiconform.checks.dlpack_streams`). A refusal is printed (BUG for a group that is that
refusal: a value support for which is optional, DLPACK-STREAM-OPTIONAL, or a producer's
refusal of None); a capsule's values are read on the stream named (not for -1 or 0) and must
be the array's. Pending work (the family's other scenarios) is not written (`NOT_COVERED`).
"""

from __future__ import annotations

from caiconform.report.standalone import exchange as ex
from caiconform.report.standalone._text import Script, array_of

__all__ = ["script"]

_STREAMS = {None: "None", 1: "1", 2: "2", -1: "-1", 0: "0", "handle": "handle"}

_BODY = """
stream_value = {stream}
if stream_value == "handle":  # a non-blocking stream of the consumer's own
    stream_value = int(ck(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value)))
device = obj.__dlpack_device__()
try:
    capsule = obj.__dlpack__(stream=stream_value, max_version=(1, 1))
except Exception as exc:
    said = f"{{type(exc).__name__}}: {{exc}}"
    if device[0] == 1 and stream_value is not None:
        verdict(False, f"{producer} refused stream {{stream_value!r}} on the host ({{said}}), as "
                       "the text asks [DLPACK-STREAM-CPU-NONE]")
    verdict({refusal_is_bug}, f"{producer} refused __dlpack__(stream={{stream_value!r}}) "
                              f"({context}): {{said}} [{rule}]")
fields = read_capsule(capsule)
print("capsule:", fields)
if device[0] == 1 and stream_value is not None:
    verdict({cpu_bug}, f"{producer} gave a capsule for stream {{stream_value!r}} on the host, "
                       "expected a refusal: only None is accepted there [DLPACK-STREAM-CPU-NONE]")
if stream_value in (-1, 0):
    verdict(False, f"{producer} gave a capsule for stream {{stream_value}} ({context}); nothing "
                   "to read (no order asked)")
if fields["device"][0] == 1:
    got = capsule_values(fields, dtype)
else:
    steps = byte_strides(fields, dtype.itemsize)
    on = 1 if stream_value is None else stream_value
    got = read_at(fields["data"] + fields["byte_offset"], fields["shape"], dtype, steps, on)
wrong = differ(got, values)
if wrong:
    verdict({mismatch_bug}, f"{producer}'s capsule read on stream {{stream_value!r}} "
                            f"({context}): {{wrong}}; expected the array's values [{rule}]")
verdict(False, f"{producer}'s capsule read on stream {{stream_value!r}}: the array's values")
"""


def script(group: dict, params: dict, producer: str | None, consumer: str | None) -> str | None:
    array = array_of(params)
    value = params.get("stream", "?")
    if array is None or params.get("scenario") != "none" or value not in _STREAMS:
        return None
    if producer in (None, "reference"):
        return None
    rule = group.get("rule") or "DLPACK-STREAM-OPTIONAL"
    stream = '"handle"' if value == "handle" else _STREAMS[value]
    context = ex.context_of(array, f" from {producer}, stream {value}")
    s = Script(f"{producer} as DLPack producer: __dlpack__(stream={value}) ({context}) [{rule}].")
    ex.header(s, group)
    ex.values(s, array)
    if not array.plain or not ex.library_export(s, producer, array):
        return None
    refused = group.get("outcome") in ("rejected-valid", "rejected") or rule in (
        "DLPACK-STREAM-OPTIONAL",
        "DLPACK-EXPORT-BUFFERERROR",
    )
    s.add(
        _BODY.format(
            stream=stream,
            producer=producer,
            context=context,
            rule=rule,
            refusal_is_bug=refused,
            cpu_bug=rule == "DLPACK-STREAM-CPU-NONE",
            mismatch_bug=not refused,
        )
    )
    return s.render()
