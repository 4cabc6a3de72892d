"""EMM checks that need no GPU: class shape, construction, interface version, registration.

The Numba names the checks compare against come in a `NumbaEMM` record, so the same checks run
against real numba-cuda (`NumbaEMM.load()`), real numba-cuda-mlir
(`NumbaEMM.load("numba-cuda-mlir")`: its `numba_cuda_mlir/numba_cuda/cudadrv/driver.py` keeps
numba-cuda's BaseCUDAMemoryManager, HostOnlyCUDAMemoryManager, NumbaCUDAMemoryManager,
OwnedPointer, `_memory_manager` and `set_memory_manager`, re-exported by
`numba_cuda_mlir.cuda`), or stand-in classes in CPU tests. Nothing here makes a CUDA call;
`cuda_probe`, when given, only *observes* whether the constructor did.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from caiconform.emm.lifecycle import check_interface_version_rejected
from caiconform.emm.result import CheckResult, failed, passed

__all__ = ["NumbaEMM", "NumbaUnavailable", "static_checks", "SUPPORTED_INTERFACE_VERSION"]

SUPPORTED_INTERFACE_VERSION = 1


class NumbaUnavailable(RuntimeError):
    """The Numba implementation cannot be imported here; the message says why."""


@dataclass
class NumbaEMM:
    """The parts of Numba an EMM check needs, and how to read and restore Numba's choice of
    memory manager (`get_manager` / `restore_manager` touch the module global that
    `set_memory_manager` sets, so a check can put back exactly what was there)."""

    base: type
    host_only: type
    memory_pointer: type
    owned_pointer: type
    mapped_memory: type
    pinned_memory: type
    memory_info: type
    ipc_handle: type
    default_manager: type
    set_memory_manager: Callable[[type], None]
    get_manager: Callable[[], Any]
    restore_manager: Callable[[Any], None]
    version: str = ""
    #: the `adapters.numba_impls` implementation these names come from
    implementation: str = "numba-cuda"

    @classmethod
    def load(cls, implementation: str = "numba-cuda") -> NumbaEMM:
        """The real thing from `implementation` (numba-cuda or numba-cuda-mlir);
        NumbaUnavailable if it does not import."""
        from caiconform.adapters.numba_impls import IMPLS, installed

        impl = IMPLS[implementation]
        try:
            cuda = impl.import_cuda()
            driver = impl.submodule("cudadrv.driver")
        except Exception as exc:
            raise NumbaUnavailable(
                f"{impl.name} not importable: {type(exc).__name__}: {exc}"
            ) from None
        version = installed(impl.name) or "unknown"

        def restore(previous: Any) -> None:
            driver._memory_manager = previous

        return cls(
            base=cuda.BaseCUDAMemoryManager,
            host_only=cuda.HostOnlyCUDAMemoryManager,
            memory_pointer=cuda.MemoryPointer,
            owned_pointer=driver.OwnedPointer,
            mapped_memory=cuda.MappedMemory,
            pinned_memory=cuda.PinnedMemory,
            memory_info=cuda.MemoryInfo,
            ipc_handle=cuda.IpcHandle,
            default_manager=driver.NumbaCUDAMemoryManager,
            set_memory_manager=cuda.set_memory_manager,
            get_manager=lambda: driver._memory_manager,
            restore_manager=restore,
            version=version,
            implementation=impl.name,
        )


def _defining_class(cls: type, name: str) -> type | None:
    for klass in cls.__mro__:
        if name in vars(klass):
            return klass
    return None


def static_checks(
    plugin: type, api: NumbaEMM, cuda_probe: Callable[[], str] | None = None
) -> tuple[list[CheckResult], Any]:
    """Run the checks that need no GPU; returns (results, the instance built with context=None,
    or None when construction failed).

    `cuda_probe()` describes the process's CUDA state (current context, active primary
    contexts); called before and after construction, a difference means the constructor made
    CUDA calls. Without a probe the construction is judged only by not raising.
    """
    results: list[CheckResult] = []
    name = f"{plugin.__module__}.{plugin.__qualname__}"

    if not issubclass(plugin, api.base):
        results.append(
            failed(
                "subclass",
                "EMM-SUBCLASS",
                f"{name} (bases {plugin.__mro__[1:]})",
                f"a subclass of {api.base.__qualname__}",
            )
        )
    else:
        left = sorted(getattr(plugin, "__abstractmethods__", ()))
        if left:
            results.append(failed("subclass", "EMM-SUBCLASS", f"abstract {left}", "none left"))
        else:
            results.append(
                passed("subclass", "EMM-SUBCLASS", [k.__name__ for k in plugin.__mro__[1:3]])
            )

    if issubclass(plugin, api.host_only):
        if "memalloc" in getattr(plugin, "__abstractmethods__", ()):
            results.append(
                failed(
                    "hostonly-memalloc",
                    "EMM-HOSTONLY-MEMALLOC",
                    "memalloc abstract",
                    "memalloc implemented",
                )
            )
        else:
            owner = _defining_class(plugin, "memalloc")
            results.append(
                passed(
                    "hostonly-memalloc",
                    "EMM-HOSTONLY-MEMALLOC",
                    f"memalloc from {owner.__qualname__ if owner else '?'}",
                )
            )

    instance = None
    before = cuda_probe() if cuda_probe else None
    try:
        instance = plugin(context=None)
    except Exception as exc:
        results.append(
            failed(
                "construct",
                "EMM-CONSTRUCT-NO-CUDA",
                f"{type(exc).__name__}: {exc}",
                "construction with context=None succeeds",
            )
        )
    else:
        after = cuda_probe() if cuda_probe else None
        if before != after:
            results.append(
                failed(
                    "construct",
                    "EMM-CONSTRUCT-NO-CUDA",
                    f"CUDA state {after}",
                    f"unchanged ({before})",
                )
            )
        else:
            how = f"CUDA state unchanged: {after}" if cuda_probe else "no CUDA probe here"
            results.append(passed("construct", "EMM-CONSTRUCT-NO-CUDA", how))

    if instance is not None:
        try:
            version = instance.interface_version
        except Exception as exc:
            version = f"{type(exc).__name__}: {exc}"
        if version == SUPPORTED_INTERFACE_VERSION and type(version) is int:
            results.append(passed("interface-version", "EMM-INTERFACE-VERSION", version))
        else:
            results.append(
                failed(
                    "interface-version",
                    "EMM-INTERFACE-VERSION",
                    repr(version),
                    SUPPORTED_INTERFACE_VERSION,
                )
            )

    results.append(_check_set_memory_manager(plugin, api))
    results.append(_check_defer_documented(plugin, api))
    results.append(check_interface_version_rejected(plugin, api))
    return results, instance


def _check_set_memory_manager(plugin: type, api: NumbaEMM) -> CheckResult:
    """set_memory_manager accepts the class and records it; the previous choice is restored."""
    previous = api.get_manager()
    try:
        api.set_memory_manager(plugin)
        chosen = api.get_manager()
    except Exception as exc:
        return failed(
            "set-memory-manager", "EMM-SET-FUNCTION", f"{type(exc).__name__}: {exc}", "accepted"
        )
    finally:
        api.restore_manager(previous)
    if chosen is not plugin:
        return failed("set-memory-manager", "EMM-SET-FUNCTION", chosen, plugin)
    return passed("set-memory-manager", "EMM-SET-FUNCTION", "accepted; previous manager restored")


def _check_defer_documented(plugin: type, api: NumbaEMM) -> CheckResult:
    """SHOULD: the plugin says how defer_cleanup behaves: its own (or an inherited
    implementation's) docstring, or the class or module docstring mentioning it."""
    owner = _defining_class(plugin, "defer_cleanup")
    if owner is not None and owner is not api.base and inspect.getdoc(vars(owner)["defer_cleanup"]):
        where = "own" if owner is plugin else f"inherited from {owner.__qualname__}"
        return passed("defer-documented", "EMM-DEFER-CLEANUP-DOCUMENTED", f"docstring ({where})")
    module = sys.modules.get(plugin.__module__)
    for text in (inspect.getdoc(plugin), inspect.getdoc(module) if module else None):
        if text and "defer_cleanup" in text:
            return passed("defer-documented", "EMM-DEFER-CLEANUP-DOCUMENTED", "class/module docs")
    return failed(
        "defer-documented",
        "EMM-DEFER-CLEANUP-DOCUMENTED",
        "no documentation found",
        "defer_cleanup behaviour documented",
    )
