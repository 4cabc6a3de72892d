"""One exchange between two libraries, for the check families: the adapter of a name
(`adapter`), a producer's export (`produce`: its failure is the producer's, not the consumer's),
a consumer's read (`consume_with`: its exception is its answer), and the verdict on what the
consumer did with an export, valid or not (`judge_exchange`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from caiconform.adapters.base import ProducerFailed, SkipExchange
from caiconform.checks._results import (
    accepted_invalid,
    describe_exception,
    failed,
    finding_message,
    memory_refusal,
    named_refusal,
    passed,
    refusal_portability_rule,
    rejected,
)
from caiconform.results.outcome import (
    REJECTED,
    Result,
)
from caiconform.results.record import EXPECT_REJECTION
from caiconform.spec.layout import Layout
from caiconform.spec.values import compare_values, fields_dropped


def adapter(name: str):
    """The registry's adapter instance for `name` (imported here so families stay light)."""
    from caiconform.adapters.registry import get

    return get(name)


def produce(name: str, values: np.ndarray, layout: Layout, typestr: str, scenario: str) -> Any:
    """`adapter(name).produce(...)`; SkipExchange passes through (the runner records a skip),
    any other exception is re-raised saying the producer, not the consumer, failed."""
    try:
        return adapter(name).produce(values, layout, typestr, scenario)
    except SkipExchange:
        raise
    except Exception as exc:
        raise ProducerFailed(
            f"producer {name} could not build the example: {describe_exception(exc)}"
        ) from exc


def consume_with(name: str, obj: Any) -> tuple[Any, BaseException | None]:
    """Run consumer `name` on `obj`: (values, None) or (None, the exception it raised).

    SkipExchange is not caught: it means the consumer cannot take part at all, which the runner
    records as a skip with its reason. Nor is a missing CUDA driver an answer
    (`cuda.device.missing_driver`): it becomes a SkipExchange saying so.
    """
    try:
        return adapter(name).consume(obj), None
    except SkipExchange:
        raise
    except Exception as exc:  # any clean exception is the consumer's answer
        from caiconform.cuda.device import missing_driver

        why = missing_driver(exc)
        if why is not None:  # ... but a consumer that cannot reach a GPU gave none
            raise SkipExchange(f"consumer {name} cannot run here: {why}") from exc
        return None, exc


def judge_exchange(
    consumer: str,
    obj: Any,
    expected: np.ndarray,
    violated: str | None,
    context: str,
    read_rule: str = "CAI-CONSUMER-READS-DESCRIBED",
    reject_rule: str | None = None,
) -> Result:
    """Feed `obj` to `consumer` and classify the answer.

    violated: the rule the export breaks (None for a valid export). Invalid input: a clean
    exception is `rejected` with expected EXPECT_REJECTION (the right answer), anything read
    is `accepted-invalid`. Valid input: the values read must equal `expected` (`fail` against
    `read_rule` otherwise); an exception is `rejected` naming `reject_rule` (the feature the
    example is about) unless the refusal names its own reason (`named_refusal`), else the
    portability rule that explains it, else `read_rule`: an interop gap.
    """
    values, exc = consume_with(consumer, obj)
    if violated is not None:
        if exc is not None:
            seen = describe_exception(exc)
            return Result(
                REJECTED,
                violated,
                finding_message(violated, seen, EXPECT_REJECTION, context),
                seen,
                EXPECT_REJECTION,
            )
        shape = getattr(values, "shape", None)
        return accepted_invalid(violated, f"accepted, read shape {shape}", context)
    if exc is not None:
        try:
            interface = obj.__cuda_array_interface__
        except Exception:  # a producer's failing property is judged where it is read
            interface = None
        rule = named_refusal(interface, exc) or memory_refusal(exc) or reject_rule
        if rule is None:
            rule = refusal_portability_rule(interface, exc)
        return rejected(rule or read_rule, exc, "the values read back", context)
    mismatch = compare_values(np.asarray(values), expected)
    if mismatch is not None:
        return failed(read_rule, mismatch, "the values the dict describes", context)
    if fields_dropped(np.asarray(values), expected):
        return passed(
            f"{context}: read back exactly; warnings: CAI-PORT-DESCR-FIELDS at descr (read as "
            f"{np.asarray(values).dtype.str}, its fields {expected.dtype.names} dropped)",
            seen=["CAI-PORT-DESCR-FIELDS"],
        )
    return passed(f"{context}: read back exactly")
