"""streams: is pending work on the exported stream waited for, and does that stream cover it?

Stream semantics are tested live (docs/internals.md, Streams live). A producer leaves its final
write pending behind a spin on its stream (`caiconform.cuda.spin`, scaled to the run's calibrated
spin); until then the memory holds the *sentinel*, the complement of
every final byte, so an element read too early differs from the expected value in every byte
and is recognised as the sentinel.

Which side a cell judges depends on who is known to be right:
- reference -> consumer: the reference producer exports a `pending` or `multi-stream` stream
  correctly, so reading the sentinel means the consumer did not synchronize
  [CAI-SYNC-CONSUMER];
- producer -> reference: the producer leaves work on its own side stream (adapter scenarios
  `pending`, `multi-stream`, `legacy`, `per-thread`) and the reference consumer synchronizes on
  the exported stream on the host; the sentinel means that stream does not cover the work
  [CAI-SYNC-PRODUCER-SUFFICIENT, CAI-SYNC-PRODUCER-MULTI-STREAM for multi-stream];
- two third-party libraries: the pair is racy [CAI-SYNC-RACE-FREE], whichever side is at fault.

An export of a version before 3 has no stream entry and promises nothing about pending work
[CAI-V2-NO-SYNC]: a sentinel read from one is recorded as a `skip` saying so, not a finding.

`race_visible` is the control: it shows, on the machine at hand, that an unsynchronized read
does see the sentinel (else a pass here would prove nothing).

Numba's own stream rules (`NUMBA_SCENARIOS`, judged by `_numba_streams`) are scenarios drawn in
the cells of the reference producer and a consumer importing through a Numba entry point
(`as_cuda_array`, `from_cuda_array_interface`, a kernel launch), and of the numba producer and
the reference consumer: one floor example each, and a share of the cell's draws.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from caiconform.checks import _exchange, _results, _sources, _values
from caiconform.results.outcome import Result
from caiconform.spec.layout import Layout
from caiconform.spec.values import compare_values, make_values, values_source

__all__ = [
    "FAMILY",
    "ROLES",
    "NEEDS_GPU",
    "DELAYS_US",
    "examples",
    "race_rule",
    "sentinel_count",
    "execute",
    "race_visible",
    "spin_of",
    "repro",
]

FAMILY = "streams"
ROLES = "pair"
NEEDS_GPU = True
#: spin lengths of the reference producer (µs) as drawn; what runs is `spin_of` them, scaled to
#: the run's calibrated spin (`runner.calibrate`); adapters use `_staging.spin_us()`
DELAYS_US = (20_000, 50_000)
#: the control's spin: long enough that the reference GPU tests show the race even in a fresh
#: worker, where a 20 ms spin can be over before the unsynchronized read
RACE_CONTROL_US = 150_000


def spin_of(nominal_us: int) -> int:
    """The spin run for a drawn `delay_us`: scaled by the calibrated spin over the
    uncalibrated one (`_staging.spin_us()` / SPIN_US); unchanged when not calibrated."""
    from caiconform.adapters._staging import SPIN_US, spin_us

    return nominal_us * spin_us() // SPIN_US


_REFERENCE_SCENARIOS = ("pending", "multi-stream")
_PRODUCER_SCENARIOS = (
    "pending",
    "multi-stream",
    "legacy",
    "per-thread",
    "nonblocking",
    "external",
    "library-default",
)
#: the dtype classes the floor crosses with every scenario (C layout; see checks._floor)
_FLOOR_TYPESTRS = ("|b1", "<i4", "<f4", "<c8", "bfloat16")
#: Numba's own stream rules: each scenario and the rule it judges (`_numba_streams`)
NUMBA_SCENARIOS = {
    "numba-sync": "CAI-NUMBA-CONSUMER-SYNC",
    "numba-stream-none": "CAI-SYNC-NONE-NO-SYNC",
    "numba-sync-off": "CAI-NUMBA-SYNC-OVERRIDE",
    "numba-export": "CAI-NUMBA-PRODUCER-STREAM",
}
_NUMBA_IMPORT_SCENARIOS = ("numba-sync", "numba-stream-none", "numba-sync-off")


def numba_scenarios(producer: str | None, consumer: str | None) -> tuple[str, ...]:
    """The NUMBA_SCENARIOS this cell draws: the import ones where the reference producer meets
    a consumer importing through a Numba entry point, the export one where numba produces for
    the reference consumer, none elsewhere."""
    from caiconform.checks._numba_streams import ENTRIES

    if producer == "reference" and consumer in ENTRIES:
        return _NUMBA_IMPORT_SCENARIOS
    from caiconform.adapters.numba_impls import role

    if role(producer) == "numba" and consumer == "reference":
        return ("numba-export",)
    return ()


def _scenarios(producer: str | None, consumer: str | None) -> tuple[str, ...]:
    base = _REFERENCE_SCENARIOS if producer == "reference" else _PRODUCER_SCENARIOS
    return base + numba_scenarios(producer, consumer)


def examples(producer: str | None, consumer: str | None) -> st.SearchStrategy[dict]:
    """scenario, spin length (the reference producer's; 0 for others), typestr, nonzero C
    shape (at least 2 elements, so multi-stream has two halves), seed; shrinks toward
    `pending`, 20 ms, '|b1', shape (2,)."""
    from caiconform import strategies as cst

    return st.fixed_dictionaries(
        {
            "stream_scenario": st.sampled_from(_scenarios(producer, consumer)),
            # only the reference producer spins for delay_us; drawing it for a library whose
            # adapter sets its own spin would run the same exchange twice
            "delay_us": st.sampled_from(DELAYS_US) if producer == "reference" else st.just(0),
            "typestr": cst.typestrs(),
            "shape": cst.shapes(min_dims=1, allow_zero=False).map(lambda s: [max(s[0], 2), *s[1:]]),
            "seed": _values.seeds(),
        }
    )


def floor(producer: str | None, consumer: str | None) -> list:
    """Every scenario this producer is judged on x five dtype classes, shape (64,); each of
    the cell's Numba scenarios once ('<f4': they judge streams, not dtypes)."""
    from caiconform.checks import _floor

    scenarios = _REFERENCE_SCENARIOS if producer == "reference" else _PRODUCER_SCENARIOS
    delay = DELAYS_US[0] if producer == "reference" else 0
    numba = [
        _floor.FloorExample(
            _floor.coverage_of("<f4", "C", scenario),
            {
                "stream_scenario": scenario,
                "delay_us": delay,
                "typestr": "<f4",
                "shape": [64],
                "seed": 0,
            },
        )
        for scenario in numba_scenarios(producer, consumer)
    ]
    return numba + [
        _floor.FloorExample(
            _floor.coverage_of(typestr, "C", scenario),
            {
                "stream_scenario": scenario,
                "delay_us": delay,
                "typestr": typestr,
                "shape": [64],
                "seed": 0,
            },
        )
        for scenario in scenarios
        for typestr in _FLOOR_TYPESTRS
    ]


def race_rule(producer: str | None, consumer: str | None, scenario: str) -> str:
    """The rule a sentinel read breaks, given which side is the trusted reference."""
    if producer == "reference":
        return "CAI-SYNC-CONSUMER"
    if consumer == "reference":
        if scenario == "multi-stream":
            return "CAI-SYNC-PRODUCER-MULTI-STREAM"
        return "CAI-SYNC-PRODUCER-SUFFICIENT"
    return "CAI-SYNC-RACE-FREE"


def sentinel_count(read: np.ndarray, values: np.ndarray) -> int:
    """How many elements of `read` were read before the producer's pending write ended: not
    final, each byte either the sentinel's (the complement of `values`' bytes) or the final
    one. An element read while the write was under way holds both: a consumer that does not
    wait can read every element of a `<c32` array half written (its real part final, its
    imaginary part still the sentinel), which counting whole sentinels only would take for a
    misread [CAI-CONSUMER-READS-DESCRIBED] instead of the race it is."""
    from caiconform.reference.producer import sentinel_of

    if read.shape != values.shape or read.dtype != values.dtype or values.size == 0:
        return 0
    itemsize = values.dtype.itemsize
    a = np.ascontiguousarray(read).view(np.uint8).reshape(-1, itemsize)
    final = np.ascontiguousarray(values).view(np.uint8).reshape(-1, itemsize)
    b = np.ascontiguousarray(sentinel_of(values)).view(np.uint8).reshape(-1, itemsize)
    early = ((a == b) | (a == final)).all(axis=1) & ~(a == final).all(axis=1)
    return int(early.sum())


def _produce(producer: str, params: dict, values: np.ndarray) -> Any:
    shape = tuple(params["shape"])
    if producer == "reference":
        from caiconform.reference.producer import ReferenceArray

        return ReferenceArray(
            values,
            Layout(shape),
            params["typestr"],
            stream_scenario=params["stream_scenario"],
            delay_us=spin_of(params["delay_us"]),
        )
    return _exchange.produce(
        producer, values, Layout(shape), params["typestr"], params["stream_scenario"]
    )


def refusal_rule(exported: Any, exc: BaseException) -> str:
    """The rule a consumer's refusal of a pending export is recorded under.

    Only a refusal about the stream is a synchronization gap (CAI-SYNC-CONSUMER); the reference
    consumer names the rule it refused under; a legal but unportable export (an export older
    than v3, a dtype the consumer lacks) gets the validator's PORTABILITY rule; anything else
    is a consumer that cannot read what the dict describes.
    """
    rules = getattr(exc, "rules", None)
    if rules:
        return rules[0]
    if "stream" in str(exc).lower():
        return "CAI-SYNC-CONSUMER"
    return _results.refusal_portability_rule(exported, exc) or "CAI-CONSUMER-READS-DESCRIBED"


def _free_garbage() -> None:
    """Free what earlier examples left before the pending work starts: freeing device memory
    (cuMemFree) waits for the whole device, so a free landing inside the pending window would
    finish the producer's work early and hide a missing synchronization (an `unsynced` export
    reads no sentinel while the previous array is being freed)."""
    import gc

    gc.collect()


def _finish() -> None:
    """Wait for every piece of pending work, so nothing is freed under a running kernel."""
    from caiconform.cuda import current_device, synchronize

    current_device()
    synchronize()


_warmed: set[tuple[str, str]] = set()


def _warm_up(consumer: str, typestr: str) -> None:
    """Read one finished array of `typestr` through `consumer`, once per process and pair.

    A first read that initialises the library or compiles its kernels can outlast the
    producer's spin, and a consumer that does not synchronize would then see the final values
    by luck: a false pass (a fresh worker's reference consumer ignoring the stream reads no
    sentinel at all until its gather kernel has been compiled once).
    """
    if (consumer, typestr) in _warmed:
        return
    _warmed.add((consumer, typestr))
    from caiconform.reference.producer import ReferenceArray

    values = make_values(typestr, (4,), 0)
    _exchange.consume_with(consumer, ReferenceArray(values, Layout((4,)), typestr))
    _finish()


def _numba(params: dict, producer: str | None, consumer: str | None) -> Result:
    """One Numba scenario (`_numba_streams`): '<f4' arrays of as many elements as the drawn
    shape, the drawn spin (at least DELAYS_US[0]) calibrated."""
    from caiconform.checks import _numba_streams as ns

    scenario = params["stream_scenario"]
    n = max(int(np.prod(params["shape"])), 2)
    _free_garbage()
    try:
        if scenario == "numba-export":
            return ns.check_export(ns.numba_exports(n, _impl_name(producer)))
        if ns.ENTRIES[consumer] == "kernel launch":
            from caiconform.adapters.numba_adapter import kernels_work

            works, why = kernels_work(_impl_name(consumer))
            if not works:
                return _results.skipped(why)
        judge = {
            "numba-sync": ns.check_sync,
            "numba-stream-none": ns.check_none,
            "numba-sync-off": ns.check_override,
        }[scenario]
        spin = spin_of(max(params["delay_us"], DELAYS_US[0]))
        return judge(_numba_importer(consumer), ns.LiveWorld(), n, spin)
    finally:
        _finish()


def _impl_name(adapter: str | None) -> str:
    """The Numba implementation a Numba adapter drives (`numba_impls`)."""
    from caiconform.adapters.numba_impls import impl_of

    return impl_of(adapter).name


_importers: dict[str, Any] = {}


def _numba_importer(consumer: str) -> Any:
    """One importer per consumer and process, so its warm-up runs once."""
    from caiconform.checks._numba_streams import NumbaImporter

    return _importers.setdefault(consumer, NumbaImporter(consumer))


def execute(params: dict, producer: str | None, consumer: str | None) -> Result:
    from caiconform import validate
    from caiconform.checks.schema import judge

    if params["stream_scenario"] in NUMBA_SCENARIOS:
        return _numba(params, producer, consumer)
    typestr, shape = params["typestr"], tuple(params["shape"])
    scenario = params["stream_scenario"]
    values = make_values(typestr, shape, params["seed"])
    _warm_up(consumer, typestr)
    _free_garbage()
    obj = _produce(producer, params, values)
    try:
        ended, _warnings = _results.named_export(obj, typestr, f"{producer} {scenario} {typestr}")
        if ended is not None:
            return ended
        exported = obj.__cuda_array_interface__
        stream, version = exported.get("stream"), exported.get("version")
        context = (
            f"{producer}->{consumer} {scenario} (v{version}, exported stream {stream}) "
            f"{typestr} {shape}"
        )
        report = validate(obj)
        if not report.ok:
            return judge(report.errors, f"{context}: invalid export")
        got, exc = _exchange.consume_with(consumer, obj)
    finally:
        _finish()
    if exc is not None:
        return _results.rejected(
            refusal_rule(exported, exc), exc, "the values after the pending work", context
        )
    got = np.asarray(got)
    mismatch = compare_values(got, values)
    if mismatch is None:
        return _results.passed(f"{context}: read after the pending work")
    early = sentinel_count(got, values)
    if isinstance(version, int) and version < 3 and scenario != "none":
        read = f"{early} of {values.size} elements were the sentinel" if early else mismatch
        return _results.failed(
            "CAI-PORT-V2-PENDING",
            f"unfinished data read from a v{version} export (no stream to wait on): {read}",
            "an export made after the producer's work, or a v3 export naming its stream",
            context,
        )
    if early and producer != "reference" and consumer != "reference":
        return _attribute_race(params, producer, consumer, values, early, context)
    if early == 0:
        rule = (
            "CAI-PRODUCER-DESCRIBES-DATA"
            if consumer == "reference"
            else "CAI-CONSUMER-READS-DESCRIBED"
        )
        return _results.failed(rule, mismatch, "the values written", context)
    return _results.failed(
        race_rule(producer, consumer, scenario),
        f"{early} of {values.size} elements read before the producer's pending write (sentinel)",
        "every element after the write",
        context,
    )


def _attribute_race(
    params: dict, producer: str, consumer: str, values: np.ndarray, early: int, context: str
) -> Result:
    """Two third-party libraries race: name the one at fault. The same example is produced
    again and read by the reference consumer, which synchronizes on the exported stream: if it
    reads every element final, the export covers the work and `consumer` did not wait
    [CAI-SYNC-CONSUMER]; if it reads the sentinel too, the exported stream does not cover the
    producer's work [CAI-SYNC-PRODUCER-SUFFICIENT]; if it cannot tell, the race stays
    unattributed [CAI-SYNC-RACE-FREE]."""
    seen = f"{early} of {values.size} elements read before the producer's pending write"
    _free_garbage()
    try:
        again = _produce(producer, params, values)
        got, exc = _exchange.consume_with("reference", again)
    finally:
        _finish()
    if exc is None and compare_values(np.asarray(got), values) is None:
        return _results.failed(
            "CAI-SYNC-CONSUMER",
            f"{seen} (sentinel), while the reference consumer, waiting on the exported "
            f"stream, read every element final: {consumer} did not synchronize",
            "every element after the write",
            context,
        )
    if exc is None and sentinel_count(np.asarray(got), values):
        return _results.failed(
            race_rule(producer, "reference", params["stream_scenario"]),
            f"{seen} (sentinel); the reference consumer, waiting on the exported stream, read "
            f"the sentinel too: the stream {producer} exports does not cover its work",
            "an exported stream covering the pending work",
            context,
        )
    why = _results.describe_exception(exc) if exc is not None else "it read other wrong values"
    return _results.failed(
        "CAI-SYNC-RACE-FREE",
        f"{seen} (sentinel); not attributed: the reference consumer's control read failed ({why})",
        "every element after the write",
        context,
    )


def race_visible(delay_us: int | None = None) -> dict[str, int]:
    """The control: sentinel elements seen by (a) the reference consumer ignoring a pending
    export's stream and (b) it synchronizing on an `unsynced` export (the work on a stream that
    is not exported). Both must be > 0 for this family's passes to mean anything. The spin is
    `delay_us`, by default `spin_of(RACE_CONTROL_US)`."""
    from caiconform.reference.consumer import consume
    from caiconform.reference.producer import ReferenceArray

    if delay_us is None:
        delay_us = spin_of(RACE_CONTROL_US)

    values = make_values("<f4", (4096,), 0)
    _warm_up("reference", "<f4")

    def sentinels_read(scenario: str, sync: str) -> int:
        _free_garbage()
        obj = ReferenceArray(
            values, Layout(values.shape), "<f4", stream_scenario=scenario, delay_us=delay_us
        )
        read = consume(obj, sync=sync).values
        _finish()
        return sentinel_count(read, values)

    return {
        "ignore_stream": sentinels_read("pending", "ignore"),
        "unsynced_export": sentinels_read("unsynced", "host"),
        "elements": int(values.size),
    }


def _numba_repro(params: dict, producer: str | None, consumer: str | None) -> str:
    scenario = params["stream_scenario"]
    n = max(int(np.prod(params["shape"])), 2)
    if scenario == "numba-export":
        call = f"ns.check_export(ns.numba_exports({n}, {_impl_name(producer)!r}))"
    else:
        judge = {
            "numba-sync": "check_sync",
            "numba-stream-none": "check_none",
            "numba-sync-off": "check_override",
        }[scenario]
        spin = max(params["delay_us"], DELAYS_US[0])
        call = f"ns.{judge}(ns.NumbaImporter({consumer!r}), ns.LiveWorld(), {n}, {spin})"
    return (
        f'"""streams: {scenario} ({producer} -> {consumer}) '
        f'[{NUMBA_SCENARIOS[scenario]}]."""\n'
        "from caiconform.checks import _numba_streams as ns\n\n"
        f"print({call})\n"
    )


def repro(params: dict, producer: str | None, consumer: str | None) -> str:
    if params["stream_scenario"] in NUMBA_SCENARIOS:
        return _numba_repro(params, producer, consumer)
    shape = tuple(params["shape"])
    scenario = params["stream_scenario"]
    if producer == "reference":
        build = (
            "from caiconform.reference.producer import ReferenceArray\n"
            "from caiconform.spec.layout import Layout\n\n"
            f"obj = ReferenceArray(values, Layout({shape!r}), {params['typestr']!r}, "
            f"stream_scenario={scenario!r}, delay_us={params['delay_us']})\n"
        )
    else:
        build = _sources.producer_source(producer, Layout(shape), params["typestr"], scenario)
    return _sources.repro_script(
        f"streams: {producer} leaves its final write pending ({scenario}) and {consumer} reads "
        f"at once; every element must have its final value "
        f"[{race_rule(producer, consumer, scenario)}].",
        values_source(params["typestr"], shape, params["seed"]),
        build,
        "print(obj.__cuda_array_interface__)\n",
        _sources.consumer_source(consumer),
        _sources.COMPARE_SOURCE,
    )
