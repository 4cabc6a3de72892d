"""agreement: where an object exports both the CAI and DLPack, do they describe the same data?

The producer's object is read twice: its `__cuda_array_interface__` dict, and its own DLPack
capsule, parsed here with ctypes (`caiconform.dlpack`: no other library in between, so a
disagreement is the producer's own). Both must give the same data pointer (except for zero-size
arrays, where the CAI prescribes 0 and DLPack does not), shape, byte strides over every dimension
longer than 1 (strides of length-1 dimensions address nothing), element type (raw bytes `V<n>`
in the CAI agree with any type of that size) and read-only flag [CAI-DLPACK-AGREE]. Which of the
two is wrong is told from the memory: the reference consumer reads the CAI; if it reads the
values written, the DLPack side is the wrong one.

When the capsule agrees with the CAI, cuda.core's public DLPack consumer
(`StridedMemoryView.from_dlpack`) is checked against the same capsule: a difference there is
cuda.core's, recorded with cuda.core as the culprit (a consumer reading a correct capsule
wrongly), whichever producer made it.

Outcomes: `pass`; `fail` CAI-DLPACK-AGREE naming the first field that differs and the library at
fault; `skip` for an object without `__dlpack__` or whose capsule cannot be had.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from caiconform.checks import _support as sup
from caiconform.runner.outcome import Result
from caiconform.spec.layout import Layout, c_strides

__all__ = [
    "FAMILY",
    "ROLES",
    "NEEDS_GPU",
    "examples",
    "describe_cai",
    "describe_view",
    "describe_capsule",
    "compare",
    "execute",
    "repro",
]

FAMILY = "agreement"
ROLES = "producer"
NEEDS_GPU = True


def _params(typestr: str) -> st.SearchStrategy[dict]:
    from caiconform import strategies as cst
    from caiconform.spec.typestr import parse_typestr

    itemsize = parse_typestr(typestr).itemsize
    return st.fixed_dictionaries(
        {
            "typestr": st.just(typestr),
            "layout": cst.layouts(itemsize=itemsize).map(Layout.to_dict),
            "seed": sup.seeds(),
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
    """The same facts read from a parsed DLPack capsule (`caiconform.dlpack.Capsule`)."""
    from caiconform.dlpack import typestr_of

    return {
        "pointer": capsule.pointer,
        "shape": capsule.shape,
        "strides": capsule.byte_strides,
        "dtype": typestr_of(capsule),
        "itemsize": capsule.itemsize,
        "readonly": capsule.readonly,
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


def compare(cai: dict[str, Any], dlpack: dict[str, Any]) -> tuple[str, Any, Any] | None:
    """(field, DLPack's value, the CAI's value) for the first field that differs, else None."""
    if cai["shape"] != dlpack["shape"]:
        return ("shape", dlpack["shape"], cai["shape"])
    raw_bytes = "V" in (cai["dtype"][1:2], dlpack["dtype"][1:2])
    if cai["dtype"] != dlpack["dtype"] and not (
        raw_bytes and cai["itemsize"] == dlpack["itemsize"]
    ):
        return ("dtype", dlpack["dtype"], cai["dtype"])
    size = 1
    for extent in cai["shape"]:
        size *= extent
    if size and cai["pointer"] != dlpack["pointer"]:
        return ("pointer", hex(dlpack["pointer"]), hex(cai["pointer"]))
    if size:
        for axis, extent in enumerate(cai["shape"]):
            if extent > 1 and cai["strides"][axis] != dlpack["strides"][axis]:
                return (f"strides[{axis}]", dlpack["strides"], cai["strides"])
    if cai["readonly"] != dlpack["readonly"]:
        return ("readonly", dlpack["readonly"], cai["readonly"])
    return None


def floor(producer: str | None, consumer: str | None) -> list:
    """Every layout kind x dtype class x byte order (`checks._floor.data_floor`)."""
    from caiconform.checks import _floor

    return _floor.data_floor()


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    from caiconform import validate
    from caiconform.dlpack import DLPackError, export

    layout = Layout.from_dict(params["layout"])
    typestr = params["typestr"]
    values = sup.make_values(typestr, layout.shape, params["seed"], layout.strides)
    obj = sup.produce(producer, values, layout, typestr, "none")
    if not hasattr(obj, "__dlpack__"):
        return sup.skipped(f"{producer} objects do not export __dlpack__")
    context = f"{producer} {typestr} {layout.kind} {layout.shape}"
    ended, _warnings = sup.named_export(obj, typestr, context)
    if ended is not None:
        return ended
    report = validate(obj)
    if not report.ok:
        from caiconform.checks.schema import judge

        return judge(report.errors, f"{producer}: invalid CAI export")
    try:
        capsule, keep = export(obj)
    except DLPackError as exc:  # no capsule to compare: not a CAI question
        return sup.skipped(f"{context}: DLPack export unreadable: {exc}")
    cai = describe_cai(obj.__cuda_array_interface__)
    differs = compare(cai, describe_capsule(capsule))
    if differs is not None:
        field, dlpack_value, cai_value = differs
        return sup.failed(
            "CAI-DLPACK-AGREE",
            f"{producer}'s own DLPack capsule ({capsule.name}) says {field} {dlpack_value}; "
            f"{_which_is_wrong(obj, values)}",
            f"the CAI's {cai_value}",
            context,
        )
    del keep
    return _check_cuda_core(obj, cai, context, producer)


def _which_is_wrong(obj: Any, values: np.ndarray) -> str:
    """Which of the two exports misdescribes the memory, told by the reference consumer reading
    the CAI."""
    got, exc = sup.consume_with("reference", obj)
    if exc is not None:
        return f"the reference consumer could not read the CAI ({sup.describe_exception(exc)})"
    if sup.compare_values(np.asarray(got), values) is None:
        return "the CAI reads the values written, so the DLPack side is wrong"
    return "the CAI does not read the values written either"


def _check_cuda_core(obj: Any, cai: dict, context: str, producer: str | None) -> Result:
    """cuda.core's DLPack consumer against a capsule known to agree with the CAI."""
    if producer == "cuda.core":
        return sup.passed(f"{context}: CAI and DLPack agree")
    try:
        from cuda.core.utils import StridedMemoryView
    except ImportError:
        return sup.passed(f"{context}: CAI and DLPack agree (cuda.core not installed)")
    try:
        view = StridedMemoryView.from_dlpack(obj, stream_ptr=-1)
    except Exception as exc:  # cuda.core refusing is its own matter, not agreement
        return sup.passed(
            f"{context}: CAI and DLPack agree; cuda.core refused the capsule "
            f"({sup.describe_exception(exc)})"
        )
    differs = compare(cai, describe_view(view))
    if differs is None:
        return sup.passed(f"{context}: CAI and DLPack agree, cuda.core reads the same")
    field, seen, want = differs
    result = sup.failed(
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


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    layout = Layout.from_dict(params["layout"])
    return sup.repro_script(
        f"agreement: {producer}'s __cuda_array_interface__ and its own DLPack capsule should "
        f"describe the same pointer, shape, strides and dtype [CAI-DLPACK-AGREE]; cuda.core's "
        f"reading of the capsule is printed beside them.",
        sup.values_source(params["typestr"], layout.shape, params["seed"], layout.strides),
        sup.producer_source(producer, layout, params["typestr"]),
        "from caiconform.dlpack import export\n\n"
        "print('CAI:', obj.__cuda_array_interface__)\n"
        "capsule, keep = export(obj)\n"
        "print('DLPack capsule:', capsule, 'byte strides', capsule.byte_strides)\n"
        "from cuda.core.utils import StridedMemoryView\n\n"
        "view = StridedMemoryView.from_dlpack(obj, stream_ptr=-1)\n"
        "print('cuda.core: ptr', hex(view.ptr), 'shape', view.shape, 'strides (elements)', "
        "view.strides, 'dtype', view.dtype, 'readonly', view.readonly)\n",
    )
