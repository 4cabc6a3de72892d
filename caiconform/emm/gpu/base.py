"""What the GPU checks of every contract area share: `GpuCheckBase` (the plugin, Numba's EMM
API, the results' sink, the current context and instance, device reads and writes through Numba,
one check run so an exception fails only it) and the driver's own view of memory
(`allocation_range`, `pointer_attribute`, `free_bytes`), read through cuda.bindings, not the
plugin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from caiconform.cuda.errors import call
from caiconform.emm.paths import Recorder
from caiconform.emm.result import CheckResult, failed, passed
from caiconform.emm.static import NumbaEMM

#: bytes allocated when a free can only be seen in cuMemGetInfo
BIG = 256 << 20
#: how far cuMemGetInfo may be from the bytes allocated or freed
SLACK = 64 << 20
#: why a free is not judged when its allocation never showed in cuMemGetInfo
INVISIBLE = (
    "the allocation never showed in cuMemGetInfo (a pool served it), so its free cannot be "
    "seen there either"
)


def pattern(n: int, seed: int) -> np.ndarray:
    """`n` bytes of a pattern that differs with `seed`, to write and read back."""
    return ((np.arange(n, dtype=np.uint64) * 131 + seed * 17 + 7) % 251).astype(np.uint8)


def free_bytes() -> int:
    """The device's free bytes as the driver counts them (cuMemGetInfo)."""
    from cuda.bindings import driver as cu

    return int(call(cu.cuMemGetInfo)[0])


def allocation_range(address: int) -> tuple[int, int]:
    """(base, size) of the driver allocation holding `address` (cuMemGetAddressRange)."""
    from cuda.bindings import driver as cu

    base, size = call(cu.cuMemGetAddressRange, cu.CUdeviceptr(address), detail=f"0x{address:x}")
    return int(base), int(size)


def pointer_attribute(address: int, name: str) -> int:
    """The driver's pointer attribute `name` (a CUpointer_attribute) of `address`."""
    from cuda.bindings import driver as cu

    attr = getattr(cu.CUpointer_attribute, name)
    return int(call(cu.cuPointerGetAttribute, attr, cu.CUdeviceptr(address)))


class GpuCheckBase:
    """The checks of one plugin class in this process; `emit` receives each result.

    `recorder` (installed before the context was made) watches the plugin's methods and Numba's
    driver allocators for the allocation-path checks; None for Numba's own manager, where no
    plugin is in use. `target` is the (module, qualname) the user named, for the fresh process;
    `via_env`: the module names the class as ``_numba_memory_manager``. `ctx` and `mgr` (the
    current context and its memory manager) are set when the checks run (`GpuChecks.run`).
    """

    ctx: Any
    mgr: Any

    def __init__(
        self,
        plugin: type,
        api: NumbaEMM,
        emit: Callable[[CheckResult], None],
        *,
        recorder: Recorder | None = None,
        target: tuple[str, str] | None = None,
        via_env: bool = False,
    ) -> None:
        from caiconform.adapters.numba_impls import IMPLS

        self.numba = IMPLS[api.implementation]
        self.cuda = self.numba.import_cuda()
        self.plugin = plugin
        self.api = api
        self.emit = emit
        self.recorder = recorder
        self.target = target or (plugin.__module__, plugin.__qualname__)
        self.via_env = via_env

    def _array(self, mem: Any, nbytes: int):
        devicearray = self.numba.submodule("cudadrv.devicearray")
        return devicearray.DeviceNDArray((nbytes,), (1,), np.uint8, gpu_data=mem)

    def _write(self, mem: Any, data: np.ndarray) -> None:
        self._array(mem, data.size).copy_to_device(data)

    def _read(self, mem: Any, nbytes: int) -> np.ndarray:
        return self._array(mem, nbytes).copy_to_host()

    def _underlying(self, mem: Any) -> Any:
        """The MemoryPointer behind an OwnedPointer wrapper (Numba's own memalloc returns one)."""
        return mem._mem if isinstance(mem, self.api.owned_pointer) else mem

    def _is_pointer(self, mem: Any, kind: type) -> bool:
        if isinstance(mem, kind):
            return True
        return isinstance(mem, self.api.owned_pointer) and isinstance(mem._view, kind)

    def _guard(self, check: str, rule: str, body: Callable[[], None]) -> None:
        """Run one check; an exception the plugin raises is a failure of that check."""
        try:
            body()
        except Exception as exc:
            self.emit(failed(check, rule, f"{type(exc).__name__}: {exc}", "no exception"))

    def _emit_set(self, check: str, rule: str, problems: list[str], expected: str, over) -> None:
        """One result for a property checked over several cases; `over` names the cases."""
        if problems:
            self.emit(failed(check, rule, "; ".join(problems), expected))
        else:
            self.emit(passed(check, rule, over))

    def _not_a_plugin(self) -> str | None:
        if self.recorder is None:
            return "Numba's own memory manager: no EMM plugin is in use, so the rule does not apply"
        return None
