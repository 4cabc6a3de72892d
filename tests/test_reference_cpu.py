"""CPU tests for the reference layer: allocation log, Allocation lifetime, interface dicts."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable

import numpy as np
import pytest

from caiconform.cuda import gpu_available
from caiconform.cuda import memory as cuda_memory
from caiconform.cuda.memory import PointerInfo
from caiconform.reference.consumer import (
    ConsumerRefused,
    _check_pointer,
    _Plan,
    consume,
    inspect_dict,
)
from caiconform.reference.live import live_check
from caiconform.reference.producer import (
    check_layout,
    host_values,
    interface_dict,
    sentinel_of,
)
from caiconform.reference.tracking import Allocation, AllocationLog
from caiconform.spec.layout import Layout
from caiconform.spec.validate import keys_for_version, validate


def test_log_counts_live_and_freed():
    log = AllocationLog()
    log.record_alloc(0x1000, 64, 0, tag="a")
    log.record_alloc(0x2000, 32, 0, tag="b")
    assert (log.live_count, log.live_bytes) == (2, 96)
    record = log.record_free(0x1000)
    assert record.size == 64 and record.freed_at is not None and record.time == record.freed_at
    assert (log.live_count, log.live_bytes) == (1, 32)
    assert log.was_freed(0x1000) and not log.is_live(0x1000)
    assert log.is_live(0x2000) and not log.was_freed(0x2000)
    assert [r.ptr for r in log.frees] == [0x1000]
    snap = log.snapshot()
    assert snap["allocs"] == 2 and snap["free_count"] == 1 and snap["freed_bytes"] == 64
    assert snap["live"][0]["tag"] == "b"


def test_log_refuses_double_free_and_double_alloc():
    log = AllocationLog()
    log.record_alloc(0x10, 8, 0)
    with pytest.raises(ValueError, match="still live"):
        log.record_alloc(0x10, 8, 0)
    log.record_free(0x10)
    with pytest.raises(ValueError, match="not a live allocation"):
        log.record_free(0x10)
    with pytest.raises(ValueError, match=">= 0"):
        log.record_alloc(0x20, -1, 0)


def test_log_address_reuse_keeps_history():
    log = AllocationLog()
    log.record_alloc(0x10, 8, 0)
    log.record_free(0x10)
    log.record_alloc(0x10, 16, 0)
    assert log.is_live(0x10) and log.was_freed(0x10)
    assert log.live_bytes == 16


def test_log_is_thread_safe():
    log = AllocationLog()

    def worker(base: int) -> None:
        for i in range(500):
            log.record_alloc(base + i, 1, 0)
        for i in range(500):
            log.record_free(base + i)

    threads = [threading.Thread(target=worker, args=(k * 10_000 + 1,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert log.live_count == 0 and len(log.frees) == 4000 and log.alloc_count == 4000


def test_allocation_frees_once_on_close_or_collection():
    log = AllocationLog()
    freed: list[tuple[int, int]] = []

    def free(ptr: int, device: int) -> None:
        freed.append((ptr, device))

    a = Allocation(0x100, 10, 0, log, free, tag="x")
    assert log.is_live(0x100) and not a.closed
    a.close()
    a.close()
    assert freed == [(0x100, 0)] and log.was_freed(0x100) and a.closed

    b = Allocation(0x200, 10, 1, log, free)
    del b
    gc.collect()
    assert freed[-1] == (0x200, 1) and log.was_freed(0x200)


def test_allocation_failed_free_is_not_logged_as_freed():
    log = AllocationLog()

    def failing_free(ptr: int, device: int) -> None:
        raise RuntimeError("driver gone")

    a = Allocation(0x300, 4, 0, log, failing_free)
    with pytest.raises(RuntimeError):
        a.close()
    assert log.is_live(0x300) and not log.was_freed(0x300)


# ---- interface dicts (producer side, pure) ------------------------------------------------

HAVE_GPU, NO_GPU_REASON = gpu_available()

LAYOUTS = [
    Layout((2, 3)),
    Layout((2, 3), (4, 8), kind="F"),
    Layout((2, 3), (32, 4), pad=16, kind="padded"),
    Layout((3, 2), (-8, 4), offset=16, kind="negative"),
    Layout((4, 3), (0, 4), kind="broadcast"),
    Layout((0, 3), kind="C"),
    Layout((5,), (6,), kind="odd", portable=False),
]


@pytest.mark.parametrize("version", [0, 1, 2, 3])
@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda lay: lay.kind)
def test_interface_dict_has_exactly_the_versions_keys_and_validates(version, layout):
    stream = 7 if version == 3 else None
    d = interface_dict(0x7F00_0000_0000, layout, "<f4", version, True, stream)
    assert set(d) == set(keys_for_version(version)) - {"descr"}
    assert d["version"] == version and d["data"][1] is True
    assert isinstance(d["shape"], tuple) and all(type(n) is int for n in d["shape"])
    if 0 in layout.shape:
        assert d["data"][0] == 0
    if version < 2:
        assert d["strides"] is not None
    elif layout.strides is None:
        assert d["strides"] is None
    report = validate(d)
    assert report.ok, [f.message for f in report.errors]


def test_interface_dict_refuses_what_the_version_cannot_say():
    with pytest.raises(ValueError, match="CAI-V0-NO-MASK"):
        interface_dict(16, Layout((1,)), "<i4", 0, mask=object())
    with pytest.raises(ValueError, match="CAI-V2-STREAM-UNDEFINED"):
        interface_dict(16, Layout((1,)), "<i4", 2, stream=5)
    with pytest.raises(ValueError, match="CAI-STREAM-ZERO-FORBIDDEN"):
        interface_dict(16, Layout((1,)), "<i4", 3, stream=0)
    with pytest.raises(ValueError, match="version"):
        interface_dict(16, Layout((1,)), "<i4", 4)


def test_host_values_converts_broadcasts_and_reinterprets_void():
    out = host_values([1, 2, 3], (2, 3), ">i2")
    assert out.dtype == np.dtype(">i2") and out.shape == (2, 3) and out.flags.c_contiguous
    void = host_values(np.arange(6, dtype=np.uint8).reshape(3, 2), (3,), "<V2")
    assert void.dtype == np.dtype("V2") and void.tobytes() == bytes(range(6))


def test_check_layout_accepts_disjoint_and_refuses_overlap():
    check_layout(Layout((3, 2), (-8, 4), offset=16), 4, np.zeros((3, 2), "i4"))
    check_layout(Layout((2, 2), (3, 6), kind="odd"), 2, np.zeros((2, 2), "i2"))
    check_layout(Layout((4, 3), (0, 4)), 4, np.tile(np.arange(3, dtype="f4"), (4, 1)))
    with pytest.raises(ValueError, match="stride 0"):
        check_layout(Layout((4, 3), (0, 4)), 4, np.arange(12, dtype="f4").reshape(4, 3))
    with pytest.raises(ValueError, match="overlapping"):
        check_layout(Layout((2, 2), (4, 4)), 4, np.arange(4, dtype="f4").reshape(2, 2))
    with pytest.raises(ValueError, match="overlapping"):
        check_layout(Layout((3,), (2,), portable=False), 4, np.arange(3, dtype="f4"))


def test_sentinel_differs_from_values_in_every_byte():
    values = np.array([0.0, 1.5, -3.25], dtype="<f8")
    sent = sentinel_of(values)
    assert sent.dtype == values.dtype and sent.shape == values.shape
    assert np.all(sent.view(np.uint8) != values.view(np.uint8))


# ---- consumer: refusals that need no device -----------------------------------------------


def _good(**over) -> dict:
    d = {
        "shape": (4,),
        "typestr": "<f4",
        "data": (0x7F00_0000_1000, False),
        "version": 3,
        "strides": None,
        "stream": None,
    }
    d.update(over)
    return d


@pytest.mark.parametrize(
    ("bad", "rule"),
    [
        (_good(stream=0), "CAI-STREAM-ZERO-FORBIDDEN"),
        (_good(shape=[4]), "CAI-SHAPE-TUPLE"),
        (_good(data=(0, False)), "CAI-DATA-NONZERO-SIZE-NONNULL"),
        (_good(typestr="<f3"), "CAI-TYPESTR-GRAMMAR"),
        (_good(strides=(4, 4)), "CAI-STRIDES-NDIM"),
        (_good(version=9), "CAI-VERSION-KNOWN"),
    ],
)
def test_consumer_refuses_invalid_dicts_with_rule_ids(bad, rule):
    with pytest.raises(ConsumerRefused) as info:
        consume(bad)
    assert rule in info.value.rules
    assert f"[{rule}]" in str(info.value)


def test_consumer_refuses_objects_without_a_dict():
    class Broken:
        @property
        def __cuda_array_interface__(self):
            raise RuntimeError("boom")

    with pytest.raises(ConsumerRefused) as info:
        consume(Broken())
    assert info.value.rules == ["CAI-ATTR-DICT"]


def test_consumer_reads_zero_size_without_touching_a_device():
    class Empty:
        __cuda_array_interface__ = _good(shape=(0, 3), data=(0, False))

    owner = Empty()
    result = consume(owner)
    assert result.values.shape == (0, 3) and result.values.dtype == np.dtype("<f4")
    assert result.owner is owner and result.pointer is None


def test_inspect_dict_resolves_strides_and_stream():
    plan, warnings = inspect_dict(_good(shape=(2, 3), stream=5))
    assert plan.strides == (12, 4) and plan.stream == 5 and plan.count == 6
    # a v2 dict's stream key means nothing: the plan ignores it (and the finding says so)
    plan, warnings = inspect_dict(_good(version=2, stream=5) | {"mask": None})
    assert plan.stream is None
    assert [f.rule for f in warnings] == ["CAI-V2-STREAM-UNDEFINED"]


@pytest.mark.skipif(HAVE_GPU, reason="needs a machine without a GPU")
def test_consumer_and_live_check_without_gpu():
    from caiconform.cuda import CUDAError

    with pytest.raises(CUDAError, match="no NVIDIA driver"):
        consume(_good())
    findings, why = live_check(_good())
    assert findings == [] and why.startswith("live checks skipped: no NVIDIA driver")


# --- the extent against the allocation (_check_pointer), the driver's answers faked ---------

BASE = 0x7F00_0000_0000


class FakeDriver:
    """Answers for `pointer_info` and `address_range` as the driver would give them for one
    allocation [base, base + size) of `memory_type` memory; records the addresses asked."""

    def __init__(self, base: int, size: int, memory_type: str = "device") -> None:
        self.base, self.size, self.memory_type = base, size, memory_type
        self.asked: list[tuple[str, int]] = []

    def pointer_info(self, ptr: int) -> PointerInfo:
        self.asked.append(("pointer_info", ptr))
        inside = self.base <= ptr < self.base + self.size
        kind = self.memory_type if inside else "unregistered"
        device_pointer = ptr if inside and kind != "host" else 0
        return PointerInfo(
            ptr, kind, 0 if inside else -1, 1 if inside else 0, False, device_pointer
        )

    def address_range(self, ptr: int) -> tuple[int, int] | None:
        self.asked.append(("address_range", ptr))
        return (self.base, self.size) if self.base <= ptr < self.base + self.size else None


@pytest.fixture
def fake_driver(monkeypatch) -> Callable[..., FakeDriver]:
    def install(base: int, size: int, memory_type: str = "device") -> FakeDriver:
        fake = FakeDriver(base, size, memory_type)
        monkeypatch.setattr(cuda_memory, "pointer_info", fake.pointer_info)
        monkeypatch.setattr(cuda_memory, "address_range", fake.address_range)
        return fake

    return install


def _refused_rules(plan) -> list[str]:
    with pytest.raises(ConsumerRefused) as info:
        _check_pointer(plan)
    return info.value.rules


@pytest.mark.parametrize(
    ("d", "first", "last"),
    [
        (_good(data=(BASE, False)), BASE, BASE + 16),  # fills the allocation exactly
        (_good(data=(BASE + 48, False)), BASE + 48, BASE + 64),  # ends at its last byte
        # negative strides: the lowest byte lies below the pointer
        (_good(shape=(4,), strides=(-4,), data=(BASE + 12, False)), BASE, BASE + 16),
        (_good(shape=(2, 2), strides=(-8, 4), data=(BASE + 8, False)), BASE, BASE + 16),
    ],
    ids=["whole allocation", "its last bytes", "negative stride", "negative row stride"],
)
def test_extent_inside_one_allocation_is_read(fake_driver, d, first, last):
    fake = fake_driver(BASE, last - BASE)
    plan, _ = inspect_dict(d)
    info, allocation = _check_pointer(plan)
    assert allocation == (BASE, last - BASE) and info.memory_type == "device"
    # the allocation is looked up from the lowest byte reached, not from the pointer
    assert ("address_range", first) in fake.asked


@pytest.mark.parametrize("past", [1, 4, 12])
def test_extent_past_the_allocations_end_is_refused_with_how_far(fake_driver, past):
    """16 bytes starting inside a 4096-byte allocation, their last `past` bytes beyond it."""
    fake_driver(BASE, 4096)
    plan, _ = inspect_dict(_good(data=(BASE + 4096 - 16 + past, False)))
    with pytest.raises(ConsumerRefused) as info:
        _check_pointer(plan)
    assert info.value.rules == ["CAI-DATA-EXTENT-IN-ALLOCATION"]
    assert f"end {past} bytes past allocation" in str(info.value)


def test_lowest_byte_below_the_allocation_is_refused(fake_driver):
    """The pointer is inside the allocation, but the negative stride reaches below its base."""
    fake_driver(BASE, 4096)
    plan, _ = inspect_dict(_good(strides=(-4,), data=(BASE + 8, False)))
    assert _refused_rules(plan) == ["CAI-DATA-EXTENT-IN-ALLOCATION"]


def test_extent_ending_at_the_top_of_the_address_space_is_asked_about(fake_driver):
    top = 2**64 - 4096
    fake = fake_driver(top, 4096)
    plan, _ = inspect_dict(_good(data=(2**64 - 16, False)))
    assert _check_pointer(plan)[1] == (top, 4096)
    assert [name for name, _ in fake.asked] == ["pointer_info", "address_range"]


@pytest.mark.parametrize(
    ("ptr", "strides"), [(2**64 - 12, (4,)), (8, (-4,))], ids=["past 2**64", "below 0"]
)
def test_extent_outside_the_address_space_is_refused_before_the_driver_is_asked(
    fake_driver, ptr, strides
):
    """The validator refuses these first; the consumer's own check holds for a plan too."""
    fake = fake_driver(0, 2**64)
    plan = _Plan((4,), strides, np.dtype("<f4"), ptr, None, None, 3)
    assert _refused_rules(plan) == ["CAI-DATA-EXTENT-IN-ALLOCATION"]
    assert fake.asked == []


@pytest.mark.parametrize(
    ("memory_type", "rule"),
    [("host", "CAI-DATA-DEVICE-ACCESSIBLE"), ("unregistered", "CAI-DATA-DEVICE-ACCESSIBLE")],
)
def test_memory_a_kernel_cannot_read_is_refused(fake_driver, memory_type, rule):
    fake = fake_driver(BASE, 4096, memory_type)
    plan, _ = inspect_dict(_good(data=(BASE, False)))
    assert _refused_rules(plan) == [rule]
    assert [name for name, _ in fake.asked] == ["pointer_info"]


def test_pointer_in_no_allocation_is_refused(fake_driver):
    fake_driver(BASE + 4096, 4096)
    plan, _ = inspect_dict(_good(data=(BASE, False)))
    assert _refused_rules(plan) == ["CAI-DATA-DEVICE-ACCESSIBLE"]
