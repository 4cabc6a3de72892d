"""agreement: where an object exports both the CAI and DLPack, do they describe the same data?

The producer's object is read twice: its `__cuda_array_interface__` dict, and its own DLPack
capsule, parsed here with ctypes (`caiconform.dlpack`: no other library in between, so a
disagreement is the producer's own). Both must give the same data pointer (except for zero-size
arrays, where the CAI prescribes 0 and DLPack does not, and capsules flagged as copies), shape,
byte strides over every dimension longer than 1 (strides of length-1 dimensions address
nothing), element type (raw bytes `V<n>` in the CAI agree with any type of that size), a CUDA
device type and the read-only flag [CAI-DLPACK-AGREE]. Only what the capsule kind can say is
compared: a versioned capsule ("dltensor_versioned") carries flags, so its read-only flag must
match the CAI's and a copy flagged as such may live elsewhere; an unversioned ("dltensor")
capsule has no flags field, so it says nothing of read-only or copying and neither is compared
(a producer may hand one back even when asked for `max_version=(1, 0)`). Every finding names
the capsule kind it read.

A disagreement is the producer's: its two exports of one object differ. Which of the two is wrong
is then told from the memory, by the reference consumer (`checks._exchange.consume_with`, which
checks every byte it reads lies in one allocation before it reads): it reads the CAI, and reads
the capsule's description given to it as a CAI dict. The one that reads the values written is
right and the other wrong; when both or neither do, or one cannot be read, or the field is the
read-only flag (the memory does not say whether it may be written), the finding says that the
memory cannot tell, and why.

When the capsule agrees with the CAI, cuda.core's public DLPack consumer
(`StridedMemoryView.from_dlpack`) is checked against the same capsule: a difference there is
cuda.core's, recorded with cuda.core as the culprit (a consumer reading a correct capsule
wrongly), whichever producer made it.

Outcomes: `pass`; `fail` CAI-DLPACK-AGREE naming the first field that differs, both values, the
library at fault and which export the memory proves wrong; `skip` for an object without
`__dlpack__` or whose capsule cannot be had.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from hypothesis import strategies as st

from caiconform.checks import _encoding, _exchange, _results, _sources, _values
from caiconform.results.outcome import Result
from caiconform.spec.layout import Layout, c_strides
from caiconform.spec.values import compare_values, make_values, values_source

__all__ = [
    "FAMILY",
    "ROLES",
    "NEEDS_GPU",
    "examples",
    "describe_cai",
    "describe_view",
    "describe_capsule",
    "capsule_interface",
    "compare",
    "which_is_wrong",
    "execute",
    "repro",
]

FAMILY = "agreement"
#: compares the CAI with the DLPack export: it runs under either `run --protocol`
ROLES = "producer"
NEEDS_GPU = True
#: no example needs two streams' work to overlap (`checks` docstring)
SINGLE_QUEUE = True
#: DLDeviceType values a CAI pointer's memory can have: kDLCUDA, kDLCUDAHost, kDLCUDAManaged
CUDA_DEVICE_TYPES = (2, 3, 13)


@functools.cache  # _params: one strategy per value (flatmap validates each new one)
def _params(typestr: str) -> st.SearchStrategy[dict]:
    from caiconform import strategies as cst
    from caiconform.spec.typestr import parse_typestr

    itemsize = parse_typestr(typestr).itemsize
    return st.fixed_dictionaries(
        {
            "typestr": st.just(typestr),
            "layout": cst.layouts(itemsize=itemsize).map(Layout.to_dict),
            "seed": _values.seeds(),
        }
    )


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    """typestr, a portable layout and a seed; shrinks toward '|b1' in a C layout."""
    from caiconform import strategies as cst

    return cst.typestrs().flatmap(_params)


def _typestr(dtype: np.dtype) -> str:
    return dtype.str if dtype.itemsize > 1 else "|" + dtype.str[1:]


def describe_cai(d: dict) -> dict[str, Any]:
    """pointer, shape, byte strides, dtype (a typestr) and read-only flag of a valid CAI dict."""
    dtype = np.dtype(d["typestr"])
    shape = tuple(d["shape"])
    strides = d.get("strides")
    return {
        "pointer": d["data"][0],
        "shape": shape,
        "strides": c_strides(shape, dtype.itemsize) if strides is None else tuple(strides),
        "dtype": _typestr(dtype),
        "itemsize": dtype.itemsize,
        "readonly": d["data"][1],
    }


def describe_capsule(capsule: Any) -> dict[str, Any]:
    """The same facts read from a parsed DLPack capsule (`caiconform.dlpack.capsule.Capsule`);
    `readonly` and `copied` are None for a capsule kind without flags (unsaid, not False)."""
    from caiconform.dlpack.dtypes import typestr_of

    return {
        "pointer": capsule.pointer,
        "shape": capsule.shape,
        "strides": capsule.byte_strides,
        "dtype": typestr_of(capsule),
        "itemsize": capsule.itemsize,
        "readonly": capsule.readonly if capsule.has_flags else None,
        "device": capsule.device,
        "copied": capsule.copied if capsule.has_flags else None,
    }


def describe_view(view: Any) -> dict[str, Any]:
    """The same facts read from a cuda.core StridedMemoryView (strides there count elements)."""
    dtype = np.dtype(view.dtype)
    shape = tuple(view.shape)
    strides = view.strides
    return {
        "pointer": int(view.ptr),
        "shape": shape,
        "strides": c_strides(shape, dtype.itemsize)
        if strides is None
        else tuple(int(s) * dtype.itemsize for s in strides),
        "dtype": _typestr(dtype),
        "itemsize": dtype.itemsize,
        "readonly": bool(view.readonly),
    }


def _same_dtype(cai: dict[str, Any], dlpack: dict[str, Any]) -> bool:
    """Equal typestrs, or raw bytes (`V<n>`) on either side and the same item size."""
    raw_bytes = "V" in (cai["dtype"][1:2], dlpack["dtype"][1:2])
    return cai["dtype"] == dlpack["dtype"] or (raw_bytes and cai["itemsize"] == dlpack["itemsize"])


def compare(cai: dict[str, Any], dlpack: dict[str, Any]) -> tuple[str, Any, Any] | None:
    """(field, DLPack's value, the CAI's value) for the first field that differs, else None.

    `dlpack` may carry `device` ((type, id): a non-CUDA type differs) and `copied` (a copy's
    pointer, strides and read-only flag are its own, not compared). A `readonly` of None (a
    capsule kind without flags) is not compared: that side cannot say it."""
    if cai["shape"] != dlpack["shape"]:
        return ("shape", dlpack["shape"], cai["shape"])
    if not _same_dtype(cai, dlpack):
        return ("dtype", dlpack["dtype"], cai["dtype"])
    device = dlpack.get("device")
    if device is not None and device[0] not in CUDA_DEVICE_TYPES:
        return ("device", f"DLDeviceType {device[0]}", "CUDA memory (DLDeviceType 2, 3 or 13)")
    copied = bool(dlpack.get("copied"))
    size = 1
    for extent in cai["shape"]:
        size *= extent
    if size and not copied and cai["pointer"] != dlpack["pointer"]:
        return ("pointer", hex(dlpack["pointer"]), hex(cai["pointer"]))
    if size and not copied:
        for axis, extent in enumerate(cai["shape"]):
            if extent > 1 and cai["strides"][axis] != dlpack["strides"][axis]:
                return (f"strides[{axis}]", dlpack["strides"], cai["strides"])
    said = dlpack.get("readonly")
    if not copied and said is not None and cai["readonly"] != said:
        return ("readonly", said, cai["readonly"])
    return None


def capsule_interface(capsule: Any, interface: dict) -> dict | None:
    """The capsule's description as a v3 CAI dict the reference consumer can read, or None when
    its element type has no typestr. Where the element types agree the CAI's own typestr (and
    descr) is kept, so named and structured types read into the same container."""
    from caiconform.dlpack.dtypes import typestr_of

    cai = describe_cai(interface)
    seen = describe_capsule(capsule)
    if _same_dtype(cai, seen):
        typestr = interface["typestr"]
    elif typestr_of(capsule)[:1] in ("<", ">", "|"):
        typestr = typestr_of(capsule)
    else:
        return None
    size = 1
    for extent in capsule.shape:
        size *= extent
    out = {
        "version": 3,
        "shape": tuple(capsule.shape),
        "typestr": typestr,
        "data": (capsule.pointer if size else 0, capsule.readonly),
        "strides": capsule.byte_strides,
        "stream": None,
    }
    if typestr == interface["typestr"] and "descr" in interface:
        out["descr"] = interface["descr"]
    return out


def _reads_values(obj: Any, values: np.ndarray) -> tuple[bool | None, str]:
    """(True, "") when the reference consumer reads `values` through `obj`; (False, what
    differs); (None, why it could not read)."""
    got, exc = _exchange.consume_with("reference", obj)
    if exc is not None:
        return None, f"the reference consumer refused it: {_results.describe_exception(exc)}"
    wrong = compare_values(np.asarray(got), values)
    return (True, "") if wrong is None else (False, wrong)


def _not_read(why: str) -> str:
    return f"does not ({why})" if why else "does not"


def stride_hint(dlpack_strides: Any, cai_strides: Any, itemsize: int) -> str:
    """Why two byte-stride tuples may differ, read from the numbers alone, for the maintainer:
    a capsule stride of 2**64 + the CAI's negative one (the signed stride divided as an unsigned
    number), or a CAI stride that is no multiple of the item size (DLPack counts strides in
    elements: such an export must be refused with BufferError, not rounded). '' otherwise."""
    hints = []
    pairs = zip(dlpack_strides or (), cai_strides or (), strict=False)
    for axis, (dl, ca) in enumerate(pairs):
        if dl == ca:
            continue
        if ca < 0 and dl - 2**64 == ca:
            hints.append(
                f"strides[{axis}]: the capsule's {dl} is 2**64 + the CAI's {ca}, a negative "
                f"stride divided by the item size as an unsigned number"
            )
        elif itemsize and ca % itemsize:
            hints.append(
                f"strides[{axis}]: the CAI's {ca} bytes is no multiple of the item size "
                f"{itemsize}, which DLPack's element strides cannot express, so the capsule "
                f"should be refused (BufferError), not rounded to {dl}"
            )
    return "; ".join(hints)


def which_is_wrong(
    field: str, cai_reads: tuple[bool | None, str], dlpack_reads: tuple[bool | None, str]
) -> tuple[str | None, str]:
    """("CAI" | "DLPack" | None, the verdict in words) from what reading each description gave
    (`_reads_values`). None: the memory cannot tell, the words say why."""
    if field == "readonly":
        return None, (
            "the memory cannot tell which read-only flag is right (both describe the same bytes)"
        )
    (cai_ok, cai_why), (dl_ok, dl_why) = cai_reads, dlpack_reads
    if field == "device":  # a CAI dict has no device type: only the CAI's reading can tell
        if cai_ok:
            return "DLPack", (
                "the CAI's pointer is device memory the reference consumer reads the values "
                "written from, so the capsule's device type is wrong"
            )
        return None, (
            f"the memory cannot tell which device is right: the reference consumer does not "
            f"read the values written through the CAI ({cai_why})"
        )
    if cai_ok and dl_ok is not True:
        return "DLPack", (
            f"the CAI reads the values written and the capsule's description {_not_read(dl_why)}, "
            f"so the DLPack export is wrong"
        )
    if dl_ok and cai_ok is not True:
        return "CAI", (
            f"the capsule's description reads the values written and the CAI "
            f"{_not_read(cai_why)}, so the CAI export is wrong"
        )
    if cai_ok and dl_ok:
        return None, (
            "both read the values written, so the memory cannot tell which is wrong (the two "
            "descriptions reach equal values here)"
        )
    return None, (
        f"neither reads the values written (CAI: {cai_why}; DLPack: {dl_why}), so the memory "
        f"cannot tell which is wrong"
    )


def floor(producer: str | None, consumer: str | None) -> list:
    """Every layout kind x dtype class x byte order (`checks._floor.data_floor`)."""
    from caiconform.checks import _floor

    return _floor.data_floor()


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    from caiconform import validate
    from caiconform.dlpack import DLPackError, export

    layout = Layout.from_dict(params["layout"])
    typestr = params["typestr"]
    values = make_values(typestr, layout.shape, params["seed"], layout.strides)
    obj = _exchange.produce(producer, values, layout, typestr, "none")
    if not hasattr(obj, "__dlpack__"):
        return _results.skipped(f"{producer} objects do not export __dlpack__")
    context = f"{producer} {typestr} {layout.kind} {layout.shape}"
    ended, _warnings = _results.named_export(obj, typestr, context)
    if ended is not None:
        return ended
    report = validate(obj)
    if not report.ok:
        from caiconform.checks.schema import judge

        return judge(report.errors, f"{producer}: invalid CAI export")
    try:
        capsule, keep = export(obj)
    except DLPackError as exc:  # no capsule to compare: not a CAI question
        return _results.skipped(f"{context}: DLPack export unreadable: {exc}")
    interface = obj.__cuda_array_interface__
    cai = describe_cai(interface)
    differs = compare(cai, describe_capsule(capsule))
    if differs is not None:
        field, dlpack_value, cai_value = differs
        wrong, verdict = _judge_memory(obj, keep, capsule, interface, values, field)
        expected = {
            "DLPack": f"the CAI's {cai_value} in the capsule too",
            "CAI": f"the capsule's {dlpack_value} in the CAI too",
        }.get(wrong or "", "the same in both exports")
        if field.startswith("strides"):
            hint = stride_hint(dlpack_value, cai_value, cai["itemsize"])
            verdict = f"{verdict} ({hint})" if hint else verdict
        return _results.failed(
            "CAI-DLPACK-AGREE",
            f"{field} {dlpack_value} in {producer}'s own DLPack capsule ({capsule.kind}) and "
            f"{cai_value} in its CAI; {verdict}",
            expected,
            f"{context}: {producer} (the producer) is at fault",
        )
    del keep
    if not capsule.has_flags:
        context = f"{context}; read-only not compared: {producer} gave {capsule.kind}"
    return _check_cuda_core(obj, cai, context, producer, flags=capsule.has_flags)


def _judge_memory(
    obj: Any, keep: Any, capsule: Any, interface: dict, values: np.ndarray, field: str
) -> tuple[str | None, str]:
    """`which_is_wrong` for one example: the reference consumer reads the CAI, then the
    capsule's description (`capsule_interface`, the capsule kept alive meanwhile)."""
    if field == "readonly":
        return which_is_wrong(field, (None, ""), (None, ""))
    cai_reads = _reads_values(obj, values)
    if field == "device":
        return which_is_wrong(field, cai_reads, (None, ""))
    described = capsule_interface(capsule, interface)
    if described is None:
        dlpack_reads: tuple[bool | None, str] = (
            None,
            f"its element type {capsule.type_name} has no typestr to read it with",
        )
    else:
        dlpack_reads = _reads_values(_encoding.InterfaceObject(described, (obj, keep)), values)
    return which_is_wrong(field, cai_reads, dlpack_reads)


def _check_cuda_core(
    obj: Any, cai: dict, context: str, producer: str | None, flags: bool = True
) -> Result:
    """cuda.core's DLPack consumer against a capsule known to agree with the CAI; `flags`
    False (the capsule had no flags field) leaves cuda.core's read-only flag uncompared: the
    capsule it read did not say."""
    if producer == "cuda.core":
        return _results.passed(f"{context}: CAI and DLPack agree")
    try:
        from cuda.core.utils import StridedMemoryView
    except ImportError:
        return _results.passed(f"{context}: CAI and DLPack agree (cuda.core not installed)")
    try:
        view = StridedMemoryView.from_dlpack(obj, stream_ptr=-1)
        seen = describe_view(view)  # cuda.core reads the dtype lazily: it may refuse here
    except Exception as exc:  # cuda.core refusing is its own matter, not agreement
        return _results.passed(
            f"{context}: CAI and DLPack agree; cuda.core refused the capsule "
            f"({_results.describe_exception(exc)})"
        )
    if not flags:
        seen["readonly"] = None
    differs = compare(cai, seen)
    if differs is None:
        return _results.passed(f"{context}: CAI and DLPack agree, cuda.core reads the same")
    field, seen, want = differs
    result = _results.failed(
        "CAI-DLPACK-AGREE",
        f"cuda.core's StridedMemoryView.from_dlpack reads {field} {seen} from {producer}'s "
        f"capsule, which itself says (like the CAI) {want}",
        f"{want}, as the capsule says",
        context,
    )
    result.culprit = {
        "library": "cuda.core",
        "role": "consumer",
        "why": "the producer's capsule and CAI agree; cuda.core reads the capsule differently",
    }
    return result


#: the modules of `caiconform.dlpack` the capsule reader is made of, each after those it uses
_READER_MODULES = ("errors", "header", "dtypes", "devices", "capsule")


@functools.cache
def _reader_source() -> str:
    """`caiconform.dlpack`'s capsule reader as script lines: the same parser, no caiconform
    import needed. Each module of `_READER_MODULES` verbatim but for its docstring, its
    `__all__` and its imports of `__future__` (Python 3.10+ does without) and of caiconform
    (the modules before it define what it imports). Read once per process: every non-pass
    example's reproducer embeds it."""
    import ast
    import importlib
    import inspect

    parts = []
    for name in _READER_MODULES:
        source = inspect.getsource(importlib.import_module(f"caiconform.dlpack.{name}"))
        lines = source.splitlines()
        for node in ast.parse(source).body:
            if _left_out(node):
                lines[node.lineno - 1 : node.end_lineno] = [""] * (
                    node.end_lineno - node.lineno + 1
                )
        text = "\n".join(lines).strip()
        while "\n\n\n\n" in text:
            text = text.replace("\n\n\n\n", "\n\n\n")
        parts.append(f"# --- caiconform.dlpack.{name}, verbatim ---\n{text}")
    return "\n\n\n".join(parts)


def _left_out(node) -> bool:
    """A module's docstring, `__all__`, or import of `__future__` or of caiconform."""
    import ast

    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return isinstance(node.value.value, str)
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
    if isinstance(node, ast.ImportFrom):
        return node.module == "__future__" or (node.module or "").startswith("caiconform")
    return False


_REPRO_BODY = """
# --- the object's two exports, side by side ---
print("CAI:", obj.__cuda_array_interface__)
capsule, keep = export(obj)
print("its own DLPack capsule:", capsule)
print("  pointer", hex(capsule.pointer), "byte strides", capsule.byte_strides, "type", capsule.typestr)
try:
    from cuda.core.utils import StridedMemoryView
except ImportError:
    print("cuda.core not installed: its reading of the capsule is not shown")
else:
    view = StridedMemoryView.from_dlpack(obj, stream_ptr=-1)
    print("cuda.core reads: ptr", hex(view.ptr), "shape", view.shape, "strides (elements)",
          view.strides, "dtype", view.dtype, "readonly", view.readonly)
"""


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    layout = Layout.from_dict(params["layout"])
    return _sources.repro_script(
        f"agreement: {producer}'s __cuda_array_interface__ and its own DLPack capsule (parsed "
        f"here with ctypes, no other library in between) should describe the same pointer, "
        f"shape, strides, dtype and read-only flag [CAI-DLPACK-AGREE]; cuda.core's reading of "
        f"the capsule is printed beside them.",
        values_source(params["typestr"], layout.shape, params["seed"], layout.strides),
        _sources.producer_source(producer, layout, params["typestr"]),
        _reader_source(),
        _REPRO_BODY,
    )
