"""dlpack_versions: does a producer answer each `max_version` with a capsule the consumer can
take, and is that capsule well formed?

The array API standard's `__dlpack__` (docs/spec/dlpack/array_api_dlpack.md) lets the consumer
say the newest DLPack version it reads (`max_version`, added in 2023.12). The producer's
object is asked once per example with one of `MAX_VERSIONS`: left out (a consumer from before
2023.12), None, (1, 0), (1, 1), (1, 3) (DLPack 1.3, whose capsules from 1.2 on may not have
NULL strides for ndim != 0: a producer's newest capsule) and (2, 0) (a consumer newer than any
producer). What is judged:
- every capsule passes the capsule validator (`dlpack.validate.check_capsule`: name,
  destructor, version, flags, device, dtype codes with bool, bfloat16, float8 and complex,
  shape, element strides, byte_offset, a zero-size tensor's NULL data); its findings keep
  their own rule and level;
- asked with a max_version of major 1 or more, a versioned ("dltensor_versioned") capsule
  [DLPACK-VERSIONED-STRUCT, SHOULD: the validator's finding]; its version is the producer's
  choice [DLPACK-MAX-VERSION-RETURNED, MAY: max_version is recommended when supported, another
  version allowed], so a different version is noted, not failed; a major version other than 1
  cannot be read by a consumer that said (1, x) [DLPACK-VERSION-MAJOR-MISMATCH, the validator's],
  while asked (2, 0) a major-2 capsule is noted, its fields not judged;
- asked without max_version (or None), the producer keeps its legacy export: a "dltensor"
  capsule, the only kind such a consumer knows [DLPACK-MAX-VERSION-NONE-LEGACY, SHOULD,
  derived from the producer logic the standard recommends].
A TypeError on `max_version` is a producer predating 2023.12: `rejected`, naming
DLPACK-VERSIONED-STRUCT, not a failure. A BufferError for an array DLPack cannot describe (no
type code, non-native byte order, byte strides no multiple of the item size:
`_dlpack_calls.undescribable`) is the right answer, a `pass`; for one it can describe, a
refusal (`rejected`, DLPACK-EXPORT-BUFFERERROR); any other exception breaks that SHOULD.

Outcomes: `pass` (SHOULD findings as warnings in `seen`); `fail` naming the first MUST finding;
`rejected` for the refusals above.
"""

from __future__ import annotations

import functools
from typing import Any

from hypothesis import strategies as st

from caiconform.checks import _dlpack_calls, _dlpack_refusals, _results, _sources, _values
from caiconform.results.outcome import PASS, Result
from caiconform.spec.layout import Layout
from caiconform.spec.values import make_values, values_source

__all__ = [
    "FAMILY",
    "ROLES",
    "NEEDS_GPU",
    "MAX_VERSIONS",
    "crash_kind",
    "examples",
    "floor",
    "call_kwargs",
    "judge_refusal",
    "judge_capsule",
    "execute",
    "repro",
]

FAMILY = "dlpack_versions"
ROLES = "producer"
NEEDS_GPU = True
#: no example needs two streams' work to overlap (`checks` docstring)
SINGLE_QUEUE = True
#: the max_version a consumer passes: "omitted" (no keyword: a consumer from before 2023.12),
#: None, and (major, minor) pairs as lists (JSON)
MAX_VERSIONS: tuple[Any, ...] = ("omitted", None, [1, 0], [1, 1], [1, 3], [2, 0])
#: the MAY rule a version other than max_version is noted under (information, never a failure)
RETURNED_RULE = "DLPACK-MAX-VERSION-RETURNED"


@functools.cache  # one strategy per value (flatmap validates each new one)
def _params(typestr: str) -> st.SearchStrategy[dict]:
    from caiconform import strategies as cst
    from caiconform.spec.dtypes import numpy_dtype

    itemsize = numpy_dtype(typestr).itemsize
    return st.fixed_dictionaries(
        {
            "max_version": st.sampled_from(MAX_VERSIONS),
            "typestr": st.just(typestr),
            "layout": cst.layouts(itemsize=itemsize).map(Layout.to_dict),
            "seed": _values.seeds(),
        }
    )


def crash_kind(params: dict) -> str:
    """What the runner's crash cap counts a drawn example by: its max_version and layout kind
    (a producer that dies on one must not skip the cell's others)."""
    return f"max_version {params['max_version']!r} layout {params['layout'].get('kind')}"


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    """max_version, typestr (native numeric kinds), a layout and a seed; shrinks toward
    max_version left out, '|b1' in a C layout."""
    from caiconform import strategies as cst

    return cst.typestrs().flatmap(_params)


def floor(producer: str | None, consumer: str | None) -> list:
    """Every max_version on a '<f4' C array; every dtype class (bool, bfloat16, float8,
    complex among them) and every floor layout kind at max_version (1, 1)."""
    from caiconform.checks import _floor

    out = []
    c_layout = _floor.floor_layout("C", 4).to_dict()
    for wanted in MAX_VERSIONS:
        out.append(
            _floor.FloorExample(
                {**_floor.coverage_of("<f4", "C"), "max_version": str(wanted)},
                {"max_version": wanted, "typestr": "<f4", "layout": c_layout, "seed": 0},
            )
        )
    for typestr in _floor.PLAIN_TYPESTRS:
        layout = _floor.floor_layout("C", 1).to_dict()
        out.append(
            _floor.FloorExample(
                {**_floor.coverage_of(typestr, "C"), "max_version": "[1, 1]"},
                {"max_version": [1, 1], "typestr": typestr, "layout": layout, "seed": 0},
            )
        )
    for kind in _floor.FLOOR_LAYOUTS:
        layout = _floor.floor_layout(kind, 4)
        if layout is None or kind == "C":
            continue
        out.append(
            _floor.FloorExample(
                {**_floor.coverage_of("<f4", kind), "max_version": "[1, 1]"},
                {"max_version": [1, 1], "typestr": "<f4", "layout": layout.to_dict(), "seed": 0},
            )
        )
    return out


def call_kwargs(max_version: Any) -> dict[str, Any]:
    """The keywords of the `__dlpack__` call for an example's `max_version`."""
    if max_version == "omitted":
        return {}
    return {"max_version": None if max_version is None else tuple(max_version)}


def _asked_versioned(max_version: Any) -> bool:
    return isinstance(max_version, list | tuple) and max_version[0] >= 1


def judge_refusal(
    exc: BaseException, max_version: Any, context: str, why_not: str | None = None
) -> Result:
    """What a `__dlpack__` call that raised means; `why_not`: why DLPack cannot describe the
    array (`_dlpack_calls.undescribable`), which makes a BufferError the right answer."""
    if isinstance(exc, BufferError) and why_not:
        return _results.passed(f"{context}: refused with BufferError, as {why_not}")
    if "max_version" in call_kwargs(max_version) and _dlpack_calls.keyword_refused(exc):
        return _results.rejected(
            "DLPACK-VERSIONED-STRUCT",
            exc,
            "a capsule: the producer's __dlpack__ predates max_version (array API 2023.12)",
            context,
        )
    return _dlpack_refusals.producer_refused(exc, None, context)


def judge_capsule(
    findings: list,
    name: str | None,
    version: tuple[int, int] | None,
    max_version: Any,
    context: str,
) -> Result:
    """The verdict on a returned capsule: `findings` are the capsule validator's, `name` and
    `version` the capsule's (None: unnamed / unversioned), `max_version` what was asked."""
    from caiconform.spec.rules import Level

    notes = []
    if _asked_versioned(max_version) and max_version[0] >= 2:
        # a consumer that said (2, x) reads major 2: such a capsule is the producer's right
        # answer, though caiconform reads the fields of major 1 only
        newer = [f for f in findings if f.rule == "DLPACK-VERSION-MAJOR-MISMATCH"]
        findings = [f for f in findings if f not in newer]
        notes += [
            f"{f.seen}: a major the consumer said it reads (fields not judged)" for f in newer
        ]
    errors = [f for f in findings if f.level is Level.MUST]
    if errors:
        first = errors[0]
        return _results.failed(first.rule, first.seen, first.expected, f"{context}: {first.path}")
    warnings = [f for f in findings if f.level in (Level.SHOULD, Level.PORTABILITY)]
    rules = [f.rule for f in warnings]
    notes += [f.message for f in warnings]
    if not _asked_versioned(max_version) and name == "dltensor_versioned":
        rules.append("DLPACK-MAX-VERSION-NONE-LEGACY")
        notes.append(
            f"asked with max_version {max_version}, it returned a 'dltensor_versioned' capsule, "
            f"which a consumer predating DLPack 1.0 cannot take [DLPACK-MAX-VERSION-NONE-LEGACY]"
        )
    if _asked_versioned(max_version) and version is not None and version != tuple(max_version):
        notes.append(
            f"version {version[0]}.{version[1]} for max_version {max_version[0]}."
            f"{max_version[1]} (the producer's choice [{RETURNED_RULE}])"
        )
    said = f"{context}: capsule {name or '?'}"
    if version is not None:
        said += f" version {version[0]}.{version[1]}"
    message = f"{said}; " + "; ".join(notes) if notes else said
    return Result(PASS, message=message, seen=rules or None)


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    """One example (the module docstring); a refusal is laid on the producer."""
    return _dlpack_refusals.producer_refused(_execute(params, producer), producer)


def _execute(params: dict, producer: str | None) -> Result:
    from caiconform.dlpack.validate import check_capsule

    layout = Layout.from_dict(params["layout"])
    typestr, max_version = params["typestr"], params["max_version"]
    values = make_values(typestr, layout.shape, params["seed"], layout.strides)
    obj = _dlpack_calls.produce(producer, values, layout, typestr, "none")
    context = f"{producer} {typestr} {layout.kind} {layout.shape} max_version={max_version}"
    answer = _dlpack_calls.ask(obj, **call_kwargs(max_version))
    if answer.error is not None:
        why_not = _dlpack_calls.undescribable(typestr, layout)
        return judge_refusal(answer.error, max_version, context, why_not)
    findings = check_capsule(answer.raw, asked_versioned=_asked_versioned(max_version))
    capsule = answer.capsule
    name = capsule.name if capsule is not None else None
    version = capsule.version if capsule is not None else None
    return judge_capsule(findings, name, version, max_version, context)


_REPRO_BODY = """
kwargs = {kwargs!r}
capsule = obj.__dlpack__(**kwargs)
print("__dlpack__(**%r) ->" % (kwargs,), capsule)
print("read:", read_capsule(capsule))
"""


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    from caiconform.checks.agreement import _reader_source

    layout = Layout.from_dict(params["layout"])
    return _sources.repro_script(
        f"dlpack_versions: {producer}'s __dlpack__ asked with max_version "
        f"{params['max_version']}: the capsule it returns, parsed with ctypes (no other library "
        f"in between); asked with (1, x) it should be 'dltensor_versioned' "
        f"[DLPACK-VERSIONED-STRUCT], asked without, 'dltensor'.",
        values_source(params["typestr"], layout.shape, params["seed"], layout.strides),
        _sources.producer_source(producer, layout, params["typestr"]),
        _reader_source(),
        _REPRO_BODY.format(kwargs=call_kwargs(params["max_version"])),
    )
