"""The parts the DLPack reproducers share: the element type's DLPack code, the reference producer
over DLPack rebuilt with ctypes, a library producer seen through DLPack alone, a consumer's
DLPack import as `read(obj)`, the verdict on what it read, and a producer's capsule judged
against the array it describes.

The scripts' DLPack code is `_dlpack_helpers`'s text (dlpack.h's structs in ctypes, the capsule
reader, the capsule builder with a counting deleter); the library calls are `libraries`'s
(`produce`, `produce_named_dlpack`, `consume_dlpack`).
"""

from __future__ import annotations

import textwrap

from caiconform.adapters._repro import Array, c_strides
from caiconform.dlpack.dtypes import KIND_CODES, NAMED_CODES
from caiconform.report.standalone import exchange as ex
from caiconform.report.standalone import libraries as libs
from caiconform.report.standalone._text import Script

__all__ = [
    "dl_dtype",
    "element_strides",
    "reference_producer",
    "library_producer",
    "producer",
    "reader",
    "show_capsule",
    "judge_import",
    "producer_capsule",
]


def dl_dtype(array: Array) -> tuple[int, int, int] | None:
    """(code, bits, lanes) of the example's element type (`caiconform.dlpack.dtypes`, the table
    caiconform's own export codes with); None where DLPack has none."""
    if array.typestr in NAMED_CODES:
        code, bits = NAMED_CODES[array.typestr]
        return code, bits, 1
    kind, order = array.export_typestr[1:2], array.export_typestr[:1]
    if kind not in KIND_CODES or order == ">" or array.itemsize * 8 > 255:
        return None
    return KIND_CODES[kind], array.itemsize * 8, 1


def element_strides(array: Array) -> tuple[int, ...] | None:
    """The layout's strides in elements (None: C-contiguous, NULL strides); ValueError when a
    byte stride is no multiple of the item size (DLPack cannot say it)."""
    if array.strides is None:
        return None
    if any(s % array.itemsize for s in array.strides):
        raise ValueError("byte strides no multiple of the item size")
    return tuple(s // array.itemsize for s in array.strides)


def reference_producer(s: Script, array: Array, *, keep: bool = False) -> bool:
    """`obj`: caiconform's reference producer over DLPack, rebuilt: the values uploaded with the
    driver at the layout's offset, and per `__dlpack__` call a capsule over them (versioned when
    the caller asks with max_version (1, x), as the reference producer answers) whose deleter
    counts its calls. `keep`: `obj.capsules` keeps each capsule. False where DLPack cannot
    describe the array."""
    code = dl_dtype(array)
    try:
        strides = element_strides(array)
    except ValueError:
        return False
    if code is None:
        return False
    ex.image(s, array)
    s.add(
        f"""
        ptr = upload(image) + {array.offset}  # element 0


        def make(kwargs):  # the reference producer's capsule: versioned when asked for 1.x
            wanted = kwargs.get("max_version")
            version = (1, 1) if wanted is not None and wanted[0] >= 1 else None
            return make_capsule(ptr if values.size else 0, {array.shape}, {code}, (2, 0),
                                strides={strides}, version=version)


        obj = CapsuleProducer(make, (2, 0), keep={keep})
        """
    )
    return True


def library_producer(s: Script, name: str, array: Array) -> bool:
    """`obj`: producer `name`'s own array over `values` (a named type: its own dtype, a plain
    array only), seen through DLPack alone; False where the scripts cannot make it."""
    if array.typestr in NAMED_CODES:
        snip = libs.produce_named_dlpack(name, array) if array.plain and array.size else None
        if snip is None:
            return False
        ex.add(s, snip)
        s.add(snip.code)
    elif not ex.library_export(s, name, array):
        return False
    s.add("obj = DLPackOnly(obj)  # the consumer sees __dlpack__ and __dlpack_device__ alone")
    return True


def producer(s: Script, name: str | None, array: Array, *, keep: bool = False) -> bool:
    """`values` and `obj` of producer `name` (None or "reference": the rebuilt reference
    producer); False where the script cannot make them."""
    ex.values(s, array)
    if name in (None, "reference"):
        return reference_producer(s, array, keep=keep)
    return library_producer(s, name, array)


def reader(s: Script, consumer: str, array: Array) -> bool:
    """Define `read(obj)`: consumer `consumer`'s DLPack import of `obj`, to host values; False
    where the scripts know none."""
    snip = libs.consume_dlpack(consumer, array)
    if snip is None:
        return False
    ex.add(s, snip)
    s.add("def read(obj):\n" + textwrap.indent(snip.code, "    ") + "\n    return result\n")
    return True


def show_capsule(s: Script) -> None:
    """Print the fields of a capsule `obj` hands out (asked for and dropped unconsumed: its
    destructor releases it), or why it could not be read."""
    s.add(
        """
        try:  # what the producer exports, read with ctypes
            print("capsule:", read_capsule(obj.__dlpack__(max_version=(1, 0))))
        except Exception as exc:
            print("capsule not read:", type(exc).__name__, exc)
        """
    )


def judge_import(s: Script, group: dict, consumer: str, context: str) -> None:
    """Print the capsule the producer hands out, read `obj` with `read`, and the verdict the
    group's outcome calls for: a refusal of a valid capsule (`rejected-valid`) or other values
    read (`fail`); the other answer is OK."""
    rule = group.get("rule") or "DLPACK-CONSUMER-READS-DESCRIBED"
    refused_bug = group.get("outcome") == "rejected-valid"
    s.imp("import traceback")
    show_capsule(s)
    s.add(
        f"""
        try:
            result = read(obj)
        except Exception as exc:
            at = traceback.extract_tb(exc.__traceback__)[-1]
            verdict({refused_bug}, f"{consumer} refused a valid capsule ({context}): "
                          f"{{type(exc).__name__}}: {{exc}} (raised at {{at.filename}}:{{at.lineno}}); "
                          f"expected the values the capsule describes [{rule}]")
        wrong = differ(result, values)
        if wrong:
            verdict({not refused_bug}, f"{consumer} read the capsule ({context}) wrong: {{wrong}}; "
                          f"expected the values it describes [{rule}]")
        verdict(False, f"{consumer} read the values the capsule describes ({context})")
        """
    )


def context_of(array: Array, extra: str = "") -> str:
    return ex.context_of(array, extra)


#: the producer-side checks of a capsule (the script's `judge_capsule`)
_JUDGE_CAPSULE = """
def own_layout(array):  # (pointer, byte strides) of the array itself, from its CAI; None: unknown
    try:
        desc = array.__cuda_array_interface__
    except Exception:
        return None
    shape, dtype = tuple(desc["shape"]), np.dtype(desc["typestr"])
    return desc["data"][0], tuple(desc.get("strides") or np.empty(shape, dtype).strides)


def judge_capsule(fields, array, dtype, expected_strides, rule, context):
    # the capsule against the array it comes from: shape, element strides (the array's byte
    # strides divided by the item size), element 0's address, then the values it describes;
    # NULL strides are read as C-contiguous, which a DLPack 1.2+ capsule of ndim != 0 may not say
    shape = fields["shape"]
    if shape != values.shape:
        verdict(True, f"the capsule's shape is {shape}, the array's {values.shape} ({context}) [{rule}]")
    version = fields["version"]
    if rule == "DLPACK-STRIDES-NONNULL" and version and version >= (1, 2) and shape:
        if fields["strides"] is None:
            verdict(True, f"a DLPack {version[0]}.{version[1]} capsule of ndim {len(shape)} with "
                          f"NULL strides ({context}); expected ndim strides (NULL is allowed "
                          f"before DLPack 1.2 only) [{rule}]")
    size = dtype.itemsize
    steps = byte_strides(fields, size)
    wanted = expected_strides or np.empty(values.shape, dtype).strides
    bad = [d for d, n in enumerate(shape) if n > 1 and steps[d] != wanted[d]]
    if values.size and bad:
        huge = [s for s in fields["strides"] or () if abs(s) >= 1 << 62]
        why = " (negative byte strides divided as unsigned 64-bit numbers?)" if huge else ""
        divisible = all(w % size == 0 for w in wanted)
        expect = ("the array's strides in elements, "
                  f"{tuple(w // size for w in wanted)}" if divisible else
                  "BufferError: the array's byte strides are no multiple of the item size")
        verdict(True, f"the capsule's strides are {fields['strides']} elements of {size} bytes, "
                      f"{steps} bytes, for an array whose strides are {tuple(wanted)} bytes{why} "
                      f"({context}); expected {expect} [{rule}]")
    own = own_layout(array)
    pointer = fields["data"] + fields["byte_offset"]
    if values.size and own is not None and own[0] != pointer:
        verdict(True, f"the capsule's element 0 is at {pointer:#x}, the array's at {own[0]:#x} "
                      f"({context}) [{rule}]")
    got = capsule_values(fields, dtype)
    wrong = differ(got, values)
    if wrong:
        verdict(True, f"the capsule describes other values than the array holds ({context}): "
                      f"{wrong} [{rule}]")
"""


def producer_capsule(
    s: Script,
    group: dict,
    name: str,
    array: Array,
    kwargs_src: str,
    context: str,
    *,
    fallback: bool = False,
) -> bool:
    """The body of a producer group judged on one capsule: producer `name`'s own array (not
    wrapped), `obj.__dlpack__(**kwargs)` (`kwargs_src`: its source), the capsule read with
    ctypes and judged against the array; a BufferError is OK where DLPack cannot describe the
    array, any other refusal OK too (not this group's defect). `fallback`: asked again without
    keywords when the call's keywords are refused (TypeError), as an older consumer would.
    False where the library cannot make the array here."""
    rule = group.get("rule") or "DLPACK-PRODUCER-DESCRIBES-DATA"
    ex.values(s, array)
    if not ex.library_export(s, name, array):
        return False
    strides = array.strides or c_strides(array.shape, array.itemsize)
    undescribable = any(st % array.itemsize for st in strides) or dl_dtype(array) is None
    retry = (
        "except TypeError as exc:  # keywords an older __dlpack__ does not take\n"
        '    print("refused the keywords:", exc, "- asked again without")\n'
        "    capsule = obj.__dlpack__()\n"
        if fallback
        else ""
    )
    note = "; DLPack cannot describe it" if undescribable else ""
    s.add(_JUDGE_CAPSULE)
    s.add(
        f"""
        kwargs = {kwargs_src}
        try:
            capsule = obj.__dlpack__(**kwargs)
        {textwrap.indent(retry, "        ").strip() if retry else ""}
        except BufferError as exc:
            verdict(False, f"{name} refused with BufferError: {{exc}} ({context}{note})")
        except Exception as exc:
            verdict(False, f"{name} refused: {{type(exc).__name__}}: {{exc}} ({context}); not the "
                           f"defect of this group [{rule}]")
        fields = read_capsule(capsule)
        print(f"__dlpack__(**{{kwargs}}) ->", fields)
        judge_capsule(fields, obj, dtype, {array.strides}, {rule!r}, {context!r})
        verdict(False, f"{name}'s capsule describes the array ({context})")
        """
    )
    return True
