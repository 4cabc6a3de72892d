"""get_memory_info: a MemoryInfo of the device's free and total memory, or a RuntimeError where
the plugin has none to give."""

from __future__ import annotations

from caiconform.cuda.errors import call
from caiconform.emm.gpu.base import (
    GpuCheckBase,
)
from caiconform.emm.result import failed, passed, skipped


class MemoryInfoChecks(GpuCheckBase):
    """get_memory_info."""

    def _check_memory_info(self) -> None:
        from cuda.bindings import driver as cu

        try:
            info = self.mgr.get_memory_info()
        except RuntimeError as exc:
            name = type(exc).__name__
            self.emit(
                passed(
                    "memory-info-raises",
                    "EMM-MEMORY-INFO-RAISES",
                    f"raised {name} (a RuntimeError)",
                )
            )
            self.emit(
                failed(
                    "memory-info-device",
                    "EMM-MEMORY-INFO",
                    f"raised {name}",
                    "free and total memory",
                )
            )
            self.emit(
                skipped(
                    "memory-info",
                    "EMM-MEMORYINFO-TYPE",
                    f"get_memory_info raised {name}: no MemoryInfo to judge",
                )
            )
            return
        except Exception as exc:
            self.emit(
                failed(
                    "memory-info-raises",
                    "EMM-MEMORY-INFO-RAISES",
                    f"{type(exc).__name__}: {exc}",
                    "a MemoryInfo or a RuntimeError",
                )
            )
            return
        self.emit(
            skipped(
                "memory-info-raises",
                "EMM-MEMORY-INFO-RAISES",
                "get_memory_info returned a result: nothing to raise",
            )
        )
        _, total = call(cu.cuMemGetInfo)
        if not isinstance(info, self.api.memory_info) or not 0 <= info.free <= info.total:
            self.emit(
                failed(
                    "memory-info",
                    "EMM-MEMORYINFO-TYPE",
                    repr(info),
                    "MemoryInfo(free, total), 0 <= free <= total",
                )
            )
            return
        self.emit(passed("memory-info", "EMM-MEMORYINFO-TYPE", repr(info)))
        if info.total != int(total):
            self.emit(
                failed(
                    "memory-info-device",
                    "EMM-MEMORY-INFO",
                    f"total {info.total}",
                    f"the device's total {int(total)}",
                )
            )
        else:
            self.emit(passed("memory-info-device", "EMM-MEMORY-INFO", "matches cuMemGetInfo"))
