"""NVIDIA Warp as a CAI producer: `wp.array(values, device="cuda:0")`, C-contiguous only.

Warp arrays export `__cuda_array_interface__`. Warp reads other libraries' CAI objects when
they are passed to `wp.launch` as arguments of concretely typed array parameters (its
interoperability guide); a consumer would need one kernel per dtype, which is not written here
because Warp is not installed on any machine this project runs on, so it could not be tested.

Warp has no complex dtypes; its scalar types cover bool, the signed and unsigned integers and
float16/32/64.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from caiconform.adapters import _staging
from caiconform.adapters.base import Adapter, SkipExchange
from caiconform.spec.layout import Layout

__all__ = ["WarpAdapter", "SUPPORTED"]

SUPPORTED = frozenset(k for k in _staging.ALL_DTYPE_KEYS if not k.startswith("c"))


class WarpAdapter(Adapter):
    """Warp arrays on the first CUDA device; producer only."""

    name = "warp"
    module = "warp"
    distribution = "warp-lang"
    capabilities = frozenset({"produce"})

    def available(self) -> tuple[bool, str]:
        return _staging.on_gpu(super().available())

    def produce(
        self, values: np.ndarray, layout: Layout, typestr: str, stream_scenario: str = "none"
    ) -> Any:
        values, dtype = _staging.check_request(
            "warp", values, layout, typestr, stream_scenario, SUPPORTED
        )
        if stream_scenario != "none":
            raise SkipExchange("the warp adapter covers stream scenario 'none' only")
        if not _staging.is_plain_c(layout, dtype.itemsize):
            raise SkipExchange("the warp adapter produces C-contiguous arrays at offset 0 only")
        import warp as wp

        array = wp.array(np.ascontiguousarray(values), device="cuda:0")
        wp.synchronize_device("cuda:0")
        return array
