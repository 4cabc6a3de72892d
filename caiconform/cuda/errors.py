"""Checked CUDA calls: every failure becomes a `CUDAError` naming the call and the error.

cuda.bindings returns `(CUresult, *values)` tuples instead of raising; a forgotten check there
turns a refused pointer into garbage data. `call()` is the only way this package talks to the
driver, so no result code goes unread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["CUDAError", "call", "error_name", "STICKY_ERRORS"]

#: Error names after which the context is unusable for the rest of the process (the CUDA
#: programming guide's "sticky" errors): any later call in that context fails the same way.
STICKY_ERRORS = frozenset(
    {
        "CUDA_ERROR_ILLEGAL_ADDRESS",
        "CUDA_ERROR_LAUNCH_FAILED",
        "CUDA_ERROR_MISALIGNED_ADDRESS",
        "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        "CUDA_ERROR_INVALID_ADDRESS_SPACE",
        "CUDA_ERROR_INVALID_PC",
        "CUDA_ERROR_HARDWARE_STACK_ERROR",
        "CUDA_ERROR_ASSERT",
        "CUDA_ERROR_LAUNCH_TIMEOUT",
        "CUDA_ERROR_ECC_UNCORRECTABLE",
        "CUDA_ERROR_CONTEXT_IS_DESTROYED",
    }
)


def error_name(code: Any) -> str:
    """The CUresult's name (e.g. "CUDA_ERROR_INVALID_VALUE"), or the number if it has none."""
    name = getattr(code, "name", None)
    if name:
        return str(name)
    from cuda.bindings import driver

    try:
        return driver.CUresult(int(code)).name
    except ValueError:
        return f"CUresult {int(code)}"


class CUDAError(RuntimeError):
    """A CUDA driver, runtime or NVRTC call failed.

    `call` is the API function ("cuMemGetAddressRange"), `code` the numeric result, `name` its
    symbolic name, `detail` extra context (a compile log, the pointer asked about).
    """

    def __init__(self, call: str, code: Any, detail: str = "") -> None:
        self.call = call
        self.code = int(code) if code is not None else -1
        self.name = error_name(code) if code is not None else "ERROR"
        self.detail = detail
        suffix = f": {detail}" if detail else ""
        super().__init__(f"{call} failed with {self.name} ({self.code}){suffix}")

    @property
    def sticky(self) -> bool:
        """True when the error poisons the context (see STICKY_ERRORS)."""
        return self.name in STICKY_ERRORS

    def __reduce__(self):
        return (type(self), (self.call, self.code, self.detail))


def call(fn: Callable[..., tuple], *args: Any, detail: str = "") -> Any:
    """Call a cuda.bindings function and return its values, raising CUDAError on failure.

    Returns None for calls that only return a status, the value itself for one value, and the
    tuple for several.
    """
    result = fn(*args)
    code, values = result[0], result[1:]
    if int(code) != 0:
        raise CUDAError(getattr(fn, "__name__", repr(fn)), code, detail)
    if not values:
        return None
    return values[0] if len(values) == 1 else values
