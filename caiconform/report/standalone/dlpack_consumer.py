"""dlpack_consumer: a consumer's DLPack import of an array whose final write is still pending.

The stream case is written (`caiconform.checks.dlpack_consumer`): the reference producer over
DLPack rebuilt with the driver (`dlpack_exchange.reference_producer`'s capsule, the values'
bytes behind their sentinel), its final write left pending after a host-side sleep on a
non-blocking stream of its own ("pending") or on the legacy default stream ("legacy"); each
`__dlpack__` call orders that write before the stream it names, as the array API standard asks
(an event the named stream waits on; None: the legacy default stream; -1: nothing). The
consumer's own import reads it; the streams it passed are printed, and elements read before the
write (the sentinel) print BUG under the group's rule. The release case (the block poisoned by
the deleter) is not written: the scripts' capsule builder counts its deleter's calls, it does not
overwrite memory (`NOT_COVERED`).
"""

from __future__ import annotations

from caiconform.report.standalone import dlpack_exchange as dx
from caiconform.report.standalone import exchange as ex
from caiconform.report.standalone._text import Script, array_of

__all__ = ["script"]

#: how long the producer's write stays pending (µs): long after a warmed consumer has read
SPIN_US = 500_000
_STREAMS = {
    "pending": "int(ck(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value)))",
    "legacy": "1  # the legacy default stream",
}

_BODY = """
final = np.ascontiguousarray(values).view(np.uint8).reshape(-1)
n = final.size
ptr = upload(np.concatenate([~final, final]))  # the sentinel (bytes complemented), then the values
ck(cu.cuCtxSynchronize())
work = {stream}
warm = read(CapsuleProducer(lambda kwargs: make_capsule(ptr + n, {shape}, {code}, (2, 0)), (2, 0)))
ck(cu.cuCtxSynchronize())  # the consumer's import warmed on the final bytes: no first-call delay
sleep_on(work, {spin})  # the producer's work, still running ...
ck(cu.cuMemcpyDtoDAsync(ptr, ptr + n, n, cu.CUstream(work)))  # ... then its final write


def make(kwargs):  # the producer's __dlpack__: its write ordered before the stream named
    stream = kwargs.get("stream")
    if stream != -1:
        event = ck(cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING.value))
        ck(cu.cuEventRecord(event, cu.CUstream(work)))
        ck(cu.cuStreamWaitEvent(cu.CUstream(1 if stream is None else stream), event, 0))
    version = (1, 1) if (kwargs.get("max_version") or (0,))[0] >= 1 else None
    return make_capsule(ptr, {shape}, {code}, (2, 0), version=version)


obj = CapsuleProducer(make, (2, 0))
result = read(obj)
ck(cu.cuCtxSynchronize())
passed = [kwargs.get("stream", args[0] if args else None) for args, kwargs, _ in obj.calls]
print("streams passed to __dlpack__:", passed)
flat = np.ascontiguousarray(result).view(np.uint8).reshape(-1, dtype.itemsize)
want = np.ascontiguousarray(values).view(np.uint8).reshape(-1, dtype.itemsize)
early = int(((flat != want).any(axis=1) & ((flat == ~want) | (flat == want)).all(axis=1)).sum())
if early:
    verdict(True, f"{consumer} read {{early}} of {{values.size}} elements before the producer's "
                  f"pending write ({context}), having passed stream {{passed}} [{rule}]")
wrong = differ(result, values)
verdict(bool(wrong) and {misread_bug}, f"{consumer} read " + (f"other values: {{wrong}}" if wrong
        else "the final values") + f" ({context}), having passed stream {{passed}}")
"""


def script(group: dict, params: dict, producer: str | None, consumer: str | None) -> str | None:
    array = array_of(params)
    scenario = params.get("scenario")
    if array is None or params.get("case") != "stream" or scenario not in _STREAMS:
        return None
    code = dx.dl_dtype(array)
    if consumer is None or code is None or array.size == 0:
        return None
    rule = group.get("rule") or "DLPACK-STREAM-PRODUCER-SYNC"
    context = ex.context_of(array, f" from the reference producer, {scenario}")
    s = Script(
        f"{consumer} as DLPack consumer of an array whose final write is pending ({context}) "
        f"[{rule}]."
    )
    ex.header(s, group)
    ex.values(s, array)
    if not dx.reader(s, consumer, array):
        return None
    s.add(
        _BODY.format(
            stream=_STREAMS[scenario],
            shape=array.shape,
            code=code,
            spin=SPIN_US,
            consumer=consumer,
            context=context,
            rule=rule,
            misread_bug=rule == "DLPACK-CONSUMER-READS-DESCRIBED",
        )
    )
    return s.render()
