"""Memory kinds on the CPU: the kind as a dimension of the examples (drawn, spread over the
coverage floor, made current by the worker, carried by every record), a consumer refusing a
kind flagged with its rule and severity, the VMM kind of the read past an allocation, and the
pointer checks' range fallback for registered host memory (the driver stood in for)."""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from caiconform.checks import _encoding, _exchange, _memory, adversarial
from caiconform.cuda import memkinds
from caiconform.cuda.memkinds import MEMORY_KINDS, current_kind, use_kind, using_kind
from caiconform.draws import draw_examples
from caiconform.results.catalogue import build_catalogue
from caiconform.results.record import coverage_of_params
from caiconform.runner.repro import script_for
from caiconform.spec.families import LIVE
from caiconform.spec.layout import Layout
from caiconform.spec.rules import RULES, Level

#: a consumer-role cell (the reference producer builds the arrays) and a pair cell
CELLS = {
    "pair": ("reference", "torch"),
    "producer": ("reference", None),
    "consumer": (None, "cupy"),
}


def _cell(module) -> tuple[str | None, str | None]:
    return CELLS[module.ROLES]


def _draw(strategy, n: int = 60) -> list[dict]:
    seen: list[dict] = []

    @settings(max_examples=n, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def draw(params):
        seen.append(params)

    draw()
    return seen


# --- the kind as a dimension ---------------------------------------------------------------


def test_kind_names_are_checked_and_the_default_is_device():
    assert current_kind() == "device"
    with using_kind("managed"):
        assert current_kind() == "managed"
        with using_kind(None):
            assert current_kind() == "device"
        assert current_kind() == "managed"
    assert current_kind() == "device"
    with pytest.raises(ValueError, match="unknown memory kind 'heap'"):
        use_kind("heap")
    assert set(memkinds.KIND_APIS) == set(MEMORY_KINDS)


@pytest.mark.parametrize("family", sorted(_memory.FAMILIES))
def test_every_consumer_meets_every_kind_in_the_floor(family):
    module = importlib.import_module(f"caiconform.checks.{family}")
    producer, consumer = _cell(module)
    floor = _memory.floor_of(module, producer, consumer)
    assert {e.params["memory"] for e in floor} == set(MEMORY_KINDS), family
    assert all(e.coverage["memory"] == e.params["memory"] for e in floor)
    drawn = _draw(_memory.examples_of(module, producer, consumer))
    assert all(p["memory"] in MEMORY_KINDS for p in drawn)
    assert len({p["memory"] for p in drawn}) > 1, "the kind is drawn, not fixed"


def test_the_floor_is_not_multiplied():
    from caiconform.checks import roundtrip

    plain = roundtrip.floor("reference", "torch")
    spread = _memory.floor_of(roundtrip, "reference", "torch")
    assert len(spread) == len(plain)
    assert [dict(e.params, memory=None) for e in spread] == [
        dict(e.params, memory=None) for e in plain
    ]


@pytest.mark.parametrize("family", ["zero_size", "devices"])
def test_families_without_the_dimension_draw_no_kind_and_say_device(family):
    module = importlib.import_module(f"caiconform.checks.{family}")
    producer, consumer = _cell(module)
    floor = _memory.floor_of(module, producer, consumer)
    assert all("memory" not in e.params for e in floor)
    assert {e.coverage["memory"] for e in floor} == {"device"}


def test_a_library_draws_its_own_kinds_and_keeps_pending_work_on_device_memory():
    from caiconform.checks import schema

    assert _memory.kinds_for("numba") == ("device", "managed", "host-mapped")
    assert _memory.kinds_for("cupy") == ("device", "managed")
    assert _memory.kinds_for("rmm") == ("device", "async-pool", "managed")
    assert _memory.kinds_for("no-such-library") == ("device",)
    floor = _memory.floor_of(schema, "numba", None)
    pending = [e for e in floor if e.params.get("stream_scenario", "none") != "none"]
    assert pending and all(e.params["memory"] == "device" for e in pending)
    plain = [e for e in floor if e.params.get("stream_scenario", "none") == "none"]
    assert {e.params["memory"] for e in plain} == {"device", "managed", "host-mapped"}
    # a library with no kind of its own: the examples are unchanged, their records say device
    jax = _memory.floor_of(schema, "jax", None)
    assert all("memory" not in e.params and e.coverage["memory"] == "device" for e in jax)


def test_the_environment_narrows_the_kinds_and_device_alone_changes_nothing(monkeypatch):
    from caiconform.checks import roundtrip

    monkeypatch.setenv(_memory.KINDS_ENV, "device, vmm")
    assert _memory.kinds_for("reference") == ("device", "vmm")
    assert _memory.kinds_for("numba") == ("device",)
    monkeypatch.setenv(_memory.KINDS_ENV, "device")
    plain, _ = draw_examples(roundtrip.examples("reference", "cupy"), 11, 20)
    assert draw_examples(_memory.examples_of(roundtrip, "reference", "cupy"), 11, 20)[0] == plain
    monkeypatch.setenv(_memory.KINDS_ENV, "device,heap")
    with pytest.raises(ValueError, match="unknown memory kind 'heap'"):
        _memory.kinds_for("reference")


def test_one_kind_other_than_device_is_the_kind_of_every_example(monkeypatch):
    from caiconform.checks import roundtrip

    monkeypatch.setenv(_memory.KINDS_ENV, "vmm")
    floor = _memory.floor_of(roundtrip, "reference", "cupy")
    assert {(e.params["memory"], e.coverage["memory"]) for e in floor} == {("vmm", "vmm")}
    drawn = _draw(_memory.examples_of(roundtrip, "reference", "cupy"), 20)
    assert {p["memory"] for p in drawn} == {"vmm"}


def test_the_worker_makes_the_examples_kind_current():
    from caiconform.runner.worker import run_example

    probe = f"{__name__}:kind_probe"
    result, _seconds = run_example(probe, {"memory": "vmm"}, "reference", "cupy")
    assert (result.outcome, result.seen) == ("pass", "vmm")
    result, _seconds = run_example(probe, {}, "reference", "cupy")
    assert result.seen == "device"
    assert current_kind() == "device"


def kind_probe(params, producer, consumer):
    """An `execute` reporting the kind current while it runs."""
    from caiconform.results.outcome import PASS, Result

    return Result(PASS, seen=current_kind())


def test_records_carry_the_kind_and_the_reproducer_sets_it():
    assert coverage_of_params({"typestr": "<f4", "shape": [3], "memory": "managed"})["memory"] == (
        "managed"
    )
    assert coverage_of_params({"typestr": "<f4", "shape": [3]})["memory"] == "device"
    from caiconform.checks import roundtrip

    layout = Layout((3,))
    record = {
        "check": "roundtrip",
        "producer": "reference",
        "consumer": "cupy",
        "outcome": "fail",
        "rule": "CAI-CONSUMER-READS-DESCRIBED",
        "message": "m",
        "params": {"typestr": "<f4", "layout": layout.to_dict(), "seed": 0, "memory": "vmm"},
    }
    script = script_for(roundtrip, record)
    assert "use_kind('vmm')" in script
    compile(script, "repro.py", "exec")
    record["params"]["memory"] = "device"
    assert "use_kind" not in script_for(roundtrip, record)


# --- a consumer that refuses a kind --------------------------------------------------------


class _RefusesManaged:
    """A consumer that reads device memory and refuses managed memory, as a library that
    checks the pointer's memory type would."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values

    def consume(self, obj):
        if current_kind() == "managed":
            raise TypeError("pointer is managed memory, not device memory")
        return self.values


def _record(memory: str, result, seed: int) -> dict:
    params = {"typestr": "<i4", "layout": Layout((4,)).to_dict(), "seed": seed, "memory": memory}
    return {
        "check": "roundtrip",
        "producer": "reference",
        "consumer": "refuser",
        "outcome": result.outcome,
        "rule": result.rule,
        "message": result.message,
        "seen": result.seen,
        "expected": result.expected,
        "params": params,
        "coverage": coverage_of_params(params),
        "floor": False,
        "shrunk": False,
    }


def test_a_consumer_refusing_managed_memory_is_flagged(monkeypatch):
    values = np.arange(4, dtype="<i4")
    monkeypatch.setattr(_exchange, "adapter", lambda name: _RefusesManaged(values))
    export = _encoding.InterfaceObject(
        {"shape": (4,), "typestr": "<i4", "data": (4096, False), "version": 3}
    )
    records = []
    for seed, memory in enumerate(MEMORY_KINDS * 2):
        with using_kind(memory):
            result = _exchange.judge_exchange("refuser", export, values, None, "reference->refuser")
        if memory == "managed":
            assert (result.outcome, result.rule) == ("rejected", "CAI-CONSUMER-ANY-MEMORY-KIND")
        else:
            assert result.outcome == "pass", (memory, result)
        records.append(_record(memory, result, seed))
    (group,) = build_catalogue(records)["groups"]
    assert group["rule"] == "CAI-CONSUMER-ANY-MEMORY-KIND"
    assert (group["library"], group["role"]) == ("refuser", "consumer")
    assert (group["outcome"], group["severity"]) == ("rejected-valid", "refuses-valid")
    assert "memory is managed" in f"{group['condition']} {group['contrast']}"


def test_a_refusal_that_names_no_memory_keeps_the_read_rule(monkeypatch):
    monkeypatch.setattr(_exchange, "adapter", lambda name: _Raises(TypeError("no")))
    export = _encoding.InterfaceObject({"shape": (4,), "typestr": "<i4", "data": (4096, False)})
    with using_kind("managed"):
        result = _exchange.judge_exchange("x", export, np.zeros(4, "<i4"), None, "c")
    assert result.rule == "CAI-CONSUMER-READS-DESCRIBED"
    monkeypatch.setattr(_exchange, "adapter", lambda name: _Raises(TypeError("managed memory")))
    result = _exchange.judge_exchange("x", export, np.zeros(4, "<i4"), None, "c")
    assert result.rule == "CAI-CONSUMER-READS-DESCRIBED", "device memory: the kind is no reason"


class _Raises:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def consume(self, obj):
        raise self.exc


def test_the_memory_rule_is_a_consumer_must_traced_to_the_text():
    from caiconform.spec.trace import TRACE

    rule = RULES["CAI-CONSUMER-ANY-MEMORY-KIND"]
    assert (rule.level, rule.side.value) == (Level.MUST, "consumer")
    assert any(
        "CAI-CONSUMER-ANY-MEMORY-KIND" in t.rules and "device-accessible" in t.quote for t in TRACE
    )


# --- the read past an allocation ------------------------------------------------------------


def test_the_read_past_an_allocation_uses_vmm_memory_with_a_guard_as_far_as_it_reads():
    for example in adversarial._build_floor(0, len(LIVE) * 100):
        if example.params.get("mutation") == "extent-past-allocation":
            assert example.params["memory"] == "vmm" and example.coverage["memory"] == "vmm"
            break
    else:
        pytest.fail("no extent-past-allocation example in the floor")
    drawn = _draw(adversarial._live("extent-past-allocation"), 20)
    assert {p["memory"] for p in drawn} == {"vmm"}
    assert all("memory" not in p for p in _draw(adversarial._live("stream-bogus"), 5))
    layout = Layout((3, 4))
    reach = (3 + adversarial._PAST_END) * 4 * 4
    assert adversarial._guard(layout, "<f4") == reach - 48


# --- pointer checks per kind, the driver stood in for ---------------------------------------


class _Driver:
    """Answers cuMemGetAddressRange and cuPointerGetAttributes as the driver does for one
    kind of memory."""

    def __init__(self, ranges: dict | None = None, attrs: tuple | None = None) -> None:
        from cuda.bindings import driver

        self.driver = driver
        self.ranges = ranges or {}
        self.attrs = attrs

    def get_range(self, ptr):
        found = self.ranges.get(int(ptr))
        if found is None:
            return (self.driver.CUresult.CUDA_ERROR_NOT_FOUND, None, None)
        return (self.driver.CUresult.CUDA_SUCCESS, *found)

    def attributes(self, count, wanted, ptr):
        if self.attrs is None:
            return (self.driver.CUresult.CUDA_ERROR_INVALID_VALUE, None)
        return (self.driver.CUresult.CUDA_SUCCESS, list(self.attrs))


@pytest.fixture
def fake_driver(monkeypatch):
    from cuda.bindings import driver

    def install(fake: _Driver) -> None:
        monkeypatch.setattr(driver, "cuMemGetAddressRange", fake.get_range)
        monkeypatch.setattr(driver, "cuPointerGetAttributes", fake.attributes)

    return install


def test_address_range_asks_cuMemGetAddressRange_first(fake_driver):
    from caiconform.cuda.memory import address_range

    # a VMM mapping: the mapped region, though the reservation (attributes) is larger
    fake_driver(_Driver({0x1000: (0x1000, 0x200000)}, attrs=(2, 0x1000, 0x8000000, 1)))
    assert address_range(0x1000) == (0x1000, 0x200000)


def test_address_range_of_registered_host_memory_from_the_range_attributes(fake_driver):
    from caiconform.cuda.memory import address_range

    fake_driver(_Driver(attrs=(1, 0x7000, 0x3000, 1)))  # host, start, size, mapped
    assert address_range(0x8000) == (0x7000, 0x3000)
    fake_driver(_Driver(attrs=(2, 0x7000, 0x3000, 1)))  # device memory: never the reservation
    assert address_range(0x8000) is None
    fake_driver(_Driver(attrs=(1, 0x7000, 0x3000, 0)))  # not backed
    assert address_range(0x8000) is None
    fake_driver(_Driver(attrs=None))  # unknown to the driver
    assert address_range(0x8000) is None


# --- a run's records -----------------------------------------------------------------------


def _synthetic_run(tmp_path, monkeypatch, kinds_for, **settings) -> list[dict]:
    """A run of the synthetic family, given the dimension here (`kinds_for` the kinds its
    cell draws): the records with params."""
    from caiconform.runner.config import RunConfig
    from caiconform.runner.driver import run_matrix

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent.parent))
    monkeypatch.setattr(_memory, "FAMILIES", _memory.FAMILIES | {"synthetic"})
    monkeypatch.setattr(_memory, "kinds_for", kinds_for)
    config = RunConfig(
        out=tmp_path / "run",
        checks=["tests.synthetic.checks"],
        libraries=["good"],
        max_examples=30,
        seed=7,
        workers=1,
        timeout_s=5.0,
        gpus=0,
        health_hooks=["tests.synthetic.checks:healthy"],
        adapter_source="tests.synthetic.adapters",
        **settings,
    )
    run_matrix(config)
    lines = (config.out / "results.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r.get("params")]


def test_a_runs_records_carry_the_memory_kind_drawn_per_example(tmp_path, monkeypatch):
    """The parent draws a kind per example, the workers run it, and every record's coverage
    names it (no cell more)."""
    records = _synthetic_run(tmp_path, monkeypatch, lambda producer: MEMORY_KINDS)
    assert len({(r["check"], r["producer"], r["consumer"]) for r in records}) == 1
    assert records and all(r["coverage"]["memory"] == r["params"]["memory"] for r in records)
    assert len({r["params"]["memory"] for r in records}) > 2


def test_a_run_draws_only_the_kinds_it_is_given_and_records_them(tmp_path, monkeypatch):
    """`RunConfig.memory_kinds` (`--memory-kinds`) narrows the draws for the run alone: its
    records name no other kind, run.json keeps the list, and the environment the caller had
    is back afterwards."""
    monkeypatch.delenv(_memory.KINDS_ENV, raising=False)
    records = _synthetic_run(
        tmp_path,
        monkeypatch,
        lambda producer: tuple(_memory.allowed_kinds()),
        memory_kinds=("device", "vmm"),
    )
    assert {r["params"]["memory"] for r in records} == {"device", "vmm"}
    settings = json.loads((tmp_path / "run" / "run.json").read_text())["settings"]
    assert settings["memory_kinds"] == ["device", "vmm"]
    assert _memory.KINDS_ENV not in os.environ


def test_a_run_from_before_the_dimension_resumes_on_device_memory(tmp_path):
    """A run.json without `memory_kinds` (runs drew no kind then) resumes drawing none, so
    the resumed draws replay the run's; an unknown kind is a one-line usage error."""
    from caiconform.errors import UsageError
    from caiconform.runner.config import RunConfig, fill_defaults, resumed_run_id

    out = tmp_path / "old"
    out.mkdir()
    settings = {"checks": ["schema"], "max_examples": 10, "seed": 1, "drawn_crash_cap": 3}
    (out / "run.json").write_text(json.dumps({"run_id": "r1", "settings": settings}))
    config = RunConfig(out=out, checks=["schema"], resume=True)
    assert resumed_run_id(config) == "r1"
    assert tuple(config.memory_kinds) == ("device",)
    with pytest.raises(UsageError, match="heap"):
        fill_defaults(RunConfig(out=out, checks=["schema"], memory_kinds=("device", "heap")))


def test_the_cli_refuses_an_unknown_memory_kind_in_one_line(tmp_path, capsys):
    from caiconform.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["run", "--memory-kinds", "device,heap", "--out", str(tmp_path / "r")])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "unknown memory kind 'heap'" in err[-1] and "Traceback" not in "".join(err)


# --- each kind's driver calls, the driver stood in for --------------------------------------


class _KindDriver:
    """Records the driver calls of `memkinds` and answers them as the driver would."""

    GRANULE = 2 << 20

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.next = 0x7F0000000000
        #: cuDeviceCanAccessPeer(dev, peer_dev): may contexts on dev read peer_dev's memory
        self.can_access_peer = lambda dev, peer_dev: 1

    def __getattr__(self, name: str):
        from cuda.bindings import driver

        answers = {
            "cuMemAllocAsync": lambda size, stream: self._ptr(),
            "cuMemAllocFromPoolAsync": lambda size, pool, stream: self._ptr(),
            "cuMemPoolCreate": lambda props: "pool",
            "cuMemAllocManaged": lambda size, flags: self._ptr(),
            "cuMemHostAlloc": lambda size, flags: self._ptr(),
            "cuMemHostGetDevicePointer": lambda host, flags: host,
            "cuMemGetAllocationGranularity": lambda prop, option: self.GRANULE,
            "cuMemAddressReserve": lambda size, align, hint, flags: self._ptr(),
            "cuMemCreate": lambda size, prop, flags: "handle",
            "cuDeviceGet": lambda ordinal: ordinal,
            "cuDeviceGetCount": lambda: 2,
            "cuDeviceCanAccessPeer": lambda dev, peer: self.can_access_peer(dev, peer),
        }

        def fake(*args):
            self.calls.append((name, *args))
            value = answers[name](*args) if name in answers else None
            ok = driver.CUresult.CUDA_SUCCESS
            return (ok,) if value is None else (ok, value)

        fake.__name__ = name
        return fake

    def _ptr(self) -> int:
        self.next += 1 << 30
        return self.next

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]


@pytest.fixture
def kind_driver(monkeypatch):
    from cuda.bindings import driver

    from caiconform.cuda import device, memory

    fake = _KindDriver()
    for name in (
        "cuCtxSynchronize",
        "cuStreamSynchronize",
        "cuMemFree",
        "cuMemFreeAsync",
        "cuMemAllocAsync",
        "cuMemAllocFromPoolAsync",
        "cuMemPoolCreate",
        "cuMemAllocManaged",
        "cuMemHostAlloc",
        "cuMemHostGetDevicePointer",
        "cuMemFreeHost",
        "cuMemHostRegister",
        "cuMemHostUnregister",
        "cuMemGetAllocationGranularity",
        "cuMemAddressReserve",
        "cuMemCreate",
        "cuMemMap",
        "cuMemSetAccess",
        "cuMemUnmap",
        "cuMemRelease",
        "cuMemAddressFree",
        "cuDeviceGet",
        "cuDeviceGetCount",
        "cuDeviceCanAccessPeer",
    ):
        monkeypatch.setattr(driver, name, getattr(fake, name))
    monkeypatch.setattr(device, "ensure_context", lambda ordinal=0: ordinal)
    monkeypatch.setattr(memory, "_copy_stream", lambda fresh=False: 7)
    monkeypatch.setattr(memkinds, "_pools", {})
    return fake


def test_stream_ordered_kinds_are_ready_when_made_and_freed_after_the_context_waits(kind_driver):
    made = memkinds.allocate("async", 100)
    assert kind_driver.names() == ["cuMemAllocAsync", "cuStreamSynchronize"]
    made.free()
    made.free()  # once only
    # the pool has the memory back when free returns: a stream-ordered free, waited for
    assert kind_driver.names()[2:] == ["cuCtxSynchronize", "cuMemFreeAsync", "cuStreamSynchronize"]
    memkinds.allocate("async-pool", 100)
    memkinds.allocate("async-pool", 100)
    assert kind_driver.names().count("cuMemPoolCreate") == 1, "one pool per device"


def test_host_kinds_export_the_device_pointer_and_free_their_own_way(kind_driver):
    mapped = memkinds.allocate("host-mapped", 100)
    assert kind_driver.calls[0][2] == 3  # PORTABLE | DEVICEMAP
    mapped.free()
    assert kind_driver.names() == [
        "cuMemHostAlloc",
        "cuMemHostGetDevicePointer",
        "cuCtxSynchronize",
        "cuMemFreeHost",
    ]
    kind_driver.calls.clear()
    registered = memkinds.allocate("host-registered", 5000)
    _name, host, span, flags = kind_driver.calls[0]
    assert host % 4096 == 0 and span == 8192 and flags == 3
    assert registered.ptr == host and registered.size == 5000
    registered.free()
    assert kind_driver.names()[-2:] == ["cuCtxSynchronize", "cuMemHostUnregister"]


def test_a_vmm_array_ends_at_its_mapping_before_a_guard_of_reserved_addresses(kind_driver):
    granule = _KindDriver.GRANULE
    made = memkinds.allocate("vmm", 100, guard=5 << 20)
    reserve = next(c for c in kind_driver.calls if c[0] == "cuMemAddressReserve")
    base = kind_driver.next
    assert reserve[1] == granule + 3 * granule, "one granule mapped, the guard rounded up"
    mapping = next(c for c in kind_driver.calls if c[0] == "cuMemMap")
    assert (int(mapping[1]), mapping[2]) == (base, granule)
    access = next(c for c in kind_driver.calls if c[0] == "cuMemSetAccess")
    assert [d.location.id for d in access[3]] == [0, 1], "the owner and its peer may read it"
    assert made.ptr == base + granule - 256, "the array ends within 256 bytes of the guard"
    kind_driver.calls.clear()
    made.free()
    assert kind_driver.names() == [
        "cuCtxSynchronize",
        "cuMemUnmap",
        "cuMemRelease",
        "cuMemAddressFree",
    ]


def test_a_vmm_array_is_readable_by_the_devices_that_can_access_it_not_those_it_can_access(
    kind_driver,
):
    # device 1 may read device 0's memory, device 0 not device 1's (cuDeviceCanAccessPeer's
    # first argument is the device that reads)
    kind_driver.can_access_peer = lambda dev, peer_dev: int((dev, peer_dev) == (1, 0))
    memkinds.allocate("vmm", 100, device=0).free()
    access = next(c for c in kind_driver.calls if c[0] == "cuMemSetAccess")
    assert [d.location.id for d in access[3]] == [0, 1]
    kind_driver.calls.clear()
    memkinds.allocate("vmm", 100, device=1).free()
    access = next(c for c in kind_driver.calls if c[0] == "cuMemSetAccess")
    assert [d.location.id for d in access[3]] == [1], "device 0 cannot read device 1's memory"


def test_managed_memory_is_attached_globally(kind_driver):
    memkinds.allocate("managed", 10).free()
    assert kind_driver.calls[0][1:] == (10, 1)
    assert kind_driver.names()[-1] == "cuMemFree"
