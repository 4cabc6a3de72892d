"""Compiled code kept on disk and shared by a run's worker processes.

A run's examples execute in forked children that are replaced after every crash, hang or
poisoned context, and each child is a fresh process as far as compiled GPU code goes: what
one child compiled (cuda.compute's transforms, caiconform's own NVRTC kernels) the next one
compiled again. `DiskBuilds` keeps such blobs by name in one directory, written atomically and
locked per name across processes, so a run compiles each once and every later process reads it.
The directories live in the temp directory (keyed by what the blob depends on), or where an
environment variable says.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["DiskBuilds", "cache_dir"]


def cache_dir(env: str, kind: str) -> Path:
    """`$env` when set, else `<tempdir>/caiconform-<kind>-<uid>`."""
    explicit = os.environ.get(env, "").strip()
    if explicit:
        return Path(explicit)
    return Path(tempfile.gettempdir()) / f"caiconform-{kind}-{os.getuid()}"


class DiskBuilds:
    """Blobs by name in one directory: read, written atomically (rename), locked per name
    across processes (`flock`, released by the kernel when a holder dies)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, name: str) -> Path:
        return self.directory / f"{name}.bin"

    @contextlib.contextmanager
    def locked(self, name: str) -> Iterator[None]:
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.directory / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def read(self, name: str) -> bytes | None:
        try:
            return self.path(name).read_bytes()
        except OSError:
            return None

    def write(self, name: str, blob: bytes) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{name}.")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(blob)
            os.replace(tmp, self.path(name))
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def discard(self, name: str) -> None:
        with contextlib.suppress(OSError):
            self.path(name).unlink()
