"""defer_cleanup: frees deferred while its context manager is held, done once it is left."""

from __future__ import annotations

import gc

from caiconform.emm.gpu.base import (
    BIG,
    INVISIBLE,
    SLACK,
    GpuCheckBase,
    free_bytes,
)
from caiconform.emm.result import failed, passed, skipped


class DeferChecks(GpuCheckBase):
    """defer_cleanup."""

    def _check_defer(self) -> None:
        mgr = self.mgr

        class Sentinel(Exception):
            pass

        try:
            with mgr.defer_cleanup(), mgr.defer_cleanup():
                raise Sentinel
        except Sentinel:
            self.emit(
                passed(
                    "defer-nests-reraises",
                    "EMM-DEFER-CLEANUP",
                    "nested twice; the exception came through",
                )
            )
        except Exception as exc:
            self.emit(
                failed(
                    "defer-nests-reraises",
                    "EMM-DEFER-CLEANUP",
                    f"{type(exc).__name__}: {exc}",
                    "the raised exception",
                )
            )
        if isinstance(mgr, self.api.host_only):
            with mgr.defer_cleanup():
                held = mgr.deallocations.is_disabled
            if held:
                self.emit(
                    passed(
                        "hostonly-defer-super",
                        "EMM-HOSTONLY-DEFER-SUPER",
                        "host deallocations disabled inside",
                    )
                )
            else:
                self.emit(
                    failed(
                        "hostonly-defer-super",
                        "EMM-HOSTONLY-DEFER-SUPER",
                        "host deallocations still enabled inside",
                        "super().defer_cleanup() held",
                    )
                )
        log = getattr(mgr, "allocation_log", None)
        if log is not None and hasattr(log, "is_live"):
            with mgr.defer_cleanup():
                mem = mgr.memalloc(4096)
                address = int(mem.device_pointer)
                del mem
                gc.collect()
                inside = log.is_live(address)
            gc.collect()
            if log.is_live(address):
                self.emit(
                    failed(
                        "defer-frees-after-exit",
                        "EMM-DEFER-CLEANUP",
                        "still live",
                        "freed once the outermost defer_cleanup exited",
                    )
                )
            else:
                when = "deferred to the exit" if inside else "freed at once inside"
                self.emit(
                    passed("defer-frees-after-exit", "EMM-DEFER-CLEANUP", f"allocation log: {when}")
                )
            return
        before = free_bytes()
        with mgr.defer_cleanup():
            mem = mgr.memalloc(BIG)
            visible = before - free_bytes() >= BIG - SLACK
            del mem
            gc.collect()
        gc.collect()
        after = free_bytes()
        check = "defer-frees-after-exit"
        if not visible:
            self.emit(skipped(check, "EMM-DEFER-CLEANUP", INVISIBLE))
        elif after >= before - SLACK:
            self.emit(
                passed(
                    check, "EMM-DEFER-CLEANUP", f"cuMemGetInfo free back within {SLACK >> 20} MiB"
                )
            )
        else:
            self.emit(
                skipped(
                    check,
                    "EMM-DEFER-CLEANUP",
                    f"{(before - after) >> 20} MiB not back in cuMemGetInfo after exit; "
                    "a pool or a lazy free queue may keep it, so this is not judged",
                )
            )
