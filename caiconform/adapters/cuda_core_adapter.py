"""cuda.core as a CAI consumer: `StridedMemoryView.from_cuda_array_interface`.

What cuda.core documents (the `StridedMemoryView` docstring in `cuda/core/_memoryview`):
`StridedMemoryView(obj, stream_ptr)` tries DLPack first, then the CAI;
`StridedMemoryView.from_cuda_array_interface(obj, stream_ptr)` uses the CAI only. For the CAI,
"a stream order will be established between the consumer stream and the producer stream (from
`__cuda_array_interface__()["stream"]`), as if `cudaStreamWaitEvent` is called"; `stream_ptr=-1`
opts out. The view's `strides` are in element counts, not bytes.

Read-back: `StridedMemoryView.copy_to` raises NotImplementedError ("Sorry, not supported") in
cuda.core 1.2.0, so the consumer copies the view's byte extent with the `Buffer` API instead —
`Buffer.from_handle(ptr + lo, hi - lo, owner=view)` copied with `Buffer.copy_to` into a pinned
host buffer from `LegacyPinnedMemoryResource` — on its own stream, the one handed to the view
as the consumer stream, and lays the bytes out in numpy at the view's strides. So the copy is
ordered after the producer's work only through the stream order cuda.core establishes.
cuda.core has no array type of its own, so it does not produce an array; its
`StridedMemoryView` type carries DLPack 1.3's C exchange API table, so for that protocol alone
(capability "dlpack-c") `produce` is a view over a reference array.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from caiconform.adapters import _staging
from caiconform.adapters._repro import Array, Repro, Snip
from caiconform.adapters.base import Adapter
from caiconform.spec.layout import byte_extent

__all__ = ["CudaCoreAdapter", "read_view", "write_view"]


def read_view(view: Any, stream: Any) -> np.ndarray:
    """The values a `StridedMemoryView` describes, copied to the host on `stream` (a cuda.core
    Stream) with the `Buffer` API (see the module docstring) and laid out in numpy."""
    from cuda.core import Buffer, LegacyPinnedMemoryResource

    dtype = np.dtype(view.dtype)
    shape = tuple(view.shape)
    if int(np.prod(shape)) == 0:
        return np.empty(shape, dtype=dtype)
    strides = None if view.strides is None else tuple(s * dtype.itemsize for s in view.strides)
    lo, hi = byte_extent(shape, strides, dtype.itemsize)
    source = Buffer.from_handle(int(view.ptr) + lo, hi - lo, owner=view)
    host = LegacyPinnedMemoryResource().allocate(hi - lo)
    source.copy_to(host, stream=stream)
    stream.sync()
    raw = np.frombuffer((ctypes.c_uint8 * (hi - lo)).from_address(int(host.handle)), np.uint8)
    values = np.ndarray(shape, dtype, buffer=raw, offset=-lo, strides=strides).copy()
    host.close()
    return values


def write_view(view: Any, new: np.ndarray, stream: Any) -> None:
    """Write `new` (a C-contiguous array of the view's shape and dtype) through a contiguous
    `StridedMemoryView`, with the same `Buffer` API as `read_view` (not
    `StridedMemoryView.copy_from`, whose sibling `copy_to` raises NotImplementedError in
    cuda.core 1.2.0); landed when this returns."""
    from cuda.core import Buffer, LegacyPinnedMemoryResource

    data = _staging.c_ordered(new).reshape(-1).view(np.uint8)  # the view's bytes, in C order
    if not data.nbytes:
        return
    host = LegacyPinnedMemoryResource().allocate(data.nbytes)
    raw = np.frombuffer((ctypes.c_uint8 * data.nbytes).from_address(int(host.handle)), np.uint8)
    raw[...] = data
    target = Buffer.from_handle(int(view.ptr), data.nbytes, owner=view)
    target.copy_from(host, stream=stream)
    stream.sync()
    host.close()


class _CudaCoreRepro(Repro):
    """The adapter's calls as a reproducer writes them: a `StridedMemoryView` of `obj` (from
    its CAI or its `__dlpack__`) on a stream of its own, read back with the driver, and a write
    through the view's pointer unless it is read-only."""

    imports = ("from cuda.core import Device", "from cuda.core.utils import StridedMemoryView")
    distributions = {"cuda.core": "cuda-core"}

    def consume(self, array: Array | None) -> Snip | None:
        return Snip(
            "device = Device()\n"
            "device.set_current()\n"
            "stream = device.create_stream()  # cuda.core orders it after the exported stream\n"
            "view = StridedMemoryView.from_cuda_array_interface(obj, stream_ptr=int(stream.handle))\n"
            "dtype = np.dtype(view.dtype)\n"
            "steps = None if view.strides is None else [s * dtype.itemsize for s in view.strides]\n"
            "result = read_at(int(view.ptr), tuple(view.shape), dtype, steps, int(stream.handle))",
            self.imports,
        )

    def consume_dlpack(self, array: Array) -> Snip | None:
        return Snip(
            "device = Device()\n"
            "device.set_current()\n"
            "stream = device.create_stream()  # handed to obj.__dlpack__ as the consumer stream\n"
            "view = StridedMemoryView.from_dlpack(obj, stream_ptr=int(stream.handle))\n"
            "dtype = np.dtype(view.dtype)\n"
            "steps = None if view.strides is None else [s * dtype.itemsize for s in view.strides]\n"
            "result = read_at(int(view.ptr), tuple(view.shape), dtype, steps, int(stream.handle))",
            self.imports,
        )

    def hold(self) -> Snip | None:
        return Snip(
            "view = StridedMemoryView.from_cuda_array_interface(obj, stream_ptr=-1)", self.imports
        )

    def produce_named_dlpack(self, array: Array) -> Snip | None:
        """cuda.core has no array type: the adapter's producer is a `StridedMemoryView` of a
        finished array (`from_dlpack(source, stream_ptr=-1)`). For an element type numpy has
        no code for (bfloat16, float8) the script's source is torch's tensor of it (torch's
        own lines); the view's type is what the C exchange API checks call."""
        from caiconform.adapters.torch_adapter import TorchAdapter

        if array.typestr not in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            return None
        source = TorchAdapter.repro.produce_named_dlpack(array)
        if source is None:
            return None
        return Snip(
            f"{source.code}\n"
            "torch.cuda.synchronize()  # the source's work finished, as the adapter's is\n"
            "obj = StridedMemoryView.from_dlpack(obj, stream_ptr=-1)  # cuda.core's view of it",
            (*source.imports, *self.imports),
        )

    def write(self, ndim: int) -> Snip | None:
        return Snip(
            "if view.readonly:\n"
            '    raise PermissionError("cuda.core exposes the view read-only")\n'
            "ck(cu.cuMemcpyHtoD(int(view.ptr), np.ascontiguousarray(new).ctypes.data, new.nbytes))",
            self.imports,
        )


class CudaCoreAdapter(Adapter):
    """Consumes through `cuda.core.utils.StridedMemoryView.from_cuda_array_interface`."""

    name = "cuda.core"
    module = "cuda.core"
    distribution = "cuda-core"
    capabilities = frozenset({"consume", "consume-dlpack", "dlpack-c"})
    repro: Repro = _CudaCoreRepro()

    def available(self) -> tuple[bool, str]:
        return _staging.on_gpu(super().available())

    def produce(
        self, values: np.ndarray, layout: Any, typestr: str, stream_scenario: str = "none"
    ) -> Any:
        """A `StridedMemoryView` over a reference array holding `values` in `layout`, made with
        `StridedMemoryView.from_dlpack(source, stream_ptr=-1)` (the source's work is finished):
        cuda.core has no array type, and its view's type carries DLPack's C exchange API table
        (capability "dlpack-c", the only producer capability claimed: no CAI or DLPack family
        makes cuda.core a producer)."""
        from cuda.core.utils import StridedMemoryView

        from caiconform.adapters.base import SkipExchange
        from caiconform.reference.producer import ReferenceArray

        if stream_scenario != "none":
            raise SkipExchange(f"cuda.core has no stream of its own for scenario {stream_scenario}")
        source = ReferenceArray(values, layout, typestr)
        source.synchronize()
        return StridedMemoryView.from_dlpack(source, stream_ptr=-1)

    def consume(self, obj: Any) -> np.ndarray:
        from cuda.core import Device
        from cuda.core.utils import StridedMemoryView

        device = Device()
        device.set_current()
        stream = device.create_stream()
        view = StridedMemoryView.from_cuda_array_interface(
            _staging.cai_only(obj), stream_ptr=int(stream.handle)
        )
        return read_view(view, stream)

    def consume_dlpack(self, obj: Any) -> np.ndarray:
        """`StridedMemoryView.from_dlpack(obj, stream_ptr=<a stream of ours>)`, read back as
        `consume` reads its view. cuda.core passes the consumer stream to `__dlpack__` as it
        is (its `StridedMemoryView` docstring), with `max_version` and, on TypeError, without;
        a bfloat16 view needs `ml_dtypes` for its dtype."""
        from cuda.core import Device
        from cuda.core.utils import StridedMemoryView

        device = Device()
        device.set_current()
        stream = device.create_stream()
        view = StridedMemoryView.from_dlpack(
            _staging.dlpack_only(obj), stream_ptr=int(stream.handle)
        )
        return read_view(view, stream)

    def repro_consume(self) -> str:
        return (
            "from caiconform.adapters.cuda_core_adapter import CudaCoreAdapter\n"
            "result = CudaCoreAdapter().consume(obj)  # StridedMemoryView + Buffer.copy_to\n"
        )

    def repro_consume_dlpack(self) -> str:
        return (
            "from caiconform.adapters.cuda_core_adapter import CudaCoreAdapter\n"
            "result = CudaCoreAdapter().consume_dlpack(obj)  # from_dlpack + Buffer.copy_to\n"
        )
