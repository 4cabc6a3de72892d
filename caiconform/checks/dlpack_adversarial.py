"""dlpack_adversarial: bad DLPack capsules fed to each consumer's DLPack import.

The counterpart of `adversarial` for DLPack. Each example hands the consumer an object whose
`__dlpack__` returns one bad capsule (`bad_capsule`, built with
`caiconform.reference.dlpack_export` over real device memory, so a consumer that wrongly takes
one reads an allocation rather than a random address), behind `_staging.dlpack_only` so the
consumer cannot read anything else. The kinds (`KINDS`, kind -> the rule it breaks):
not a capsule at all, a capsule already consumed ("used_dltensor"), an absurd ndim (huge or
negative), a negative extent, strides spanning more than the address space, an unknown dtype
code or device type, a versioned capsule of major version 2, a float6 code with 8 bits, a
DLPack 1.3 capsule with NULL strides (allowed before 1.2 only); and one legal oddity, a NULL
deleter [DLPACK-DELETER-NULL], which must be read as any other capsule.

Outcomes (`judge`): a bad capsule refused with a clean exception is `rejected` with expected
EXPECT_REJECTION (the right answer), imported is `accepted-invalid` naming its rule; the
NULL-deleter capsule read right is `pass`, refused is `rejected` (an interop gap), read wrong is
`fail`. What happens to the deleter is judged too, after the consumer returned and the capsule
was collected: a refused capsule with a deleter must have had it called exactly once, by the
consumer or by the capsule's destructor [DLPACK-DELETER-ONCE]; a major-2 tensor never released
is a failure of DLPACK-VERSION-MAJOR-MISMATCH ("the consumer must call the deleter"; a consumer
that refuses before renaming leaves the call to the capsule's destructor, which is taken as
released: the Python specification gives the unconsumed capsule's tensor to its destructor), and
a consumed ("used_") capsule is not the consumer's to release (a call frees a tensor someone
else owns). Crashes and hangs are the
runner's to record; an example whose consumer took a bad capsule retires its worker (`taints`).

ROLES is "consumer": the producer is always caiconform's own bad capsule; the cell's consumer is
any library that imports DLPack (`consume-dlpack`).
"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np

from caiconform.checks import _results, _sources
from caiconform.results.outcome import PASS, REJECTED, SKIP, Result
from caiconform.results.record import EXPECT_REJECTION

__all__ = [
    "FAMILY",
    "ROLES",
    "NEEDS_GPU",
    "KINDS",
    "BadProducer",
    "bad_capsule",
    "judge",
    "examples",
    "floor",
    "execute",
    "taints",
    "repro",
]

FAMILY = "dlpack_adversarial"
ROLES = "consumer"
NEEDS_GPU = True
#: no example needs two streams' work to overlap (`checks` docstring)
SINGLE_QUEUE = True
#: each drawn capsule breaks its own rule: none is left unrun (`config.DEFAULT_SATURATE`)
SATURATES = False

#: kind -> the rule a capsule of that kind breaks (DLPACK-DELETER-NULL: allowed, must be read)
KINDS = {
    "not-a-capsule": "DLPACK-CAPSULE-NAME",
    "used-capsule": "DLPACK-CAPSULE-NAME",
    "null-deleter": "DLPACK-DELETER-NULL",
    "ndim-huge": "DLPACK-SHAPE",
    "ndim-negative": "DLPACK-SHAPE",
    "shape-negative": "DLPACK-SHAPE",
    "strides-huge": "DLPACK-STRIDES-ELEMENTS",
    "dtype-code-unknown": "DLPACK-DTYPE-CODE",
    "device-type-unknown": "DLPACK-DEVICE-TYPE",
    "version-major-2": "DLPACK-VERSION-MAJOR-MISMATCH",
    "float6-bits": "DLPACK-DTYPE-SUBBYTE-BITS",
    "strides-null": "DLPACK-STRIDES-NONNULL",
}
#: the legal kinds: read as any capsule
LEGAL = frozenset({"null-deleter"})
#: the elements every bad capsule lies over: float32 0..3, four of them
VALUES = np.arange(4, dtype=np.float32)
_FLOAT32 = (2, 32, 1)


def bad_capsule(kind: str, data: int, device: tuple[int, int], owner: Any) -> tuple[Any, Any]:
    """(what `__dlpack__` returns, its `Export` or None) for `kind`: a capsule over the four
    float32 `VALUES` at `data` on `device`, broken as the kind says (a DLPack 1.3 capsule with
    its strides written, but for the kind that leaves them NULL); `owner` is kept alive until
    the deleter runs."""
    from caiconform.dlpack.header import USED_VERSIONED
    from caiconform.reference import dlpack_export as dx

    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    if kind == "not-a-capsule":
        return (data, device), None
    shape: tuple[int, ...] = (4,)
    opts: dict[str, Any] = {"owner": owner, "strides": (1,)}
    dtype, where = _FLOAT32, device
    if kind == "used-capsule":
        opts["name"] = USED_VERSIONED
    elif kind == "null-deleter":
        opts["deleter"] = False
    elif kind == "ndim-huge":
        opts["ndim"] = 1 << 20
    elif kind == "ndim-negative":
        opts["ndim"] = -1
    elif kind == "shape-negative":
        shape = (-4,)
    elif kind == "strides-null":
        opts["strides"] = None
    elif kind == "strides-huge":
        shape, opts["strides"] = (2, 2), (1 << 61, 1)
    elif kind == "dtype-code-unknown":
        dtype = (99, 32, 1)
    elif kind == "device-type-unknown":
        where = (99, 0)
    elif kind == "version-major-2":
        opts["version"] = (2, 0)
    elif kind == "float6-bits":
        dtype = (15, 8, 1)
    return dx.make_capsule(data, shape, dtype, where, **opts)


class BadProducer:
    """An object whose `__dlpack__` returns one bad capsule per call (a fresh one each time, so
    a consumer that asks twice, versioned then legacy, is answered alike); `exports` keeps the
    `Export` of each."""

    def __init__(self, kind: str, data: int, device: tuple[int, int], owner: Any) -> None:
        self.kind, self.data, self.device, self.owner = kind, data, device, owner
        self.exports: list[Any] = []

    def __dlpack__(self, **kwargs: Any) -> Any:
        capsule, export = bad_capsule(self.kind, self.data, self.device, self.owner)
        if export is not None:
            self.exports.append(export)
        return capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __repr__(self) -> str:
        return f"<BadProducer {self.kind}>"


def _deleter_verdict(kind: str, exports: list[Any], context: str) -> Result | None:
    """A `fail` when the deleters of a refused capsule were not called as they must be, after
    the consumer returned and the capsules were collected; None when they were."""
    if kind in ("not-a-capsule", "null-deleter"):
        return None
    calls = [e.deleter_calls for e in exports]
    if kind == "used-capsule":
        if any(calls):
            return _results.failed(
                "DLPACK-DELETER-ONCE",
                f"the deleter of a consumed ('used_') capsule called {sum(calls)}x",
                "no call: the tensor belongs to whoever consumed the capsule",
                context,
            )
        return None
    over = [n for n in calls if n > 1]
    if over:
        return _results.failed(
            "DLPACK-DELETER-ONCE",
            f"the deleter called {over[0]}x for one refused capsule",
            "exactly once",
            context,
        )
    never = [e for e in exports if not e.deleter_calls]
    if never:
        rule = "DLPACK-VERSION-MAJOR-MISMATCH" if kind == "version-major-2" else None
        return _results.failed(
            rule or "DLPACK-CONSUMER-CALLS-DELETER",
            f"the deleter of a refused capsule never called ({len(never)} of {len(exports)})",
            "the deleter called once: the tensor released",
            context,
        )
    return None


def judge(kind: str, got: Any, exc: BaseException | None, exports: list[Any], context: str):
    """The verdict on one consumer import of a `kind` capsule: `got` the host values it read
    (None when it raised `exc`), `exports` the capsules' records, collected already."""
    from caiconform.spec.values import compare_values

    rule = KINDS[kind]
    if kind in LEGAL:
        if exc is not None:
            return _results.rejected(
                rule, exc, "the tensor read (a NULL deleter is allowed: MAY)", context
            )
        wrong = compare_values(np.asarray(got), VALUES)
        if wrong is not None:
            return _results.failed(rule, f"read {wrong}", "the four float32 0..3", context)
        return _results.passed(f"{context}: a capsule with a NULL deleter read right")
    if exc is None:
        seen = "imported" if got is None else f"imported as {np.asarray(got).tolist()!r:.60}"
        return _results.accepted_invalid(rule, seen, context)
    return _deleter_verdict(kind, exports, context) or _results.rejected(
        rule, exc, EXPECT_REJECTION, context
    )


def examples(producer: str | None, consumer: str | None):
    """One kind per example; shrinks toward the first kind."""
    from hypothesis import strategies as st

    return st.sampled_from(tuple(KINDS)).map(_params_of)


def floor(producer: str | None, consumer: str | None) -> list:
    """Every kind once."""
    from caiconform.checks._floor import FloorExample

    return [FloorExample({"kind": kind}, _params_of(kind)) for kind in KINDS]


def _params_of(kind: str) -> dict:
    """{kind}, with the rule the capsule breaks as `rule` (what a crash on it is filed under,
    `results.filing.input_rule`); a legal kind breaks none."""
    return {"kind": kind} if kind in LEGAL else {"kind": kind, "rule": KINDS[kind]}


def _consume(consumer: str, obj: Any) -> tuple[Any, BaseException | None]:
    """The consumer's DLPack import of `obj`: (values, None) or (None, what it raised)."""
    from caiconform.adapters.base import SkipExchange
    from caiconform.checks._exchange import adapter

    try:
        return adapter(consumer).consume_dlpack(obj), None
    except SkipExchange:
        raise
    except Exception as exc:  # noqa: BLE001 - a clean exception is the consumer's answer
        return None, exc


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    from caiconform.adapters._staging import dlpack_only
    from caiconform.cuda.device import current_device, ensure_context
    from caiconform.cuda.memory import DeviceBuffer

    kind = params["kind"]
    if consumer == "numpy":
        return _results.skipped(
            "numpy imports host capsules only, and the bad capsules are CUDA ones: numpy "
            "refuses each for its device before reading the field under test"
        )
    ensure_context(0)
    ordinal = current_device()
    memory = DeviceBuffer.from_host(VALUES, ordinal)
    producer_obj = BadProducer(kind, memory.ptr, (2, ordinal), memory)
    del memory  # held by each capsule's Export until its deleter runs
    context = f"{kind} capsule -> {consumer}"
    got, exc = _consume(consumer or "", dlpack_only(producer_obj))
    if exc is None and got is not None:
        got = np.array(got, copy=True)
    _drop_frames(exc)
    gc.collect()
    gc.collect()
    return judge(kind, got, exc, producer_obj.exports, context)


def _drop_frames(exc: BaseException | None) -> None:
    """Clear the locals of the frames `exc` (and the exceptions chained to it) kept: a library
    frame holding the capsule it refused would keep it alive past the count of deleter calls
    (torch's `from_dlpack` keeps it in a local), which reads as a deleter never called."""
    import traceback

    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        traceback.clear_frames(exc.__traceback__)
        exc = exc.__cause__ or exc.__context__


def taints(params: dict, result: Result) -> bool:
    """True when the consumer took a bad capsule: it read through fields no import should
    trust, so its process is not trusted for the next example."""
    return result.outcome not in (REJECTED, SKIP, PASS)


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    kind = params["kind"]
    return _sources.repro_script(
        f"dlpack_adversarial: a {kind} capsule ({KINDS[kind]}) handed to {consumer}'s DLPack "
        "import; expected: a clean exception (a NULL deleter: read as any capsule).",
        "",
        "import gc\n\n"
        "import numpy as np\n\n"
        "from caiconform.adapters._staging import dlpack_only\n"
        "from caiconform.adapters.registry import get\n"
        "from caiconform.checks.dlpack_adversarial import VALUES, BadProducer\n"
        "from caiconform.cuda.memory import DeviceBuffer\n\n"
        "memory = DeviceBuffer.from_host(VALUES)\n"
        f"obj = BadProducer({kind!r}, memory.ptr, (2, 0), memory)\n"
        f"result = get({consumer!r}).consume_dlpack(dlpack_only(obj))\n"
        "print('imported:', np.asarray(result))\n"
        "gc.collect()\n"
        "print('deleter calls:', [e.deleter_calls for e in obj.exports])\n",
    )
