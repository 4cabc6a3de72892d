"""RMM as a CAI producer and consumer: `rmm.DeviceBuffer`, an untyped device allocation.

What RMM does, read in `rmm/pylibrmm/device_buffer.pyx` (rmm 26.10): `DeviceBuffer` exports
`__cuda_array_interface__` as a 1-D byte array, `{"data": (ptr, False), "shape": (size,),
"strides": None, "typestr": "|u1", "version": 0}`. A buffer is filled from host bytes with
`DeviceBuffer.to_device(bytes)`. So the producer covers `|u1` 1-D C arrays at offset 0 and
stream scenario `none`; every other request is a skip saying so (RMM has no typed arrays:
cuDF and CuPy build those on top of it).

As a consumer, `DeviceBuffer.copy_from_device(cuda_ary, stream=DEFAULT_STREAM)` takes any CAI
object: it reads shape, strides and typestr, refuses more than one dimension and strides other
than the item size (ValueError), and copies `shape[0] * itemsize` bytes from the data pointer on
the given stream; it does not read `stream`. The adapter sizes the buffer from the dict (RMM
cannot: the object's size is what it is asked to read), copies it back with
`DeviceBuffer.copy_to_host()` and views the bytes as the dict's typestr (and descr), since RMM
keeps no element type. RMM is not installed on every GPU machine; the CPU tests drive this path
with a stand-in `rmm` module.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from caiconform.adapters import _staging
from caiconform.adapters._repro import Array, Repro, Snip
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


class _RmmRepro(Repro):
    """The adapter's calls as a reproducer writes them: `rmm.DeviceBuffer.to_device` (a plain
    1-d `|u1` buffer only) and `DeviceBuffer.copy_from_device(obj)`."""

    imports = ("import rmm",)
    distributions = {"rmm": "rmm"}

    def consume(self, array: Array | None) -> Snip | None:
        return Snip(
            "desc = obj.__cuda_array_interface__\n"
            'dtype = np.dtype(desc["typestr"])\n'
            'buffer = rmm.DeviceBuffer(size=int(np.prod(desc["shape"])) * dtype.itemsize)\n'
            "buffer.copy_from_device(obj)\n"
            'result = np.asarray(buffer.copy_to_host()).view(dtype).reshape(desc["shape"])',
            self.imports,
        )

    def produce(self, array: Array) -> Snip | None:
        if not array.plain or array.export_typestr != "|u1" or len(array.shape) != 1:
            return None
        return Snip("obj = rmm.DeviceBuffer.to_device(values.tobytes())", self.imports)


class RmmAdapter(Adapter):
    """Produces `rmm.DeviceBuffer.to_device(values.tobytes())`; consumes through
    `rmm.DeviceBuffer(size=n).copy_from_device(obj)`."""

    name = "rmm"
    module = "rmm"
    distribution = "rmm-cu13"
    memory_kinds = ("device", *_RESOURCES)
    capabilities = frozenset({"produce", "consume"})
    repro: Repro = _RmmRepro()

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

        data = _staging.c_ordered(values).view(np.uint8)
        mr = _resource(current_kind())
        if mr is None:
            return rmm.DeviceBuffer.to_device(data.tobytes())
        buffer = rmm.DeviceBuffer(ptr=data.ctypes.data, size=data.nbytes, mr=mr)
        synchronize()  # the copy from the host is done before the buffer is handed out
        return buffer

    def own_array(self, values: np.ndarray) -> Any:
        """`rmm.DeviceBuffer.to_device(values.tobytes())`: RMM holds bytes, not typed arrays."""
        import rmm

        return rmm.DeviceBuffer.to_device(values.tobytes())

    def own_values(self, obj: Any) -> np.ndarray:
        return np.asarray(obj.copy_to_host(), dtype=np.uint8)

    def consume(self, obj: Any) -> np.ndarray:
        import rmm

        wrapped = _staging.cai_only(obj)
        desc = wrapped.__cuda_array_interface__
        shape = tuple(desc["shape"])
        dtype = _dtype_of(desc)
        buffer = rmm.DeviceBuffer(size=math.prod(shape) * dtype.itemsize)
        buffer.copy_from_device(wrapped)
        raw = np.asarray(buffer.copy_to_host(), dtype=np.uint8)
        return raw.view(dtype).reshape(shape)

    def repro_produce(self) -> str:
        return "import rmm\nobj = rmm.DeviceBuffer.to_device(values.tobytes())\n"

    def repro_consume(self) -> str:
        return (
            "import math\n\nimport numpy as np\nimport rmm\n\n"
            "desc = obj.__cuda_array_interface__\n"
            "dtype = np.dtype(desc['typestr'])\n"
            "buffer = rmm.DeviceBuffer(size=math.prod(desc['shape']) * dtype.itemsize)\n"
            "buffer.copy_from_device(obj)\n"
            "result = buffer.copy_to_host().view(dtype).reshape(desc['shape'])\n"
        )


def _dtype_of(desc: dict) -> np.dtype:
    """The element type the adapter views RMM's bytes as: the typestr, with descr's named
    fields when it gives them for an item of that size (RMM itself keeps no element type)."""
    from caiconform.spec.dtypes import descr_dtype

    dtype = np.dtype(desc["typestr"])
    fields = descr_dtype(desc.get("descr")) if dtype.kind == "V" else None
    if fields is None or fields.names is None or fields.hasobject:
        return dtype
    return fields if fields.itemsize == dtype.itemsize else dtype
