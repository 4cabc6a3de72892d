"""The user's functions as a caiconform adapter, visible to the runner's worker processes.

The check families find libraries through the adapter registry, which reads the
`caiconform.adapters` entry point group; workers import whatever the parent's `sys.path`
reaches. So the plugin writes, into a private directory it puts on `sys.path`, a three-line
module subclassing `FunctionAdapter` with the user's specs and a `.dist-info` declaring it under
that entry point group: exactly what a library shipping its own adapter does (docs/adapters.md),
made on the fly. Nothing is patched; every worker, fresh or restarted, sees the same adapter.

It also writes the *adapter source* of the session's exchange run (the runner's
`adapter_source`: `names()`, the user's library and its peers, and the registry's `probe`,
`warm` and `preload`, the last for the peers alone); the
run's `only_cells` keeps the cells that involve the user's library in the directions asked
(`campaign.Campaign.exchange_run`), never a peer against another peer.

The adapter claims only what the user's library does: "dlpack" (its objects export `__dlpack__`)
only when the factory's sample object has it (`targets.sample_exports`), so the runner plans no
DLPack producer cell for a factory whose objects export the CUDA Array Interface alone.
"""

from __future__ import annotations

import importlib
import secrets
import sys
from pathlib import Path
from typing import Any

import numpy as np

from caiconform.adapters.base import Adapter, SkipExchange
from caiconform.pytest_plugin.targets import Target, TargetError, resolve
from caiconform.spec.layout import Layout

__all__ = ["FunctionAdapter", "install", "uninstall", "DIRECTIONS"]

#: "producer": the user's factory against the peers' consumers (and the producer-only families);
#: "consumer": the peers' producers against the user's consumer (and consumer-only families).
DIRECTIONS = ("producer", "consumer")


class FunctionAdapter(Adapter):
    """An adapter whose produce/consume call the functions named by `producer_spec` and
    `consumer_spec` (see `targets.py` for their signatures); `exports_dlpack` says whether the
    factory's objects have `__dlpack__`."""

    producer_spec: str | None = None
    consumer_spec: str | None = None
    dlpack_consumer_spec: str | None = None
    from_dlpack_spec: str | None = None
    exports_dlpack: bool = True

    @property
    def capabilities(self) -> frozenset[str]:  # type: ignore[override]
        caps = set()
        if self.producer_spec:
            caps |= {"produce", "streams"}
            if self.exports_dlpack:
                caps.add("dlpack")
        if self.consumer_spec:
            caps.add("consume")
        if self.dlpack_consumer_spec:
            caps.add("consume-dlpack")
            if self.from_dlpack_spec:
                caps.add("dlpack-copy")
        return frozenset(caps)

    def available(self) -> tuple[bool, str]:
        specs = (
            self.producer_spec,
            self.consumer_spec,
            self.dlpack_consumer_spec,
            self.from_dlpack_spec,
        )
        for spec in filter(None, specs):
            try:
                resolve(spec)
            except TargetError as exc:
                return False, str(exc)
        return True, ""

    def produce(
        self, values: np.ndarray, layout: Layout, typestr: str, stream_scenario: str = "none"
    ) -> Any:
        if not self.producer_spec:
            raise SkipExchange(f"{self.name}: no --cai-producer given")
        return resolve(self.producer_spec)(values, layout, typestr, stream_scenario)

    def consume(self, obj: Any) -> np.ndarray:
        if not self.consumer_spec:
            raise SkipExchange(f"{self.name}: no --cai-consumer given")
        return np.asarray(resolve(self.consumer_spec)(obj))

    def consume_dlpack(self, obj: Any) -> np.ndarray:
        if not self.dlpack_consumer_spec:
            raise SkipExchange(f"{self.name}: no --cai-dlpack-consumer given")
        return np.asarray(resolve(self.dlpack_consumer_spec)(obj))

    def consume_dlpack_with(
        self, obj: Any, *, copy: bool | None = None, device: tuple[int, int] | None = None
    ) -> tuple[np.ndarray, Any]:
        """The user's from_dlpack (`--cai-from-dlpack`) with the keywords as given, its result's
        values read by `read_result`."""
        if not self.from_dlpack_spec:
            raise SkipExchange(f"{self.name}: no --cai-from-dlpack given")
        result = resolve(self.from_dlpack_spec)(obj, copy=copy, device=device)
        return self.read_result(result), result

    def read_result(self, result: Any) -> np.ndarray:
        """The values of the user's array read through its `__dlpack__` by caiconform's
        reference DLPack consumer (the capsule read on its own stream, released once): the
        library's memory as it is now, a copy or a view alike."""
        from caiconform.reference.dlpack_import import import_dlpack

        return np.array(import_dlpack(result).values, copy=True)

    def repro_produce(self) -> str:
        if not self.producer_spec:
            return ""
        module, _, attr = self.producer_spec.partition(":")
        return f"from {module} import {attr.split('.')[0]}  # the factory under test\n"

    def repro_consume(self) -> str:
        if not self.consumer_spec:
            return ""
        module, _, attr = self.consumer_spec.partition(":")
        return f"from {module} import {attr.split('.')[0]}  # the consumer under test\n"


def _source_module(target: Target, peers: list[str]) -> str:
    """The exchange run's adapter source: the registry's `probe`, `warm` (a prepare readies a
    library without `probe`'s version lookup, which reads every installed distribution's
    metadata) and `preload` (the fork servers import the peers' libraries once, so a new
    worker child does not), the peers only: the user's module may make a CUDA context when
    imported, and a fork server must not hold one."""
    return (
        "from caiconform.runner.libraries import preload as _preload\n"
        "from caiconform.runner.libraries import probe, warm  # noqa: F401 (the runner asks them)\n\n"
        f"USER, PEERS = {target.name!r}, {peers!r}\n\n\n"
        "def names():\n"
        "    return [USER, *PEERS]\n\n\n"
        "def preload(name):\n"
        "    if name != USER:  # its module may make a CUDA context: not in a fork server\n"
        "        _preload(name)\n"
    )


def install(
    directory: Path, target: Target, peers: list[str], *, exports_dlpack: bool = True
) -> dict[str, str]:
    """Write the adapter module, its entry point and the exchange run's adapter source into
    `directory`, put it first on `sys.path`, and return {"exchange": the adapter source module}.
    `exports_dlpack` False: the factory's objects have no `__dlpack__`, so the adapter does not
    claim "dlpack".

    Module names carry a token unique to this call: runner and import caches are per process,
    and two sessions in one process (pytester) must not see each other's modules."""
    token = secrets.token_hex(4)
    module = f"_caiconform_pytest_user_{token}"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{module}.py").write_text(
        "from caiconform.pytest_plugin.adapter import FunctionAdapter\n\n\n"
        "class UserAdapter(FunctionAdapter):\n"
        f"    name = {target.name!r}\n"
        f"    module = {target.name!r}\n"
        f"    producer_spec = {target.producer!r}\n"
        f"    consumer_spec = {target.consumer!r}\n"
        f"    dlpack_consumer_spec = {target.dlpack_consumer!r}\n"
        f"    from_dlpack_spec = {target.from_dlpack!r}\n"
        f"    exports_dlpack = {exports_dlpack!r}\n"
    )
    dist = directory / f"caiconform_pytest_user_{token}-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: caiconform-pytest-user-{token}\nVersion: 0\n"
    )
    (dist / "entry_points.txt").write_text(
        f"[caiconform.adapters]\n{target.name} = {module}:UserAdapter\n"
    )
    source = f"_caiconform_pytest_source_{token}"
    (directory / f"{source}.py").write_text(_source_module(target, peers))
    sources = {"exchange": source}
    importlib.invalidate_caches()
    sys.path.insert(0, str(directory))
    return sources


def uninstall(directory: Path) -> None:
    """Take `directory` off `sys.path` again and forget adapters loaded from it, so nothing of
    this session leaks into the rest of the process."""
    from caiconform.adapters import registry

    while str(directory) in sys.path:
        sys.path.remove(str(directory))
    importlib.invalidate_caches()
    registry.clear_cache()
