"""A cell's examples sent to a worker in batches (`Worker.run_many`, `RunConfig.batch`): each
answer streams back as its example ends, a batch stops at the example that cost its process,
the examples after it run elsewhere, and the journal is the one examples sent one at a time
give."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from caiconform.runner.pool import Worker
from tests.synthetic.checks import NAP_S
from tests.test_speed import EXECUTE, HOOK, SYNTHETIC, _outcomes

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _importable_synthetic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


@pytest.fixture(params=[False, True], ids=["cold", "fork"])
def worker(request):
    w = Worker(0, health_hooks=[HOOK], fork=request.param)
    yield w
    w.close()


def _batch(worker: Worker, producer: str, ns: list[int], timeout: float = 30.0) -> list:
    return list(
        worker.run_many(
            EXECUTE, [{"n": n} for n in ns], producer, "good", timeout=timeout, module=SYNTHETIC
        )
    )


@pytest.mark.parametrize(
    ("producer", "bad", "outcome"),
    [("abort", 600, "crash"), ("poison", 800, "poisoned"), ("hang", 950, "hang")],
)
def test_a_batch_stops_at_the_example_that_cost_its_process(worker, producer, bad, outcome):
    """The examples before it are answered, it gets its outcome, the ones after it are not
    run (the caller runs them elsewhere), and the next batch runs on a fresh process."""
    exchanges = _batch(worker, producer, [1, 2, bad, 3, 4], timeout=1.5)
    assert [e.result.outcome for e in exchanges] == ["pass", "pass", outcome]
    assert exchanges[0].worker == exchanges[1].worker
    again = _batch(worker, producer, [3, 4])
    assert [e.result.outcome for e in again] == ["pass", "pass"]
    assert again[0].worker != exchanges[1].worker


def test_each_answer_streams_back_as_its_example_ends_with_its_own_timeout(worker):
    """Four examples of NAP_S each, in one request whose timeout is two naps: each example's
    timeout runs from the answer before it, and the first answer arrives before the rest ran."""
    worker.run(EXECUTE, {"n": 0}, "good", "good", timeout=30, module=SYNTHETIC)  # started
    began = time.monotonic()
    arrived = []
    batch = worker.run_many(
        f"{SYNTHETIC}:nap", [{"n": n} for n in range(4)], "good", None, timeout=2 * NAP_S
    )
    for exchange in batch:
        arrived.append(time.monotonic() - began)
        assert exchange.result.outcome == "pass", exchange.result
        assert exchange.timing["execute_s"] >= NAP_S * 0.9
    assert len(arrived) == 4
    assert arrived[0] < 2.5 * NAP_S < arrived[-1], arrived


def test_skips_and_errors_do_not_end_a_batch(worker):
    exchanges = _batch(worker, "skip", [1, 2, 3])
    assert [e.result.outcome for e in exchanges] == ["skip"] * 3
    assert len({e.worker for e in exchanges}) == 1
    assert _batch(worker, "good", []) == []


def test_batches_journal_what_examples_one_at_a_time_journal(synthetic_matrix):
    """The synthetic matrix (crashes, poisoned processes, a crash cap, shrinking) with one
    example per request and with batches of 8 over 3 fork-server workers: the same examples,
    outcomes and minimal examples, in the same journal order."""
    single = _outcomes(synthetic_matrix(3, fork=True, batch=1))
    batched = _outcomes(synthetic_matrix(3, fork=True, batch=8))
    assert single == batched


def test_cold_started_workers_journal_what_fork_servers_journal(synthetic_matrix):
    """The same matrix over 3 cold-started workers (each lost process replaced by a fresh
    interpreter) journals what fork servers journal, in batches of 8 (the default). With the
    test above (fork servers: batches of 8 journal what one example at a time journals), cold
    workers' batches journal what examples one at a time journal. One cold run, about 25 s of
    CPU on a 2-core machine: the cold run of one example per request, which it was compared
    with too, cost as much again and adds no path the two runs here do not take."""
    cold = _outcomes(synthetic_matrix(3, fork=False, batch=8))
    assert cold == _outcomes(synthetic_matrix(3, fork=True, batch=8))


def test_run_batch_flag():
    """`--batch N` reaches the run; 0 is refused with a one-line error."""
    import argparse

    from caiconform.commands import run as run_command
    from caiconform.runner.config import DEFAULT_BATCH

    parser = argparse.ArgumentParser()
    run_command.add_arguments(parser)
    assert parser.parse_args(["--batch", "3"]).batch == 3
    assert f"({DEFAULT_BATCH};" in " ".join(parser.format_help().split())
    with pytest.raises(SystemExit):
        parser.parse_args(["--batch", "0"])
