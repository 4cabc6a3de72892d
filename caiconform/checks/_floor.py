"""The coverage floor: fixed examples every cell runs before its random draws.

Random draws find what they happen to draw: a cell that drew no broadcast layout in 100
examples cannot find a producer's broadcast bug, and the next seed may. So each family that
exchanges arrays first runs one explicit example per combination it is *required* to cover,
the same in every run, and hypothesis explores beyond that floor. A combination the library
cannot make is run all the same and recorded as `skip` with the adapter's reason, never left
out, so the report can say which required combinations were not exercised.

What is required (a covering design, not the full product of every axis, so that a cell stays
cheap and each axis is crossed with the ones it interacts with):
- data families (roundtrip, schema, agreement): every layout kind x every dtype class x every
  byte order the class allows (`<` and `>` for multi-byte types, `|` for one-byte and the
  named types), stream scenario `none`;
- the families that judge a consumer's read (roundtrip, dlpack_roundtrip) also: views of
  every 8th item in C and F order (`READ_LAYOUTS`), whose byte strides are the contiguous
  strides counted in bits, a unit mistake no drawn step (1-3 items) makes visible;
- zero-size: every zero-size shape (a zero in each dimension, 1-d and 2-d) x strides None /
  explicit x a few dtype classes;
- streams: every stream scenario the family judges x every dtype class, on a C layout (the
  pending write is a byte copy: layout and byte order are covered by the data families);
- plain-array families (lifetime, readonly, devices, mask, versions): every dtype class once.

Each floor example is `FloorExample(coverage, params)`: `coverage` names the combination
(`layout`, `dtype`, `order`, `scenario`), `params` are the family's own params, so a floor
example runs and reproduces exactly like a drawn one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from caiconform.spec.dtypes import byte_order, dtype_class, numpy_dtype
from caiconform.spec.layout import Layout, c_strides, f_strides

__all__ = [
    "FloorExample",
    "FLOOR_LAYOUTS",
    "FLOOR_TYPESTRS",
    "READ_LAYOUTS",
    "READ_TYPESTRS",
    "PLAIN_TYPESTRS",
    "ZERO_SIZE_SHAPES",
    "floor_layout",
    "data_floor",
    "read_floor",
    "zero_size_floor",
    "plain_floor",
    "coverage_of",
]

#: the layout kinds of the floor, in order; "C" has strides None, "C-strides" explicit ones
FLOOR_LAYOUTS = (
    "C",
    "C-strides",
    "F",
    "sliced",
    "padded",
    "negative",
    "broadcast",
    "odd",
    "0d",
    "zero-size",
)
#: the layout kinds only the consumer-read families' floors have: every 8th item of a C (F)
#: parent's rows (columns)
READ_LAYOUTS = ("sliced-8", "F-sliced-8")
#: their typestrs, one per item size class: what they test is the stride arithmetic, the same
#: for every element type
READ_TYPESTRS = ("|u1", "<f4", "<c16")
#: one typestr per dtype class and byte order (names for the types with no typestr code)
FLOOR_TYPESTRS = (
    "|b1",
    "|i1",
    "<i4",
    ">i4",
    "|u1",
    "<u2",
    ">u2",
    "<f2",
    ">f2",
    "<f4",
    ">f4",
    "<f8",
    ">f8",
    "<c8",
    ">c8",
    "<c16",
    "<M8[ns]",
    ">M8[ns]",
    "bfloat16",
    "float8_e4m3fn",
    "float8_e5m2",
    "structured",
)
#: native-order typestrs, one per dtype class: the floor of the plain-array families
PLAIN_TYPESTRS = tuple(
    t for t in FLOOR_TYPESTRS if not t.startswith(">") and t not in ("|i1", "<c16")
)
#: zero-size shapes: a zero in each dimension
ZERO_SIZE_SHAPES = ((0,), (0, 3), (3, 0))
_SHAPE = (3, 4)


@dataclass(frozen=True)
class FloorExample:
    coverage: dict[str, str]
    params: dict[str, Any]


def floor_layout(kind: str, itemsize: int) -> Layout | None:
    """The floor's layout of `kind` for items of `itemsize` bytes (shape (3, 4) unless the kind
    says otherwise); None when the kind cannot exist for that item size (odd strides need
    items of at least 2 bytes)."""
    shape, n = _SHAPE, itemsize
    c = c_strides(shape, n)
    if kind == "C":
        return Layout(shape, None, kind="C")
    if kind == "C-strides":
        return Layout(shape, c, kind="C")
    if kind == "F":
        return Layout(shape, f_strides(shape, n), kind="F")
    if kind == "sliced":  # rows 1, 3, 5 and columns 1, 3, 5, 7 of a (7, 9) parent
        parent = c_strides((7, 9), n)
        return Layout(
            shape, (2 * parent[0], 2 * parent[1]), offset=parent[0] + parent[1], kind="sliced"
        )
    if kind == "padded":  # rows of 4 items, 2 items of padding between rows
        return Layout(shape, (6 * n, n), pad=n, kind="padded")
    if kind == "negative":  # rows reversed
        return Layout(shape, (-c[0], c[1]), offset=2 * c[0], kind="negative")
    if kind == "broadcast":  # one row repeated
        return Layout(shape, (0, n), kind="broadcast")
    if kind == "odd":
        if n < 2:
            return None
        step = n + 1
        return Layout(shape, (4 * step + 1, step), kind="odd", portable=False)
    if kind in READ_LAYOUTS:
        # the C (F) strides of the shape counted in bits, not bytes: a consumer that takes an
        # item's bit width for its size in bytes sees them as contiguous
        strides = (c_strides if kind == "sliced-8" else f_strides)(shape, 8 * n)
        return Layout(shape, strides, kind="sliced")
    if kind == "0d":
        return Layout((), None, kind="C")
    if kind == "zero-size":
        return Layout((0, 4), None, kind="C")
    raise ValueError(f"unknown floor layout kind {kind!r}")


def coverage_of(typestr: str, layout_kind: str | None = None, scenario: str = "none") -> dict:
    """The coverage labels of one example."""
    out = {"dtype": dtype_class(typestr), "order": byte_order(typestr), "scenario": scenario}
    if layout_kind is not None:
        out["layout"] = layout_kind
    return out


def data_floor(seed: int = 0) -> list[FloorExample]:
    """Every floor layout x every floor typestr; params {typestr, layout, seed}."""
    out = []
    for kind in FLOOR_LAYOUTS:
        for typestr in FLOOR_TYPESTRS:
            layout = floor_layout(kind, numpy_dtype(typestr).itemsize)
            if layout is None:
                continue
            out.append(
                FloorExample(
                    coverage_of(typestr, kind),
                    {"typestr": typestr, "layout": layout.to_dict(), "seed": seed},
                )
            )
    return out


def read_floor(typestrs: tuple[str, ...] = READ_TYPESTRS, seed: int = 0) -> list[FloorExample]:
    """`READ_LAYOUTS` x `typestrs`; params {typestr, layout, seed}."""
    return [
        FloorExample(
            coverage_of(typestr, kind),
            {
                "typestr": typestr,
                "layout": floor_layout(kind, numpy_dtype(typestr).itemsize).to_dict(),
                "seed": seed,
            },
        )
        for kind in READ_LAYOUTS
        for typestr in typestrs
    ]


def zero_size_floor() -> list[FloorExample]:
    """Every zero-size shape x strides None / explicit x a few dtype classes."""
    out = []
    for typestr in ("|b1", "<f4", "<c16", "bfloat16"):
        itemsize = numpy_dtype(typestr).itemsize
        for shape in ZERO_SIZE_SHAPES:
            for explicit in (False, True):
                layout = Layout(shape, c_strides(shape, itemsize) if explicit else None)
                kind = f"zero-size{list(shape)}" + (" strides" if explicit else "")
                out.append(
                    FloorExample(
                        coverage_of(typestr, kind),
                        {"typestr": typestr, "layout": layout.to_dict()},
                    )
                )
    return out


def plain_floor(shape: tuple[int, ...] = (4, 3), seed: int = 0) -> list[FloorExample]:
    """One C-contiguous array per dtype class; params {typestr, shape, seed}."""
    return [
        FloorExample(coverage_of(t, "C"), {"typestr": t, "shape": list(shape), "seed": seed})
        for t in PLAIN_TYPESTRS
    ]
