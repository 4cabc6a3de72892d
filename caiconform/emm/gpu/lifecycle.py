"""initialize and reset: initialize idempotent, reset before initialize, reset freeing the
plugin's memory (a HostOnlyCUDAMemoryManager's host allocations too), and Numba routing its own
lifecycle calls to the plugin."""

from __future__ import annotations

import gc

import numpy as np

from caiconform.emm.gpu.base import (
    BIG,
    INVISIBLE,
    SLACK,
    GpuCheckBase,
    allocation_range,
    free_bytes,
    pattern,
)
from caiconform.emm.lifecycle import LifecycleChecks
from caiconform.emm.result import failed, passed, skipped


class InitializeResetChecks(GpuCheckBase):
    """initialize, reset, and Numba's routing of them."""

    def _routing(self) -> LifecycleChecks:
        rec = self.recorder
        return LifecycleChecks(
            self.cuda,
            self.emit,
            plugin_in_use=rec is not None,
            calls=None if rec is None else (lambda: rec.calls),
        )

    def _check_routing(self) -> None:
        """get_memory_info and get_ipc_handle reach the plugin, and a second device's context
        initializes its instance first (`lifecycle.LifecycleChecks`)."""
        self._routing().run(("memory-info-routed", "ipc-handle-routed", "initialize-other-context"))

    def _check_reset_routed(self) -> None:
        """Context.reset() reaches the plugin's reset; last, as it cleans up every allocation."""
        self._routing().run(("reset-routed",))

    def _check_initialize(self) -> None:
        mem = self.mgr.memalloc(4096)
        data = pattern(4096, 5)
        self._write(mem, data)
        for _ in range(3):
            self.mgr.initialize()
        allocation_range(int(mem.device_pointer))
        if np.array_equal(self._read(mem, 4096), data):
            self.emit(
                passed(
                    "initialize-idempotent",
                    "EMM-INITIALIZE-IDEMPOTENT",
                    "3 more initialize() calls; live allocation intact",
                )
            )
        else:
            self.emit(
                failed(
                    "initialize-idempotent",
                    "EMM-INITIALIZE-IDEMPOTENT",
                    "data changed",
                    "live allocations untouched",
                )
            )

    def _check_reset_early(self) -> None:
        fresh = self.plugin(context=self.ctx)
        fresh.reset()
        self.emit(
            passed(
                "reset-before-initialize",
                "EMM-RESET-BEFORE-INITIALIZE",
                "a fresh instance's reset() returned",
            )
        )

    def _check_reset(self) -> None:
        mgr = self.mgr
        host = None
        if isinstance(mgr, self.api.host_only):
            host = mgr.memhostalloc(4096, mapped=True)
        log = getattr(mgr, "allocation_log", None)
        before = free_bytes()
        big = mgr.memalloc(BIG)
        visible = before - free_bytes() >= BIG - SLACK
        address = int(big.device_pointer)
        mgr.reset()
        gc.collect()
        if host is not None:
            if len(mgr.allocations):
                self.emit(
                    failed(
                        "hostonly-reset-super",
                        "EMM-HOSTONLY-RESET-SUPER",
                        f"{len(mgr.allocations)} host allocations left",
                        "super().reset() cleared them",
                    )
                )
            else:
                self.emit(
                    passed(
                        "hostonly-reset-super",
                        "EMM-HOSTONLY-RESET-SUPER",
                        "host allocations cleared",
                    )
                )
        if log is not None and hasattr(log, "is_live"):
            freed, how = not log.is_live(address), "allocation log"
        else:
            freed, how = visible and free_bytes() >= before - SLACK, "cuMemGetInfo"
        del big, host
        gc.collect()
        mem = mgr.memalloc(4096)
        data = pattern(4096, 9)
        self._write(mem, data)
        works = np.array_equal(self._read(mem, 4096), data)
        if freed and works:
            self.emit(passed("reset", "EMM-RESET-FREES", f"freed ({how}); new allocation works"))
        elif works and how == "cuMemGetInfo":
            why = (
                INVISIBLE
                if not visible
                else (f"{BIG >> 20} MiB are not back in cuMemGetInfo; a pool may keep them")
            )
            self.emit(
                skipped(
                    "reset",
                    "EMM-RESET-FREES",
                    f"new allocation works, but the free is not judged: {why}",
                )
            )
        else:
            self.emit(
                failed(
                    "reset",
                    "EMM-RESET-FREES",
                    f"freed={freed} ({how}), new ok={works}",
                    "all memory freed, new allocations work",
                )
            )
