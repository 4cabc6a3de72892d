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
from caiconform.adapters._plain import PlainProducer

__all__ = ["WarpAdapter", "SUPPORTED"]

SUPPORTED = frozenset(k for k in _staging.ALL_DTYPE_KEYS if not k.startswith("c"))


class WarpAdapter(PlainProducer):
    """Warp arrays on the first CUDA device; producer only."""

    name = "warp"
    module = "warp"
    distribution = "warp-lang"
    supported = SUPPORTED

    def upload(self, values: np.ndarray) -> Any:
        import warp as wp

        array = wp.array(values, device="cuda:0")
        wp.synchronize_device("cuda:0")
        return array
