"""agreement: where an object exports both the CAI and DLPack, do they describe the same data?

The producer's object is read twice: its `__cuda_array_interface__` dict, and its DLPack
capsule through a public consumer, `cuda.core.utils.StridedMemoryView.from_dlpack` (no stream
ordering: `stream_ptr=-1`). Both must give the same data pointer (except for zero-size arrays,
where the CAI prescribes 0 and DLPack does not), shape, byte strides over every dimension longer
than 1 (strides of length-1 dimensions address nothing), element type and read-only flag
[CAI-DLPACK-AGREE].

Outcomes: `pass`; `fail` CAI-DLPACK-AGREE naming the first field that differs; `skip` for an
object without `__dlpack__`.
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


def describe_cai(d: dict) -> dict[str, Any]:
    """pointer, shape, byte strides, dtype and read-only flag of a valid CAI dict."""
    dtype = np.dtype(d["typestr"])
    shape = tuple(d["shape"])
    strides = d.get("strides")
    return {
        "pointer": d["data"][0],
        "shape": shape,
        "strides": c_strides(shape, dtype.itemsize) if strides is None else tuple(strides),
        "dtype": dtype,
        "readonly": d["data"][1],
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
        "dtype": dtype,
        "readonly": bool(view.readonly),
    }


def compare(cai: dict[str, Any], dlpack: dict[str, Any]) -> tuple[str, Any, Any] | None:
    """(field, DLPack's value, the CAI's value) for the first field that differs, else None."""
    if cai["shape"] != dlpack["shape"]:
        return ("shape", dlpack["shape"], cai["shape"])
    if cai["dtype"] != dlpack["dtype"]:
        return ("dtype", dlpack["dtype"].str, cai["dtype"].str)
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


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    from caiconform import validate

    layout = Layout.from_dict(params["layout"])
    typestr = params["typestr"]
    values = sup.make_values(typestr, layout.shape, params["seed"], layout.strides)
    obj = sup.produce(producer, values, layout, typestr, "none")
    if not hasattr(obj, "__dlpack__"):
        return sup.skipped(f"{producer} objects do not export __dlpack__")
    report = validate(obj)
    if not report.ok:
        from caiconform.checks.schema import judge

        return judge(report.errors, f"{producer}: invalid CAI export")
    from cuda.core.utils import StridedMemoryView

    context = f"{producer} {typestr} {layout.kind} {layout.shape}"
    try:
        view = StridedMemoryView.from_dlpack(obj, stream_ptr=-1)
    except Exception as exc:  # the capsule could not be read: not a CAI question
        return sup.skipped(f"{context}: DLPack export unreadable: {sup.describe_exception(exc)}")
    differs = compare(describe_cai(obj.__cuda_array_interface__), describe_view(view))
    if differs is None:
        return sup.passed(f"{context}: CAI and DLPack agree")
    field, dlpack_value, cai_value = differs
    return sup.failed(
        "CAI-DLPACK-AGREE",
        f"DLPack {field} {dlpack_value}",
        f"the CAI's {cai_value}",
        context,
    )


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    layout = Layout.from_dict(params["layout"])
    return sup.repro_script(
        f"agreement: {producer}'s __cuda_array_interface__ and its DLPack capsule should "
        f"describe the same pointer, shape, strides and dtype [CAI-DLPACK-AGREE].",
        sup.values_source(params["typestr"], layout.shape, params["seed"], layout.strides),
        sup.producer_source(producer, layout, params["typestr"]),
        "from cuda.core.utils import StridedMemoryView\n\n"
        "print('CAI:', obj.__cuda_array_interface__)\n"
        "view = StridedMemoryView.from_dlpack(obj, stream_ptr=-1)\n"
        "print('DLPack: ptr', hex(view.ptr), 'shape', view.shape, 'strides (elements)', "
        "view.strides, 'dtype', view.dtype, 'readonly', view.readonly)\n",
    )
