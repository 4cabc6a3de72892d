"""Stand-ins for GPU libraries on host memory, for the adapter and self-check tests on a CPU.

Each fake exports `__cuda_array_interface__` the way its adapter's module docstring says the
real library does (CuPy: strides None when C-contiguous, version 3, a stream; PyCUDA: explicit
strides, version 3; Warp: explicit strides, version 2; JAX: no strides key, read-only, version
2; RMM: one flat `|u1` array, version 0), with host pointers, and reads any CAI dict back
through numpy. `install(monkeypatch, name)` puts one library's modules in `sys.modules`.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import sys
import types
from typing import Any

import numpy as np
import pytest

__all__ = ["FakeArray", "from_interface", "install", "LIBRARIES"]


def from_interface(obj: Any) -> np.ndarray:
    """The array a CAI dict (or an object exposing one) describes, as a numpy view of the
    host memory it points to."""
    d = obj if isinstance(obj, dict) else obj.__cuda_array_interface__
    view = {
        "shape": tuple(d["shape"]),
        "typestr": d["typestr"],
        "data": (d["data"][0] or 0, False),
        "strides": None if d.get("strides") is None else tuple(d["strides"]),
        "version": 3,
    }
    if d.get("descr") is not None:
        view["descr"] = [tuple(f) for f in d["descr"]]

    class Host:
        __array_interface__ = view

    if 0 in view["shape"]:
        return np.empty(view["shape"], np.dtype(d["typestr"]))
    return np.asarray(Host())


class FakeArray:
    """A "device" array on host memory: `host` is a numpy view, `style` how it exports."""

    def __init__(self, host: np.ndarray, style: str, keep: Any = None) -> None:
        self.host = host
        self.style = style
        self.keep = keep
        self.shape = host.shape
        self.dtype = host.dtype
        self.size = host.size

    @property
    def __cuda_array_interface__(self) -> dict:
        a = self.host
        ptr = a.__array_interface__["data"][0] if a.size else 0
        typestr = a.dtype.str if a.dtype.itemsize > 1 else "|" + a.dtype.str[1:]
        if self.style == "rmm":
            return {
                "shape": (a.nbytes,),
                "strides": None,
                "typestr": "|u1",
                "data": (ptr, False),
                "version": 0,
            }
        d: dict[str, Any] = {"shape": a.shape, "typestr": typestr, "data": (ptr, False)}
        if self.style == "cupy":
            d["strides"] = None if a.flags.c_contiguous else a.strides
            d["descr"] = a.dtype.descr
            d["version"], d["stream"] = 3, 1
        elif self.style == "pycuda":
            d["strides"], d["version"], d["stream"] = a.strides, 3, None
        elif self.style == "warp":
            d["strides"], d["version"] = a.strides, 2
        elif self.style == "jax":
            d["data"], d["version"] = (ptr, True), 2
        return d

    # the libraries' own host copies
    def get(self) -> np.ndarray:
        return self.host.copy()

    numpy = get

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.host.copy()

    def block_until_ready(self) -> FakeArray:
        return self

    def copy_to_host(self) -> np.ndarray:
        return self.host.reshape(-1).view(np.uint8).copy()


def _own(values: np.ndarray, style: str) -> FakeArray:
    """The library's own upload: a fresh C-contiguous copy of `values`, shape kept."""
    return FakeArray(np.array(values, order="C", copy=True), style)


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


class _MemPtr:
    def __init__(self, base: np.ndarray, offset: int = 0) -> None:
        self.base, self.offset = base, offset

    def __add__(self, n: int) -> _MemPtr:
        return _MemPtr(self.base, self.offset + n)


def _cupy() -> dict[str, types.ModuleType]:
    def asarray(obj: Any) -> FakeArray:
        if isinstance(obj, np.ndarray):
            array = _own(obj, "cupy")
            array.data = _MemPtr(array.host.reshape(-1).view(np.uint8))
            return array
        return FakeArray(from_interface(obj), "cupy", keep=obj)

    def ndarray(shape, dtype, memptr, strides=None) -> FakeArray:
        host = np.ndarray(shape, dtype, buffer=memptr.base, offset=memptr.offset, strides=strides)
        return FakeArray(host, "cupy", keep=memptr.base)

    def empty(shape, dtype) -> FakeArray:
        return FakeArray(np.empty(shape, dtype), "cupy")

    device = types.SimpleNamespace(synchronize=lambda: None)
    cuda = _module(
        "cupy.cuda",
        Device=lambda: device,
        MemoryPool=lambda allocator: types.SimpleNamespace(malloc=allocator),
        malloc_managed=lambda n: None,
        using_allocator=lambda allocator: contextlib.nullcontext(),
    )
    cupy = _module(
        "cupy",
        asarray=asarray,
        asnumpy=lambda a: a.host.copy(),
        ndarray=ndarray,
        empty=empty,
        cuda=cuda,
    )
    return {"cupy": cupy, "cupy.cuda": cuda}


def _pycuda() -> dict[str, types.ModuleType]:
    def gather(src, dst, n, ndim, itemsize, meta, block, grid) -> None:
        """PyCUDA's `GATHER_SOURCE` kernel, element by element on the host."""
        ptr = src.__cuda_array_interface__["data"][0]
        shape, strides = meta.host[:ndim], meta.host[ndim : 2 * ndim]
        out = dst.host.reshape(-1)
        for i in range(int(n)):
            rest, offset = i, 0
            for d in range(int(ndim) - 1, -1, -1):
                offset += (rest % int(shape[d])) * int(strides[d])
                rest //= int(shape[d])
            out[i * itemsize : (i + 1) * itemsize] = np.frombuffer(
                (ctypes.c_uint8 * int(itemsize)).from_address(ptr + offset), np.uint8
            )

    context = types.SimpleNamespace(synchronize=lambda: None)
    module = types.SimpleNamespace(get_function=lambda name: gather)
    gpuarray = _module(
        "pycuda.gpuarray",
        to_gpu=lambda values: _own(values, "pycuda"),
        empty=lambda n, dtype: FakeArray(np.zeros(n, dtype), "pycuda"),
    )
    autoprimaryctx = _module("pycuda.autoprimaryctx", context=context)
    return {
        "pycuda": _module("pycuda", gpuarray=gpuarray, autoprimaryctx=autoprimaryctx),
        "pycuda.autoprimaryctx": autoprimaryctx,
        "pycuda.gpuarray": gpuarray,
        "pycuda.compiler": _module("pycuda.compiler", SourceModule=lambda source: module),
    }


def _warp() -> dict[str, types.ModuleType]:
    def array(data: Any, device: str) -> FakeArray:
        if isinstance(data, np.ndarray):
            return _own(data, "warp")
        return FakeArray(from_interface(data), "warp", keep=data)

    return {"warp": _module("warp", array=array, synchronize_device=lambda device: None)}


def _jax() -> dict[str, types.ModuleType]:
    config = types.SimpleNamespace(update=lambda key, value: None)
    numpy = _module("jax.numpy", asarray=lambda obj: FakeArray(from_interface(obj), "jax"))
    jax = _module(
        "jax",
        config=config,
        devices=lambda kind=None: ["gpu:0"],
        device_put=lambda values, device: _own(values, "jax"),
        numpy=numpy,
    )
    ml_dtypes = _module(
        "ml_dtypes",
        bfloat16=np.dtype("<f2"),
        float8_e4m3fn=np.dtype("i1"),
        float8_e5m2=np.dtype("u1"),
    )
    return {"jax": jax, "jax.numpy": numpy, "ml_dtypes": ml_dtypes}


def _rmm() -> dict[str, types.ModuleType]:
    class DeviceBuffer(FakeArray):
        def __init__(self, *, size: int = 0, ptr: int | None = None, mr: Any = None) -> None:
            host = np.zeros(size, np.uint8)
            if ptr is not None and size:
                host[:] = np.frombuffer((ctypes.c_uint8 * size).from_address(ptr), np.uint8)
            super().__init__(host, "rmm")

        @classmethod
        def to_device(cls, data: bytes) -> DeviceBuffer:
            buffer = cls(size=len(data))
            buffer.host[:] = np.frombuffer(data, np.uint8)
            return buffer

        def copy_from_device(self, obj: Any) -> None:
            source = from_interface(obj)
            if source.ndim != 1:
                raise ValueError("Only 1-D contiguous arrays are supported")
            self.host[:] = source.reshape(-1).view(np.uint8)

    mr = _module(
        "rmm.mr",
        CudaAsyncMemoryResource=lambda: "async-pool",
        ManagedMemoryResource=lambda: "managed",
    )
    return {"rmm": _module("rmm", DeviceBuffer=DeviceBuffer, mr=mr), "rmm.mr": mr}


LIBRARIES = {"cupy": _cupy, "pycuda": _pycuda, "warp": _warp, "jax": _jax, "rmm": _rmm}


def install(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Put the fake `name` library's modules in `sys.modules` for one test."""
    for module_name, module in LIBRARIES[name]().items():
        monkeypatch.setitem(sys.modules, module_name, module)
    if name == "pycuda":  # the adapter keeps its compiled kernel per process: a fresh cache
        from caiconform.adapters import pycuda_adapter

        fresh = functools.cache(pycuda_adapter._gather_kernel.__wrapped__)
        monkeypatch.setattr(pycuda_adapter, "_gather_kernel", fresh)
    if name == "rmm":  # the adapter's synchronize() after an upload: nothing to wait for here
        import caiconform.cuda.device

        monkeypatch.setattr(caiconform.cuda.device, "synchronize", lambda *a, **k: None)
        # the adapter keeps the memory resources it made per process: the fake's (strings)
        # must not outlive the test, or the real RMM of a GPU test in the same worker gets one
        from caiconform.adapters import rmm_adapter

        monkeypatch.setattr(rmm_adapter, "_made", {})
