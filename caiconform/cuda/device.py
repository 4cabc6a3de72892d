"""Devices and contexts: is there a GPU, make its primary context current, is it still healthy.

Everything here works on the device's *primary* context, the one CuPy, PyTorch, Numba and
cuda.core share, so pointers handed between libraries in one process resolve in one context.
"""

from __future__ import annotations

import functools
import threading

from caiconform.cuda.errors import CUDAError, call

__all__ = [
    "NO_DRIVER_WORDS",
    "gpu_available",
    "missing_driver",
    "device_count",
    "ensure_context",
    "current_device",
    "context_healthy",
    "anchor_context",
    "synchronize",
    "device_info",
]

_local = threading.local()


@functools.cache
def gpu_available() -> tuple[bool, str]:
    """(True, "") when the CUDA driver loads and sees at least one device, else (False, why).

    Never raises: a machine without the NVIDIA driver is a normal answer, not an error. The
    answer is cached; the driver does not come and go within a process.
    """
    try:
        from cuda.bindings import driver
    except Exception as exc:  # missing or broken cuda-bindings install
        return False, f"cuda-bindings not importable: {type(exc).__name__}: {exc}"
    try:
        call(driver.cuInit, 0)
        count = call(driver.cuDeviceGetCount)
    except CUDAError as exc:
        return False, f"CUDA driver unusable: {exc}"
    except Exception as exc:  # the driver library is absent: DynamicLibNotFoundError, OSError
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return False, f"no NVIDIA driver: {first_line}"
    if count == 0:
        return False, "no CUDA device: cuDeviceGetCount returned 0"
    return True, ""


#: words (lower case) in an exception's message that say the CUDA driver or device is missing
NO_DRIVER_WORDS = (
    "cuinit",
    "nvidia driver",
    "cuda driver",
    "libcuda",
    "cuda-capable device",
    "cuda_error_no_device",
    "cudaerrornodevice",
    "cudaerrorinsufficientdriver",
)


def missing_driver(exc: BaseException) -> str | None:
    """Why `exc` means "no CUDA driver here" (a skip, not a library's answer), or None.

    Only on a machine where `gpu_available()` is False, and only when the exception, or one
    it was raised from, says so in its message (`cuInit failed ... no NVIDIA driver`): a
    GPU-free library that rejects an invalid dict without the driver still gives its answer.
    """
    seen: set[int] = set()
    chain: BaseException | None = exc
    while chain is not None and id(chain) not in seen:
        seen.add(id(chain))
        text = f"{type(chain).__name__}: {chain}"
        if any(word in text.lower() for word in NO_DRIVER_WORDS):
            ok, why = gpu_available()
            if ok:
                return None
            line = " ".join(text.split())
            return f"{why} ({line if len(line) <= 200 else line[:197] + '...'})"
        chain = chain.__cause__ or chain.__context__
    return None


def _require_gpu() -> None:
    ok, why = gpu_available()
    if not ok:
        raise CUDAError("cuInit", None, why)


def device_count() -> int:
    """Number of CUDA devices, 0 where there is no driver."""
    if not gpu_available()[0]:
        return 0
    from cuda.bindings import driver

    return call(driver.cuDeviceGetCount)


def ensure_context(device: int = 0) -> int:
    """Make `device`'s primary context current on this thread (once) and return the ordinal.

    Goes through cuda.core's Device so kernels compiled and launched with cuda.core and raw
    driver calls here see the same context.
    """
    current = getattr(_local, "device", None)
    if current == device:
        from cuda.bindings import driver

        ctx = call(driver.cuCtxGetCurrent)
        if ctx is not None and int(ctx) != 0 and int(ctx) == _local.ctx:
            return device
    _require_gpu()
    from cuda.bindings import driver
    from cuda.core import Device

    Device(device).set_current()
    if int(call(driver.cuCtxGetDevice)) != device:
        # cuda.core keeps its own per-thread record of the current device; when another library
        # (a runtime-API user such as torch or CuPy) moved the thread's context since, that
        # record can make set_current a no-op. Make the primary context current directly.
        call(driver.cuCtxSetCurrent, _primary_context(device))
    _local.device = device
    _local.ctx = int(call(driver.cuCtxGetCurrent))
    return device


_primaries: dict[int, object] = {}


def _primary_context(device: int):
    """`device`'s primary context, retained once per process (the context cuda.core uses)."""
    from cuda.bindings import driver

    if device not in _primaries:
        _primaries[device] = call(driver.cuDevicePrimaryCtxRetain, call(driver.cuDeviceGet, device))
    return _primaries[device]


def current_device() -> int:
    """Ordinal of the device whose context is current (making device 0's current if none is)."""
    from cuda.bindings import driver

    _require_gpu()
    ctx = call(driver.cuCtxGetCurrent)
    if ctx is None or int(ctx) == 0:
        return ensure_context(0)
    return int(call(driver.cuCtxGetDevice))


def synchronize() -> None:
    """Wait for all work in the current context (cuCtxSynchronize)."""
    from cuda.bindings import driver

    call(driver.cuCtxSynchronize)


def context_healthy() -> tuple[bool, str]:
    """(True, "") when the current context still works; (False, the error) after a sticky error.

    The runner calls this after each example: a sticky error (illegal address, launch failure)
    shows in cuCtxSynchronize, and a tiny allocation proves the context still serves requests
    (in a worker, from the context's anchor, `anchor_context`, so that it costs no ioctl).
    """
    ok, why = gpu_available()
    if not ok:
        return False, why
    from cuda.bindings import driver

    try:
        current_device()
        call(driver.cuCtxSynchronize)
        ptr = call(driver.cuMemAlloc, 1)
        call(driver.cuMemFree, ptr)
    except CUDAError as exc:
        return False, str(exc)
    return True, ""


#: per context (its handle), one byte of device memory kept for the process's life
#: (`anchor_context`)
_anchors: dict[int, int] = {}


def anchor_context() -> None:
    """Keep one byte of device memory in the current context for the process's life (once per
    context). In a context that holds no other device memory, cuMemAlloc(1) + cuMemFree cost
    7 ioctls into the NVIDIA driver (most of `context_healthy`'s time,
    benchmarks/bench_ioctls.py), and those take longer the more processes on the host make
    them, on any GPU (docs/performance.md). Anchored, the driver serves the check's byte, and the process's other small allocations, from memory it
    already holds. The runner's workers call it (`runner.health`); a process that resets its
    contexts itself (Numba's `cuda.close`, the EMM checks) has no use for it."""
    from cuda.bindings import driver

    ctx = int(call(driver.cuCtxGetCurrent))
    if ctx and ctx not in _anchors:
        _anchors[ctx] = int(call(driver.cuMemAlloc, 1))


def device_info(device: int = 0) -> dict:
    """Name, compute capability, memory and driver version of `device`, for env.json."""
    from cuda.bindings import driver

    _require_gpu()
    dev = call(driver.cuDeviceGet, device)
    name = call(driver.cuDeviceGetName, 256, dev)
    attr = driver.CUdevice_attribute
    major = call(
        driver.cuDeviceGetAttribute, attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev
    )
    minor = call(
        driver.cuDeviceGetAttribute, attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev
    )
    sms = call(driver.cuDeviceGetAttribute, attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)
    total = call(driver.cuDeviceTotalMem, dev)
    version = call(driver.cuDriverGetVersion)
    return {
        "ordinal": device,
        "name": name.split(b"\0", 1)[0].decode(errors="replace"),
        "compute_capability": f"{major}.{minor}",
        "multiprocessors": sms,
        "total_memory_bytes": int(total),
        "driver_cuda_version": f"{version // 1000}.{version % 1000 // 10}",
    }
