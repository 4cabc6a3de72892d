"""The dict-schema check of a user's producer, run in the pytest process, no GPU needed.

For one layout kind, hypothesis draws typestrs, shapes and layouts (`caiconform.strategies`);
the user's factory makes an object for each and the validator judges its
`__cuda_array_interface__`, and the dict must describe what was asked for (shape and dtype). If
the factory itself needs a GPU and there is none, the check is skipped, saying so.

Every example is explored and recorded (no shrinking: a record per example keeps the report's
counts honest); among the failures the one with the fewest elements is shown. Examples are
derandomized, so a CI run is reproducible.
"""

from __future__ import annotations

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
    """(failures as record fields, warning messages) for one exported object."""
    import numpy as np

    from caiconform.spec.rules import Level
    from caiconform.spec.validate import validate

    report = validate(obj)
    failures = [
        {"rule": f.rule, "message": f.message, "seen": f.seen, "expected": f.expected}
        for f in report.errors
    ]
    warnings = [f.message for f in report.warnings if f.level is not Level.MAY]
    if failures:
        return failures, warnings
    d = obj.__cuda_array_interface__
    contract = "the factory's contract: the dict describes the array asked for"
    if tuple(d["shape"]) != tuple(layout.shape):
        failures.append(
            {
                "rule": None,
                "message": f"shape: got {d['shape']!r}, expected {tuple(layout.shape)!r} ({contract})",
                "seen": repr(d["shape"]),
                "expected": repr(tuple(layout.shape)),
            }
        )
    if np.dtype(d["typestr"]) != np.dtype(typestr):
        failures.append(
            {
                "rule": None,
                "message": f"typestr: got {d['typestr']!r}, expected {typestr!r} ({contract})",
                "seen": d["typestr"],
                "expected": typestr,
            }
        )
    return failures, warnings


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
    from caiconform.checks._values import make_values, seeds

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
