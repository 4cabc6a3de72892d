"""CPU tests of the reference DLPack producer and consumer and their families, on kDLCPU
capsules: both capsule kinds through numpy.from_dlpack with the deleter counted, the capsule
destructor, the keyword reading of `__dlpack__` (`dlpack_producer.request`), the reference
consumer (`dlpack_import`) on good and bad capsules, and the verdicts of dlpack_adversarial and
dlpack_lifetime (docs/spec/dlpack/ for the rules)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from caiconform import dlpack
from caiconform.adapters._staging import dlpack_only
from caiconform.checks import dlpack_adversarial as adv
from caiconform.checks import dlpack_lifetime as life
from caiconform.dlpack import header
from caiconform.dlpack.capsule import capsule_name
from caiconform.dlpack.validate import check_capsule
from caiconform.reference import dlpack_export as dx
from caiconform.reference.consumer import ConsumerRefused
from caiconform.reference.dlpack_import import import_dlpack
from caiconform.reference.dlpack_producer import request
from caiconform.results.outcome import ACCEPTED_INVALID, FAIL, PASS, REJECTED
from caiconform.results.record import EXPECT_REJECTION


def _collect() -> None:
    gc.collect()
    gc.collect()


class HostArray:
    """A kDLCPU producer over a numpy array, exporting with `dlpack_export`; `exports` keeps
    each capsule's record."""

    def __init__(self, array: np.ndarray, versioned: bool = True) -> None:
        self.array, self.versioned = array, versioned
        self.exports: list[dx.Export] = []
        self.kwargs: list[dict] = []

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.kwargs.append({"stream": stream, "max_version": max_version})
        if stream is not None:
            raise ValueError("kDLCPU takes stream=None only")
        versioned = self.versioned and max_version is not None and max_version[0] >= 1
        capsule, export = dx.host_capsule(self.array, versioned=versioned)
        self.exports.append(export)
        return capsule

    def __dlpack_device__(self):
        return (header.kDLCPU, 0)


ARRAYS = [
    np.arange(12, dtype=np.float32).reshape(3, 4),
    np.arange(24, dtype=np.int16).reshape(4, 6)[::-1, 1::2],
    np.array([True, False, True]),
    np.arange(6, dtype=np.complex64),
    np.float64(2.5) * np.ones(()),
]


# --- the capsules: both kinds, the deleter, the destructor --------------------------------------


@pytest.mark.parametrize("versioned", [True, False])
@pytest.mark.parametrize("index", range(len(ARRAYS)))
def test_both_kinds_round_trip_through_numpy_with_the_deleter_called_once(versioned, index):
    array = ARRAYS[index]
    producer = HostArray(array, versioned)
    got = np.from_dlpack(producer)
    np.testing.assert_array_equal(got, array)
    (export,) = producer.exports
    assert export.versioned is versioned
    assert export.deleter_calls == 0  # numpy's array aliases the memory: not released yet
    del got
    _collect()
    assert export.deleter_calls == 1 and export.by_destructor == 0
    assert dx.stray_deleter_calls() == 0


@pytest.mark.parametrize("versioned", [True, False])
def test_an_unconsumed_capsule_s_destructor_calls_the_deleter_once(versioned):
    owner = np.arange(4, dtype=np.float32)
    capsule, export = dx.host_capsule(owner, versioned=versioned)
    assert capsule_name(capsule) == (header.VERSIONED if versioned else header.LEGACY)
    del capsule
    _collect()
    assert export.deleter_calls == 1 and export.by_destructor == 1 and export.owner is None


def test_a_consumed_capsule_s_destructor_leaves_the_deleter_to_the_consumer():
    capsule, export = dx.host_capsule(np.arange(4, dtype=np.float32))
    address = dx.consume_name(capsule)
    assert capsule_name(capsule) == header.USED_VERSIONED
    del capsule
    _collect()
    assert export.deleter_calls == 0 and export.owner is not None
    assert dx.call_deleter(address, versioned=True)
    assert export.deleter_calls == 1 and export.owner is None


def test_the_owner_lives_until_the_deleter_runs():
    import weakref

    class Owner:
        pass

    owner = Owner()
    alive = weakref.ref(owner)
    buf = np.zeros(2, dtype=np.int32)
    capsule, export = dx.make_capsule(buf.ctypes.data, (2,), (0, 32, 1), (1, 0), owner=owner)
    del owner
    _collect()
    assert alive() is not None
    del capsule
    _collect()
    assert alive() is None and export.deleter_calls == 1


@pytest.mark.parametrize("versioned", [True, False])
@pytest.mark.parametrize("index", range(len(ARRAYS)))
def test_check_capsule_passes_both_kinds(versioned, index):
    capsule, _ = dx.host_capsule(ARRAYS[index], versioned=versioned)
    assert check_capsule(capsule, asked_versioned=versioned) == []
    parsed = dlpack.read_capsule(capsule)
    assert parsed.shape == ARRAYS[index].shape
    assert parsed.byte_strides == ARRAYS[index].strides or ARRAYS[index].size <= 1


def test_flags_say_read_only_and_copied():
    array = np.arange(3, dtype=np.uint8)
    array.flags.writeable = False
    capsule, export = dx.host_capsule(array, copied=True)
    parsed = dlpack.read_capsule(capsule)
    assert parsed.readonly and parsed.copied
    assert export.flags == header.READ_ONLY | header.IS_COPIED


def test_dl_dtype_refuses_what_dlpack_cannot_say():
    assert dx.dl_dtype(np.dtype("<f4")) == (2, 32, 1)
    assert dx.dl_dtype(np.dtype("|b1")) == (6, 8, 1)
    assert dx.dl_dtype(np.dtype("V2"), "bfloat16") == (4, 16, 1)
    foreign = ">i4" if np.little_endian else "<i4"
    for bad in (foreign, "|V4", "<M8[ns]", "|S3", [("a", "<f4")]):
        with pytest.raises(BufferError):
            dx.dl_dtype(np.dtype(bad))
    with pytest.raises(BufferError, match="multiple"):
        dx.element_strides((6,), 4)
    assert dx.element_strides((-8, 4), 4) == (-2, 1)


# --- __dlpack__'s keywords (array API standard) -------------------------------------------------

CUDA = (header.kDLCUDA, 0)


@pytest.mark.parametrize(
    ("stream", "ordered"),
    [(None, 1), (1, 1), (2, 2), (0x7F00_0000_1000, 0x7F00_0000_1000), (-1, None)],
)
def test_each_stream_value_names_the_stream_to_order_before(stream, ordered):
    req = request(CUDA, stream=stream, max_version=(1, 0))
    assert req.stream == ordered and not req.host_wait and req.versioned


@pytest.mark.parametrize("stream", [0, -2, "1", 1.0, True])
def test_stream_zero_and_other_bad_values_are_refused(stream):
    with pytest.raises((ValueError, TypeError)):
        request(CUDA, stream=stream)


def test_max_version_chooses_the_capsule_kind():
    assert not request(CUDA).versioned
    assert not request(CUDA, max_version=(0, 8)).versioned
    assert request(CUDA, max_version=(1, 0)).versioned
    assert request(CUDA, max_version=(2, 3)).versioned
    with pytest.raises(ValueError):
        request(CUDA, max_version=1)


def test_dl_device_and_copy():
    assert not request(CUDA, dl_device=CUDA).to_host
    host = request(CUDA, dl_device=(header.kDLCPU, 0))
    assert host.to_host and host.copy and host.host_wait and host.stream is None
    with pytest.raises(BufferError):
        request(CUDA, dl_device=(header.kDLCPU, 0), copy=False)
    with pytest.raises(ValueError):  # kDLCPU takes stream None only
        request(CUDA, dl_device=(header.kDLCPU, 0), stream=5)
    aliased = request((header.kDLCUDAHost, 0), dl_device=(header.kDLCPU, 0), host_memory=True)
    assert aliased.to_host and not aliased.copy
    for other in ((header.kDLCUDA, 1), (10, 0), "cpu"):
        with pytest.raises(BufferError):
            request(CUDA, dl_device=other)
    assert request(CUDA, copy=True).copy and not request(CUDA, copy=False).copy
    assert not request(CUDA).copy
    with pytest.raises(ValueError):  # pinned host memory has no stream
        request((header.kDLCUDAHost, 0), stream=1)


# --- the reference consumer ---------------------------------------------------------------------


@pytest.mark.parametrize("versioned", [True, False])
@pytest.mark.parametrize("index", range(len(ARRAYS)))
def test_the_reference_consumer_reads_renames_and_releases(versioned, index):
    array = ARRAYS[index]
    producer = HostArray(array, versioned)
    result = import_dlpack(dlpack_only(producer))
    np.testing.assert_array_equal(result.values, array)
    assert result.calls[0] == {"stream": None, "max_version": (1, 3)}
    assert [e.deleter_calls for e in producer.exports] == [1]
    assert producer.exports[0].by_destructor == 0  # the consumer called it, not the capsule
    assert result.capsule.name == ("dltensor_versioned" if versioned else "dltensor")


def test_the_reference_consumer_falls_back_to_the_legacy_call():
    class Old:
        def __init__(self):
            self.array = np.arange(3, dtype=np.int64)

        def __dlpack__(self, stream=None):
            return dx.host_capsule(self.array, versioned=False)[0]

        def __dlpack_device__(self):
            return (1, 0)

    result = import_dlpack(Old())
    assert result.calls == [{"stream": None, "max_version": (1, 3)}, {}]
    np.testing.assert_array_equal(result.values, np.arange(3))


def _bad(kind: str):
    owner = adv.VALUES.copy()
    return adv.BadProducer(kind, owner.ctypes.data, (header.kDLCPU, 0), owner)


@pytest.mark.parametrize("kind", sorted(adv.KINDS))
def test_every_bad_capsule_gives_its_one_finding_and_never_crashes_the_caller(kind):
    capsule = _bad(kind).__dlpack__()
    rules = [f.rule for f in check_capsule(capsule)]
    if kind in adv.LEGAL:  # a NULL deleter is allowed (MAY): a finding at that level only
        assert rules == ["DLPACK-DELETER-NULL"]
        assert all(f.level.name == "MAY" for f in check_capsule(_bad(kind).__dlpack__()))
    else:
        assert rules == [adv.KINDS[kind]]


@pytest.mark.parametrize("kind", sorted(adv.KINDS))
def test_the_reference_consumer_refuses_each_bad_capsule_and_the_family_agrees(kind):
    producer = _bad(kind)
    got, exc = None, None
    try:
        got = import_dlpack(dlpack_only(producer)).values
    except ConsumerRefused as refused:
        exc = refused
        assert adv.KINDS[kind] in refused.rules
    _collect()
    result = adv.judge(kind, got, exc, producer.exports, f"{kind} -> reference")
    if kind in adv.LEGAL:
        assert result.outcome == PASS, result.message
    else:
        assert (result.outcome, result.rule, result.expected) == (
            REJECTED,
            adv.KINDS[kind],
            EXPECT_REJECTION,
        ), result.message
    calls = [e.deleter_calls for e in producer.exports]
    if kind in ("used-capsule", "null-deleter"):
        assert not any(calls)
    elif kind != "not-a-capsule":
        assert calls == [1]


def test_the_adversarial_verdicts():
    ctx = "x"
    taken = adv.judge("float6-bits", np.zeros(4), None, [], ctx)
    assert (taken.outcome, taken.rule) == (ACCEPTED_INVALID, "DLPACK-DTYPE-SUBBYTE-BITS")
    assert adv.taints({"kind": "float6-bits"}, taken)

    class Rec:
        def __init__(self, calls, by_destructor=0):
            self.deleter_calls, self.by_destructor = calls, by_destructor

    refused = ValueError("no")
    leak = adv.judge("version-major-2", None, refused, [Rec(0)], ctx)
    assert (leak.outcome, leak.rule) == (FAIL, "DLPACK-VERSION-MAJOR-MISMATCH")
    twice = adv.judge("shape-negative", None, refused, [Rec(2)], ctx)
    assert (twice.outcome, twice.rule) == (FAIL, "DLPACK-DELETER-ONCE")
    foreign = adv.judge("used-capsule", None, refused, [Rec(1)], ctx)
    assert (foreign.outcome, foreign.rule) == (FAIL, "DLPACK-DELETER-ONCE")
    ok = adv.judge("version-major-2", None, refused, [Rec(1, 1)], ctx)
    assert ok.outcome == REJECTED and not adv.taints({"kind": "x"}, ok)
    gap = adv.judge("null-deleter", None, refused, [], ctx)
    assert (gap.outcome, gap.rule) == (REJECTED, "DLPACK-DELETER-NULL")
    assert gap.expected != EXPECT_REJECTION
    wrong = adv.judge("null-deleter", np.ones(4, np.float32), None, [], ctx)
    assert (wrong.outcome, wrong.rule) == (FAIL, "DLPACK-DELETER-NULL")


def test_the_adversarial_floor_and_repro_name_every_kind():
    assert [e.params["kind"] for e in adv.floor(None, "torch")] == list(adv.KINDS)
    script = adv.repro({"kind": "float6-bits"}, None, "torch")
    compile(script, "repro", "exec")
    assert "float6-bits" in script


# --- dlpack_lifetime ----------------------------------------------------------------------------


def test_lifetime_verdicts_while_held():
    ctx = "x"
    exports = [object()]
    unrenamed = life.judge_tracked(exports, [b"dltensor_versioned"], [0], True, ctx)
    assert (unrenamed.outcome, unrenamed.rule) == (FAIL, "DLPACK-CONSUMER-RENAME")
    early = life.judge_tracked(exports, [b"used_dltensor_versioned"], [1], True, ctx)
    assert (early.outcome, early.rule) == (FAIL, "DLPACK-CONSUMER-CALLS-DELETER")
    twice = life.judge_tracked(exports, [b"used_dltensor"], [2], False, ctx)
    assert (twice.outcome, twice.rule) == (FAIL, "DLPACK-DELETER-ONCE")
    assert life.judge_tracked(exports, [b"used_dltensor"], [1], False, ctx) is None  # a copy
    assert life.judge_tracked(exports, [b"used_dltensor"], [0], True, ctx) is None
    # three capsules asked for (numba: two to type the argument, one to launch), two released
    three = [object()] * 3
    names = [b"used_dltensor_versioned"] * 3
    assert life.judge_tracked(three, names, [1, 1, 0], True, ctx) is None
    assert life.judge_tracked(three, names, [1, 1, 1], True, ctx).rule == (
        "DLPACK-CONSUMER-CALLS-DELETER"
    )


def test_numpy_holds_a_host_import_the_way_the_family_expects():
    array = np.arange(6, dtype=np.float64)
    producer = HostArray(array)
    keeping = life.Keeping(producer)
    view, is_view = life.hold("numpy", dlpack_only(keeping))
    assert is_view
    names = [capsule_name(c) for c in keeping.capsules]
    keeping.capsules.clear()
    exports = producer.exports
    assert life.judge_tracked(exports, names, [0] * len(exports), True, "numpy") is None
    del producer, keeping
    _collect()
    np.testing.assert_array_equal(life.held_values("numpy", view), array)
    (export,) = exports
    assert export.deleter_calls == 0
    del view
    _collect()
    assert export.deleter_calls == 1


def test_the_untracked_path_with_a_host_producer(monkeypatch):
    from caiconform.checks import _exchange

    array = np.arange(5, dtype=np.int32)
    monkeypatch.setattr(_exchange, "produce", lambda *a: HostArray(array.copy()))
    result = life._untracked("host", "numpy", array, "<i4", (5,))
    assert result.outcome == PASS, result.message


def test_lifetime_examples_are_types_dlpack_carries():
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=30, database=None, suppress_health_check=list(HealthCheck))
    @given(life.examples("reference", "torch"))
    def check(params):
        assert life._expressible(params["typestr"])

    check()
    assert life.floor("reference", "torch")
    compile(
        life.repro({"typestr": "<f4", "shape": [2], "seed": 0}, "reference", "torch"), "r", "exec"
    )


# --- ReferenceArray.__dlpack__ on a host-memory stand-in ---------------------------------------


class PinnedStandIn:
    """What `dlpack_producer.export` reads of a ReferenceArray, over host memory of the kind
    "host-mapped" (kDLCUDAHost, no streams, nothing pending): enough to run the export on the
    CPU."""

    def __init__(self, values: np.ndarray, readonly: bool = False) -> None:
        from caiconform.spec.layout import Layout

        self.values = np.ascontiguousarray(values)
        self.layout = Layout(self.values.shape)
        self.strides = self.values.strides
        self.itemsize = self.values.itemsize
        self.ptr = self.values.ctypes.data
        self.memory, self.device, self.readonly, self.mask = "host-mapped", 0, readonly, None
        self.dtype_name = None
        self.dlpack_exports: list = []
        self._work: list = []

    def __dlpack__(self, **kwargs):
        from caiconform.reference.dlpack_producer import export

        return export(self, **kwargs)

    def __dlpack_device__(self):
        from caiconform.reference.dlpack_producer import device_of

        return device_of(self.memory, self.device)


def test_the_producer_exports_host_memory_to_kdlcpu_without_a_copy():
    values = np.arange(6, dtype=np.int32).reshape(2, 3)
    stand_in = PinnedStandIn(values)
    assert stand_in.__dlpack_device__() == (header.kDLCUDAHost, 0)
    with pytest.raises(ValueError, match="DLPACK-STREAM-CPU-NONE"):
        stand_in.__dlpack__(stream=1)
    got = np.from_dlpack(stand_in, device="cpu")  # asks dl_device=(kDLCPU, 0)
    np.testing.assert_array_equal(got, values)
    (export,) = stand_in.dlpack_exports
    assert export.versioned and export.flags == 0  # the memory itself: not copied
    del got
    _collect()
    assert export.deleter_calls == 1


def test_the_producer_flags_read_only_and_refuses_what_dlpack_cannot_say():
    stand_in = PinnedStandIn(np.arange(3, dtype=np.float64), readonly=True)
    capsule = stand_in.__dlpack__(max_version=(1, 0))
    assert dlpack.read_capsule(capsule).readonly
    with pytest.raises(BufferError, match="legacy"):
        stand_in.__dlpack__()
    foreign = ">f8" if np.little_endian else "<f8"
    with pytest.raises(BufferError, match="byte order"):
        PinnedStandIn(np.arange(3, dtype=foreign)).__dlpack__(max_version=(1, 0))


@pytest.mark.parametrize("max_version", [(1, 0), (1, 1), (1, 2), (1, 3), (2, 0), None])
def test_the_producer_answers_with_a_1_3_capsule_whose_strides_are_never_null(max_version):
    """A C-contiguous array too has its strides written: a DLPack 1.2+ capsule of ndim != 0 may
    not have NULL ones [DLPACK-STRIDES-NONNULL]; every ask of major 1 or more gets DLPack 1.3."""
    values = np.arange(6, dtype=np.int32).reshape(2, 3)
    stand_in = PinnedStandIn(values)
    capsule = stand_in.__dlpack__(max_version=max_version)
    parsed = dlpack.read_capsule(capsule)
    assert parsed.version == (None if max_version is None else (1, 3))
    assert parsed.strides == (3, 1)
    assert check_capsule(capsule) == []


class VersionedHost:
    """A kDLCPU producer over a numpy array answering with a capsule of the DLPack `version`
    and dtype the test chooses, its strides written or NULL (`strides=False`)."""

    def __init__(self, array, version, *, strides=True, dtype=None, flags=0):
        self.array, self.version, self.strides = array, version, strides
        self.dtype, self.flags = dtype, flags
        self.exports: list[dx.Export] = []

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        array = self.array
        steps = tuple(s // array.itemsize for s in array.strides) if self.strides else None
        capsule, export = dx.make_capsule(
            array.ctypes.data,
            array.shape,
            self.dtype or dx.dl_dtype(array.dtype),
            (header.kDLCPU, 0),
            strides=steps,
            version=self.version,
            flags=self.flags,
            owner=array,
        )
        self.exports.append(export)
        return capsule

    def __dlpack_device__(self):
        return (header.kDLCPU, 0)


@pytest.mark.parametrize(
    ("version", "strides"),
    [((1, 0), True), ((1, 0), False), ((1, 1), False), ((1, 2), True), ((1, 3), True)],
)
def test_the_reference_consumer_reads_dlpack_1_0_to_1_3(version, strides):
    """Asked with max_version (1, 3), capsules of every minor version are read alike; NULL
    strides before 1.2 as compact row-major [DLPACK-STRIDES-NULL-LEGACY]."""
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    producer = VersionedHost(array, version, strides=strides)
    result = import_dlpack(dlpack_only(producer))
    np.testing.assert_array_equal(result.values, array)
    assert result.calls[0]["max_version"] == (1, 3) and result.capsule.version == version
    assert result.warnings == [] and [e.deleter_calls for e in producer.exports] == [1]


@pytest.mark.parametrize("version", [(1, 2), (1, 3)])
def test_the_reference_consumer_refuses_null_strides_from_dlpack_1_2_on(version):
    producer = VersionedHost(np.arange(4, dtype=np.float32), version, strides=False)
    with pytest.raises(ConsumerRefused) as refused:
        import_dlpack(dlpack_only(producer))
    assert refused.value.rules == ["DLPACK-STRIDES-NONNULL"]
    assert [e.deleter_calls for e in producer.exports] == [1]  # refused, released all the same
    scalar = VersionedHost(np.ones((), dtype=np.float32), version, strides=False)
    assert import_dlpack(dlpack_only(scalar)).values == 1.0  # ndim 0: NULL strides allowed


@pytest.mark.parametrize(
    ("dtype", "flags", "rule"),
    [
        ((17, 4, 1), 0, "DLPACK-PORT-DTYPE"),  # float4, packed: legal, not held
        ((15, 6, 1), 4, "DLPACK-PORT-DTYPE"),  # float6, padded: legal, not held
        ((17, 8, 1), 0, "DLPACK-DTYPE-FP4-BITS"),  # "the consumer must stop importing"
        ((16, 8, 1), 0, "DLPACK-DTYPE-SUBBYTE-BITS"),
    ],
)
def test_the_reference_consumer_refuses_sub_byte_elements_naming_the_rule(dtype, flags, rule):
    producer = VersionedHost(np.zeros(4, dtype=np.uint8), (1, 3), dtype=dtype, flags=flags)
    with pytest.raises(ConsumerRefused) as refused:
        import_dlpack(dlpack_only(producer))
    assert refused.value.rules == [rule]
    assert [e.deleter_calls for e in producer.exports] == [1]


def test_the_reference_consumer_reads_a_float8_code_a_1_0_capsule_should_not_carry():
    """The code is 1.1's (DLPACK-VERSION-ENUM-VALUES, a warning): this consumer knows it, so
    the elements are read, as raw bytes of their size."""
    raw = np.arange(4, dtype=np.uint8)
    producer = VersionedHost(raw, (1, 0), dtype=(10, 8, 1))
    result = import_dlpack(dlpack_only(producer))
    assert [w.rule for w in result.warnings] == ["DLPACK-VERSION-ENUM-VALUES"]
    assert result.values.view(np.uint8).tolist() == [0, 1, 2, 3]


def test_a_consumer_passing_stream_zero_is_named():
    from types import SimpleNamespace

    from caiconform.results.outcome import REJECTED as REFUSED

    def only(*calls, refusals=()):
        return SimpleNamespace(calls=list(calls), refusals=list(refusals))

    asked = {"stream": 0, "max_version": (1, 0)}
    zero = life.refusal(
        ValueError("stream=0"), only(asked, refusals=[(asked, ValueError())]), "x", "p"
    )
    assert (zero.outcome, zero.rule) == (FAIL, "DLPACK-STREAM-ZERO-FORBIDDEN")
    plain = life.refusal(TypeError("no"), only({"stream": 1}), "x", "p")
    assert plain.outcome == REFUSED and plain.rule == "DLPACK-CONSUMER-READS-DESCRIBED"
    minus = {"stream": -1}
    theirs = life.refusal(
        RuntimeError("x"), only(minus, refusals=[(minus, RuntimeError())]), "x", "p"
    )
    assert (theirs.rule, theirs.culprit["library"]) == ("DLPACK-STREAM-OPTIONAL", "p")


def test_a_capsule_freed_by_the_collector_inside_the_deleter_does_not_deadlock():
    """The registry's lock is reentrant: a capsule the collector frees while a deleter runs
    calls its own deleter on the same thread."""

    class Cycle:
        pass

    inner_owner = np.arange(2, dtype=np.int8)
    cycle = Cycle()
    cycle.self = cycle
    cycle.capsule, inner = dx.host_capsule(inner_owner)
    del cycle
    outer_capsule, outer = dx.host_capsule(np.arange(2, dtype=np.int8))
    with dx._lock:  # what the deleter holds when an allocation runs the collector
        _collect()
    del outer_capsule
    _collect()
    assert inner.deleter_calls == 1 and outer.deleter_calls == 1


def test_the_tracked_path_end_to_end_on_a_host_stand_in(monkeypatch):
    """dlpack_lifetime on the reference producer, its ReferenceArray and allocation log
    replaced by host stand-ins (kDLCPU, so numpy.from_dlpack holds a view): renamed, held
    while viewed, the deleter called once after."""
    import weakref

    from caiconform.reference import dlpack_producer, producer, tracking

    class Log:
        def __init__(self):
            self.arrays: list = []

        def is_live(self, base):
            return any(ref() is not None for ref in self.arrays)

    class StandIn(PinnedStandIn):
        def __init__(self, values, layout, typestr, *, manager):
            super().__init__(values)
            self.allocation = type("A", (), {"ptr": self.ptr, "size": self.values.nbytes})()
            manager.arrays.append(weakref.ref(self))

    monkeypatch.setattr(producer, "ReferenceArray", StandIn)
    monkeypatch.setattr(tracking, "AllocationLog", Log)
    monkeypatch.setattr(tracking, "TrackingMemoryManager", lambda log: log)
    monkeypatch.setattr(dlpack_producer, "device_of", lambda memory, device: (header.kDLCPU, 0))
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    result = life._tracked("numpy", values, "<f4", (2, 3))
    assert result.outcome == PASS and "kept" in result.message, result.message


def test_a_refusing_frame_does_not_keep_the_capsule_alive():
    """A consumer refusing from a Python frame that holds the capsule: once the family drops
    the frames' locals, the capsule's destructor has run (the deleter count is honest)."""
    import gc
    import weakref

    from caiconform.checks.dlpack_adversarial import _drop_frames

    class Held:
        pass

    def refuse(capsule):
        raise ValueError("refused")

    held = Held()
    ref = weakref.ref(held)
    try:
        refuse(held)
    except ValueError as exc:
        caught = exc
    del held
    gc.collect()
    assert ref() is not None  # the traceback's frame still holds it
    _drop_frames(caught)
    gc.collect()
    assert ref() is None


def test_a_lifetime_import_refusing_a_type_it_need_not_have_is_a_portability_gap():
    from types import SimpleNamespace

    only = SimpleNamespace(calls=[{"stream": 1}], refusals=[])
    result = life.refusal(TypeError("float128 is not supported"), only, "x", "p", "<f16")
    assert result.rule == "DLPACK-PORT-DTYPE"
