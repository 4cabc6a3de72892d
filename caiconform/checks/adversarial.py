"""adversarial: malformed and unusual exports fed to each consumer.

Two sources of examples, both backed by real device memory so that a consumer which wrongly
accepts a dict reads an allocation rather than a random address:

- *mutants* (`caiconform.strategies.mutants`): a conforming dict with one edit that breaks one
  named dict-visible rule (stream 0, a list for a tuple, a bad typestr, a negative extent, an
  unknown version, ...). Its pointer (and its mask's) is moved into a fresh allocation sized to
  the dict's byte extent, unless the pointer itself is the mutation;
- *live* mutations the dict alone cannot show: a host pointer (CAI-DATA-DEVICE-ACCESSIBLE), a
  shape reaching past the allocation (CAI-DATA-EXTENT-IN-ALLOCATION), a stream handle that is
  no stream (CAI-STREAM-LIVE), items with an object field in `descr` (typestr `|V<n>`, the
  drawn type then a `|O8` field, its bytes zero: a consumer must refuse to build PyObjects from
  device memory: a refusal is right, bytes read as opaque items pass, an array of objects is a
  `fail` of CAI-DESCR-OBJECT-REFUSED, whose objects are no data); and legal-but-unusual
  layouts (odd strides, negative strides, broadcast zero strides) that must be read correctly or refused for a portability reason.
  Their names and the rule each breaks are `caiconform.spec.families.LIVE`, where filing and
  rule coverage read them.

The exchange itself is classified by `judge_exchange`: input breaking a MUST rule cleanly
refused is `rejected` with expected EXPECT_REJECTION (the right answer), taken is
`accepted-invalid`; a legal export (a SHOULD mutant such as an unknown key, whose zeroed memory
must read as zeros, or an unusual layout) read correctly is `pass`, refused is `rejected`
naming the rule (an interop gap). Crashes, hangs and poisoned contexts are the runner's to
record. `Export` is the object class that exposes an arbitrary dict.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

from caiconform.checks import _encoding, _exchange, _floor, _results, _sources, _values
from caiconform.results.outcome import REJECTED, SKIP, Result
from caiconform.results.record import EXPECT_REJECTION
from caiconform.spec.families import LIVE
from caiconform.spec.layout import Layout, c_strides
from caiconform.spec.values import compare_values, make_values

__all__ = [
    "FAMILY",
    "ROLES",
    "NEEDS_GPU",
    "OBJECT_FIELDS_RULE",
    "Export",
    "object_fields_descr",
    "judge_object_fields",
    "examples",
    "rebase",
    "build_live",
    "execute",
    "repro",
]

FAMILY = "adversarial"
ROLES = "consumer"
NEEDS_GPU = True
#: no example needs two streams' work to overlap (`checks` docstring)
SINGLE_QUEUE = True
Export = _encoding.InterfaceObject

#: what the object-fields mutation judges (its dict is legal, so LIVE names no rule for it)
OBJECT_FIELDS_RULE = "CAI-DESCR-OBJECT-REFUSED"
_LAYOUT_KIND = {"odd-strides": "odd", "negative-strides": "negative", "broadcast": "broadcast"}
#: mutations that are about the pointer itself: leave it as drawn
_POINTER_RULES = frozenset(
    {"CAI-DATA-POINTER-INT", "CAI-DATA-POINTER-RANGE", "CAI-DATA-ZERO-SIZE-NULL"}
)
#: a mutant whose extent cannot be computed (or is absurd) points at this many real bytes
_FALLBACK_BYTES = 4096
_MAX_EXTENT = 1 << 26
#: elements a past-the-end shape adds: megabytes beyond the allocation
_PAST_END = 1 << 20
_BOGUS_STREAM = 0x7F00DEAD0000


def _mutants() -> st.SearchStrategy[dict]:
    from caiconform import strategies as cst

    return cst.mutants().map(
        lambda m: {"kind": "mutant", "interface": _encoding.encode(m.interface), "rule": m.rule}
    )


@functools.cache  # _live: one strategy per value (flatmap validates each new one)
def _live(mutation: str) -> st.SearchStrategy[dict]:
    from caiconform import strategies as cst
    from caiconform.spec.typestr import parse_typestr

    kind = _LAYOUT_KIND.get(mutation, "C")
    typestrs = cst.typestrs(itemsizes=[2, 4, 8]) if kind == "odd" else cst.typestrs()

    @functools.cache  # one strategy per typestr (flatmap validates each new one)
    def layouts(typestr: str) -> st.SearchStrategy[dict]:
        return cst.layouts(
            shape=cst.shapes(min_dims=1, allow_zero=False),
            itemsize=parse_typestr(typestr).itemsize,
            kinds=[kind],
            portable_only=kind != "odd",
        ).map(lambda layout: {"typestr": typestr, "layout": layout.to_dict()})

    return st.tuples(typestrs.flatmap(layouts), _values.seeds()).map(
        lambda ts: {
            "kind": "live",
            "mutation": mutation,
            **ts[0],
            "seed": ts[1],
            **_memory(mutation),
        }
    )


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    """Mutants (every dict-visible MUST/SHOULD rule) or live mutations; shrinks toward the
    first mutant rule of `caiconform.strategies.MUTATIONS` and the smallest arrays."""
    return st.one_of(_mutants(), st.sampled_from(list(LIVE)).flatmap(_live))


#: drawn mutants per rule in the floor, beside the pinned variants
MUTANT_VARIANTS = 4
#: each drawn mutant breaks its own rule: none is left unrun (`config.DEFAULT_SATURATE`)
SATURATES = False
#: rules whose mutants the floor also makes on each non-C layout of a (2, 3) array and on a
#: 1-d broadcast (every stride 0): how a consumer reads a bad pointer depends on the layout
#: (CuPy rejects a null pointer with C, F, negative or (0, 1) strides but poisons its context
#: with strides (0,) or (0, 0, 0), which left to the draws only some seeds reach)
LAYOUT_FLOOR_RULES = ("CAI-DATA-NONZERO-SIZE-NONNULL",)
_FLOOR_LAYOUT_KINDS = ("F", "padded", "sliced", "negative", "broadcast")
_floor_lock = threading.Lock()
_floor_cache: list = []


def floor(producer: str | None, consumer: str | None) -> list:
    """Every mutant rule, every variant of its mutation (`strategies.pin_variant`: a float, a
    str, a bool...) as hypothesis's minimal mutant and as the minimal mutant of a zero-size 1-d
    array, LAYOUT_FLOOR_RULES on each layout kind, and MUTANT_VARIANTS drawn ones; every live
    mutation once, on a float32 (3, 4) array. The same for every consumer, in every run: read
    from `SHIPPED_FLOOR` while the code that builds it is unchanged (`shipped_floor`), else
    found once per process (a few seconds)."""
    with _floor_lock:
        if not _floor_cache:
            shipped = shipped_floor()
            if shipped is not None:
                _floor_cache.extend(_floor.FloorExample(c, p) for c, p in shipped)
            else:
                _floor_cache.extend(_build_floor())
        return list(_floor_cache)


#: the floor as built (`floor_data()`), kept with the package: `{"key": floor_key(),
#: "hypothesis": the version that found it, "rows": [[coverage, params], ...]}`, so that a
#: run's start need not build it in worker processes beside the probes (what that cost:
#: docs/performance.md). Read from the file, the floor is the same wherever hypothesis would
#: find other minimal mutants. `python -m caiconform.checks.adversarial` writes it again
#: (tests/test_floor.py says when it must)
SHIPPED_FLOOR = Path(__file__).with_name("adversarial_floor.json")
#: the sources the floor is built from: a change to any of them builds it again
_FLOOR_SOURCES = ("strategies.py", "draws.py", "checks/adversarial.py", "checks/_floor.py",
                  "checks/_encoding.py", "spec/*.py")  # fmt: skip


def floor_key() -> str:
    """SHA-256 of `_FLOOR_SOURCES` as they are here (relative names and bytes, in order)."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for pattern in _FLOOR_SOURCES:
        for path in sorted(root.glob(pattern)):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()


def shipped_floor() -> list | None:
    """`SHIPPED_FLOOR`'s rows when it was written by the code here (its key is `floor_key()`),
    else None: the floor is then built."""
    try:
        kept = json.loads(SHIPPED_FLOOR.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("key") != floor_key():
        return None
    rows = kept.get("rows")
    return rows if isinstance(rows, list) else None


def write_shipped_floor() -> int:
    """Build the floor and write it to `SHIPPED_FLOOR`; the number of rows."""
    rows = floor_data()
    lines = ",\n".join(json.dumps(row, sort_keys=True) for row in rows)  # a row a line
    from hypothesis import __version__ as hypothesis_version

    head = f'"key": {json.dumps(floor_key())}, "hypothesis": {json.dumps(hypothesis_version)}'
    text = f'{{{head}, "rows": [\n{lines}\n]}}\n'
    SHIPPED_FLOOR.write_text(text, encoding="utf-8")
    return len(rows)


#: the floor is built in this many worker processes side by side at a run's start
FLOOR_PARTS = 4


def floor_data(part: int = 0, parts: int = 1, rules: list[str] | None = None) -> list:
    """Part `part` of `parts` of the floor as plain JSON, `[[coverage, params], ...]`: every
    `parts`-th mutant rule from `part` on (part 0 also the live mutations). Built in worker
    processes at a run's start (`runner.startup`), not in a thread of the parent, where it
    would be most of the start (docs/performance.md). The params are what a worker receives
    anyway: the wire is JSON. `rules` keeps only those mutant rules' rows (each built exactly
    as in the whole floor): a test can compare parts with the whole without building it
    twice."""
    return [[e.coverage, e.params] for e in _build_floor(part, parts, rules)]


def seed_floor(parts: list) -> None:
    """Take the floor's parts `floor_data(i, len(parts))` gave in other processes, merged in
    the order one process builds it (unless this process has built its own)."""
    from caiconform import strategies as cst
    from caiconform.checks import _floor

    order = {rule: number for number, rule in enumerate(cst.MUTATIONS)}
    rows = [row for part in parts for row in part]
    mutants = sorted(
        (row for row in rows if row[1].get("kind") == "mutant"),
        key=lambda row: order[row[1]["rule"]],  # stable: each rule's variants keep their order
    )
    live = [row for row in rows if row[1].get("kind") != "mutant"]
    with _floor_lock:
        if not _floor_cache:
            _floor_cache.extend(_floor.FloorExample(c, p) for c, p in [*mutants, *live])


def _variants(rule: str, quiet: Any, shape: tuple | None = None, layout: str | None = None):
    """The minimal mutant of each variant of `rule`'s mutation."""
    from hypothesis import find
    from hypothesis import strategies as st

    from caiconform import strategies as cst
    from caiconform.draws import seed_only_draws

    out, index, count = [], 0, 1
    while index < count:
        with seed_only_draws(), cst.pin_variant(index, layout) as pin:
            shape_st = None if shape is None else st.just(shape)
            out.append(
                find(cst.mutants(rules=[rule], shape=shape_st), lambda _: True, settings=quiet)
            )
        count = pin.count
        index += 1
    return out


def _build_floor(part: int = 0, parts: int = 1, rules: list[str] | None = None) -> list:
    from hypothesis import HealthCheck, Phase, settings

    from caiconform import strategies as cst
    from caiconform.checks import _floor
    from caiconform.draws import draw_examples

    quiet = settings(
        database=None,
        max_examples=50,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )
    out = []
    seen: set[str] = set()
    for number, rule in enumerate(cst.MUTATIONS):
        if number % parts != part or (rules is not None and rule not in rules):
            continue
        pinned = _variants(rule, quiet)
        if cst.MUTATIONS[rule].size == "any":
            # each variant on a 1-d zero-size array too: consumers skip checks on arrays with
            # nothing to read (jax takes a str stride on shape (0,), which left to the draws
            # only some seeds reach)
            pinned += _variants(rule, quiet, shape=(0,))
        if rule in LAYOUT_FLOOR_RULES:
            for kind in _FLOOR_LAYOUT_KINDS:
                pinned += _variants(rule, quiet, shape=(2, 3), layout=kind)
            # a 1-d broadcast: every stride 0 (CuPy rejects stride (0, 1) and poisons its
            # context on (0,) and (0, 0, 0))
            pinned += _variants(rule, quiet, shape=(4,), layout="broadcast")
        # beside them, MUTANT_VARIANTS drawn ones: bases of other shapes, versions and keys
        drawn, _error = draw_examples(cst.mutants(rules=[rule]), 1000 + number, MUTANT_VARIANTS)
        for variant in [*pinned, *drawn]:
            params = {
                "kind": "mutant",
                "interface": _encoding.encode(variant.interface),
                "rule": rule,
            }
            key = json.dumps(params, sort_keys=True)
            if key not in seen:
                seen.add(key)
                out.append(_floor.FloorExample({"dtype": "mutant", "mutation": rule}, params))
    for mutation in LIVE if part == 0 else ():
        kind = _LAYOUT_KIND.get(mutation, "C")
        layout = _floor.floor_layout(kind, 4)
        params = {
            "kind": "live",
            "mutation": mutation,
            "typestr": "<f4",
            "layout": layout.to_dict(),
            "seed": 0,
            **_memory(mutation),
        }
        cov = {**_floor.coverage_of("<f4", kind), "mutation": mutation, **_memory(mutation)}
        out.append(_floor.FloorExample(cov, params))
    return out


def _extent(d: dict) -> tuple[int, int]:
    from caiconform.spec.validate import dict_extent

    try:
        lo, hi = dict_extent(d)
    except (ValueError, TypeError):
        return (0, _FALLBACK_BYTES)
    if hi - lo > _MAX_EXTENT or hi - lo <= 0:
        return (0, _FALLBACK_BYTES)
    return (lo, hi)


def _allocate(nbytes: int) -> Any:
    from caiconform.cuda.device import ensure_context
    from caiconform.cuda.memory import memset
    from caiconform.reference.tracking import TrackingMemoryManager

    ensure_context(0)
    allocation = TrackingMemoryManager().allocate(nbytes, tag="adversarial")
    memset(allocation.ptr, 0, allocation.size)
    return allocation


def rebase(d: Any, rule: str, keep: list[Any]) -> Any:
    """`d` with its data pointer (and its mask's) moved into a fresh zeroed allocation sized to
    the dict's extent, aligned to 256 bytes; allocations are appended to `keep`. Pointers that
    are the mutation (`_POINTER_RULES`), zero or not ints are left alone."""
    if not isinstance(d, dict):
        return d
    out = dict(d)
    try:
        interface = out.get("mask").__cuda_array_interface__
    except Exception:  # no mask, or one that is no array (the mutation): nothing to move
        interface = None
    if isinstance(interface, dict):
        out["mask"] = _encoding.InterfaceObject(rebase(interface, "", keep))
    data = out.get("data")
    if rule in _POINTER_RULES or not isinstance(data, (tuple, list)) or not data:
        return out
    ptr = data[0]
    if type(ptr) is not int or ptr <= 0:
        return out
    lo, hi = _extent(out)
    below = -(-max(-lo, 0) // 256) * 256
    allocation = _allocate(below + hi + 256)
    keep.append(allocation)
    moved = [allocation.ptr + below, *data[1:]]
    out["data"] = tuple(moved) if isinstance(data, tuple) else moved
    return out


def object_fields_descr(typestr: str) -> list[tuple[str, str]]:
    """The descr of the object-fields mutation: a field of `typestr`, then a PyObject pointer."""
    return [("value", typestr), ("object", "|O8")]


def _object_fields(typestr: str, layout: Layout) -> tuple[Any, np.ndarray, Any]:
    """Items of `typestr` followed by an object field, exported as `|V<n>` with that descr.
    Every byte is zero (null object pointers), so a consumer that takes them and builds a numpy
    object array holds Nones rather than pointers to nothing."""
    from caiconform.reference.producer import ReferenceArray

    descr = object_fields_descr(typestr)
    itemsize = np.dtype(descr).itemsize
    raw = np.zeros(layout.shape, dtype=f"V{itemsize}")
    plain = Layout(layout.shape)
    ref = ReferenceArray(raw, plain, f"|V{itemsize}", descr=descr)
    return ref, raw, ref


def _memory(mutation: str) -> dict[str, str]:
    """The memory kind param of a live mutation: the read past an allocation is made on VMM
    memory, whose unmapped guard makes every such read fault (`caiconform.cuda.memkinds`);
    on cuMemAlloc memory it faults or not with the process's memory map (a flaky group).
    The others leave the kind to the run (device)."""
    return {"memory": "vmm"} if mutation == "extent-past-allocation" else {}


#: the most reserved, unmapped address space after a past-the-end array (its reach past the
#: allocation is guarded up to this; a read that reaches the guard has faulted already)
_MAX_GUARD = 1 << 36


def _guard(layout: Layout, typestr: str) -> int:
    """Bytes of unmapped addresses after the array that the past-the-end shape reaches into."""
    itemsize = np.dtype(typestr).itemsize
    rows = layout.shape[0] + _PAST_END
    reach = rows * int(np.prod(layout.shape[1:], dtype=np.int64)) * itemsize
    return min(max(reach - layout.allocation_bytes(itemsize), 1), _MAX_GUARD)


def build_live(params: dict) -> tuple[Any, np.ndarray, Any]:
    """(the object to feed, the values it holds, what must stay alive) for a live mutation."""
    from caiconform.reference.producer import ReferenceArray

    mutation, typestr = params["mutation"], params["typestr"]
    layout = Layout.from_dict(params["layout"])
    values = make_values(typestr, layout.shape, params["seed"], layout.strides)
    if mutation == "host-pointer":
        host = np.ascontiguousarray(values)
        d = {
            "shape": tuple(host.shape),
            "typestr": typestr,
            "data": (host.ctypes.data, False),
            "version": 3,
            "strides": None,
            "stream": None,
        }
        return _encoding.InterfaceObject(d, keepalive=host), values, host
    if mutation == "object-fields":
        return _object_fields(typestr, layout)
    past = mutation == "extent-past-allocation"
    guard = _guard(layout, typestr) if past else 0
    ref = ReferenceArray(values, layout, typestr, memory="vmm" if past else None, guard=guard)
    if mutation in _LAYOUT_KIND:
        return ref, values, ref
    d = dict(ref.__cuda_array_interface__)
    if mutation == "extent-past-allocation":
        shape = (d["shape"][0] + _PAST_END, *d["shape"][1:])
        d["shape"] = shape
        d["strides"] = c_strides(shape, np.dtype(typestr).itemsize)
    else:
        d["stream"] = _BOGUS_STREAM
    return _encoding.InterfaceObject(d, keepalive=ref), values, ref


def taints(params: dict, result: Result) -> bool:
    """True when the consumer did not refuse a bogus stream handle [CAI-STREAM-LIVE]: it may
    have handed the driver a pointer to no stream, whose use is undefined, so the worker is
    replaced before the next example (`worker._taints`): a PyCUDA process that has accepted
    one can read zeros for a negative-strides array examples later, an array it reads exactly
    in a fresh process."""
    return (
        params.get("kind") == "live"
        and params.get("mutation") == "stream-bogus"
        and result.outcome not in (REJECTED, SKIP)
    )


def judge_object_fields(consumer: str, obj: Any, values: np.ndarray, context: str) -> Result:
    """A consumer fed items with an object field (a legal dict): a clean refusal is right
    (`rejected`, expected EXPECT_REJECTION); an array holding objects was made of foreign
    pointers, a `fail` of CAI-DESCR-OBJECT-REFUSED; bytes read as opaque items must be the
    bytes written (zeros)."""
    rule = OBJECT_FIELDS_RULE
    got, exc = _exchange.consume_with(consumer, obj)
    if exc is not None:
        seen = _results.describe_exception(exc)
        return Result(
            REJECTED, rule, f"{context}: refused ({seen}) [{rule}]", seen, EXPECT_REJECTION
        )
    dtype = getattr(got, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.hasobject:
        return _results.failed(
            rule, f"an array of dtype {dtype} holding objects", "a refusal or opaque bytes", context
        )
    mismatch = compare_values(got, values)
    if mismatch is not None:
        return _results.failed(
            "CAI-CONSUMER-READS-DESCRIBED", mismatch, "the zero bytes written", context
        )
    return _results.passed(f"{context}: read as opaque bytes ({dtype}), no object made")


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    if params["kind"] == "live" and params["mutation"] == "object-fields":
        obj, values, _keep = build_live(params)
        context = f"{consumer} fed object-fields {params['typestr']}"
        return judge_object_fields(consumer, obj, values, context)
    if params["kind"] == "live":
        obj, values, _keep = build_live(params)
        violated = LIVE[params["mutation"]]
        context = f"{consumer} fed {params['mutation']} {params['typestr']}"
        return _exchange.judge_exchange(consumer, obj, values, violated, context)
    from caiconform.spec.rules import RULES, Level

    keep: list[Any] = []
    rule = params["rule"]
    d = rebase(_encoding.decode(params["interface"]), rule, keep)
    obj = _encoding.InterfaceObject(d, keepalive=keep)
    context = f"{consumer} fed a mutant breaking {rule}"
    if RULES[rule].level is Level.MUST:
        return _exchange.judge_exchange(consumer, obj, np.empty(0), rule, context)
    # a SHOULD mutant is still a valid dict: its (zeroed) memory must read as zeros
    zeros = np.zeros(tuple(d["shape"]), dtype=np.dtype(d["typestr"]))
    return _exchange.judge_exchange(consumer, obj, zeros, None, context, reject_rule=rule)


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    import json

    if params["kind"] == "live":
        build = (
            "import json\n\n"
            "from caiconform.checks.adversarial import build_live\n\n"
            f"obj, values, keep = build_live(json.loads({json.dumps(params)!r}))\n"
        )
        title = f"adversarial: {consumer} fed a {params['mutation']} export"
    else:
        build = (
            "import json\n\n"
            "from caiconform.checks._encoding import InterfaceObject, decode\n"
            "from caiconform.checks.adversarial import rebase\n\n"
            "keep = []\n"
            f"d = rebase(decode(json.loads({json.dumps(params['interface'])!r})), "
            f"{params['rule']!r}, keep)\n"
            "obj = InterfaceObject(d, keepalive=keep)\n"
        )
        title = f"adversarial: {consumer} fed a dict breaking {params['rule']}; it should refuse it"
    return _sources.repro_script(
        title,
        build,
        "print(obj.__cuda_array_interface__)\n",
        _sources.consumer_source(consumer),
        "print('accepted; read:', result)\n",
    )


if __name__ == "__main__":  # python -m caiconform.checks.adversarial: write SHIPPED_FLOOR again
    print(f"{write_shipped_floor()} floor rows written to {SHIPPED_FLOOR}")
