"""Take an export through one named consumer entry point, and read or write what it gave.

`caiconform.adapters.entries` says which public calls each library takes a CAI object through
and what its documentation promises about copying; this module makes those calls, the way a
user writes them, on the CAI-only view of the object (`_staging.cai_only`: the library sees
nothing but the interface). `take` returns a `Taken`: the library's result, a function reading
its values back to the host, and one writing new values through it with the library's own API
(synchronised before it returns), or None where the result cannot be written. Libraries are
imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from caiconform.adapters import _staging
from caiconform.adapters.base import SkipExchange

__all__ = ["Taken", "take"]


@dataclass
class Taken:
    """What an entry point returned (`result`, kept alive with the export it came from), how to
    read it back (`read`) and how to write `new` through it (`write`; None: not writable)."""

    result: Any
    read: Callable[[], np.ndarray]
    write: Callable[[np.ndarray], None] | None


def _dtype_shape(obj: Any) -> tuple[np.dtype, tuple[int, ...]]:
    desc = obj.__cuda_array_interface__
    return np.dtype(desc["typestr"]), tuple(desc["shape"])


def _cupy(entry: str, obj: Any) -> Taken:
    import cupy

    from caiconform.checks import _views

    if entry == "cupy.asarray":
        result = cupy.asarray(obj)
    elif entry == "cupy.array(copy=True)":
        result = cupy.array(obj, copy=True)
    elif entry == "dst[...] = obj":
        dtype, shape = _dtype_shape(obj)
        result = cupy.empty(shape, dtype)
        result[...] = obj
    elif entry == "ufunc argument":
        dtype, _shape = _dtype_shape(obj)
        result = cupy.multiply(obj, dtype.type(1))
    else:
        raise SkipExchange(f"cupy: no call known for entry point {entry!r}")
    cupy.cuda.Device().synchronize()
    return Taken(
        result,
        lambda: cupy.asnumpy(result),
        lambda new: _views.writer("cupy", result, new)(),
    )


def _torch(entry: str, obj: Any) -> Taken:
    import torch

    from caiconform.adapters.torch_adapter import TORCH_DTYPES
    from caiconform.checks import _views

    if entry == "torch.as_tensor":
        result = torch.as_tensor(obj, device="cuda")
    elif entry == "torch.tensor":
        result = torch.tensor(obj, device="cuda")
    elif entry == "dst[...] = obj":
        dtype, shape = _dtype_shape(obj)
        torch_dtype = getattr(torch, TORCH_DTYPES[_staging.dtype_key(dtype)])
        result = torch.empty(shape, dtype=torch_dtype, device="cuda")
        result[...] = obj
    else:
        raise SkipExchange(f"torch: no call known for entry point {entry!r}")
    torch.cuda.synchronize()
    return Taken(
        result,
        lambda: result.cpu().numpy(),
        lambda new: _views.writer("torch", result, new)(),
    )


def _numba(entry: str, obj: Any, impl: str = "numba-cuda") -> Taken:
    """A Numba entry point of implementation `impl` (`numba_impls`)."""
    from caiconform.adapters.numba_adapter import _to_host
    from caiconform.adapters.numba_impls import IMPLS
    from caiconform.checks import _views

    cuda = IMPLS[impl].import_cuda()
    if entry == "kernel argument":
        return Taken(obj, _no_result(entry), lambda new: _kernel_store(obj, new, impl))
    if entry == "cuda.as_cuda_array":
        result = cuda.as_cuda_array(obj)
    elif entry == "cuda.from_cuda_array_interface":
        result = cuda.from_cuda_array_interface(obj.__cuda_array_interface__, owner=obj)
    else:
        raise SkipExchange(f"numba: no call known for entry point {entry!r}")
    holder = "numba" if impl == "numba-cuda" else "numba-mlir"
    return Taken(
        result,
        lambda: _to_host(result, impl),
        lambda new: _views.writer(holder, result, new)(),
    )


def _no_result(entry: str) -> Callable[[], np.ndarray]:
    def read() -> np.ndarray:
        raise SkipExchange(f"{entry}: nothing outlives the launch to read a later write through")

    return read


def _kernel_store(obj: Any, new: np.ndarray, impl: str = "numba-cuda") -> None:
    """Launch numba's copy kernel (of implementation `impl`) with `obj` as the destination
    argument: the kernel writes `new` through the argument it imported."""
    from caiconform.adapters.numba_adapter import KERNEL_NDIMS, _copy_kernels, launch_shape
    from caiconform.adapters.numba_impls import IMPLS

    cuda = IMPLS[impl].import_cuda()

    if new.ndim not in KERNEL_NDIMS:
        raise SkipExchange(f"the numba copy kernel covers ndim 0-3, not {new.ndim}")
    source = cuda.to_device(np.ascontiguousarray(new))
    grid, block = launch_shape(new.shape)
    _copy_kernels(impl)[new.ndim][grid, block](source, obj)
    cuda.synchronize()


def _jax(entry: str, obj: Any) -> Taken:
    from caiconform.adapters.jax_adapter import _import_jax

    jax = _import_jax()
    import jax.numpy as jnp

    if entry == "jnp.asarray":
        result = jnp.asarray(obj)
    elif entry == "jax.device_put":
        result = jax.device_put(obj, jax.devices("gpu")[0])
    else:
        raise SkipExchange(f"jax: no call known for entry point {entry!r}")
    result.block_until_ready()
    return Taken(result, lambda: np.asarray(result), None)


def _warp(entry: str, obj: Any) -> Taken:
    import warp as wp

    from caiconform.adapters.warp_adapter import _Sized

    if entry not in ("wp.array(copy=True)", "wp.array(copy=False)"):
        raise SkipExchange(f"warp: no call known for entry point {entry!r}")
    result = wp.array(_Sized(obj), device="cuda:0", copy=entry == "wp.array(copy=True)")
    wp.synchronize_device("cuda:0")

    def write(new: np.ndarray) -> None:
        wp.copy(result, wp.array(np.ascontiguousarray(new), device="cuda:0"))
        wp.synchronize_device("cuda:0")

    return Taken(result, result.numpy, write)


def _cuda_core(entry: str, obj: Any) -> Taken:
    from cuda.core import Device
    from cuda.core.utils import StridedMemoryView

    from caiconform.adapters.cuda_core_adapter import read_view, write_view

    if entry != "StridedMemoryView":
        raise SkipExchange(f"cuda.core: no call known for entry point {entry!r}")
    device = Device()
    device.set_current()
    stream = device.create_stream()
    view = StridedMemoryView.from_cuda_array_interface(obj, stream_ptr=int(stream.handle))
    return Taken(
        view,
        lambda: read_view(view, stream),
        lambda new: write_view(view, new, stream),
    )


_LIBRARIES: dict[str, Callable[[str, Any], Taken]] = {
    "cupy": _cupy,
    "torch": _torch,
    "numba": _numba,
    "numba-from-cai": _numba,
    "numba-kernel": _numba,
    "numba-mlir": lambda entry, obj: _numba(entry, obj, "numba-cuda-mlir"),
    "numba-mlir-from-cai": lambda entry, obj: _numba(entry, obj, "numba-cuda-mlir"),
    "numba-mlir-kernel": lambda entry, obj: _numba(entry, obj, "numba-cuda-mlir"),
    "jax": _jax,
    "warp": _warp,
    "cuda.core": _cuda_core,
}


def take(consumer: str, entry: str, obj: Any) -> Taken:
    """Hand `obj` (through its CAI only) to `consumer`'s entry point `entry`. An exception from
    the library propagates (the entry refused the export); SkipExchange for an adapter or entry
    this module has no call for."""
    call = _LIBRARIES.get(consumer)
    if call is None:
        raise SkipExchange(f"no calls known for {consumer}'s entry points")
    return call(entry, _staging.cai_only(obj))
