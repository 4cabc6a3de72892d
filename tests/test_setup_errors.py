"""A producer factory that raises (anything but SkipExchange) is a defect of the test setup: a
skip whose reason says so, never a finding or a `rejected` charged to a consumer."""

from __future__ import annotations

import numpy as np
import pytest

from caiconform.adapters.base import SETUP_PREFIX, ProducerFailed, SkipExchange
from caiconform.checks import _exchange
from caiconform.runner.worker import run_example
from caiconform.spec.layout import Layout


def test_a_failing_factory_is_a_setup_skip_not_a_rejection() -> None:
    result, _ = run_example("tests.synthetic.checks:factory_fails", {}, "mylib", "cupy")
    assert result.outcome == "skip"
    assert result.message == (
        f"{SETUP_PREFIX}producer mylib could not build the example: ValueError: no cast"
    )


def test_produce_wraps_the_factory_error_and_lets_skips_through(monkeypatch) -> None:
    class Raising:
        def produce(self, values, layout, typestr, scenario):
            raise ValueError("Unsupported dtype float128")

    monkeypatch.setattr(_exchange, "adapter", lambda name: Raising())
    with pytest.raises(ProducerFailed, match="producer mylib could not build the example: Value"):
        _exchange.produce("mylib", np.zeros(2, "<f16"), Layout((2,)), "<f16", "none")

    class Skipping:
        def produce(self, values, layout, typestr, scenario):
            raise SkipExchange("no float128 here")

    monkeypatch.setattr(_exchange, "adapter", lambda name: Skipping())
    with pytest.raises(SkipExchange):
        _exchange.produce("mylib", np.zeros(2, "<f16"), Layout((2,)), "<f16", "none")
