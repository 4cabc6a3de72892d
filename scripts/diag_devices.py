"""Diagnose the devices family in one process: other consumers first, then the reference one.

Run on a two-GPU machine: python3 scripts/diag_devices.py
"""

from __future__ import annotations

import numpy as np

from caiconform.checks import devices
from caiconform.cuda.errors import call


def main() -> None:
    from cuda.bindings import driver as cu

    from caiconform.cuda.device import ensure_context
    from caiconform.cuda.memory import address_range, pointer_info
    from caiconform.reference.producer import ReferenceArray
    from caiconform.spec.layout import Layout

    params = {"typestr": "<f4", "shape": [3, 5], "seed": 1}
    for consumer in ("cupy", "torch", "jax", "numba", "cuda.core", "reference"):
        try:
            result = devices.execute(params, None, consumer)
            print(consumer, result.outcome, result.message[:160])
        except Exception as exc:  # a diagnostic: show everything
            print(consumer, "raised", type(exc).__name__, exc)
    ref = ReferenceArray(np.ones((3, 5), np.float32), Layout((3, 5)), "<f4", device=1)
    ensure_context(0)
    ptr = ref.__cuda_array_interface__["data"][0]
    print("current device", int(call(cu.cuCtxGetDevice)), "pointer", pointer_info(ptr))
    print("range from device 0", address_range(ptr))
    ensure_context(1)
    print("after ensure_context(1): current", int(call(cu.cuCtxGetDevice)))
    print("range from device 1", address_range(ptr))


if __name__ == "__main__":
    main()
