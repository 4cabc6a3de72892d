"""The numba copy kernels a run's start compiles (`numba_adapter.warm`, from
`runner.libraries.builds`) and the lock around their disk-cache saves
(`numba_adapter._lock_saves`): numba's own save is unlocked, and two processes saving two
signatures at once can leave one signature's name pointing at the other's kernel."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from caiconform.adapters import numba_adapter
from caiconform.runner import libraries


class _CacheFile:
    """numba's `IndexDataCacheFile` as far as `_lock_saves` uses it."""

    def __init__(self, index: Path) -> None:
        self._index_path = str(index)
        self.saved: list[tuple[object, bool]] = []

    def save(self, key: object, data: object) -> None:
        lock = self._index_path.rsplit("/", 1)[0] + "/" + Path(self._index_path).name + ".lock"
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another holder makes this fail
            held = False
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BlockingIOError:
            held = True
        finally:
            os.close(fd)
        self.saved.append((key, held))


class _Cache:
    def __init__(self, cache_file: object) -> None:
        self._cache_file = cache_file


class _Dispatcher:
    def __init__(self, cache: object) -> None:
        self._cache = cache


def test_a_copy_kernels_cache_save_holds_the_index_lock(tmp_path):
    cache_file = _CacheFile(tmp_path / "copy1-42.py312.nbi")
    numba_adapter._lock_saves(_Dispatcher(_Cache(cache_file)))
    cache_file.save("sig", b"kernel")
    assert cache_file.saved == [("sig", True)]
    unlocked = _CacheFile(tmp_path / "other.nbi")
    unlocked.save("sig", b"kernel")
    assert unlocked.saved == [("sig", False)]  # the fake tells a held lock from none


def test_a_dispatcher_without_numbas_cache_layout_is_left_alone():
    class NullCache:
        pass

    dispatcher = _Dispatcher(NullCache())
    numba_adapter._lock_saves(dispatcher)  # no `_cache_file`: nothing to wrap, no error
    assert not hasattr(dispatcher._cache, "_cache_file")


def test_the_start_compiles_each_kernel_consumers_copy_kernels_in_parts():
    calls = libraries.builds(["numba-kernel", "numba-mlir-kernel", "cupy"])
    kernels = [kw for fn, kw, *_ in calls if fn == "caiconform.adapters.numba_adapter:warm"]
    assert all(
        when == [libraries.AFTER_START]
        for fn, _, *when in calls
        if fn == "caiconform.adapters.numba_adapter:warm"
    ), "the kernel builds wait for the start to end"
    parts = libraries.KERNEL_BUILD_PROCESSES
    assert sorted((kw["impl"], kw["part"]) for kw in kernels) == sorted(
        (impl, i) for impl in ("numba-cuda", "numba-cuda-mlir") for i in range(parts)
    )
    assert all(kw["parts"] == parts for kw in kernels)
    assert libraries.builds(["numba", "cupy"]) == []  # no kernel consumer, no cuda.cccl


def test_the_kernel_builds_count_can_be_set_and_turned_off(monkeypatch):
    monkeypatch.setenv(libraries.KERNEL_BUILDS_ENV, "0")
    assert libraries.builds(["numba-kernel"]) == []
    monkeypatch.setenv(libraries.KERNEL_BUILDS_ENV, "2")
    assert [kw["part"] for _, kw, *_ in libraries.builds(["numba-kernel"])] == [0, 1]


def test_the_warmed_signatures_are_shared_out_whole_and_plain_ones_first():
    """The parts cover every (dtype, signature) once, and each part starts with writable
    arrays without strides: the signatures the examples meet most."""
    jobs = [
        (key, sig)
        for sig in numba_adapter.WARM_SIGNATURES
        for key in numba_adapter._staging.ALL_DTYPE_KEYS
    ]
    parts = libraries.KERNEL_BUILD_PROCESSES
    shares = [jobs[i::parts] for i in range(parts)]
    assert sorted(j for share in shares for j in share) == sorted(jobs)
    assert len(set(jobs)) == len(jobs)
    for share in shares:
        ndim, strided, readonly = share[0][1]
        assert (strided, readonly) == (False, False)
    assert numba_adapter.WARM_SIGNATURES[-1][2] is True  # read-only last


def test_warm_lowers_its_priority_and_says_why_it_compiled_nothing(monkeypatch):
    niced: list[int] = []
    monkeypatch.setattr(os, "nice", niced.append)  # not this test process itself
    monkeypatch.setattr(numba_adapter, "kernels_work", lambda impl: (False, "no GPU here"))
    assert numba_adapter.warm("numba-cuda") == {"skipped": "no GPU here"}
    assert niced == [numba_adapter.WARM_NICE]
