"""cuda.core as a CAI consumer: `StridedMemoryView.from_cuda_array_interface`.

What cuda.core documents (the `StridedMemoryView` docstring in `cuda/core/_memoryview`):
`StridedMemoryView(obj, stream_ptr)` tries DLPack first, then the CAI;
`StridedMemoryView.from_cuda_array_interface(obj, stream_ptr)` uses the CAI only. For the CAI,
"a stream order will be established between the consumer stream and the producer stream (from
`__cuda_array_interface__()["stream"]`), as if `cudaStreamWaitEvent` is called"; `stream_ptr=-1`
opts out. The view's `strides` are in element counts, not bytes. `copy_to(other, stream)`
copies a view into another (device-to-host included); `from_array_interface` views a numpy
array.

The consumer makes a stream of its own on the current device, views the object with that
stream as the consumer stream, and copies the view into a numpy array on that same stream,
so the copy is ordered after the producer's work only through the stream order cuda.core
establishes. cuda.core has no array type of its own, so it does not produce.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from caiconform.adapters import _staging
from caiconform.adapters.base import Adapter, SkipExchange

__all__ = ["CudaCoreAdapter"]


class CudaCoreAdapter(Adapter):
    """Consumes through `cuda.core.utils.StridedMemoryView.from_cuda_array_interface`."""

    name = "cuda.core"
    module = "cuda.core"
    distribution = "cuda-core"
    capabilities = frozenset({"consume"})

    def consume(self, obj: Any) -> np.ndarray:
        from cuda.core import Device
        from cuda.core.utils import StridedMemoryView

        device = Device()
        device.set_current()
        stream = device.create_stream()
        view = StridedMemoryView.from_cuda_array_interface(
            _staging.cai_only(obj), stream_ptr=int(stream.handle)
        )
        host = np.empty(view.shape, dtype=view.dtype)
        if host.size == 0:
            return host
        if not hasattr(view, "copy_to") or not hasattr(StridedMemoryView, "from_array_interface"):
            raise SkipExchange(
                "this cuda.core has no StridedMemoryView.copy_to / from_array_interface to read "
                "the view back"
            )
        view.copy_to(StridedMemoryView.from_array_interface(host), stream=stream)
        stream.sync()
        return host

    def repro_consume(self) -> str:
        return (
            "import numpy as np\n"
            "from cuda.core import Device\n"
            "from cuda.core.utils import StridedMemoryView\n"
            "dev = Device(); dev.set_current(); s = dev.create_stream()\n"
            "view = StridedMemoryView.from_cuda_array_interface(obj, stream_ptr=int(s.handle))\n"
            "result = np.empty(view.shape, view.dtype)\n"
            "view.copy_to(StridedMemoryView.from_array_interface(result), stream=s); s.sync()\n"
        )
