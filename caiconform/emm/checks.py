"""EMM checks that need a GPU, run inside the plugin's own process with the plugin installed.

`GpuChecks` runs the checks of every contract area (`caiconform.emm.gpu`: one mixin each) against
the live plugin instance Numba made for the current context, in the order `run` lists, and emits
`CheckResult`s as it goes (so a crash later in the run keeps what was already learned).
Observations go through the CUDA driver (cuda.bindings), not through the plugin: the pointer's
device and allocation come from cuPointerGetAttribute and cuMemGetAddressRange, the data from
copies Numba makes.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

from caiconform.emm.gpu.binding import BindingChecks
from caiconform.emm.gpu.defer import DeferChecks
from caiconform.emm.gpu.host_memory import HostMemoryChecks
from caiconform.emm.gpu.ipc import IpcChecks
from caiconform.emm.gpu.lifecycle import InitializeResetChecks
from caiconform.emm.gpu.memalloc import MemallocChecks
from caiconform.emm.gpu.memory_info import MemoryInfoChecks

__all__ = ["GpuChecks"]


class GpuChecks(
    BindingChecks,
    MemallocChecks,
    HostMemoryChecks,
    MemoryInfoChecks,
    IpcChecks,
    DeferChecks,
    InitializeResetChecks,
):
    """The checks of one plugin class in this process, every contract area's
    (`emm.gpu.base.GpuCheckBase` says what it is made with); `emit` receives each result."""

    def run(self, on_start: Callable[[str, str], None] | None = None) -> None:
        """Run every check group; `on_start(check, rule)` is told which one is about to run,
        so a crash can be pinned on it."""
        started = on_start or (lambda check, rule: None)
        started("binding", "EMM-ONE-INSTANCE-PER-CONTEXT")
        ctx = self.cuda.current_context()
        self.ctx = ctx
        self.mgr = ctx.memory_manager
        self._check_binding()
        for check, rule, body in (
            ("allocation-paths", "EMM-NUMBA-NO-DIRECT-ALLOC", self._check_paths),
            ("fresh-process", "EMM-SET-ENV", self._check_fresh_process),
            ("numba-uses-plugin", "EMM-NUMBA-NO-DIRECT-ALLOC", self._check_numba_uses_plugin),
            ("memalloc", "EMM-ALLOC-VALID", self._check_memalloc),
            ("memalloc-impossible", "EMM-ALLOC-VALID", self._check_impossible),
            ("finalizer", "EMM-POINTER-FINALIZER", self._check_finalizer),
            ("host-memory", "EMM-ALLOC-POINTER-OBJECT", self._check_host_memory),
            ("memory-info", "EMM-MEMORYINFO-TYPE", self._check_memory_info),
            ("ipc", "EMM-IPC-HANDLE", self._check_ipc),
            ("ipc-cai-import", "EMM-IPCHANDLE-OFFSET", self._check_ipc_imported),
            ("lifecycle-routing", "EMM-NUMBA-IPC-ROUTED", self._check_routing),
            ("defer-cleanup", "EMM-DEFER-CLEANUP", self._check_defer),
            ("initialize", "EMM-INITIALIZE-IDEMPOTENT", self._check_initialize),
            ("reset-before-initialize", "EMM-RESET-BEFORE-INITIALIZE", self._check_reset_early),
            ("reset", "EMM-RESET-FREES", self._check_reset),
            ("reset-routed", "EMM-NUMBA-RESET-ROUTED", self._check_reset_routed),
        ):
            started(check, rule)
            self._guard(check, rule, body)
            gc.collect()
