"""caiconform.cuda: a thin, checked layer over cuda.core and cuda.bindings.

Importing this package loads no CUDA library; each function imports the driver bindings when
it is called, so a CPU-only machine can import caiconform and ask `gpu_available()`.
"""

from caiconform.cuda.device import (
    context_healthy,
    current_device,
    device_count,
    device_info,
    ensure_context,
    gpu_available,
    synchronize,
)
from caiconform.cuda.errors import CUDAError, call

__all__ = [
    "CUDAError",
    "call",
    "context_healthy",
    "current_device",
    "device_count",
    "device_info",
    "ensure_context",
    "gpu_available",
    "synchronize",
    "spin",
    "write_after_spin",
]


def __getattr__(name: str):
    """`spin` and `write_after_spin` load numpy and the kernel source only when first used."""
    if name in ("spin", "write_after_spin"):
        from caiconform.cuda import pending

        return getattr(pending, name)
    raise AttributeError(f"module 'caiconform.cuda' has no attribute {name!r}")
