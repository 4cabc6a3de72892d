"""CPU tests for the reference layer: allocation log, Allocation lifetime, interface dicts."""

from __future__ import annotations

import gc
import threading

import pytest

from caiconform.reference.tracking import Allocation, AllocationLog


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
