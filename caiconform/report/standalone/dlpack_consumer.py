"""dlpack_consumer: a consumer's DLPack import of an array whose final write is still pending.

The stream case is written (`caiconform.checks.dlpack_consumer`): the reference producer over
DLPack rebuilt with the driver (`dlpack_exchange.reference_producer`'s capsule, the values'
bytes behind their sentinel), its final write left pending after a host-side sleep on a
non-blocking stream of its own ("pending") or on the legacy default stream ("legacy"); each
`__dlpack__` call orders that write before the stream it names, as the array API standard asks
(an event the named stream waits on; None: the legacy default stream; -1: nothing). The
consumer's own import reads it; the streams it passed are printed, and elements read before the
write (the sentinel) print BUG under the group's rule.

The copy case is written too: the consumer's own `from_dlpack(obj, copy=..., device=...)` (the
adapters' `from_dlpack` lines) of the rebuilt reference producer, whose `__dlpack__` exports a
copy for copy=True (flagged IS_COPIED) and refuses a device other than its own, as the
reference producer does; the producer's memory is then overwritten and the result read again
(`reread`): a copy=True result that follows the overwrite prints BUG [DLPACK-FROM-COPY-TRUE],
a copy=False one that does not [DLPACK-FROM-COPY-FALSE], a result on another device than the
one asked [DLPACK-FROM-DEVICE], and a refusal of a valid request (any but BufferError or
ValueError under copy=False with no device) BUG under the group's rule.

The release case too: the rebuilt reference producer's tensors get a deleter of the script's
own that counts its call and then overwrites the block with the poison byte, as a pool reusing
a freed block would (`ReferenceArray.poison_on_release`); a consumer that releases the tensor
before it has read the memory reads the poison [DLPACK-CONSUMER-READS-DESCRIBED], one whose
deleter ran other than once per tensor breaks [DLPACK-DELETER-ONCE].
"""

from __future__ import annotations

import textwrap

from caiconform.report.standalone import dlpack_exchange as dx
from caiconform.report.standalone import exchange as ex
from caiconform.report.standalone import libraries as libs
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


def versioned(kwargs):  # a versioned capsule only for a consumer that asks for one (max_version)
    return (1, 1) if (kwargs.get("max_version") or (0,))[0] >= 1 else None


warm = read(CapsuleProducer(
    lambda kwargs: make_capsule(ptr + n, {shape}, {code}, (2, 0), version=versioned(kwargs)),
    (2, 0)))
ck(cu.cuCtxSynchronize())  # the consumer's import warmed on the final bytes: no first-call delay
sleep_on(work, {spin})  # the producer's work, still running ...
ck(cu.cuMemcpyDtoDAsync(ptr, ptr + n, n, cu.CUstream(work)))  # ... then its final write


def make(kwargs):  # the producer's __dlpack__: its write ordered before the stream named
    stream = kwargs.get("stream")
    if stream != -1:
        event = ck(cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING.value))
        ck(cu.cuEventRecord(event, cu.CUstream(work)))
        ck(cu.cuStreamWaitEvent(cu.CUstream(1 if stream is None else stream), event, 0))
    return make_capsule(ptr, {shape}, {code}, (2, 0), version=versioned(kwargs))


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


#: a copy scenario -> (copy, whether `device` is the array's own): the family's COPIES
COPIES = {
    "true": (True, False),
    "false": (False, False),
    "none": (None, False),
    "true-own": (True, True),
    "false-own": (False, True),
    "none-own": (None, True),
}

_COPY_PRODUCER = """
final = np.ascontiguousarray(values).view(np.uint8).reshape(-1)
n = final.size
ptr = upload(final)
ck(cu.cuCtxSynchronize())


def make(kwargs):  # the reference producer's __dlpack__: copy=True exports a copy of its own
    wanted = kwargs.get("dl_device")
    if wanted is not None and tuple(wanted) != (2, 0):
        raise BufferError(f"no export to DLPack device {{tuple(wanted)}}")
    data, flags = ptr, 0
    if kwargs.get("copy") is True:
        data, flags = upload(final), 1 << 1  # DLPACK_FLAG_BITMASK_IS_COPIED
        ck(cu.cuCtxSynchronize())
    version = (1, 1) if (kwargs.get("max_version") or (0,))[0] >= 1 else None
    return make_capsule(data, {shape}, {code}, (2, 0), version=version, flags=flags)


obj = CapsuleProducer(make, (2, 0))
dev = obj.__dlpack_device__()
asked = "from_dlpack(copy={copy}, device={device})"
"""

_COPY_JUDGE = """
except Exception as exc:
    verdict({refusal_bug}, f"{consumer}'s {{asked}} raised {{type(exc).__name__}}: {{exc}} "
                 f"({context}); __dlpack__ asked {{[kwargs for _, kwargs, _ in obj.calls]}} [{rule}]")
print("__dlpack__ asked:", [kwargs for _, kwargs, _ in obj.calls])
wrong = differ(result, values)
if wrong:
    verdict({misread_bug}, f"{consumer}'s {{asked}} read other values: {{wrong}} ({context})")
{device_check}flip = 0x01 if values.dtype.kind == "b" else 0xFF  # every element changes; a bool stays a bool
changed_bytes = final ^ np.uint8(flip)
ck(cu.cuMemcpyHtoD(ptr, changed_bytes.ctypes.data, n))  # the producer's memory overwritten
ck(cu.cuCtxSynchronize())
"""

_DEVICE_CHECK = """
where = tuple(int(d) for d in kept.__dlpack_device__()) if hasattr(kept, "__dlpack_device__") else None
if where is not None and where != tuple(dev):
    verdict(True, f"{consumer}'s {{asked}} result is on DLPack device {{where}}, not {{tuple(dev)}} "
                  f"({context}) [DLPACK-FROM-DEVICE]")
"""

_COPY_VERDICT = """
rows = [np.ascontiguousarray(x).view(np.uint8).reshape(values.size, -1) for x in (result, again)]
changed = int((rows[0] != rows[1]).any(axis=1).sum())
how = f"a view ({{changed}} of {{values.size}} elements followed the overwrite)" if changed else "a copy"
verdict({bug}, f"{consumer}'s {{asked}} gave {{how}} ({context}) [{rule}]")
"""


def _copy_script(group: dict, params: dict, consumer: str) -> str | None:
    """The copy case's script (the module docstring), None where the lines are missing."""
    array = array_of(params)
    if array is None or params.get("scenario") not in COPIES or array.size == 0:
        return None
    copy, own = COPIES[params["scenario"]]
    code = dx.dl_dtype(array)
    imported = libs.from_dlpack(consumer, copy, own)
    again = libs.reread(consumer)
    if code is None or imported is None or again is None:
        return None
    rule = group.get("rule") or f"DLPACK-FROM-COPY-{str(copy).upper()}"
    device = "its own" if own else "None"
    context = ex.context_of(array, f" from the reference producer, device={device}")
    s = Script(
        f"{consumer}'s from_dlpack(copy={copy}, device={device}) of an array in device memory "
        f"({context}): copy=True must copy, copy=False must not or raise BufferError [{rule}]."
    )
    ex.header(s, group)
    ex.values(s, array)
    ex.add(s, imported)
    ex.add(s, again)
    s.add(
        _COPY_PRODUCER.format(
            shape=array.shape, code=code, copy=copy, device="dev" if own else "None"
        )
    )
    judge = {"consumer": consumer, "context": context, "rule": rule, "copy": copy, "own": own}
    misread = rule == "DLPACK-CONSUMER-READS-DESCRIBED"
    refusal_bug = (  # copy=False may refuse with BufferError (ValueError: the Raises section)
        "not isinstance(exc, (BufferError, ValueError))" if copy is False and not own else "True"
    )
    s.add(
        "try:\n"
        + textwrap.indent(imported.code, "    ")
        + _COPY_JUDGE.format(
            misread_bug=misread,
            refusal_bug=refusal_bug,
            device_check=_DEVICE_CHECK.format(**judge) if own else "",
            **judge,
        )
    )
    s.add(again.code)
    bug = {True: "changed > 0", False: "changed == 0", None: "False"}[copy]
    s.add(_COPY_VERDICT.format(bug=bug, **judge))
    return s.render()


#: the byte the release case's deleter writes over the block (the reference producer's POISON)
POISON = 0xA5

_RELEASE_BODY = """
final = np.ascontiguousarray(values).view(np.uint8).reshape(-1)
n = final.size
ptr = upload(final)
ck(cu.cuCtxSynchronize())


def _release(address):  # the tensor's deleter: counted, then the block overwritten, as a pool
    DELETER_CALLS[address] = DELETER_CALLS.get(address, 0) + 1  # reusing it would
    ck(cu.cuMemsetD8(ptr, {poison}, n))
    ck(cu.cuCtxSynchronize())


RELEASE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(_release)


def make(kwargs):  # the reference producer's capsule, with that deleter
    version = (1, 1) if (kwargs.get("max_version") or (0,))[0] >= 1 else None
    capsule, address = make_capsule(ptr, {shape}, {code}, (2, 0), version=version)
    struct = DLManagedTensor if version is None else DLManagedTensorVersioned
    struct.from_address(address).deleter = ctypes.cast(RELEASE, ctypes.c_void_p).value
    return capsule, address


obj = CapsuleProducer(make, (2, 0))
result = np.array(read(obj), copy=True)
gc.collect()
calls = [DELETER_CALLS.get(address, 0) for address in obj.tensors]
print("deleter calls per tensor:", calls)
size = dtype.itemsize
hit = (np.ascontiguousarray(result).view(np.uint8).reshape(-1, size) == {poison}).all(axis=1)
early = int((hit & ~(final.reshape(-1, size) == {poison}).all(axis=1)).sum()) if result.shape == values.shape else 0
if early:
    verdict(True, f"{consumer} read {{early}} of {{values.size}} elements after it released the "
                  f"tensor ({context}): the deleter ran before the read [DLPACK-CONSUMER-READS-DESCRIBED]")
if any(c > 1 for c in calls):
    {once}f"{consumer}'s deleter ran more than once: calls per tensor {{calls}} ({context}) "
        "[DLPACK-DELETER-ONCE]")
wrong = differ(result, values)
verdict({misread}, f"{consumer} read " + (f"other values: {{wrong}}" if wrong
        else "the values, then released the tensor") + f" ({context})")
"""


def _release_script(group: dict, params: dict, consumer: str) -> str | None:
    """The release case's script (the module docstring), None where the lines are missing."""
    array = array_of(params)
    if array is None or array.size == 0:
        return None
    code = dx.dl_dtype(array)
    if code is None:
        return None
    rule = group.get("rule") or "DLPACK-CONSUMER-READS-DESCRIBED"
    context = ex.context_of(array, " from the reference producer, its block poisoned on release")
    s = Script(
        f"{consumer} as DLPack consumer of an array whose block is overwritten when its tensor is "
        f"released ({context}): read before release, release once [{rule}]."
    )
    ex.header(s, group)
    ex.values(s, array)
    if not dx.reader(s, consumer, array):
        return None
    s.imp("import ctypes", "import gc")
    s.add(
        _RELEASE_BODY.format(
            shape=array.shape,
            code=code,
            poison=POISON,
            consumer=consumer,
            context=context,
            # another rule's bug is said, not taken for the group's
            once="verdict(True, " if rule == "DLPACK-DELETER-ONCE" else "print(",
            misread="bool(wrong)" if rule == "DLPACK-CONSUMER-READS-DESCRIBED" else "False",
        )
    )
    return s.render()


def script(group: dict, params: dict, producer: str | None, consumer: str | None) -> str | None:
    if params.get("case") == "copy":
        return None if consumer is None else _copy_script(group, params, consumer)
    if params.get("case") == "release":
        return None if consumer is None else _release_script(group, params, consumer)
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
