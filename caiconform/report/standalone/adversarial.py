"""adversarial: a malformed or unusual dict fed to the consumer.

A mutant (a conforming dict with one edit breaking one rule) is written out literally, its
pointer (and its mask's) moved into fresh zeroed device memory sized to the dict's extent, as
the run did, unless the pointer is the edit. A live mutation is rebuilt: a host pointer, a
shape reaching past the allocation into reserved, unmapped addresses, a stream handle that is
no stream, or a legal layout (odd, negative or broadcast strides) that must be read right or
refused. A crash, hang or poisoned context runs in a child process; otherwise the verdict is
the group's: an invalid dict taken, a valid one refused or misread.
"""

from __future__ import annotations

from typing import Any

from caiconform.adapters._repro import c_strides
from caiconform.report.standalone import exchange as ex
from caiconform.report.standalone._text import (
    Mask,
    Script,
    Unencodable,
    array_of,
    byte_extent,
    decode,
    literal,
)

__all__ = ["script"]

_POINTER_RULES = ("CAI-DATA-POINTER-INT", "CAI-DATA-POINTER-RANGE", "CAI-DATA-ZERO-SIZE-NULL")
_FALLBACK_BYTES = 4096
_MAX_EXTENT = 1 << 26
_PAST_END = 1 << 20
_BOGUS_STREAM = 0x7F00DEAD0000


def _extent(d: dict) -> tuple[int, int]:
    """(lo, hi) of the dict's byte extent; (0, 4096) when it cannot be computed or is absurd."""
    try:
        import numpy as np

        shape = tuple(d["shape"])
        itemsize = np.dtype(d["typestr"]).itemsize
        strides = d.get("strides")
        if not all(type(n) is int and n >= 0 for n in shape):
            raise ValueError
        if strides is not None and (
            len(strides) != len(shape) or not all(type(v) is int for v in strides)
        ):
            raise ValueError
        lo, hi = byte_extent(shape, tuple(strides) if strides else None, itemsize)
    except Exception:  # noqa: BLE001 -- any malformed field: the fallback extent
        return (0, _FALLBACK_BYTES)
    if hi - lo > _MAX_EXTENT:
        return (0, _FALLBACK_BYTES)
    return (lo, max(hi, 1))


def _moved(d: Any, rule: str, pointers: dict[int, str], top: bool) -> list[str]:
    """Record in `pointers` the expression each movable `data` tuple gets; return the lines
    allocating the memory they point into."""
    lines: list[str] = []
    if not isinstance(d, dict):
        return lines
    mask = d.get("mask")
    if isinstance(mask, Mask):
        lines += _moved(mask.desc, "", pointers, False)
    data = d.get("data")
    if rule in _POINTER_RULES or not isinstance(data, (tuple, list)) or not data:
        return lines
    if type(data[0]) is not int or data[0] <= 0:
        return lines
    lo, hi = _extent(d)
    below = -(-max(-lo, 0) // 256) * 256
    name = "base" if top else f"mask_base{len(pointers)}"
    lines.append(f"{name} = upload(np.zeros({below + hi + 256}, np.uint8))  # fresh zeroed memory")
    pointers[id(data)] = f"{name} + {below}" if below else name
    return lines


def _mutant(s: Script, params: dict) -> tuple[dict, str] | None:
    try:
        d = decode(params["interface"])
    except Unencodable:
        return None
    rule = params.get("rule", "")
    pointers: dict[int, str] = {}
    lines = _moved(d, rule, pointers, True)
    for line in lines:
        s.add(line)
    s.add(f"desc = {literal(d, pointers)}  # breaks {rule}")
    s.add("obj = Exported(desc)")
    if isinstance(d, dict):
        shape, typestr = d.get("shape"), d.get("typestr")
        if isinstance(shape, tuple) and all(type(n) is int and 0 <= n < 1 << 20 for n in shape):
            array = array_of({"typestr": typestr, "shape": list(shape)})
            if array is not None:
                s.add(f"values = np.zeros({tuple(shape)}, {typestr!r})  # the zeroed memory")
        return d, rule
    return d, rule


def _live(s: Script, params: dict) -> bool:
    mutation = params.get("mutation")
    array = array_of(params)
    if array is None:
        return False
    ex.values(s, array)
    if mutation == "host-pointer":
        s.add(
            f"""
            host = np.ascontiguousarray(values)  # host memory, not device-accessible
            desc = {ex.interface(array, "host.ctypes.data")}
            obj = Exported(desc, owner=host)
            """
        )
        return True
    if mutation == "extent-past-allocation":
        ex.image(s, array)
        shape = (array.shape[0] + _PAST_END, *array.shape[1:]) if array.shape else None
        if shape is None:
            return False
        reach = _PAST_END * array.itemsize
        for extent in array.shape[1:]:
            reach *= extent
        s.add(
            f"""
            ptr = guarded(image.nbytes, {min(reach, 1 << 36)})  # unmapped addresses after it
            ck(cu.cuMemcpyHtoD(ptr, image.ctypes.data, image.nbytes))
            desc = {{"shape": {shape}, "typestr": {array.export_typestr!r}, "data": (ptr, False),
                    "version": 3, "strides": {c_strides(shape, array.itemsize)}, "stream": None}}
            obj = Exported(desc)  # its shape reaches {_PAST_END} rows past the allocation
            """
        )
        return True
    if mutation == "stream-bogus":
        ex.reference_export(s, array, stream=f"{_BOGUS_STREAM:#x}")
        s.add("# the stream handle above names no stream")
        return True
    if mutation == "object-fields":
        import numpy as np

        descr = [("value", array.export_typestr), ("object", "|O8")]
        size = np.dtype(descr).itemsize
        s.add(
            f"""
            # items of a {array.export_typestr} field then a PyObject pointer, every byte zero:
            # no consumer may build Python objects from device memory
            values = np.zeros({array.shape}, "V{size}")
            ptr = upload(values.view(np.uint8).reshape(-1))
            desc = {{"shape": {array.shape}, "typestr": "|V{size}", "descr": {descr},
                    "data": (ptr, False), "version": 3, "strides": None, "stream": None}}
            obj = Exported(desc)
            """
        )
        return True
    if mutation in ("odd-strides", "negative-strides", "broadcast"):
        ex.reference_export(s, array)
        return True
    return False


def script(group: dict, params: dict, producer: str | None, consumer: str | None) -> str | None:
    if consumer is None:
        return None
    kind = params.get("kind")
    what = (
        f"a dict breaking {params.get('rule')}"
        if kind == "mutant"
        else f"a {params.get('mutation')} export"
    )
    rule = group.get("rule") or group.get("input_rule")
    s = Script(f"adversarial: {consumer} fed {what} [{rule}].")
    ex.header(s, group)
    if kind == "mutant":
        built = _mutant(s, params)
        if built is None:
            return None
        d, _ = built
        # the consumer is warmed up on a plain array of the dict's typestr and rank: a build
        # cached by earlier arrays of the same type can skip checks the first call makes
        shape = d.get("shape") if isinstance(d, dict) else None
        typestr = d.get("typestr") if isinstance(d, dict) else None
        rank = len(shape) if isinstance(shape, (tuple, list)) and len(shape) <= 3 else 1
        array = array_of({"typestr": typestr, "shape": [1] * rank}) if typestr else None
    elif kind == "live":
        if not _live(s, params):
            return None
        array = array_of(params)
    else:
        return None
    if not ex.reader(s, consumer, array):
        return None
    context = what
    if kind == "live" and params.get("mutation") == "object-fields":
        return _object_fields(s, group, consumer) if array is not None else None
    if group.get("outcome") in ex.CRASH_OUTCOMES:
        return ex.crash_script(s, group, consumer, context)
    if group.get("outcome") != "accepted-invalid" and "values =" not in s.code():
        return None
    ex.judge_read(s, group, consumer, context)
    return s.render()


def _object_fields(s: Script, group: dict, consumer: str) -> str:
    """The verdict on items holding an object field: refusing is right, opaque bytes are
    fine, an array of Python objects was made from device memory."""
    rule = group.get("rule") or "CAI-DESCR-OBJECT-REFUSED"
    if group.get("outcome") in ex.CRASH_OUTCOMES:
        return ex.crash_script(s, group, consumer, "items with an object field")
    s.add(
        f"""
        print("exported:", desc)
        try:
            result = np.asarray(read(obj))
        except Exception as exc:
            verdict(False, f"{consumer} refused items with an object field: {{type(exc).__name__}}: {{exc}}")
        if result.dtype.hasobject:
            verdict(True, f"{consumer} made an array of dtype {{result.dtype}} holding Python objects "
                          f"from device memory (items with an |O8 field); expected a refusal, or "
                          f"the items read as opaque bytes [{rule}]")
        verdict(False, f"{consumer} read the items as {{result.dtype}}, no object made")
        """
    )
    return s.render()
