"""RMM as a CAI producer: `rmm.DeviceBuffer`, an untyped device allocation.

What RMM does, read in `rmm/pylibrmm/device_buffer.pyx` (rmm 26.10): `DeviceBuffer` exports
`__cuda_array_interface__` as a 1-D byte array, `{"data": (ptr, False), "shape": (size,),
"strides": None, "typestr": "|u1", "version": 0}`. A buffer is filled from host bytes with
`DeviceBuffer.to_device(bytes)`. So the producer covers `|u1` 1-D C arrays at offset 0 and
stream scenario `none`; every other request is a skip saying so (RMM has no typed arrays:
cuDF and CuPy build those on top of it). RMM is not a CAI consumer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from caiconform.adapters import _staging
from caiconform.adapters.base import Adapter, SkipExchange
from caiconform.spec.layout import Layout

__all__ = ["RmmAdapter"]


#: memory kinds RMM makes with its own resources (`caiconform.cuda.memkinds`) -> the resource
#: class of `rmm.mr`: CudaAsyncMemoryResource allocates with cudaMallocFromPoolAsync from a pool
#: of its own, ManagedMemoryResource with cudaMallocManaged
_RESOURCES = {"async-pool": "CudaAsyncMemoryResource", "managed": "ManagedMemoryResource"}
_made: dict[str, Any] = {}


def _resource(kind: str) -> Any:
    """This process's RMM resource of `kind` (made once), or None for the current device
    resource (device memory)."""
    if kind not in _RESOURCES:
        return None
    if kind not in _made:
        import rmm

        _made[kind] = getattr(rmm.mr, _RESOURCES[kind])()
    return _made[kind]


class RmmAdapter(Adapter):
    """`rmm.DeviceBuffer.to_device(values.tobytes())`; producer only."""

    name = "rmm"
    module = "rmm"
    distribution = "rmm-cu13"
    memory_kinds = ("device", *_RESOURCES)
    capabilities = frozenset({"produce"})

    def available(self) -> tuple[bool, str]:
        return _staging.on_gpu(super().available())

    def version(self) -> str | None:
        return _staging.distribution_version("rmm") or super().version()

    def produce(
        self, values: np.ndarray, layout: Layout, typestr: str, stream_scenario: str = "none"
    ) -> Any:
        values, dtype = _staging.check_request(
            "rmm", values, layout, typestr, stream_scenario, frozenset({"u1"})
        )
        if stream_scenario != "none":
            raise SkipExchange("rmm.DeviceBuffer.to_device finishes its copy: scenario 'none' only")
        if len(layout.shape) != 1 or not _staging.is_plain_c(layout, 1):
            raise SkipExchange(
                "rmm.DeviceBuffer exports one flat byte array: 1-d C layouts at offset 0 only"
            )
        import rmm

        from caiconform.cuda.device import synchronize
        from caiconform.cuda.memkinds import current_kind

        data = np.ascontiguousarray(values).view(np.uint8)
        mr = _resource(current_kind())
        if mr is None:
            return rmm.DeviceBuffer.to_device(data.tobytes())
        buffer = rmm.DeviceBuffer(ptr=data.ctypes.data, size=data.nbytes, mr=mr)
        synchronize()  # the copy from the host is done before the buffer is handed out
        return buffer

    def repro_produce(self) -> str:
        return "import rmm\nobj = rmm.DeviceBuffer.to_device(values.tobytes())\n"
