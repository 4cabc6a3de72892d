"""What a run's start measures that depends only on the environment, kept for the next run in
the same one.

The library probes with their adapters' self-checks, the streams spin calibration and the
families' floors built in worker processes are most of a run's first seconds
(docs/performance.md), and a user who reruns the matrix gets the same answers from all three
until something they depend on changes. So they are kept on disk under a key that hashes
everything they can depend on: caiconform's own source, every installed distribution and its
version, the Python, the NVIDIA driver and the GPUs the kernel lists, and the environment
variables the CUDA stack, the libraries, the loader and Python read (`PREFIXES`, and `PATH`):
not a CI job's own variables, so a CI cache of the directory serves the next job. When anything of
that differs the key differs: the start measures anew and keeps what it found. An answer that
says a probe, a self-check or the calibration failed is not kept (a stalled import is not a
property of the environment).

`CAICONFORM_START_CACHE` names the directory (default `<tempdir>/caiconform-start-<uid>`), or
`off`; `caiconform run --fresh-start` measures anew (and keeps the new answers): an adapter of
one's own that reads a variable of another name is measured anew only then. run.json
`startup.cached` says which parts of a start were read from here.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from caiconform.diskcache import DiskBuilds, cache_dir

__all__ = ["ASKED", "ENV", "PREFIXES", "StartCache", "environment_key"]

#: the variable naming the directory, or `off`
ENV = "CAICONFORM_START_CACHE"

#: the variables a start's answers can depend on: those the CUDA stack, the array libraries,
#: the dynamic loader, Python and caiconform read, by prefix. Others (a CI job's run number, a
#: shell's working directory) change no answer and would make every CI job's key its own
PREFIXES = (
    "CAICONFORM",
    "CCCL",
    "CUDA",
    "CUPY",
    "JAX",
    "LD_",
    "NCCL",
    "NUMBA",
    "NV",
    "PYTHON",
    "PYTORCH",
    "RMM",
    "TORCH",
    "XLA",
)


def _relevant(name: str) -> bool:
    return name != ENV and (name == "PATH" or name.startswith(PREFIXES))


@cache
def _source_digest() -> str:
    """caiconform's own Python source, every module's bytes in path order."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def _gpus() -> list[str]:
    """What the kernel driver lists of each GPU (model, bus): no CUDA call, no context."""
    root = Path("/proc/driver/nvidia/gpus")
    try:
        return sorted(_read(str(p / "information")) for p in root.iterdir())
    except OSError:
        return []


def environment_key(extra: Sequence[str] = ()) -> str:
    """The hash of everything a start's answers can depend on, and of `extra` (what the run
    asks: its adapter source and libraries)."""
    return _with_extra(_environment_digest(), extra)


def _environment_digest() -> str:
    from importlib import metadata

    parts = [
        _source_digest(),
        sys.version,
        sys.executable,
        *sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions()),
        _read("/proc/driver/nvidia/version"),
        *_gpus(),
        *sorted(f"{k}={v}" for k, v in os.environ.items() if _relevant(k)),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _with_extra(digest: str, extra: Sequence[str]) -> str:
    return hashlib.sha256("\0".join([digest, *extra]).encode()).hexdigest()[:32]


#: kinds whose answers depend on what the run asks (its adapter source and libraries); the
#: others (the calibration, the floors) are the environment's alone, so two runs asking other
#: libraries (the pytest plugin's two directions) share them
ASKED = frozenset({"probes"})


class StartCache:
    """A start's answers by kind under one environment key; `fresh` reads nothing (and
    still keeps what it is given)."""

    def __init__(
        self, directory: Path, key: str, *, fresh: bool = False, shared_key: str | None = None
    ) -> None:
        self.builds = DiskBuilds(directory)
        self.key = key
        #: the key of the kinds not in ASKED (None: `key` for every kind)
        self.shared_key = shared_key
        self.fresh = fresh
        #: the kinds answered from disk, in the order asked
        self.hits: list[str] = []

    @classmethod
    def for_run(cls, extra: Sequence[str], *, fresh: bool = False) -> StartCache | None:
        """The cache a run's start uses: None when `CAICONFORM_START_CACHE=off`."""
        if os.environ.get(ENV, "").strip().lower() == "off":
            return None
        digest = _environment_digest()
        return cls(
            cache_dir(ENV, "start"),
            _with_extra(digest, extra),
            fresh=fresh,
            shared_key=_with_extra(digest, ()),
        )

    def _name(self, kind: str) -> str:
        key = self.key if kind in ASKED or self.shared_key is None else self.shared_key
        return f"{key}-{hashlib.sha256(kind.encode()).hexdigest()[:12]}"

    def get(self, kind: str) -> Any | None:
        """What was kept for `kind` in this environment, or None (a miss, a fresh start, or
        a file that does not read as what was kept)."""
        if self.fresh:
            return None
        blob = self.builds.read(self._name(kind))
        if blob is None:
            return None
        try:
            entry = json.loads(blob)
        except ValueError:
            return None
        if not isinstance(entry, dict) or entry.get("kind") != kind:
            return None
        self.hits.append(kind)
        return entry.get("value")

    def put(self, kind: str, value: Any) -> None:
        """Keep `value` (plain JSON) for `kind`; a disk that refuses it costs nothing more."""
        try:
            blob = json.dumps({"kind": kind, "value": value}).encode()
        except (TypeError, ValueError):
            return
        with contextlib.suppress(OSError):
            self.builds.write(self._name(kind), blob)
