"""Draws made ahead in spawned processes (`runner.prefetch`) are the parent's own draws."""

from __future__ import annotations

import json
import os

import pytest

from caiconform.draws import draw_examples
from caiconform.runner.config import RunConfig
from caiconform.runner.driver import run_matrix
from caiconform.runner.prefetch import Prefetch, draw_cell, processes_for
from caiconform.runner.protocol import canonical

SYNTHETIC = "tests.synthetic.checks"
SOURCE = "tests.synthetic.adapters"
HOOK = f"{SYNTHETIC}:healthy"

CELLS = [
    ("roundtrip/reference/cupy", "caiconform.checks.roundtrip", "reference", "cupy", 7, 25),
    ("adversarial/-/torch", "caiconform.checks.adversarial", None, "torch", 8, 25),
    ("streams/cupy/jax", "caiconform.checks.streams", "cupy", "jax", 9, 25),
    ("schema/numba/-", "caiconform.checks.schema", "numba", None, 10, 25),
]


def _here(module: str, producer, consumer, seed: int, n: int) -> list:
    import importlib

    from caiconform.checks._memory import examples_of

    drawn, error = draw_examples(
        examples_of(importlib.import_module(module), producer, consumer), seed, n
    )
    assert error is None
    return drawn


def test_pool_draws_what_the_parent_draws():
    prefetch = Prefetch(2)
    try:
        prefetch.submit(CELLS)
        for key, module, producer, consumer, seed, n in CELLS:
            fetched = prefetch.take(key)
            assert fetched is not None, key
            drawn, error = fetched
            assert error is None
            here = _here(module, producer, consumer, seed, n)
            assert [canonical(p) for p in drawn] == [canonical(p) for p in here], key
        assert prefetch.take("never/submitted/-") is None
    finally:
        prefetch.close()


def _imported(name: str) -> tuple[bool, int]:
    import sys

    return name in sys.modules, os.getpid()


def test_the_pools_processes_start_at_once_having_imported_the_check_modules():
    """Made at a run's start, the pool's processes spawn and import the run's check modules
    then, not when the first cells' draws are submitted once the plan is known."""
    module = "tests.synthetic.unsatisfiable"
    prefetch = Prefetch(2, [module])
    try:
        assert len(prefetch._pool._processes) == 2  # spawned by the constructor
        answers = [prefetch._pool.submit(_imported, module).result(timeout=120) for _ in range(6)]
        assert all(imported for imported, _ in answers), answers
        assert len({pid for _, pid in answers}) <= 2
    finally:
        prefetch.close()


def test_draw_cell_reports_a_strategy_error_formatted():
    drawn, error = draw_cell("tests.synthetic.unsatisfiable", "good", "good", 1, 5)
    assert drawn == [] and error is not None and error.startswith("Unsatisfiable")


@pytest.mark.parametrize(
    ("cores", "processes"), [(1, 1), (7, 1), (8, 2), (16, 4), (33, 8), (128, 8), (None, 4)]
)
def test_processes_for_leaves_the_cores_to_the_workers(monkeypatch, cores, processes):
    """A quarter of the cores, at least 1, at most 8; no core count: the 16 workers' quarter."""
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    assert processes_for(16) == processes


def _records(out) -> list[tuple]:
    rows = []
    for line in (out / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        rows.append(
            (
                r["check"],
                r["producer"],
                r["consumer"],
                r["index"],
                r["outcome"],
                canonical(r["params"]),
                r.get("shrunk"),
            )
        )
    return sorted(rows, key=repr)


@pytest.mark.parametrize("seed", [5])
def test_a_run_with_prefetched_draws_equals_one_without(tmp_path, seed):
    runs = {}
    for prefetch in (False, True):
        config = RunConfig(
            out=tmp_path / f"run-{prefetch}",
            checks=[SYNTHETIC],
            libraries=["good", "wrong", "raises", "abort"],
            max_examples=12,
            seed=seed,
            workers=2,
            timeout_s=5.0,
            gpus=0,
            shrink=False,
            health_hooks=[HOOK],
            adapter_source=SOURCE,
            prefetch_draws=prefetch,
        )
        run_matrix(config)
        runs[prefetch] = _records(config.out)
        cells = [json.loads(line) for line in (config.out / "cells.jsonl").read_text().splitlines()]
        prefetched = sum(c.get("timing", {}).get("prefetched", 0) for c in cells)
        assert (prefetched > 0) == prefetch, prefetched
    assert runs[True] == runs[False]
    assert len(runs[True]) >= 4 * 12


@pytest.mark.parametrize(
    ("family", "producer", "consumer"),
    [
        ("roundtrip", "torch", "cupy"),
        ("zero_size", "reference", "numba"),
        ("agreement", "cupy", None),
        ("schema", "reference", None),
        ("adversarial", None, "cupy"),
    ],
)
def test_draws_do_not_depend_on_the_strategies_kept_from_earlier_draws(family, producer, consumer):
    """The families' flatmaps keep the strategy they made for each value (a new one was
    validated on every draw: half the drawing time); drawn with those caches empty and again
    with them full, a cell gets the same examples."""
    from caiconform import strategies
    from caiconform.checks import adversarial, agreement, roundtrip, schema, zero_size

    expansions = [
        roundtrip._params,
        zero_size._params,
        agreement._params,
        schema._producer_params,
        adversarial._live,
        strategies._typestrs_of,
    ]
    assert roundtrip._params("<f4") is roundtrip._params("<f4")
    for expand in expansions:
        expand.cache_clear()
    module = f"caiconform.checks.{family}"
    cold = draw_cell(module, producer, consumer, 5, 40)
    assert strategies._typestrs_of.cache_info().currsize  # the warm draw meets kept ones
    warm = draw_cell(module, producer, consumer, 5, 40)
    assert [canonical(p) for p in cold[0]] == [canonical(p) for p in warm[0]]
    assert len(cold[0]) == 40 and cold[1] is None


@pytest.mark.parametrize(
    ("prefetch_draws", "only_cells", "likely"),
    [
        (None, None, True),  # the matrix: its plan is large
        (None, [f"c{i}" for i in range(31)], False),  # the pytest plugin's few cells
        (None, [f"c{i}" for i in range(32)], True),
        (False, None, False),
        (True, ["one"], True),
    ],
)
def test_the_draw_pool_starts_early_only_where_a_run_will_use_it(
    tmp_path, prefetch_draws, only_cells, likely
):
    """Started beside the probes, the pool's processes compete with them: a run naming fewer
    than MIN_CELLS cells (the pytest plugin's exchange run) draws in the parent, so it starts
    none early."""
    from caiconform.runner.driver import _prefetch_likely

    config = RunConfig(tmp_path, [SYNTHETIC], prefetch_draws=prefetch_draws, only_cells=only_cells)
    assert _prefetch_likely(config) is likely
