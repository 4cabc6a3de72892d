"""The lock around the numba copy kernels' disk-cache saves (`numba_adapter._lock_saves`):
numba's own save is unlocked, and two processes saving two signatures at once can leave one
signature's name pointing at the other's kernel."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from caiconform.adapters import numba_adapter


class _CacheFile:
    """numba's `IndexDataCacheFile` as far as `_lock_saves` uses it."""

    def __init__(self, index: Path) -> None:
        self._index_path = str(index)
        self.saved: list[tuple[object, bool]] = []

    def save(self, key: object, data: object) -> None:
        fd = os.open(self._index_path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
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


def test_a_dispatcher_without_numbas_cache_layout_is_left_alone(tmp_path):
    class NullCache:
        pass

    numba_adapter._lock_saves(_Dispatcher(NullCache()))  # no `_cache_file`: no error
    other = _CacheFile(tmp_path / "k.nbi")
    other._index_path = None  # another layout: no index path to lock on
    save = other.save
    numba_adapter._lock_saves(_Dispatcher(_Cache(other)))
    assert other.save == save  # not wrapped
