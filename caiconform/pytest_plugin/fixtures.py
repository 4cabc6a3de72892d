"""`cai_validate` and `cai_roundtrip`: assertion helpers for a project's own tests.

Both hide their own frames from tracebacks (`__tracebackhide__`), so a failure points at the
test's line, and say what broke in the validator's words: `path: got X, expected Y [RULE-ID]`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

__all__ = ["assert_conforms", "roundtrip"]


def assert_conforms(obj: Any, *, version: int | None = None) -> Any:
    """Fail the test unless `obj` (or a dict) is a conforming `__cuda_array_interface__`
    export; returns the validator's `Report` (its warnings are SHOULD/PORTABILITY findings)."""
    __tracebackhide__ = True
    from caiconform.spec.validate import validate

    report = validate(obj, version=version)
    if not report.ok:
        lines = [
            f"{len(report.errors)} CUDA Array Interface violation(s) "
            f"(judged as version {report.version}):"
        ]
        lines += [f"  {finding.message}" for finding in report.errors]
        lines += [f"  warning: {finding.message}" for finding in report.warnings]
        pytest.fail("\n".join(lines), pytrace=False)
    return report


def roundtrip(
    obj: Any,
    consumer: str | Callable[[Any], Any] = "reference",
    *,
    expected: Any = None,
) -> np.ndarray:
    """Validate `obj`, let `consumer` (an adapter name, or a function returning host values)
    import it, and return the host values it read. Fails when the values do not have the
    dict's shape and dtype, or differ from `expected` (bit for bit; NaNs equal) when given.
    Skips, saying why, without a GPU or when the consumer's library is not available."""
    __tracebackhide__ = True
    from caiconform.adapters.base import SkipExchange
    from caiconform.cuda import gpu_available
    from caiconform.spec.values import compare_values

    assert_conforms(obj)
    ok, why = gpu_available()
    if not ok:
        pytest.skip(f"cai_roundtrip needs a GPU: {why}")
    if callable(consumer):
        name, read = getattr(consumer, "__name__", repr(consumer)), consumer
    else:
        from caiconform.adapters import registry

        try:
            adapter = registry.get(consumer)
        except KeyError as exc:
            pytest.fail(str(exc.args[0]), pytrace=False)
        available, reason = adapter.available()
        if not available:
            pytest.skip(f"consumer {consumer} unavailable: {reason}")
        name, read = consumer, adapter.consume
    try:
        values = np.asarray(read(obj))
    except SkipExchange as exc:
        pytest.skip(f"consumer {name} cannot take this object: {exc}")
    d = obj.__cuda_array_interface__
    want = np.dtype(d["typestr"])
    same_type = values.dtype.newbyteorder("=") == want.newbyteorder("=")
    if values.shape != tuple(d["shape"]) or not same_type:
        pytest.fail(
            f"consumer {name} read shape {values.shape} dtype {values.dtype.str}, expected "
            f"shape {tuple(d['shape'])} dtype {want.str} (the exported dict's)",
            pytrace=False,
        )
    if expected is not None:
        problem = compare_values(values, np.asarray(expected))
        if problem is not None:
            pytest.fail(f"consumer {name} read wrong values: {problem}", pytrace=False)
    return values
