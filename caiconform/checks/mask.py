"""mask: masked exports (CAI v1+) fed to each consumer.

The reference producer exports a boolean mask array beside the data: none (`mask: None`), one
marking every element valid, or a random one with at least one invalid element. The spec
[CAI-MASK-TRUTH] has the consumer treat each mask element as valid / not valid; most consumers
support no masks and should say so (Numba must raise NotImplementedError
[CAI-MASK-NUMBA-NOTIMPLEMENTED]). Silently dropping a mask that marks elements invalid hands
those elements to the user as valid data: that is the finding.

Outcomes: `pass` (values read, and the mask honoured or marking everything valid);
`fail` CAI-MASK-TRUTH (the mask was dropped or misread), CAI-MASK-NUMBA-NOTIMPLEMENTED (Numba
refused with another exception) or CAI-CONSUMER-READS-DESCRIBED (values misread); `rejected`
naming CAI-PORT-MASK (a legal mask refused cleanly: the known portability gap).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from caiconform.checks import _exchange, _results, _sources, _values
from caiconform.results.outcome import Result
from caiconform.spec.layout import Layout
from caiconform.spec.values import compare_values, make_values, values_source

__all__ = ["FAMILY", "ROLES", "NEEDS_GPU", "MASKS", "examples", "mask_values", "execute", "repro"]

FAMILY = "mask"
ROLES = "consumer"
NEEDS_GPU = True
#: no example needs two streams' work to overlap (`checks` docstring)
SINGLE_QUEUE = True
MASKS = ("none", "all-valid", "random")


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    """mask kind, CAI version (1-3), typestr, nonzero shape, seed; shrinks toward no mask."""
    from caiconform import strategies as cst

    return st.fixed_dictionaries(
        {
            "mask": st.sampled_from(MASKS),
            "version": st.sampled_from([3, 2, 1]),
            "typestr": cst.typestrs(),
            "shape": cst.shapes(min_dims=1, allow_zero=False).map(list),
            "seed": _values.seeds(),
        }
    )


def floor(producer: str | None, consumer: str | None) -> list:
    """Every mask kind x version 1-3 on a float32 array, then every other dtype class with a
    random mask at version 3."""
    from caiconform.checks import _floor

    out = [
        _floor.FloorExample(
            {**_floor.coverage_of("<f4", "C"), "mask": kind, "version": str(version)},
            {"mask": kind, "version": version, "typestr": "<f4", "shape": [4, 3], "seed": 0},
        )
        for kind in MASKS
        for version in (3, 2, 1)
    ]
    for ex in _floor.plain_floor():
        if ex.params["typestr"] != "<f4":
            params = {"mask": MASKS[-1], "version": 3, **ex.params}
            out.append(_floor.FloorExample({**ex.coverage, "mask": MASKS[-1]}, params))
    return out


def mask_values(kind: str, shape: tuple[int, ...], seed: int) -> np.ndarray | None:
    """The host mask of an example: None, all True, or random with element 0 invalid."""
    if kind == "none":
        return None
    if kind == "all-valid":
        return np.ones(shape, dtype=np.bool_)
    mask = np.random.default_rng(seed + 1).integers(0, 2, size=shape).astype(np.bool_)
    mask.reshape(-1)[0] = False
    return mask


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    from caiconform.reference.producer import ReferenceArray

    typestr, shape = params["typestr"], tuple(params["shape"])
    values = make_values(typestr, shape, params["seed"])
    mask = mask_values(params["mask"], shape, params["seed"])
    ref = ReferenceArray(values, Layout(shape), typestr, version=params["version"], mask=mask)
    context = f"reference->{consumer} v{params['version']} mask {params['mask']} {typestr} {shape}"
    if mask is None:
        return _exchange.judge_exchange(consumer, ref, values, None, context)
    if consumer == "reference":
        read = _exchange.adapter("reference").consume_result(ref)
        got, got_mask = read.values, read.mask
    else:
        got, exc = _exchange.consume_with(consumer, ref)
        if exc is not None:
            named = _results.named_refusal(ref.__cuda_array_interface__, exc)
            if named is not None:  # refused for what it names (an older version, a type)
                return _results.rejected(named, exc, "the mask honoured, or this refusal", context)
            if consumer.startswith("numba") and not isinstance(exc, NotImplementedError):
                return _results.failed(
                    "CAI-MASK-NUMBA-NOTIMPLEMENTED",
                    _results.describe_exception(exc),
                    "NotImplementedError",
                    context,
                )
            return _results.rejected(
                "CAI-PORT-MASK", exc, "the mask honoured, or this refusal", context
            )
        got_mask = ~np.ma.getmaskarray(got) if isinstance(got, np.ma.MaskedArray) else None
        got = np.ma.getdata(got)
    mismatch = compare_values(np.asarray(got), values)
    if mismatch is not None:
        return _results.failed("CAI-CONSUMER-READS-DESCRIBED", mismatch, "the values", context)
    invalid = int((~mask).sum())
    if got_mask is None:
        if invalid == 0:
            return _results.passed(f"{context}: mask dropped, but it marked every element valid")
        return _results.failed(
            "CAI-MASK-TRUTH",
            f"the mask dropped: {invalid} invalid element(s) returned as valid data",
            "the mask honoured, or the export refused",
            context,
        )
    if not np.array_equal(np.asarray(got_mask, dtype=np.bool_), mask):
        return _results.failed("CAI-MASK-TRUTH", "a different mask", "the exported mask", context)
    return _results.passed(f"{context}: values and mask read")


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    shape = tuple(params["shape"])
    return _sources.repro_script(
        f"mask: a CAI v{params['version']} export with mask '{params['mask']}' read by "
        f"{consumer}: invalid elements must not come back as valid data [CAI-MASK-TRUTH].",
        values_source(params["typestr"], shape, params["seed"]),
        "from caiconform.checks.mask import mask_values\n"
        "from caiconform.reference.producer import ReferenceArray\n"
        "from caiconform.spec.layout import Layout\n\n"
        f"mask = mask_values({params['mask']!r}, {shape!r}, {params['seed']!r})\n"
        f"obj = ReferenceArray(values, Layout({shape!r}), {params['typestr']!r}, "
        f"version={params['version']}, mask=mask)\n"
        "print(obj.__cuda_array_interface__)\n"
        "print('mask:', mask)\n",
        _sources.consumer_source(consumer),
        "print('read:', result, type(result))\n",
    )
