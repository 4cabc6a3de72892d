"""NVIDIA Warp as a CAI producer (`wp.array(values, device="cuda:0")`, C-contiguous only) and
consumer (`wp.array(obj, device="cuda:0")` then `.numpy()`).

What Warp does, read in `warp/types.py` of warp-lang 1.3.3 (the version carried to the GPU
machine: newer wheels are too large for one transfer):
- export: `array.__cuda_array_interface__` gives data (ptr, False), shape, explicit strides,
  typestr and `version: 2` (no stream); a non-CUDA array raises AttributeError; it also
  exports `__dlpack__(stream=None)` (no `max_version`: legacy capsules only);
- import: `array(data=obj)` on a CUDA device, when `obj` has `__cuda_array_interface__`, wraps
  the pointer zero-copy (`_init_from_ptr`) with the dict's shape, strides and the Warp type of
  `np.dtype(typestr)`, keeping a reference to `obj`; it looks at neither `stream`, the read-only
  flag nor `mask`. It first refuses any `data` without `__len__` ("Data must be a sequence or
  array"), which the CAI does not require: the consumer here hands Warp the CAI-only wrapper
  with a `__len__` added (the first dimension), and that refusal is stated, not re-measured.

Warp has no complex dtypes; its scalar types cover bool, the signed and unsigned integers and
float16/32/64.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from caiconform.adapters import _staging
from caiconform.adapters._plain import PlainProducer
from caiconform.adapters._repro import Array, Repro, Snip

__all__ = ["WarpAdapter", "SUPPORTED"]

SUPPORTED = frozenset(k for k in _staging.ALL_DTYPE_KEYS if not k.startswith("c"))


class _WarpRepro(Repro):
    """The adapter's calls as a reproducer writes them: `wp.array(values)` (plain arrays
    only), `wp.array(obj)` of an object with the `__len__` Warp asks for, and
    `wp.from_dlpack(obj)`."""

    imports = ("import warp as wp",)
    distributions = {"warp": "warp-lang"}

    def consume(self, array: Array | None) -> Snip | None:
        return Snip(
            "class Sized(Exported):  # Warp asks the object for len() before its CAI\n"
            "    def __len__(self):\n"
            '        return self.desc["shape"][0]\n\n\n'
            'result = wp.array(Sized(obj.__cuda_array_interface__, obj), device="cuda:0").numpy()',
            self.imports,
        )

    def consume_dlpack(self, array: Array) -> Snip | None:
        return Snip("result = wp.from_dlpack(obj).numpy()", self.imports)

    def produce(self, array: Array) -> Snip | None:
        return (
            Snip('obj = wp.array(values, device="cuda:0")', self.imports) if array.plain else None
        )


class WarpAdapter(PlainProducer):
    """Warp arrays on the first CUDA device."""

    name = "warp"
    module = "warp"
    distribution = "warp-lang"
    supported = SUPPORTED
    consume_is_library_call = True
    capabilities = frozenset({"produce", "consume", "dlpack", "consume-dlpack"})
    repro: Repro = _WarpRepro()

    def upload(self, values: np.ndarray) -> Any:
        import warp as wp

        array = wp.array(values, device="cuda:0")
        wp.synchronize_device("cuda:0")
        return array

    def own_array(self, values: np.ndarray) -> Any:
        return self.upload(values)  # wp.array(values, device="cuda:0"), as Warp's users upload

    def own_values(self, obj: Any) -> np.ndarray:
        return obj.numpy()

    def consume(self, obj: Any) -> np.ndarray:
        import warp as wp

        array = wp.array(_Sized(_staging.cai_only(obj)), device="cuda:0")
        return array.numpy()

    def consume_dlpack(self, obj: Any) -> np.ndarray:
        """`wp.from_dlpack(obj).numpy()`: Warp's DLPack import (`warp/dlpack.py`, `from_dlpack`:
        `__dlpack__(stream=...)`, the device's current stream or 1 for the null one, no
        `max_version`). `wp.array(obj)` reads only the CAI (`types.py`, `_init_from_data`)."""
        import warp as wp

        return wp.from_dlpack(_staging.dlpack_only(obj)).numpy()

    def repro_consume_dlpack(self) -> str:
        return "import warp as wp\nresult = wp.from_dlpack(obj).numpy()\n"


class _Sized:
    """The CAI-only view of a producer's object with the `__len__` Warp asks for."""

    __slots__ = ("inner",)

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    @property
    def __cuda_array_interface__(self) -> dict:
        return self.inner.__cuda_array_interface__

    def __len__(self) -> int:
        shape = self.inner.__cuda_array_interface__["shape"]
        if not shape:
            raise TypeError("len() of a 0-d array")  # as numpy answers
        return int(shape[0])
