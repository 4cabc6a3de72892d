"""The Adapter protocol: how caiconform drives one library as a producer and a consumer.

An adapter uses its library the way the library's users do (public API only). Heavy imports
happen inside the methods, never at module import, so listing adapters stays cheap.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from caiconform.adapters._repro import Repro
from caiconform.spec.layout import Layout

__all__ = [
    "Adapter",
    "SkipExchange",
    "CAPABILITIES",
]

#: produce / consume: the roles it can play; streams: honours stream scenarios; readonly: can
#: export read-only; mask: can export a mask; dlpack: its objects also export __dlpack__;
#: write: its consume path can write (so the readonly family can check it is honoured);
#: kernel: can launch a kernel reading the array; consume-dlpack: `consume_dlpack` imports
#: through the library's own DLPack path (the DLPack families' consumers); dlpack-c: the type of
#: its objects carries DLPack's C exchange API table (`__dlpack_c_exchange_api__`); dlpack-copy:
#: `consume_dlpack_with` calls the library's from_dlpack with its `copy` and `device` keywords.
CAPABILITIES = frozenset(
    {
        "produce",
        "consume",
        "streams",
        "readonly",
        "mask",
        "dlpack",
        "write",
        "kernel",
        "multigpu",
        "consume-dlpack",
        "dlpack-c",
        "dlpack-copy",
    }
)


class SkipExchange(Exception):
    """Raised by produce/consume when the library cannot do what was asked; the message is the
    reason, recorded with outcome `skip` (a capability gap, not a failure)."""


#: how the reason of a skip caused by a failing producer factory begins (`ProducerFailed`)
SETUP_PREFIX = "setup: "


class ProducerFailed(RuntimeError):
    """A producer's `produce` raised something other than SkipExchange: the example could not
    be built, so nothing was exchanged. That is a defect of the test setup (a factory should
    raise SkipExchange for what its library cannot make), not a finding against either side:
    the runner records a skip whose reason begins with `SETUP_PREFIX`, and reports list these
    apart with that hint."""


class Adapter:
    """Base class for adapters. Subclasses set `name`, `module`, `capabilities` and implement
    `produce` and/or `consume`."""

    name: str = ""
    #: importable module whose __version__ is the library version (e.g. "cupy")
    module: str = ""
    #: distribution name for importlib.metadata, when it differs from `module`
    distribution: str = ""
    capabilities: frozenset[str] = frozenset()
    #: memory kinds `produce` can make (`caiconform.cuda.memkinds.MEMORY_KINDS`): it makes the
    #: example's kind, `memkinds.current_kind()`, which the runner draws from these per example
    #: (`checks._memory`); a library with no kind of its own makes device memory only
    memory_kinds: tuple[str, ...] = ("device",)
    #: `consume` is the library's own CAI import and its own copy to the host, with no code of
    #: caiconform's between them (no gather kernel, no reshape of bytes): what it reads wrong is
    #: the library's reading, never the adapter's (`selfcheck.check_consumer`)
    consume_is_library_call: bool = False
    #: how a standalone reproducer writes this library's calls (`adapters._repro`): the
    #: adapter's module declares them, for every role it claims, or says why there are none
    repro: Repro = Repro()

    def version(self) -> str | None:
        from importlib import metadata

        for dist in filter(None, (self.distribution, self.module)):
            try:
                return metadata.version(dist)
            except metadata.PackageNotFoundError:
                continue
        return None

    def available(self) -> tuple[bool, str]:
        """(True, "") when the library imports here; else (False, the reason)."""
        import importlib

        try:
            importlib.import_module(self.module)
        except Exception as exc:  # any import failure means unavailable, with the reason
            return False, f"{self.module} not importable: {type(exc).__name__}: {exc}"
        return True, ""

    def produce(
        self, values: np.ndarray, layout: Layout, typestr: str, stream_scenario: str = "none"
    ) -> Any:
        """An object of this library exposing `__cuda_array_interface__`, whose logical
        elements equal `values` (shape `layout.shape`, dtype `typestr`), laid out in device
        memory at `layout`'s strides where the library can do that. Raise SkipExchange when it
        cannot (the reason says what is missing)."""
        raise SkipExchange(f"{self.name} does not produce")

    def consume(self, obj: Any) -> np.ndarray:
        """Import `obj` through the library's own public CAI path and return its logical values
        on the host (a numpy array of the object's shape)."""
        raise SkipExchange(f"{self.name} does not consume")

    def consume_dlpack(self, obj: Any) -> np.ndarray:
        """Import `obj` through the library's own public DLPack path (`torch.from_dlpack`,
        `cupy.from_dlpack`, a kernel launch taking `__dlpack__`) and return its logical values
        on the host. `obj` is the producer's object behind `_staging.dlpack_only`: it exposes
        `__dlpack__` and `__dlpack_device__` and nothing else, so the library cannot fall back
        to the CAI or short-circuit its own array type."""
        raise SkipExchange(f"{self.name} does not import DLPack")

    def consume_dlpack_with(
        self, obj: Any, *, copy: bool | None = None, device: tuple[int, int] | None = None
    ) -> tuple[np.ndarray, Any]:
        """`consume_dlpack` with the array API standard's keywords: the library's own
        `from_dlpack(obj, copy=copy, device=...)`, `device` given as a DLPack device tuple and
        passed as the library names that device. Returns (its logical values on the host, the
        library's own result), so a family can read the result again (`read_result`) after the
        producer's memory changed. Raise SkipExchange where the library's from_dlpack has no such
        keyword or no name for that device (capability "dlpack-copy" when it has)."""
        raise SkipExchange(f"{self.name}'s DLPack import takes no copy or device")

    def read_result(self, result: Any) -> np.ndarray:
        """The host values of a result of `consume_dlpack_with`, read again as it read them."""
        raise SkipExchange(f"{self.name}'s DLPack import takes no copy or device")

    def own_array(self, values: np.ndarray) -> Any:
        """The library's own device array of `values` (C-ordered, any shape, 0-d included),
        made by its public upload API the way its users make one (`cupy.asarray(values)`):
        what the adapter self-check (`adapters.selfcheck`) holds `produce` and `consume`
        against. Raise SkipExchange when the library has no such call."""
        raise SkipExchange(f"{self.name} has no array of its own to compare with")

    def own_values(self, obj: Any) -> np.ndarray:
        """The library's own host copy of `obj`, one of its own arrays (`cupy.asnumpy(obj)`),
        read without the CAI; raise SkipExchange when the library has no such call."""
        raise SkipExchange(f"{self.name} has no host copy of its own arrays")

    #: Kinds of this library's objects that cannot export (a CPU tensor, a sparse matrix, a
    #: tensor that requires grad), each built by `unexportable(kind)`: reading their attribute
    #: must raise AttributeError, so hasattr() is False [CAI-ATTR-RAISES-ATTRIBUTEERROR].
    unexportable_kinds: tuple[str, ...] = ()

    def unexportable(self, kind: str) -> Any:
        """An object of this library, of one of `unexportable_kinds`, that has no device data
        to export. Raise SkipExchange when it cannot be made here."""
        raise SkipExchange(f"{self.name} has no object of kind {kind!r} that cannot export")

    #: The library's settings that choose the CAI version it exports, as (setting, version):
    #: `produce_under(setting, ...)` makes an array whose interface is read with it set.
    export_settings: tuple[tuple[str, int], ...] = ()

    def produce_under(self, setting: str, values: np.ndarray, layout: Layout, typestr: str) -> Any:
        """`produce(values, layout, typestr)`, its interface read with `setting` (one of
        `export_settings`) in force. Raise SkipExchange when it cannot be set here."""
        raise SkipExchange(f"{self.name} has no export setting {setting!r}")

    def repro_produce(self) -> str:
        """Python source a run's per-record reproducer (`checks._sources`) uses to build the
        producer's object (optional; it may call caiconform). The standalone reproducers'
        lines, which may not, are `repro`'s."""
        return ""

    def repro_consume(self) -> str:
        """Python source a reproducer script uses for the consumer side (optional)."""
        return ""

    def repro_consume_dlpack(self) -> str:
        """Python source a reproducer script uses to import `obj` over DLPack (optional):
        sets `result`, a numpy array, as `repro_consume` does."""
        return ""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
