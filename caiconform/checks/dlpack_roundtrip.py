"""dlpack_roundtrip: do the values survive producer -> consumer over DLPack?

The DLPack counterpart of `roundtrip`. The producer lays random bit patterns out at a drawn
layout and type, as there; its object is handed to the consumer behind `_staging.dlpack_only`
(only `__dlpack__` and `__dlpack_device__`), so the consumer's own DLPack import
(`Adapter.consume_dlpack`: `torch.from_dlpack`, `cupy.from_dlpack`, ...) is what reads it.

Before the exchange the producer's export is judged alone (`dlpack.validate.check_dlpack`: its
`__dlpack_device__`, the capsule's name, destructor, version, dtype code, shape, strides,
byte_offset, zero-size data pointer): a MUST finding there is the producer's `fail`, so a
consumer refusing such a capsule is not blamed for it; SHOULD findings ride along as warnings.

Types DLPack has no code for (datetimes, structured) and non-native byte order (dlpack.h: "The
data type is assumed to follow the native endian-ness") cannot be exported as they are: a
producer refusing them with BufferError does what the standard asks (DLPACK-EXPORT-BUFFERERROR,
DLPACK-BYTE-ORDER-REFUSED), a `pass`; one exporting a non-native array whose values then read
wrong breaks DLPACK-BYTE-ORDER. A producer refusing an array DLPack can describe is `rejected`,
filed against the producer (DLPACK-EXPORT-BUFFERERROR names the refusal).

A consumer reading other values: caiconform reads the same object itself
(`_dlpack_exchange.reference_read`); if it reads the values written, the consumer misread the
capsule (DLPACK-CONSUMER-READS-DESCRIBED), else the capsule does not describe the array
(DLPACK-PRODUCER-DESCRIBES-DATA). Zero-size shapes are part of the floor: the consumer must
give an empty array of the shape, whatever the data pointer.
"""

from __future__ import annotations

import functools

from hypothesis import strategies as st

from caiconform.checks import (
    _dlpack_exchange,
    _dlpack_refusals,
    _exchange,
    _results,
    _sources,
    _values,
)
from caiconform.results.outcome import FAIL, PASS, REJECTED, Result
from caiconform.spec.layout import Layout
from caiconform.spec.values import compare_values, make_values, values_source

__all__ = [
    "FAMILY",
    "ROLES",
    "NEEDS_GPU",
    "NO_CODE_TYPESTRS",
    "examples",
    "floor",
    "execute",
    "exportable",
    "uncommon",
    "repro",
]

FAMILY = "dlpack_roundtrip"
ROLES = "pair"
NEEDS_GPU = True
SINGLE_QUEUE = True
#: floor types DLPack has no type code for (dlpack.h `DLDataTypeCode`)
NO_CODE_TYPESTRS = ("<M8[ns]", ">M8[ns]", "structured")
#: the floor's layouts are crossed with these types only; every type goes on a C layout
_LAYOUT_TYPESTRS = ("<f4", "|b1")
_ZERO_SIZE_TYPESTRS = ("<f4", "bfloat16")
#: the caiconform type names with a DLPack code but no numpy typestr (dlpack.h codes 4, 10, 12)
_NAMED_CODES = ("bfloat16", "float8_e4m3fn", "float8_e5m2")


def uncommon(typestr: str) -> bool:
    """A type a consumer need not have (DLPACK-PORT-DTYPE): bfloat16, the float8 formats,
    floats wider than 64 bits and complex wider than 128."""
    from caiconform.spec.dtypes import numpy_dtype

    if typestr in _NAMED_CODES:
        return True
    dtype = numpy_dtype(typestr)
    return dtype.kind == "f" and dtype.itemsize > 8 or dtype.kind == "c" and dtype.itemsize > 16


def exportable(typestr: str) -> tuple[bool, str]:
    """(True, "") when DLPack can describe an array of `typestr` as it is; else (False, the
    rule whose refusal is then right and why)."""
    from caiconform.spec.dtypes import numpy_dtype

    if typestr in _NAMED_CODES:
        return True, ""
    dtype = numpy_dtype(typestr)
    if dtype.kind not in "biufc" or dtype.fields is not None or dtype.itemsize > 31:
        # bits is a uint8_t in dlpack.h: no 256-bit complex
        return False, "DLPACK-EXPORT-BUFFERERROR: DLPack has no type code for it"
    if not dtype.isnative:
        return False, "DLPACK-BYTE-ORDER-REFUSED: DLPack data is native-endian"
    return True, ""


@functools.cache
def _params(typestr: str) -> st.SearchStrategy[dict]:
    from caiconform import strategies as cst
    from caiconform.spec.typestr import parse_typestr

    itemsize = parse_typestr(typestr).itemsize
    return st.fixed_dictionaries(
        {
            "typestr": st.just(typestr),
            # DLPack strides count elements: no byte strides that are not a multiple of the item
            "layout": cst.layouts(itemsize=itemsize, portable_only=True).map(Layout.to_dict),
            "seed": _values.seeds(),
        }
    )


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    """typestr (numeric kinds), an element-aligned layout, seed."""
    from caiconform import strategies as cst

    return cst.typestrs().flatmap(_params)


def floor(producer: str | None, consumer: str | None) -> list:
    """Every floor type on a C layout (those DLPack cannot describe included: their refusal is
    judged), every floor layout for `_LAYOUT_TYPESTRS`, the views of every 8th item
    (`checks._floor.read_floor`) for the same, and the zero-size shapes."""
    from caiconform.checks import _floor
    from caiconform.spec.dtypes import numpy_dtype
    from caiconform.spec.layout import c_strides

    out = []
    for typestr in _floor.FLOOR_TYPESTRS:
        layout = _floor.floor_layout("C", numpy_dtype(typestr).itemsize)
        out.append(_example(typestr, "C", layout))
    for kind in _floor.FLOOR_LAYOUTS:
        for typestr in _LAYOUT_TYPESTRS:
            layout = _floor.floor_layout(kind, numpy_dtype(typestr).itemsize)
            if kind != "C" and layout is not None:
                out.append(_example(typestr, kind, layout))
    out.extend(_floor.read_floor(_LAYOUT_TYPESTRS))
    for typestr in _ZERO_SIZE_TYPESTRS:
        for shape in _floor.ZERO_SIZE_SHAPES:
            layout = Layout(shape, c_strides(shape, numpy_dtype(typestr).itemsize))
            out.append(_example(typestr, f"zero-size{list(shape)}", layout))
    return out


def _example(typestr: str, kind: str, layout: Layout):
    from caiconform.checks import _floor

    return _floor.FloorExample(
        _floor.coverage_of(typestr, kind),
        {"typestr": typestr, "layout": layout.to_dict(), "seed": 0},
    )


def _producer_refused(
    producer: str, why: str, typestr: str, layout: Layout, context: str
) -> Result:
    """The producer gave no capsule (`why`, from `check_dlpack`)."""
    from caiconform.spec.dtypes import numpy_dtype

    ok, rule_why = exportable(typestr)
    itemsize = numpy_dtype(typestr).itemsize
    if ok and any(s % itemsize for s in layout.effective_strides(itemsize)):
        ok, rule_why = False, "DLPACK-STRIDES-ELEMENTS: DLPack strides count elements"
    buffer_error = why.endswith("BufferError") or ": BufferError: " in why.rsplit(";", 1)[-1]
    if not ok and buffer_error:
        return _results.passed(f"{context}: refused with BufferError, as {rule_why}")
    if not buffer_error:
        return _results.failed(
            "DLPACK-EXPORT-BUFFERERROR",
            why,
            "a capsule, or BufferError where the array cannot be exported",
            context,
        )
    return Result(
        REJECTED,
        "DLPACK-EXPORT-BUFFERERROR",
        _results.finding_message(
            "DLPACK-EXPORT-BUFFERERROR", why, "a capsule of an array DLPack can describe", context
        ),
        why,
        "a capsule of an array DLPack can describe",
        culprit={
            "library": producer,
            "role": "producer",
            "why": "the producer refused to export an array DLPack can describe",
        },
    )


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    from caiconform.checks.schema import judge
    from caiconform.dlpack.validate import check_dlpack
    from caiconform.spec.rules import Level

    layout = Layout.from_dict(params["layout"])
    typestr = params["typestr"]
    values = make_values(typestr, layout.shape, params.get("seed", 0), layout.strides)
    obj = _exchange.produce(producer, values, layout, typestr, "none")
    if not hasattr(obj, "__dlpack__"):  # a library without DLPack (the plugin's factory)
        return _results.skipped(f"{producer}'s {type(obj).__name__} does not export __dlpack__")
    context = f"{producer}->{consumer} over DLPack {typestr} {layout.kind} {layout.shape}"
    findings, why = check_dlpack(obj)
    errors = [f for f in findings if f.level is Level.MUST]
    if errors:
        return judge(errors, f"{context}: invalid capsule")
    if why is not None:
        return _producer_refused(producer, why, typestr, layout, context)
    warnings = sorted({f.rule for f in findings})
    result = _exchange_values(obj, values, typestr, producer, consumer, context)
    if result.outcome == PASS and warnings:
        return _results.passed(f"{result.message}; warnings: {', '.join(warnings)}", seen=warnings)
    return result


def _exchange_values(
    obj, values, typestr: str, producer: str, consumer: str, context: str
) -> Result:
    from caiconform.adapters._staging import dlpack_only

    rule = _dlpack_exchange.CONSUMER_RULE
    view = dlpack_only(obj)
    read, exc = _dlpack_exchange.consume_dlpack_with(consumer, view)
    if exc is not None and view.refusals:
        request, raised = view.refusals[-1]
        return _dlpack_refusals.producer_refused(raised, producer, context, request=request)
    if exc is not None:
        if uncommon(typestr):
            rule = "DLPACK-PORT-DTYPE"  # a type the consumer need not have
        return _results.rejected(rule, exc, "the values the capsule describes", context)
    mismatch = compare_values(read, values)
    if mismatch is None:
        return _results.passed(f"{context}: read back exactly")
    result = _results.failed(rule, mismatch, "the values the capsule describes", context)
    if consumer == "reference":
        return _blame_producer(result, typestr, mismatch, context)
    baseline, how = _dlpack_exchange.reference_read(obj)
    if baseline is None:
        return result
    if compare_values(baseline, values) is None:
        return result
    return _blame_producer(result, typestr, f"{how} reads a mismatch too: {mismatch}", context)


def _blame_producer(result: Result, typestr: str, seen: str, context: str) -> Result:
    """The capsule does not describe the array: a non-native type exported as it is breaks
    DLPACK-BYTE-ORDER, anything else DLPACK-PRODUCER-DESCRIBES-DATA."""
    assert result.outcome == FAIL
    ok, _why = exportable(typestr)
    rule = "DLPACK-BYTE-ORDER" if not ok and typestr.startswith(">") else None
    return _results.failed(
        rule or _dlpack_exchange.PRODUCER_RULE,
        seen,
        "a capsule describing the values the array holds",
        context,
    )


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    layout = Layout.from_dict(params["layout"])
    typestr = params["typestr"]
    snippet = _exchange.adapter(consumer).repro_consume_dlpack() if consumer else ""
    consume = (
        snippet
        or "from caiconform.adapters.registry import get\n"
        f"result = get({consumer!r}).consume_dlpack(obj)\n"
    )
    return _sources.repro_script(
        f"dlpack_roundtrip: a {typestr} array, layout {layout.kind} {layout.shape} strides "
        f"{layout.strides}, produced by {producer} and imported over DLPack by {consumer}, "
        f"should read back bit for bit.",
        values_source(typestr, layout.shape, params.get("seed", 0), layout.strides),
        _sources.producer_source(producer, layout, typestr),
        consume,
        _sources.COMPARE_SOURCE,
    )
