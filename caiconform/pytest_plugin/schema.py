"""The dict-schema check of a user's producer, run in the pytest process, no GPU needed.

For one layout kind, hypothesis draws typestrs, shapes and layouts (`caiconform.strategies`);
the user's factory makes an object for each and the validator judges its
`__cuda_array_interface__`, and the dict must describe what was asked for (shape, dtype, and
strides that are the layout's or a contiguous array's), whatever rules it breaks. If
the factory itself needs a GPU and there is none, the check is skipped, saying so.

Every example is explored and recorded (no shrinking: a record per example keeps the report's
counts honest); among the failures the one with the fewest elements is shown. Examples are
derandomized, so a CI run is reproducible.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from math import prod
from typing import Any

from caiconform.results.expectations import Expectation, classify, installed_version, is_finding
from caiconform.results.outcome import FAIL, PASS, SKIP

__all__ = ["FAMILY", "LAYOUT_KINDS", "SchemaOutcome", "run_schema", "FactoryNeedsGPU"]

#: the check name in records and expectation files
FAMILY = "dict-schema"
#: one pytest item per kind; "odd" strides are legal but non-portable, so they are left to the
#: runner's families, which report them as PORTABILITY warnings rather than failures
LAYOUT_KINDS = ("C", "F", "padded", "sliced", "negative", "broadcast")


class FactoryNeedsGPU(Exception):
    """The factory raised and there is no GPU: the check cannot run here."""


@dataclass
class SchemaOutcome:
    """What one layout kind's examples came to: all records, and the messages to show."""

    records: list[dict[str, Any]] = field(default_factory=list)
    unexpected: list[dict[str, Any]] = field(default_factory=list)
    expected: list[tuple[dict[str, Any], Expectation]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skips: list[str] = field(default_factory=list)


def _record(name: str, params: dict[str, Any], outcome: str, **fields: Any) -> dict[str, Any]:
    return {
        "producer": name,
        "consumer": None,
        "check": FAMILY,
        "rule": fields.get("rule"),
        "outcome": outcome,
        "params": params,
        "message": fields.get("message", ""),
        "seen": fields.get("seen"),
        "expected": fields.get("expected"),
        "repro": None,
    }


def _judge(obj: Any, layout: Any, typestr: str) -> tuple[list[dict[str, Any]], list[str]]:
    """(failures as record fields, warning messages) for one exported object: the validator's
    findings and, whatever those were, the factory's contract (`_contract`): a broken rule never
    hides a dict that describes another array, so a baseline entry for the one never covers the
    other."""
    from caiconform.spec.rules import Level
    from caiconform.spec.validate import validate

    report = validate(obj)
    failures = [
        {"rule": f.rule, "message": f.message, "seen": f.seen, "expected": f.expected}
        for f in report.errors
    ]
    warnings = [f.message for f in report.warnings if f.level is not Level.MAY]
    try:
        contract = _contract(obj.__cuda_array_interface__, layout, typestr)
    except Exception:  # a dict that cannot be read (or compared): the validator said how
        contract = []
    return failures + contract, warnings


def _ints(value: Any) -> tuple[int, ...] | None:
    """`value` as a tuple of ints when it is a tuple or list of integers, else None (the
    validator says what is wrong with it)."""
    if not isinstance(value, (tuple, list)) or any(isinstance(v, bool) for v in value):
        return None
    try:
        return tuple(operator.index(v) for v in value)
    except TypeError:
        return None


def _dtype(typestr: Any) -> Any:
    """The numpy dtype a typestr string names, else None (the validator says what is wrong)."""
    import numpy as np

    if not isinstance(typestr, str):
        return None
    try:
        return np.dtype(typestr)
    except (TypeError, ValueError):
        return None


def _contract(d: Any, layout: Any, typestr: str) -> list[dict[str, Any]]:
    """Where the dict `d` describes another array than the one asked for (the factory's
    contract, docs/ci.md): its shape, its typestr's dtype, and the byte strides of every
    dimension longer than 1, which must be the layout's or a contiguous array's (C or F order;
    None strides mean C). Each part is compared where it can be read, broken rule or not."""
    import numpy as np

    from caiconform.spec.layout import c_strides, f_strides

    if not isinstance(d, Mapping):
        return []
    contract = "the factory's contract: the dict describes the array asked for"
    failures = []
    asked_shape = tuple(layout.shape)
    shape = _ints(d.get("shape"))
    if shape is not None and shape != asked_shape:
        failures.append(
            {
                "rule": None,
                "message": f"shape: got {d['shape']!r}, expected {asked_shape!r} ({contract})",
                "seen": repr(d["shape"]),
                "expected": repr(asked_shape),
            }
        )
    asked = np.dtype(typestr)
    dtype = _dtype(d.get("typestr"))
    if dtype is not None and dtype != asked:
        failures.append(
            {
                "rule": None,
                "message": f"typestr: got {d['typestr']!r}, expected {typestr!r} ({contract})",
                "seen": d["typestr"],
                "expected": typestr,
            }
        )
    if shape is None or shape != asked_shape or dtype != asked or 0 in shape:
        return failures  # strides of another array, or of none, say nothing more
    raw = d.get("strides")
    strides = c_strides(shape, asked.itemsize) if raw is None else _ints(raw)
    if strides is None or len(strides) != len(shape):
        return failures
    allowed = {
        layout.effective_strides(asked.itemsize),
        c_strides(shape, asked.itemsize),
        f_strides(shape, asked.itemsize),
    }
    long = [i for i, n in enumerate(shape) if n > 1]
    if not any(all(strides[i] == ok[i] for i in long) for ok in allowed):
        wanted = tuple(layout.effective_strides(asked.itemsize))
        failures.append(
            {
                "rule": None,
                "message": f"strides: got {raw!r}, expected {wanted!r} (the layout asked "
                f"for) or a contiguous array's ({contract})",
                "seen": repr(raw),
                "expected": repr(wanted),
            }
        )
    return failures


def run_schema(
    name: str,
    factory: Callable[..., Any],
    kind: str,
    max_examples: int,
    expectations: list[Expectation],
    gpu: tuple[bool, str],
) -> SchemaOutcome:
    """Explore `max_examples` examples of layout `kind`. Raises FactoryNeedsGPU when the factory
    raises on a machine without a GPU (`gpu` is `gpu_available()`'s answer)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    from caiconform import strategies as cst
    from caiconform.adapters.base import SETUP_PREFIX, SkipExchange
    from caiconform.checks._results import describe_exception
    from caiconform.checks._values import seeds
    from caiconform.spec.values import make_values

    outcome = SchemaOutcome()
    version_of: Callable[[str], str | None] = installed_version

    def examples(typestr: str) -> st.SearchStrategy:
        import numpy as np

        itemsize = np.dtype(typestr).itemsize
        return st.tuples(st.just(typestr), cst.layouts(itemsize=itemsize, kinds=[kind]), seeds())

    @settings(
        max_examples=max_examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.filter_too_much,
            HealthCheck.data_too_large,
        ],
    )
    @given(cst.typestrs(kinds="biufc").flatmap(examples))
    def explore(example: tuple[str, Any, int]) -> None:
        typestr, layout, seed = example
        params = {"layout": layout.to_dict(), "typestr": typestr, "seed": seed}
        values = make_values(typestr, layout.shape, seed)
        try:
            obj = factory(values, layout, typestr, "none")
        except SkipExchange as exc:
            outcome.skips.append(str(exc) or "capability absent")
            outcome.records.append(_record(name, params, SKIP, message=str(exc)))
            return
        except Exception as exc:  # a defect of the test setup (or no GPU), not a finding
            if not gpu[0]:
                raise FactoryNeedsGPU(
                    f"the factory raised {describe_exception(exc)} and no GPU is present ({gpu[1]})"
                ) from None
            reason = f"{SETUP_PREFIX}producer {name} could not build the example: "
            outcome.records.append(
                _record(name, params, SKIP, message=reason + describe_exception(exc))
            )
            return
        failures, warnings = _judge(obj, layout, typestr)
        outcome.warnings.extend(warnings)
        if failures:
            _collect(outcome, name, params, failures, expectations, version_of)
        else:
            outcome.records.append(_record(name, params, PASS))

    explore()
    return outcome


def _collect(
    outcome: SchemaOutcome,
    name: str,
    params: dict[str, Any],
    failures: list[dict[str, Any]],
    expectations: list[Expectation],
    version_of: Callable[[str], str | None],
) -> None:
    for failure in failures:
        record = _record(name, params, FAIL, **failure)
        outcome.records.append(record)
        verdict = classify(expectations, record, version_of)
        if verdict.entry is not None:
            outcome.expected.append((record, verdict.entry))
        else:
            outcome.unexpected.append(record)


def smallest(records: list[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The record whose example has the fewest elements (then the fewest dimensions)."""

    def size(record: Mapping[str, Any]) -> tuple[int, int]:
        shape = record["params"]["layout"]["shape"]
        return prod(shape), len(shape)

    return min(records, key=size)


def describe(records: list[Mapping[str, Any]]) -> str:
    """The failure message: one line per (rule, message head) class with its count, then the
    smallest failing example."""
    classes: dict[tuple[str | None, str], int] = {}
    for record in records:
        if is_finding(record):
            head = record["message"].split(":", 1)[0]
            key = (record["rule"], head)
            classes[key] = classes.get(key, 0) + 1
    lines = [f"{len(records)} failing example(s) of {FAMILY}:"]
    for (rule, head), count in classes.items():
        lines.append(f"  [{rule or 'contract'}] {head}: {count} example(s)")
    example = smallest(records)
    lines.append(f"smallest: {example['message']}")
    lines.append(f"  params: {example['params']}")
    return "\n".join(lines)
