"""Host memory: memhostalloc's and mempin's pointer objects, the flags the driver reports for
them, and mapped memory a device write reaches."""

from __future__ import annotations

import ctypes

import numpy as np

from caiconform.cuda.errors import call
from caiconform.emm.gpu.base import (
    GpuCheckBase,
    pointer_attribute,
)
from caiconform.emm.result import failed, passed

#: flags a device with unified addressing gives every cuMemHostAlloc allocation, asked or not
UNIFIED_IMPLIED = ("portable", "mapped")


def hostalloc_flags_missing(
    got: int, asked: dict[str, bool], bits: dict[str, int], unified: bool
) -> list[str]:
    """The cuMemHostAlloc flags asked for that cuMemHostGetFlags does not report, less those
    the driver implies.

    The driver's Unified Addressing section ("Automatic Mapping of Host Allocated Host
    Memory"): on a device with unified addressing, all host memory allocated with
    cuMemHostAlloc is accessible from all contexts on all devices whether or not
    CU_MEMHOSTALLOC_PORTABLE and CU_MEMHOSTALLOC_DEVICEMAP are given. The flags word is the
    driver's view of the allocation, not the request: a PORTABLE-only allocation (Numba's own
    memhostalloc's) can report 0x2, DEVICEMAP and no PORTABLE (docs/performance.md, "Figures
    behind the code").
    So under unified addressing a missing PORTABLE or DEVICEMAP bit is no finding (the mapped
    case is judged by a device write seen on the host instead); WRITECOMBINED stays judged.
    """
    return [
        name
        for name, on in asked.items()
        if on and not got & int(bits[name]) and not (unified and name in UNIFIED_IMPLIED)
    ]


def _unified_addressing(device: int) -> bool:
    from cuda.bindings import driver as cu

    attr = cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING
    return bool(call(cu.cuDeviceGetAttribute, attr, call(cu.cuDeviceGet, device)))


class HostMemoryChecks(GpuCheckBase):
    """memhostalloc and mempin."""

    def _check_host_memory(self) -> None:
        from cuda.bindings import driver as cu

        mapped_cls, pinned_cls = self.api.mapped_memory, self.api.pinned_memory
        flags = {
            "portable": cu.CU_MEMHOSTALLOC_PORTABLE,
            "mapped": cu.CU_MEMHOSTALLOC_DEVICEMAP,
            "wc": cu.CU_MEMHOSTALLOC_WRITECOMBINED,
        }
        unified = _unified_addressing(self.ctx.device.id)
        size = 4096
        for mapped, portable, wc in ((False, True, False), (True, False, True)):
            rule = "EMM-POINTER-MAPPED" if mapped else "EMM-POINTER-PINNED"
            check = f"memhostalloc(mapped={mapped})"
            mem = self.mgr.memhostalloc(size, mapped=mapped, portable=portable, wc=wc)
            want = mapped_cls if mapped else pinned_cls
            if not self._is_pointer(mem, want):
                self.emit(failed(check, rule, type(mem).__qualname__, want.__qualname__))
                continue
            got = int(call(cu.cuMemHostGetFlags, mem.host_pointer))
            asked = {"portable": portable, "mapped": mapped, "wc": wc}
            missing = hostalloc_flags_missing(got, asked, flags, unified)
            if missing:
                self.emit(failed(check, rule, f"flags {got:#x} lack {missing}", "flags as asked"))
                continue
            if mapped:
                call(cu.cuMemsetD8, cu.CUdeviceptr(int(mem.device_pointer)), 0x5A, size)
                call(cu.cuCtxSynchronize)
                raw = (ctypes.c_uint8 * size).from_address(int(mem.host_pointer))
                host = np.ctypeslib.as_array(raw)
                if not (host == 0x5A).all():
                    self.emit(
                        failed(
                            check,
                            rule,
                            "device writes not visible on the host",
                            "mapped memory shared",
                        )
                    )
                    continue
            self.emit(passed(check, rule, f"{type(mem).__qualname__}, flags {got:#x}"))
        for mapped in (False, True):
            rule = "EMM-POINTER-MAPPED" if mapped else "EMM-POINTER-PINNED"
            check = f"mempin(mapped={mapped})"
            owner = np.zeros(size * 2, dtype=np.uint8)
            mem = self.mgr.mempin(owner, owner.ctypes.data, owner.nbytes, mapped=mapped)
            want = mapped_cls if mapped else pinned_cls
            kind = pointer_attribute(owner.ctypes.data, "CU_POINTER_ATTRIBUTE_MEMORY_TYPE")
            if not self._is_pointer(mem, want):
                self.emit(failed(check, rule, type(mem).__qualname__, want.__qualname__))
            elif kind != int(cu.CUmemorytype.CU_MEMORYTYPE_HOST):
                self.emit(failed(check, rule, f"memory type {kind}", "registered host memory"))
            elif mapped and int(mem.device_pointer) != int(
                call(cu.cuMemHostGetDevicePointer, owner.ctypes.data, 0)
            ):
                self.emit(
                    failed(
                        check,
                        rule,
                        "device pointer differs from the driver's",
                        "cuMemHostGetDevicePointer's",
                    )
                )
            else:
                self.emit(passed(check, rule, type(mem).__qualname__))
            del mem
