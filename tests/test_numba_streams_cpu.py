"""Numba's stream rules (`caiconform.checks._numba_streams`) on a CPU: a synthetic world of
streams with pending work, a synthetic Numba-like consumer that keeps the rules, and variants
that break each one; and where the streams family draws the Numba scenarios."""

from __future__ import annotations

import time
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
from hypothesis import given, settings

from caiconform.checks import _numba_streams as ns
from caiconform.checks import streams

SPIN_US = 20_000


class FakeWorld:
    """Streams whose work stays pending until someone waits for them (`wait`)."""

    def __init__(self, late: bool = False) -> None:
        self.pending: set[int] = set()
        self.next = 0x7F00_0000
        self.late = late

    def make(self, n, spins_us, export_stream):
        out = []
        launched = time.perf_counter() - (1.0 if self.late else 0.0)
        for _ in spins_us:
            self.next += 0x100
            self.pending.add(self.next)
            obj = SimpleNamespace(
                __cuda_array_interface__={"stream": self.next if export_stream else None},
                work=self.next,
            )
            out.append(ns.Pending(obj, self.next, launched))
        return out

    def done(self, stream):
        return stream not in self.pending

    def wait(self, stream):
        self.pending.discard(stream)


class FakeNumba:
    """A Numba-like consumer keeping every rule; `breaks` names the one it breaks."""

    def __init__(self, world: FakeWorld, breaks: str = "", kernel: bool = False) -> None:
        self.world = world
        self.breaks = breaks
        self.entry = "kernel launch" if kernel else "cuda.as_cuda_array"
        self.takes_sync = not kernel
        self.kernel = kernel
        self.config_sync = True

    def warm(self):
        pass

    def imports(self, objs, sync=True):
        arrays = []
        for i, obj in enumerate(objs):
            stream = obj.__cuda_array_interface__["stream"]
            if stream is not None:
                skip_wait = self.breaks == "sync" or (self.breaks == "sync-first-only" and i)
                honours = sync and self.config_sync
                if self.breaks == "ignores-config":
                    honours = sync
                if honours and not skip_wait:
                    self.world.wait(stream)
            elif self.breaks == "waits-on-none":
                self.world.wait(obj.work)
            default = stream
            if self.breaks == "default-stream" and stream is not None:
                default = 1
            exported = default
            if self.breaks == "reexport-zero":
                exported = 0
            arrays.append(SimpleNamespace(default=default, exported=exported))
        return [] if self.kernel else arrays

    def default_stream(self, array):
        return array.default

    def reexported(self, array):
        return array.exported

    @contextmanager
    def sync_config(self, enabled):
        saved, self.config_sync = self.config_sync, enabled
        try:
            yield
        finally:
            self.config_sync = saved


CHECKS = {
    "numba-sync": ns.check_sync,
    "numba-stream-none": ns.check_none,
    "numba-sync-off": ns.check_override,
}


def judge(scenario, breaks="", kernel=False, late=False):
    world = FakeWorld(late)
    return CHECKS[scenario](FakeNumba(world, breaks, kernel), world, 64, SPIN_US)


@pytest.mark.parametrize("kernel", [False, True])
@pytest.mark.parametrize("scenario", sorted(CHECKS))
def test_a_numba_like_consumer_keeping_the_rules_passes(scenario, kernel):
    result = judge(scenario, kernel=kernel)
    assert result.outcome == "pass", result.message


@pytest.mark.parametrize(
    ("scenario", "breaks", "kernel", "rule", "said"),
    [
        ("numba-sync", "sync", False, "CAI-NUMBA-CONSUMER-SYNC", "did not synchronize"),
        # test_launch_sync_two_streams: a launch waiting for its first argument only
        ("numba-sync", "sync-first-only", True, "CAI-NUMBA-CONSUMER-SYNC", "did not synchronize"),
        ("numba-sync", "default-stream", False, "CAI-NUMBA-CONSUMER-SYNC", "default stream"),
        ("numba-sync", "reexport-zero", False, "CAI-NUMBA-PRODUCER-STREAM", "exports stream 0"),
        ("numba-stream-none", "waits-on-none", False, "CAI-SYNC-NONE-NO-SYNC", "no export named"),
        ("numba-stream-none", "waits-on-none", True, "CAI-SYNC-NONE-NO-SYNC", "no export named"),
        ("numba-sync-off", "ignores-config", False, "CAI-NUMBA-SYNC-OVERRIDE", "CUDA_ARRAY_"),
        ("numba-sync-off", "ignores-config", True, "CAI-NUMBA-SYNC-OVERRIDE", "CUDA_ARRAY_"),
    ],
)
def test_a_numba_like_consumer_breaking_one_rule_is_found(scenario, breaks, kernel, rule, said):
    result = judge(scenario, breaks, kernel)
    assert result.outcome == "fail" and result.rule == rule
    assert said in result.message and rule in result.message


def test_an_import_starting_late_in_the_spin_is_a_skip_not_a_verdict():
    result = judge("numba-sync", "sync", late=True)
    assert result.outcome == "skip" and "cannot be told" in result.message


@pytest.mark.parametrize(
    ("exports", "rule"),
    [
        ([("device_array(n)", 5, None)], "CAI-NUMBA-PRODUCER-STREAM"),
        ([("device_array(n, stream=s)", None, 0xABC0)], "CAI-NUMBA-PRODUCER-STREAM"),
        ([("device_array(n, stream=default_stream())", 0, 1)], "CAI-STREAM-ZERO-FORBIDDEN"),
        (
            [("device_array(n, stream=s)", TypeError("__int__"), 0xABC0)],
            "CAI-NUMBA-PRODUCER-STREAM",
        ),
    ],
)
def test_a_numba_like_producer_exporting_the_wrong_stream_is_found(exports, rule):
    result = ns.check_export(exports)
    assert result.outcome == "fail" and result.rule == rule


def test_a_numba_like_producer_exporting_its_default_streams_passes():
    good = [("none", None, None), ("user", 0xABC0, 0xABC0), ("legacy", 1, 1), ("per-thread", 2, 2)]
    assert ns.check_export(good).outcome == "pass"


@pytest.mark.parametrize(
    ("producer", "consumer", "expected"),
    [
        ("reference", "numba", ("numba-sync", "numba-stream-none", "numba-sync-off")),
        ("reference", "numba-kernel", ("numba-sync", "numba-stream-none", "numba-sync-off")),
        ("numba", "reference", ("numba-export",)),
        ("reference", "cupy", ()),
        ("numba", "cupy", ()),
    ],
)
def test_the_numba_scenarios_are_drawn_only_in_numba_cells(producer, consumer, expected):
    assert streams.numba_scenarios(producer, consumer) == expected
    floor = {ex.params["stream_scenario"] for ex in streams.floor(producer, consumer)}
    assert set(expected) <= floor
    assert not (floor - set(expected)) & set(streams.NUMBA_SCENARIOS)
    assert set(streams.NUMBA_SCENARIOS) == {
        "numba-sync",
        "numba-stream-none",
        "numba-sync-off",
        "numba-export",
    }


@settings(max_examples=30, deadline=None)
@given(streams.examples("reference", "numba"))
def test_drawn_examples_of_a_numba_cell_reproduce(params):
    script = streams.repro(params, "reference", "numba")
    compile(script, "repro", "exec")
    if params["stream_scenario"] in streams.NUMBA_SCENARIOS:
        assert streams.NUMBA_SCENARIOS[params["stream_scenario"]] in script


class TimedWorld(FakeWorld):
    """Streams whose work ends by itself once its spin has run (as a GPU's does)."""

    def make(self, n, spins_us, export_stream):
        made = super().make(n, spins_us, export_stream)
        self.ends = {p.stream: p.launched + us / 1e6 for p, us in zip(made, spins_us, strict=True)}
        return made

    def done(self, stream):
        return stream not in self.pending or time.perf_counter() >= self.ends[stream]


class SlowNumba(FakeNumba):
    """Keeps every rule but takes one and a half calibrated spins to import (a loaded host)."""

    def imports(self, objs, sync=True):
        time.sleep(1.5 * SPIN_US / 1e6)
        return super().imports(objs, sync)


@pytest.mark.parametrize("scenario", ["numba-stream-none", "numba-sync-off"])
def test_a_slow_import_that_does_not_wait_is_not_taken_for_a_wait(scenario):
    """The work the import must not wait for outlasts a slow import (NO_WAIT_SPINS spins), so
    a consumer that keeps the rule passes however long its import took; one default run had
    a 2 ms spin end during an import and reported a wait that did not reproduce."""
    world = TimedWorld()
    result = CHECKS[scenario](SlowNumba(world), world, 64, SPIN_US)
    assert result.outcome == "pass", result.message
