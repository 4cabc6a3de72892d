"""NumPy as the host side of DLPack: a consumer importing a device array into host memory.

NumPy reads no CAI and holds no device memory, but `numpy.from_dlpack(x, device="cpu")`
(NumPy 2.1 and later) asks the producer for a capsule on the host: it calls
`x.__dlpack__(max_version=..., dl_device=(kDLCPU, 0), copy=None)` and wraps the host capsule it
gets. The array API standard's `__dlpack__` lets a producer make that host copy ("If the device
type cannot be handled by the producer, this function must raise BufferError"; with copy None
it "must reuse the existing memory buffer if possible and copy otherwise"), so the DLPack
families hold GPU producers to it through this consumer: the values NumPy gets are the values
the device array holds, or the producer refused with BufferError.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from caiconform.adapters._repro import Missing, Repro
from caiconform.adapters.base import Adapter, SkipExchange

__all__ = ["NumpyAdapter"]


class NumpyAdapter(Adapter):
    """`numpy.from_dlpack(obj, device="cpu")`: the producer's own host copy, over DLPack."""

    name = "numpy"
    module = "numpy"
    capabilities = frozenset({"consume-dlpack", "dlpack-copy"})
    repro: Repro = Missing(
        {
            "consume-dlpack": "the DLPack reproducers read device capsules; numpy asks the "
            "producer for a host copy, which they write no read of"
        }
    )
    consume_is_library_call = True

    def consume_dlpack(self, obj: Any) -> np.ndarray:
        try:
            return np.from_dlpack(obj, device="cpu").copy()
        except TypeError as exc:
            if "device" in str(exc):  # NumPy before 2.1 takes no device
                raise SkipExchange(f"numpy {np.__version__} from_dlpack takes no device") from exc
            raise

    def consume_dlpack_with(
        self, obj: Any, *, copy: bool | None = None, device: tuple[int, int] | None = None
    ) -> tuple[np.ndarray, Any]:
        """`numpy.from_dlpack(obj, copy=copy, device=...)` (numpy/_core/src/multiarray/dlpack.c,
        `from_dlpack(obj, *, copy=None, device=None)`: `copy` goes to `__dlpack__` as it is, a
        device, which must be "cpu", as `dl_device=(kDLCPU, 0)`). NumPy holds host memory
        only: kDLCPU is named "cpu"; a device array asked for on its own device, or without a
        device, is no import NumPy can make (a skip)."""
        if device is not None and tuple(int(d) for d in device) != (1, 0):
            raise SkipExchange(f"numpy holds host memory only: no device {tuple(device)}")
        if device is None and int(obj.__dlpack_device__()[0]) != 1:
            raise SkipExchange("numpy holds host memory only: a device array needs device='cpu'")
        result = np.from_dlpack(obj, copy=copy, device=None if device is None else "cpu")
        return result.copy(), result

    def read_result(self, result: Any) -> np.ndarray:
        return np.array(result, copy=True)

    def repro_consume_dlpack(self) -> str:
        return "import numpy as np\nresult = np.from_dlpack(obj, device='cpu')\n"
