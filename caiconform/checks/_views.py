"""A consumer's own device object over an export: for the checks that must hold it or write it.

`Adapter.consume` returns host values, which is all most families need. Lifetime and readonly
need the library's *view* itself: the object a user keeps (to drop the producer under it) and
writes through (to see whether a read-only flag is honoured). This module builds that view with
each library's documented import call, the same one its adapter's `consume` uses, and knows how
to write through it and where its data lives. Libraries are imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from caiconform.adapters.base import SkipExchange
from caiconform.adapters.numba_impls import cuda_of, impl_of, role

__all__ = ["hold", "writer", "view_pointer", "WRITTEN", "READONLY_VIEW"]

#: `write` outcomes other than an exception: the bytes were sent, or the view is read-only by
#: construction (nothing can be written through it)
WRITTEN = "written"
READONLY_VIEW = "read-only view"


def hold(consumer: str, obj: Any) -> Any:
    """The consumer library's object over `obj`, made with its public CAI import call.
    SkipExchange for a consumer this module does not know."""
    if consumer == "cupy":
        import cupy

        return cupy.asarray(obj)
    if consumer == "torch":
        import torch

        return torch.as_tensor(obj, device="cuda")
    numba = role(consumer)  # numba-cuda's and numba-cuda-mlir's adapters alike
    if numba == "numba-kernel":
        # a kernel launch takes the exporting object itself as its argument and keeps no view of
        # it once it returns: `writer` launches a kernel over it
        return obj
    if numba == "numba":
        return cuda_of(consumer).as_cuda_array(obj)
    if numba == "numba-from-cai":
        cuda = cuda_of(consumer)
        return cuda.from_cuda_array_interface(obj.__cuda_array_interface__, owner=obj)
    if consumer == "cuda.core":
        from cuda.core.utils import StridedMemoryView

        return StridedMemoryView.from_cuda_array_interface(obj, stream_ptr=-1)
    if consumer == "jax":
        from caiconform.adapters.jax_adapter import _import_jax

        _import_jax()
        import jax.numpy as jnp

        return jnp.asarray(obj)
    if consumer == "reference":
        from caiconform.reference.consumer import consume

        return consume(obj, sync="host")
    raise SkipExchange(f"no way known to hold a {consumer} view (lifetime/readonly checks)")


def view_pointer(view: Any) -> int | None:
    """Device address of the view's element 0, or None when it holds a copy or cannot say."""
    try:
        interface = view.__cuda_array_interface__
    except Exception:  # not every view exports (jax on some platforms, cuda.core views)
        interface = None
    if isinstance(interface, dict):
        data = interface.get("data")
        if isinstance(data, tuple) and data and isinstance(data[0], int):
            return data[0]
    ptr = getattr(view, "ptr", None)
    return ptr if isinstance(ptr, int) and not isinstance(ptr, bool) else None


def writer(consumer: str, view: Any, new: np.ndarray) -> Callable[[], str]:
    """A function that writes `new` (same shape and dtype) through `view` with the library's
    own API, everything it needs (a device copy of `new`, a stream) made beforehand.

    The split matters: an exception while preparing is a harness or library problem and
    propagates; an exception from the returned function is the library refusing the write. The
    function returns WRITTEN when the library accepted the write, READONLY_VIEW when its view
    cannot be written by construction. SkipExchange for a consumer with no write path.
    """
    if consumer == "cupy":
        import cupy

        source = cupy.asarray(new)

        def write_cupy() -> str:
            view[...] = source
            cupy.cuda.Device().synchronize()
            return WRITTEN

        return write_cupy
    if consumer == "torch":
        import torch

        source = torch.as_tensor(new, device=view.device)
        copy = view.copy_

        def write_torch() -> str:
            copy(source)
            torch.cuda.synchronize()
            return WRITTEN

        return write_torch
    numba = role(consumer)
    if numba == "numba-kernel":
        return _kernel_writer(view, new, consumer)
    if numba in ("numba", "numba-from-cai"):
        cuda = cuda_of(consumer)

        host = np.ascontiguousarray(new)
        copy = view.copy_to_device

        def write_numba() -> str:
            copy(host)
            cuda.synchronize()
            return WRITTEN

        return write_numba
    if consumer == "cuda.core":
        from cuda.core import Device
        from cuda.core.utils import StridedMemoryView

        device = Device()
        device.set_current()
        stream = device.create_stream()
        host = StridedMemoryView.from_array_interface(np.ascontiguousarray(new))
        copy = view.copy_from

        def write_cuda_core() -> str:
            if view.readonly:
                return READONLY_VIEW
            copy(host, stream)
            stream.sync()
            return WRITTEN

        return write_cuda_core
    if consumer == "jax":
        return lambda: READONLY_VIEW
    raise SkipExchange(f"{consumer} has no write path through its consumed view")


def _kernel_writer(obj: Any, new: np.ndarray, consumer: str) -> Callable[[], str]:
    """Writes `new` through `obj` as a numba kernel argument (of `consumer`'s implementation):
    a kernel launched with the exporting object itself stores every element (numba types a
    read-only export as an immutable array, so the launch refuses to compile the store: an
    exception from the returned function, the flag honoured)."""
    if new.dtype.kind not in "biufcmM":
        raise SkipExchange(f"a numba kernel takes no array of {new.dtype}: no write path")
    from caiconform.adapters.numba_adapter import numpy_shim

    if impl_of(consumer).needs_shim:
        numpy_shim()
    cuda = cuda_of(consumer)

    ndim = new.ndim
    names = [f"i{k}" for k in range(ndim)]
    body = [
        "def store(dst, src):",
        "    i = cuda.grid(1)",
        "    if i >= src.size:",
        "        return",
    ]
    body.append("    r = i")
    for k in reversed(range(ndim)):
        body += [f"    {names[k]} = r % dst.shape[{k}]", f"    r //= dst.shape[{k}]"]
    body.append(f"    dst[{', '.join(names) + ',' if names else '()'}] = src[i]")
    scope: dict[str, Any] = {"cuda": cuda}
    exec("\n".join(body), scope)  # one store kernel per number of dimensions
    store = cuda.jit(scope["store"])
    source = cuda.to_device(np.ascontiguousarray(new).reshape(-1))
    blocks = max(1, -(-new.size // 128))

    def write_kernel() -> str:
        store[blocks, 128](obj, source)
        cuda.synchronize()
        return WRITTEN

    return write_kernel
