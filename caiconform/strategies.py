"""Hypothesis strategies for the CUDA Array Interface: typestrs, shapes, layouts, interface
dicts (valid ones and mutants that break exactly one rule) and stream scenarios.

Modelled on `hypothesis.extra.numpy`: every argument is checked when the strategy is built, and
a bad one raises `hypothesis.errors.InvalidArgument` naming it. Sizes are small by default, so
examples are cheap to produce on a device and easy to read when they fail.

Shrinking: every choice is made with `sampled_from`, `booleans` or `integers`, listed simplest
first, so failing examples shrink toward the first kind or layout offered, fewer dimensions,
sides of 0 and then 1, no optional entries, stream None and the lowest pointers.

Example::

    from hypothesis import given
    from caiconform import strategies as cst, validate

    @given(cst.mutants(version=3))
    def test_my_consumer_rejects_invalid(mutant):
        d, rule = mutant                       # `d` breaks exactly `rule`
        assert rule in validate(d).rules
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from math import prod
from typing import Any, NamedTuple

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from caiconform.spec.layout import LAYOUT_KINDS, Layout, c_strides, f_strides
from caiconform.spec.typestr import DATETIME_UNITS, FIXED_SIZES, KINDS, parse_typestr
from caiconform.spec.validate import keys_for_version

__all__ = [
    "typestrs",
    "shapes",
    "layouts",
    "interface_dicts",
    "mutants",
    "Mutant",
    "MUTATIONS",
    "pin_variant",
    "stream_scenarios",
    "CAIExport",
]

_VERSIONS = (0, 1, 2, 3)
_NEWEST_FIRST = (3, 2, 1, 0)  # shrink toward the current version
_ORDER_FREE = "bSVOt"  # kinds whose byte order cannot matter; numpy spells them with '|'
_MAX_DIMS = 32  # numpy's limit; more is never needed to exercise a consumer


class CAIExport:
    """A minimal object exposing a given interface dict (used for masks and as a producer
    stand-in in tests)."""

    def __init__(self, interface: dict) -> None:
        self.__cuda_array_interface__ = interface

    def __repr__(self) -> str:
        return f"CAIExport({self.__cuda_array_interface__!r})"


# --- argument checks -----------------------------------------------------------------------


def _check_int(name: str, value: Any, lo: int, hi: int | None = None) -> None:
    if type(value) is not int:
        raise InvalidArgument(f"{name}={value!r} must be an int")
    if value < lo or (hi is not None and value > hi):
        upper = "" if hi is None else f" and <= {hi}"
        raise InvalidArgument(f"{name}={value!r} must be >= {lo}{upper}")


def _check_version(version: Any) -> None:
    if version is not None and (type(version) is not int or version not in _VERSIONS):
        raise InvalidArgument(f"version={version!r} must be one of 0, 1, 2, 3 or None")


def _check_strategy(name: str, value: Any) -> None:
    if value is not None and not isinstance(value, st.SearchStrategy):
        raise InvalidArgument(f"{name}={value!r} must be a strategy or None")


def _as_strategy(value: Any, check: Callable[[Any], None]) -> st.SearchStrategy:
    if isinstance(value, st.SearchStrategy):
        return value
    check(value)
    return st.just(value)


# --- typestrs ------------------------------------------------------------------------------


def typestrs(
    *,
    kinds: str | Iterable[str] = "biufc",
    byteorder: str = "<",
    itemsizes: Iterable[int] | None = None,
    max_flexible_size: int = 16,
) -> st.SearchStrategy[str]:
    """Array-interface typestrs such as ``'<f4'``, ``'|b1'``, ``'<M8[25s]'``.

    kinds: the kind codes to draw from (any of ``t b i u f c m M O S U V``); the default, the
        numeric kinds, is what GPU consumers accept.
    byteorder: the byte-order characters allowed, from ``'<>|'``. Kinds and sizes whose byte
        order cannot matter are always spelled ``'|'``, as numpy does (``'|i1'``, ``'|b1'``).
    itemsizes: if given, only these item sizes (bytes; characters for ``U``, bits for ``t``).
    max_flexible_size: the largest size drawn for S, U, V and t when `itemsizes` is None.

    Shrinks toward the first kind listed, its smallest size and the first byte order.
    """
    kind_list = list(kinds)
    if not kind_list:
        raise InvalidArgument("kinds must name at least one kind code")
    for kind in kind_list:
        if kind not in KINDS:
            raise InvalidArgument(f"kinds: {kind!r} is not one of {' '.join(KINDS)}")
    if not byteorder or any(c not in "<>|" for c in byteorder):
        raise InvalidArgument(f"byteorder={byteorder!r} must be made of '<', '>' and '|'")
    _check_int("max_flexible_size", max_flexible_size, 1)
    wanted = None if itemsizes is None else sorted(set(itemsizes))
    if wanted is not None:
        for size in wanted:
            _check_int("itemsizes element", size, 1)
    options = []
    for kind in dict.fromkeys(kind_list):
        sizes = FIXED_SIZES.get(kind, tuple(range(1, max_flexible_size + 1)))
        if wanted is not None:
            sizes = tuple(s for s in sizes if s in wanted) if kind in FIXED_SIZES else tuple(wanted)
        if sizes:
            options.append((kind, sizes))
    if not options:
        raise InvalidArgument(f"no valid item size in itemsizes={wanted} for kinds={kind_list}")
    return st.sampled_from(options).flatmap(lambda ks: _typestrs_of(ks[0], ks[1], byteorder))


@functools.cache  # _typestrs_of: one strategy per value (flatmap validates each new one)
def _typestrs_of(kind: str, sizes: tuple[int, ...], byteorder: str) -> st.SearchStrategy[str]:
    def spell(order: str, size: int, unit: str) -> str:
        if kind in _ORDER_FREE or (size == 1 and kind in "iu"):
            order = "|"
        return f"{order}{kind}{size}{unit}"

    units = st.just("")
    if kind in "mM":
        units = st.one_of(
            st.just(""),
            st.tuples(st.sampled_from(["", "2", "25"]), st.sampled_from(DATETIME_UNITS[:-1])).map(
                lambda cu: f"[{cu[0]}{cu[1]}]"
            ),
        )
    return st.builds(spell, st.sampled_from(byteorder), st.sampled_from(sizes), units)


# --- shapes --------------------------------------------------------------------------------


def shapes(
    *, min_dims: int = 0, max_dims: int = 4, max_side: int = 4, allow_zero: bool = True
) -> st.SearchStrategy[tuple[int, ...]]:
    """Array shapes: tuples of `min_dims` to `max_dims` sides, each 0 (when `allow_zero`) or 1
    to `max_side`. 0-d shapes (``()``) are included when min_dims is 0, zero-size shapes when
    `allow_zero`: both are edge cases consumers get wrong.

    Shrinks toward fewer dimensions and smaller sides (0 first when allowed).
    """
    _check_int("min_dims", min_dims, 0, _MAX_DIMS)
    _check_int("max_dims", max_dims, 0, _MAX_DIMS)
    if min_dims > max_dims:
        raise InvalidArgument(f"min_dims={min_dims} must be <= max_dims={max_dims}")
    _check_int("max_side", max_side, 1)
    if type(allow_zero) is not bool:
        raise InvalidArgument(f"allow_zero={allow_zero!r} must be a bool")
    side = st.integers(0 if allow_zero else 1, max_side)
    return st.lists(side, min_size=min_dims, max_size=max_dims).map(tuple)


# --- layouts -------------------------------------------------------------------------------


def layouts(
    *,
    shape: tuple[int, ...] | st.SearchStrategy[tuple[int, ...]] | None = None,
    itemsize: int | st.SearchStrategy[int] = 4,
    kinds: Iterable[str] | None = None,
    portable_only: bool = True,
) -> st.SearchStrategy[Layout]:
    """`caiconform.spec.layout.Layout`s of a shape: where each element lives, in bytes.

    shape: a shape, a strategy for one, or None for `shapes()`.
    itemsize: the item size in bytes (or a strategy for it).
    kinds: layout families, from ``LAYOUT_KINDS``: ``C`` (strides None or explicit), ``F``,
        ``padded`` (gaps after each row), ``sliced`` (a strided view into a larger array, with
        an offset), ``negative`` (some dimensions reversed; the offset points at the last
        element of those), ``broadcast`` (zero strides), and ``odd`` (strides that are not a
        multiple of the item size: legal, but most consumers reject them). Default: all but
        ``odd`` when `portable_only`, else all.
    portable_only: refuse ``odd``. A layout's ``portable`` is False exactly when the validator
        would report CAI-PORT-STRIDES-ITEMSIZE for it (an odd stride over a side > 1 of a
        non-empty array). A 0-d shape has the same (empty) strides in every family.

    Shrinks toward the first kind (C, strides None), small gaps and offsets.
    """
    if type(portable_only) is not bool:
        raise InvalidArgument(f"portable_only={portable_only!r} must be a bool")
    if kinds is None:
        kind_list = [k for k in LAYOUT_KINDS if k != "odd" or not portable_only]
    else:
        kind_list = list(dict.fromkeys(kinds))
        if not kind_list:
            raise InvalidArgument("kinds must name at least one layout kind")
        for kind in kind_list:
            if kind not in LAYOUT_KINDS:
                raise InvalidArgument(f"kinds: {kind!r} is not one of {LAYOUT_KINDS}")
        if portable_only and "odd" in kind_list:
            raise InvalidArgument("kinds includes 'odd' but portable_only=True; pass False")
    shape_st = shapes() if shape is None else _as_strategy(shape, _check_shape_arg)
    itemsize_st = _as_strategy(itemsize, lambda v: _check_int("itemsize", v, 1))
    if kind_list == ["odd"] and type(itemsize) is int and itemsize == 1:
        raise InvalidArgument("'odd' strides need itemsize > 1 (every stride is a multiple of 1)")
    return _layouts(shape_st, itemsize_st, tuple(kind_list))


def _check_shape_arg(shape: Any) -> None:
    if type(shape) is not tuple or any(type(n) is not int or n < 0 for n in shape):
        raise InvalidArgument(f"shape={shape!r} must be a tuple of non-negative ints")


@st.composite
def _layouts(draw, shape_st, itemsize_st, kinds: tuple[str, ...]) -> Layout:
    shape = draw(shape_st)
    itemsize = draw(itemsize_st)
    choices = [k for k in kinds if k != "odd" or itemsize > 1] or ["C"]
    kind = draw(st.sampled_from(choices))
    return _BUILDERS[kind](draw, shape, itemsize)


def _c_layout(draw, shape, itemsize) -> Layout:
    explicit = draw(st.booleans())
    return Layout(shape, c_strides(shape, itemsize) if explicit else None, kind="C")


def _f_layout(draw, shape, itemsize) -> Layout:
    return Layout(shape, f_strides(shape, itemsize), kind="F")


def _padded_layout(draw, shape, itemsize) -> Layout:
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step = step * max(n, 1) + draw(st.integers(0, 3)) * itemsize
    pad = draw(st.integers(0, 2)) * itemsize
    return Layout(shape, tuple(reversed(strides)), pad=pad, kind="padded")


def _sliced_layout(draw, shape, itemsize) -> Layout:
    steps = [draw(st.integers(1, 3)) for _ in shape]
    starts = [draw(st.integers(0, 2)) for _ in shape]
    parent = tuple(
        start + max(n - 1, 0) * step + 1 + draw(st.integers(0, 1))
        for n, step, start in zip(shape, steps, starts, strict=True)
    )
    parent_strides = c_strides(parent, itemsize)
    strides = tuple(s * step for s, step in zip(parent_strides, steps, strict=True))
    offset = sum(s * start for s, start in zip(parent_strides, starts, strict=True))
    return Layout(shape, strides, offset=offset, kind="sliced")


def _negative_layout(draw, shape, itemsize) -> Layout:
    base = c_strides(shape, itemsize)
    if not shape:
        return Layout(shape, base, kind="negative")
    flips = [draw(st.booleans()) for _ in shape]
    if not any(flips):
        flips[draw(st.integers(0, len(shape) - 1))] = True
    strides = tuple(-s if flip else s for s, flip in zip(base, flips, strict=True))
    offset = sum(max(n - 1, 0) * s for n, s, flip in zip(shape, base, flips, strict=True) if flip)
    if 0 in shape:
        offset = 0
    return Layout(shape, strides, offset=offset, kind="negative")


def _broadcast_layout(draw, shape, itemsize) -> Layout:
    if not shape:
        return Layout(shape, (), kind="broadcast")
    zeros = [draw(st.booleans()) for _ in shape]
    if not any(zeros):
        zeros[draw(st.integers(0, len(shape) - 1))] = True
    source = tuple(1 if z else n for n, z in zip(shape, zeros, strict=True))
    base = c_strides(source, itemsize)
    strides = tuple(0 if z else s for s, z in zip(base, zeros, strict=True))
    return Layout(shape, strides, kind="broadcast")


def _odd_layout(draw, shape, itemsize) -> Layout:
    strides = []
    step = itemsize + draw(st.integers(1, itemsize - 1))
    for n in reversed(shape):
        strides.append(step)
        step = step * max(n, 1) + draw(st.integers(0, 2))
    strides.reverse()
    portable = not (
        prod(shape) > 0 and any(n > 1 and s % itemsize for n, s in zip(shape, strides, strict=True))
    )
    return Layout(shape, tuple(strides), kind="odd", portable=portable)


_BUILDERS = {
    "C": _c_layout,
    "F": _f_layout,
    "padded": _padded_layout,
    "sliced": _sliced_layout,
    "negative": _negative_layout,
    "broadcast": _broadcast_layout,
    "odd": _odd_layout,
}


# --- interface dicts -----------------------------------------------------------------------


def interface_dicts(
    *,
    version: int | None = 3,
    valid: bool = True,
    shape: st.SearchStrategy[tuple[int, ...]] | None = None,
    typestr: st.SearchStrategy[str] | None = None,
) -> st.SearchStrategy:
    """`__cuda_array_interface__` dicts of CAI `version` (None: any of 0-3).

    valid=True: dicts that conform: no MUST or SHOULD finding (portability warnings such as
    negative strides or a mask may occur: they are legal). Optional entries (strides, descr,
    mask, stream) are present or absent; pointers are nonzero, aligned and fit the layout,
    and 0 for zero-size arrays (in every version, though v0/v1 did not require it).
    valid=False: `Mutant(interface, rule)` pairs from `mutants(version=version)`: a dict that
    breaks exactly the rule named (among MUST/SHOULD rules).
    shape, typestr: strategies for those entries (default `shapes()`, `typestrs()`).

    Shrinks toward version 3 when `version` is None, the smallest shape, the first typestr, a
    C layout and absent optional entries.
    """
    _check_version(version)
    if type(valid) is not bool:
        raise InvalidArgument(f"valid={valid!r} must be a bool")
    _check_strategy("shape", shape)
    _check_strategy("typestr", typestr)
    shape_st = shapes() if shape is None else shape
    typestr_st = typestrs() if typestr is None else typestr
    if not valid:
        return mutants(version=version, shape=shape_st, typestr=typestr_st)
    versions = _NEWEST_FIRST if version is None else (version,)
    return _valid_dicts(versions, shape_st, typestr_st, "any")


@st.composite
def _valid_dicts(draw, versions, shape_st, typestr_st, size: str, min_dims: int = 0) -> dict:
    version = draw(st.sampled_from(versions))
    shape = draw(shape_st)
    if len(shape) < min_dims:
        shape = shape + (1,) * (min_dims - len(shape))
    if size == "zero" and 0 not in shape:
        shape = shape + (0,) if not shape else (0, *shape[1:])
    elif size == "nonzero":
        shape = tuple(max(n, 1) for n in shape)
    typestr = draw(typestr_st)
    itemsize = parse_typestr(typestr).itemsize
    pin = _PIN.get()
    kinds = ("C", "F", "padded", "sliced", "negative", "broadcast")
    layout = draw(
        _layouts(st.just(shape), st.just(itemsize), (pin.layout,) if pin and pin.layout else kinds)
    )
    d: dict[str, Any] = {
        "shape": shape,
        "typestr": typestr,
        "data": (_pointer(draw, prod(shape), layout.offset), draw(st.booleans())),
        "version": version,
    }
    if layout.strides is not None or draw(st.booleans()):
        d["strides"] = layout.strides
    if draw(st.booleans()):
        d["descr"] = [("", typestr)]
    if version >= 1 and draw(st.booleans()):
        d["mask"] = draw(st.none() | _masks(shape, version))
    if version >= 3 and draw(st.booleans()):
        d["stream"] = draw(st.sampled_from([None, 1, 2]) | st.integers(3, 2**64 - 1))
    return d


def _pointer(draw, count: int, offset: int) -> int:
    """0 for zero-size arrays; else a 256-byte aligned allocation start plus the layout's
    offset to element 0."""
    if count == 0:
        return 0
    return draw(st.integers(1, 2**40)) * 256 + offset


@st.composite
def _masks(draw, shape: tuple[int, ...], version: int) -> CAIExport:
    """A mask exposing the interface, its shape broadcastable to `shape` (trailing dims kept,
    some set to 1)."""
    keep = draw(st.integers(0, len(shape)))
    mask_shape = tuple(n if draw(st.booleans()) else 1 for n in shape[len(shape) - keep :])
    count = prod(mask_shape)
    ptr = 0 if count == 0 else draw(st.integers(1, 2**40)) * 256
    return CAIExport(
        {"shape": mask_shape, "typestr": "|b1", "data": (ptr, False), "version": version}
    )


# --- mutants -------------------------------------------------------------------------------


class Mutant(NamedTuple):
    """An interface dict that breaks exactly `rule` (its only MUST/SHOULD finding)."""

    interface: dict
    rule: str


class _Mutation(NamedTuple):
    versions: tuple[int, ...]
    size: str  # "any", "zero" or "nonzero": the base array it needs
    min_dims: int
    apply: Callable[[Any, dict], None]  # (draw, dict) -> None, edits the dict in place


class _Pin:
    """Which variant of a mutation to make (`pin_variant`): each mutation breaks its rule
    in a few ways (a float, a str, a bool where an int belongs...) and consumers differ on each
    (jax takes a bool shape element, CuPy a bool stream, torch a list of strides for a 0-d
    array: left to the seed, each is found by some seeds' draws only). `count` is how many
    variants the pinned draw offered; `layout` pins the base dict's layout kind."""

    def __init__(self, index: int, layout: str | None = None) -> None:
        self.index = index
        self.layout = layout
        self.count = 1


_PIN: ContextVar[_Pin | None] = ContextVar("caiconform_mutation_pin", default=None)


def _variant(unpinned: st.SearchStrategy, variants: list) -> st.SearchStrategy:
    """`unpinned` for drawn mutants; under a pin, the pinned one of `variants` (strategies)."""
    pin = _PIN.get()
    if pin is None:
        return unpinned
    pin.count = max(pin.count, len(variants))
    return variants[pin.index % len(variants)]


def _choice(values: list) -> st.SearchStrategy:
    """sampled_from(values), one variant per value."""
    return _variant(st.sampled_from(values), [st.just(v) for v in values])


def _either(*strategies: st.SearchStrategy) -> st.SearchStrategy:
    """one_of(strategies), one variant per strategy."""
    return _variant(st.one_of(*strategies), list(strategies))


def _set(key: str, values: list | Callable[[], st.SearchStrategy]) -> Callable[[Any, dict], None]:
    """Set d[key] to one of `values` (a list of bad values) or a draw from `values()` (built
    when drawn, so that a pin applies)."""

    def apply(draw, d: dict) -> None:
        d[key] = draw(_choice(values) if isinstance(values, list) else values())

    return apply


def _delete(key: str) -> Callable[[Any, dict], None]:
    def apply(draw, d: dict) -> None:
        del d[key]

    return apply


def _edit_element(key: str, values: Callable[[Any], st.SearchStrategy]):
    """Replace one element of d[key] (a tuple) by a value drawn from values(old)."""

    def apply(draw, d: dict) -> None:
        items = list(d[key])
        i = draw(st.integers(0, len(items) - 1))
        items[i] = draw(values(items[i]))
        d[key] = tuple(items)

    return apply


def _explicit_strides(d: dict) -> list[int]:
    return list(d.get("strides") or c_strides(d["shape"], parse_typestr(d["typestr"]).itemsize))


def _strides_type(draw, d: dict) -> None:
    d["strides"] = draw(
        _variant(
            st.sampled_from(["C", 4, 1.5]) | st.just(_explicit_strides(d)),  # a list, not a tuple
            [st.just(v) for v in ("C", 4, 1.5, _explicit_strides(d))],
        )
    )


def _strides_int(draw, d: dict) -> None:
    strides = _explicit_strides(d)
    i = draw(st.integers(0, len(strides) - 1))
    strides[i] = draw(_choice([float(strides[i]), str(strides[i]), None, True]))
    d["strides"] = tuple(strides)


def _strides_ndim(draw, d: dict) -> None:
    strides = _explicit_strides(d)
    if strides and draw(_variant(st.booleans(), [st.just(True), st.just(False)])):
        strides.pop()
    else:
        strides.append(draw(st.integers(1, 64)))
    d["strides"] = tuple(strides)


def _pointer_edit(values: Callable[[int], st.SearchStrategy]):
    def apply(draw, d: dict) -> None:
        ptr, readonly = d["data"]
        d["data"] = (draw(values(ptr)), readonly)

    return apply


def _readonly_edit(draw, d: dict) -> None:
    d["data"] = (d["data"][0], draw(_choice([0, 1, None, "False"])))


def _data_tuple(draw, d: dict) -> None:
    ptr, readonly = d["data"]
    d["data"] = draw(_choice([[ptr, readonly], (ptr,), (ptr, readonly, 0), ptr, None]))


def _descr_consistent(draw, d: dict) -> None:
    typestr = d["typestr"]
    itemsize = parse_typestr(typestr).itemsize
    d["descr"] = draw(_choice([[("", f"|V{itemsize + 1}")], [("a", typestr), ("b", typestr)]]))


def _descr_grammar(draw, d: dict) -> None:
    typestr = d["typestr"]
    d["descr"] = draw(
        _choice(
            [
                typestr,
                [],
                [("", "<f3")],
                [("", typestr, "x")],
                [(1, typestr)],
                (("", typestr),),
                [("a", typestr), ("a", typestr)],
                [["", typestr]],
            ]
        )
    )


class _NoInterface:
    """An object that exposes nothing (a mask must expose the interface)."""


class _RaisingInterface:
    """An object whose interface attribute raises something other than AttributeError."""

    @property
    def __cuda_array_interface__(self) -> dict:
        raise RuntimeError("no interface today")


def _mask_shape(draw, d: dict) -> None:
    shape = (2, *d["shape"])
    d["mask"] = CAIExport(
        {"shape": shape, "typestr": "|b1", "data": (256, False), "version": d["version"]}
    )


_ODD_KEYS = ["owner", "device", "Shape", "strides ", ""]


def _unknown_key(draw, d: dict) -> None:
    known = keys_for_version(3)
    key = draw(
        _variant(
            st.sampled_from(_ODD_KEYS) | st.text(max_size=8).filter(lambda k: k not in known),
            [st.just(k) for k in _ODD_KEYS],
        )
    )
    d[key] = draw(st.none() | st.integers() | st.text(max_size=4))


_BAD_TYPESTRS = [
    "",
    "f4",
    "<f3",
    "=i4",
    "<x4",
    "<f4 ",
    "<i4[ns]",
    "<M8[xs]",
    "|S0",
    "<b2",
    "<c4",
    "float32",
    "<i",
]
_NOT_INT = [1.0, "1", None, True]

#: rule ID -> how to break it (versions it applies to, the base array it needs, the edit).
MUTATIONS: dict[str, _Mutation] = {
    "CAI-KEYS-UNKNOWN": _Mutation(_VERSIONS, "any", 0, _unknown_key),
    "CAI-SHAPE-REQUIRED": _Mutation(_VERSIONS, "any", 0, _delete("shape")),
    "CAI-SHAPE-TUPLE": _Mutation(
        _VERSIONS,
        "any",
        0,
        lambda draw, d: d.update(shape=draw(_choice([list(d["shape"]), 3, "3", None]))),
    ),
    "CAI-SHAPE-INT": _Mutation(
        _VERSIONS,
        "any",
        1,
        _edit_element("shape", lambda n: _choice([float(n), str(n), None, True])),
    ),
    "CAI-SHAPE-NONNEGATIVE": _Mutation(
        _VERSIONS, "any", 1, _edit_element("shape", lambda n: st.integers(-(2**63), -1))
    ),
    "CAI-TYPESTR-REQUIRED": _Mutation(_VERSIONS, "any", 0, _delete("typestr")),
    "CAI-TYPESTR-STR": _Mutation(
        _VERSIONS,
        "any",
        0,
        lambda draw, d: d.update(typestr=draw(_choice([d["typestr"].encode(), 4, None, ["<f4"]]))),
    ),
    "CAI-TYPESTR-GRAMMAR": _Mutation(_VERSIONS, "any", 0, _set("typestr", _BAD_TYPESTRS)),
    "CAI-DATA-REQUIRED": _Mutation(_VERSIONS, "any", 0, _delete("data")),
    "CAI-DATA-TUPLE": _Mutation(_VERSIONS, "any", 0, _data_tuple),
    "CAI-DATA-POINTER-INT": _Mutation(
        _VERSIONS,
        "any",
        0,
        _pointer_edit(lambda p: _choice([float(p), str(p), None, True])),
    ),
    "CAI-DATA-POINTER-RANGE": _Mutation(
        _VERSIONS, "any", 0, _pointer_edit(lambda p: _choice([-p - 1, 2**64 + p]))
    ),
    "CAI-DATA-READONLY-BOOL": _Mutation(_VERSIONS, "any", 0, _readonly_edit),
    "CAI-DATA-ZERO-SIZE-NULL": _Mutation(
        (2, 3), "zero", 0, _pointer_edit(lambda p: st.integers(1, 2**40).map(lambda k: k * 256))
    ),
    "CAI-DATA-NONZERO-SIZE-NONNULL": _Mutation(
        _VERSIONS, "nonzero", 0, _pointer_edit(lambda p: st.just(0))
    ),
    "CAI-VERSION-REQUIRED": _Mutation(_VERSIONS, "any", 0, _delete("version")),
    "CAI-VERSION-INT": _Mutation(_VERSIONS, "any", 0, _set("version", _NOT_INT)),
    "CAI-VERSION-KNOWN": _Mutation(
        _VERSIONS,
        "any",
        0,
        _set("version", lambda: _either(st.integers(4, 2**70), st.integers(-(2**70), -1))),
    ),
    "CAI-STRIDES-TYPE": _Mutation(_VERSIONS, "any", 0, _strides_type),
    "CAI-STRIDES-INT": _Mutation(_VERSIONS, "any", 1, _strides_int),
    "CAI-STRIDES-NDIM": _Mutation(_VERSIONS, "any", 0, _strides_ndim),
    "CAI-DESCR-GRAMMAR": _Mutation(_VERSIONS, "any", 0, _descr_grammar),
    "CAI-DESCR-CONSISTENT": _Mutation(_VERSIONS, "any", 0, _descr_consistent),
    "CAI-MASK-TYPE": _Mutation(
        (1, 2, 3),
        "any",
        0,
        lambda draw, d: d.update(
            mask=draw(
                _choice(
                    [
                        5,
                        "mask",
                        {"shape": d["shape"]},
                        _NoInterface(),
                        _RaisingInterface(),
                        CAIExport([1]),
                    ]
                )
            )
        ),
    ),
    "CAI-MASK-SHAPE": _Mutation((1, 2, 3), "any", 0, _mask_shape),
    "CAI-STREAM-TYPE": _Mutation((3,), "any", 0, _set("stream", [1.0, "1", True, b"\x01"])),
    "CAI-STREAM-ZERO-FORBIDDEN": _Mutation((3,), "any", 0, _set("stream", [0])),
    "CAI-STREAM-HANDLE": _Mutation(
        (3,),
        "any",
        0,
        _set("stream", lambda: _either(st.integers(-(2**64), -1), st.integers(2**64, 2**70))),
    ),
    "CAI-V0-NO-MASK": _Mutation((0,), "any", 0, _set("mask", [None])),
    "CAI-V2-STREAM-UNDEFINED": _Mutation((0, 1, 2), "any", 0, _set("stream", [None, 1, 2, 0x7F00])),
}


def mutants(
    *,
    version: int | None = None,
    rules: Iterable[str] | None = None,
    shape: st.SearchStrategy[tuple[int, ...]] | None = None,
    typestr: st.SearchStrategy[str] | None = None,
) -> st.SearchStrategy[Mutant]:
    """`Mutant(interface, rule)`: a conforming dict with one targeted edit, so that `rule` is
    the only MUST or SHOULD rule it breaks (portability warnings may come along).

    version: the CAI version of the base dict (None: any); only rules of that version apply.
    rules: restrict to these rule IDs (default: every rule in `MUTATIONS`, which covers every
        dict-visible MUST/SHOULD rule except the attribute rules, which need an object).
    shape, typestr: strategies for the base dict's entries.

    Shrinks toward the first rule in `MUTATIONS` order, then like `interface_dicts`.
    """
    _check_version(version)
    _check_strategy("shape", shape)
    _check_strategy("typestr", typestr)
    wanted = list(MUTATIONS) if rules is None else list(dict.fromkeys(rules))
    for rule in wanted:
        if rule not in MUTATIONS:
            raise InvalidArgument(f"rules: no mutation breaks {rule!r}; known: {list(MUTATIONS)}")
    if version is not None:
        wanted = [r for r in wanted if version in MUTATIONS[r].versions]
    if not wanted:
        raise InvalidArgument(f"none of the rules asked for applies to version {version}")
    shape_st = shapes() if shape is None else shape
    typestr_st = typestrs() if typestr is None else typestr
    # one strategy per rule: flatmap validates each new strategy it is given, on every draw
    expand = functools.cache(lambda rule: _mutant(rule, version, shape_st, typestr_st))
    return st.sampled_from(wanted).flatmap(expand)


@st.composite
def _mutant(draw, rule: str, version: int | None, shape_st, typestr_st) -> Mutant:
    mutation = MUTATIONS[rule]
    versions = tuple(reversed(mutation.versions)) if version is None else (version,)
    d = draw(_valid_dicts(versions, shape_st, typestr_st, mutation.size, mutation.min_dims))
    mutation.apply(draw, d)
    return Mutant(d, rule)


@contextlib.contextmanager
def pin_variant(index: int, layout: str | None = None) -> Iterator[_Pin]:
    """Inside, `mutants()` makes variant `index` of each mutation (modulo how many it has;
    `pin.count` says, once a mutant was drawn) on a base of layout kind `layout` (default:
    any). For a coverage floor: `find` each variant's minimal mutant, the same in every run."""
    pin = _Pin(index, layout)
    token = _PIN.set(pin)
    try:
        yield pin
    finally:
        _PIN.reset(token)


# --- stream scenarios ----------------------------------------------------------------------


def stream_scenarios(*, scenarios: Iterable[str] | None = None) -> st.SearchStrategy[str]:
    """Names of stream scenarios a producer can be asked for (see
    `caiconform.spec.scenarios.STREAM_SCENARIOS`): ``none``, ``legacy``, ``per-thread``,
    ``pending``, ``multi-stream``, ``unsynced`` (wrong on purpose).

    scenarios: restrict to these names. Shrinks toward ``none``.
    """
    from caiconform.spec.scenarios import STREAM_SCENARIOS

    chosen = list(STREAM_SCENARIOS) if scenarios is None else list(dict.fromkeys(scenarios))
    if not chosen:
        raise InvalidArgument("scenarios must name at least one stream scenario")
    for name in chosen:
        if name not in STREAM_SCENARIOS:
            raise InvalidArgument(f"scenarios: {name!r} is not one of {STREAM_SCENARIOS}")
    return st.sampled_from(chosen)
