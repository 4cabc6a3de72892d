"""PyCUDA as a CAI producer (`pycuda.gpuarray.to_gpu(values)`, C-contiguous layouts only) and
consumer (the object passed straight to a kernel launch).

What PyCUDA does, read in pycuda 2026.1's sources (the sdist built on the GPU machine):
- export: `GPUArray.__cuda_array_interface__` (`pycuda/gpuarray.py`) gives shape, strides
  (always explicit), typestr, data = (ptr, False) — always read-write — `stream: None` and
  version 3;
- import: PyCUDA builds no `GPUArray` from another object's CAI; what it documents
  (`doc/tutorial.rst`, "Interoperability With Other Libraries Using The CUDA Array Interface")
  is that kernel calls take such objects: `_build_arg_buf` in `pycuda/driver.py` passes
  `obj.__cuda_array_interface__["data"][0]` as a pointer argument and reads nothing else —
  not shape, strides, typestr, the read-only flag, `mask` nor `stream` (the launch goes to
  the stream given to the call, here none: the legacy default stream).

So the consumer launches a `SourceModule` kernel (compiled by PyCUDA with the machine's nvcc)
that gathers the object's elements, byte by byte, into a C-ordered `GPUArray`, given the
pointer through PyCUDA's CAI path and the shape and byte strides from the dict as user code
would pass them; `GPUArray.get()` reads the copy back. It is imported through
`pycuda.autoprimaryctx`, which makes the device's *primary* context current — the one the
other libraries share — instead of `pycuda.autoinit`'s private context, in which pointers from
other libraries would not resolve.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from caiconform.adapters import _staging
from caiconform.adapters._plain import PlainProducer
from caiconform.adapters._repro import Array, Repro, Snip

__all__ = ["PycudaAdapter", "SUPPORTED", "GATHER_SOURCE", "c_strides_of"]

#: GPUArray holds any numpy dtype as bytes
SUPPORTED = frozenset(_staging.ALL_DTYPE_KEYS)

#: element i (C order) of an ndim array at byte strides `meta[ndim:]` copied to dst[i]
GATHER_SOURCE = """
__global__ void gather(const char *src, char *dst, long long n, int ndim, int itemsize,
                       const long long *meta)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    long long rest = i, offset = 0;
    for (int d = ndim - 1; d >= 0; --d) {
        long long extent = meta[d];
        offset += (rest % extent) * meta[ndim + d];
        rest /= extent;
    }
    for (int b = 0; b < itemsize; ++b) dst[i * itemsize + b] = src[offset + b];
}
"""

_BLOCK = 256


def c_strides_of(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """The byte strides of a C-contiguous array (what `strides: None` means)."""
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.insert(0, step)
        step *= max(extent, 1)
    return tuple(strides)


@functools.cache
def _gather_kernel() -> Any:
    import pycuda.autoprimaryctx  # noqa: F401  (the primary context, current)
    from pycuda.compiler import SourceModule

    return SourceModule(GATHER_SOURCE).get_function("gather")


#: a reproducer's gather kernel, the one of `GATHER_SOURCE`: element i of the strided array
#: `src` copied to `dst[i]` (shape, then byte strides, in `meta`), compiled once
_REPRO_GATHER = '''GATHER = r"""
__global__ void gather(const char *src, char *dst, long long n, int ndim, int itemsize,
                       const long long *meta)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    long long rest = i, offset = 0;
    for (int d = ndim - 1; d >= 0; --d) {
        offset += (rest % meta[d]) * meta[ndim + d];
        rest /= meta[d];
    }
    for (int b = 0; b < itemsize; ++b) dst[i * itemsize + b] = src[offset + b];
}
"""
gather = SourceModule(GATHER).get_function("gather")  # compiled and loaded once'''


class _PycudaRepro(Repro):
    """The adapter's calls as a reproducer writes them: `gpuarray.to_gpu` (plain arrays only)
    and `obj` itself passed to a gather kernel, which reads only `data[0]` of its CAI (shape
    and strides come from the dict, as user code passes them on)."""

    imports = (
        "import pycuda.autoprimaryctx  # the primary context, shared with the other libraries",
        "from pycuda import gpuarray",
        "from pycuda.compiler import SourceModule",
    )
    distributions = {"pycuda": "pycuda"}

    def consume(self, array: Array | None) -> Snip | None:
        return Snip(
            "desc = obj.__cuda_array_interface__  # PyCUDA's kernel call reads data[0] only\n"
            'shape = tuple(int(e) for e in desc["shape"])  # as user code passes it on\n'
            'dtype = np.dtype(desc["typestr"])\n'
            'strides = desc.get("strides") or np.empty(shape, dtype).strides\n'
            "n = int(np.prod(shape))\n"
            "dst = gpuarray.empty(n * dtype.itemsize, np.uint8)\n"
            "meta = gpuarray.to_gpu(np.array([*shape, *strides, 0], dtype=np.int64))\n"
            "if n:\n"
            "    gather(\n"
            "        obj, dst, np.int64(n), np.int32(len(shape)), np.int32(dtype.itemsize), meta,\n"
            "        block=(256, 1, 1), grid=(-(-n // 256), 1))\n"
            "pycuda.autoprimaryctx.context.synchronize()\n"
            "result = dst.get().view(dtype).reshape(shape)",
            self.imports,
            setup=_REPRO_GATHER,
        )

    def produce(self, array: Array) -> Snip | None:
        return Snip("obj = gpuarray.to_gpu(values)", self.imports) if array.plain else None


class PycudaAdapter(PlainProducer):
    """PyCUDA GPUArrays in the primary context; consumes through a kernel launch."""

    name = "pycuda"
    module = "pycuda.autoprimaryctx"
    distribution = "pycuda"
    supported = SUPPORTED
    capabilities = frozenset({"produce", "consume", "kernel"})
    repro: Repro = _PycudaRepro()

    def upload(self, values: np.ndarray) -> Any:
        import pycuda.autoprimaryctx  # makes the primary context current
        from pycuda import gpuarray

        array = gpuarray.to_gpu(values)
        pycuda.autoprimaryctx.context.synchronize()
        return array

    def own_array(self, values: np.ndarray) -> Any:
        return self.upload(values)  # gpuarray.to_gpu(values), as PyCUDA's users upload

    def own_values(self, obj: Any) -> np.ndarray:
        return obj.get()

    def consume(self, obj: Any) -> np.ndarray:
        import pycuda.autoprimaryctx
        from pycuda import gpuarray

        wrapped = _staging.cai_only(obj)
        desc = wrapped.__cuda_array_interface__
        shape = tuple(int(e) for e in desc["shape"])
        dtype = np.dtype(desc["typestr"])
        strides = desc.get("strides") or c_strides_of(shape, dtype.itemsize)
        count = int(np.prod(shape, dtype=np.int64))
        dst = gpuarray.empty(count * dtype.itemsize, np.uint8)
        if count:
            # one trailing word so a 0-d array's (empty) shape still makes an allocation
            meta = gpuarray.to_gpu(np.array([*shape, *strides, 0], dtype=np.int64))
            _gather_kernel()(
                wrapped,
                dst,
                np.int64(count),
                np.int32(len(shape)),
                np.int32(dtype.itemsize),
                meta,
                block=(_BLOCK, 1, 1),
                grid=(-(-count // _BLOCK), 1),
            )
        pycuda.autoprimaryctx.context.synchronize()
        return dst.get().view(dtype).reshape(shape)

    def repro_consume(self) -> str:
        return (
            "import numpy as np\n"
            "import pycuda.autoprimaryctx\n"
            "from pycuda import gpuarray\n"
            "from pycuda.compiler import SourceModule\n"
            "from caiconform.adapters.pycuda_adapter import GATHER_SOURCE, c_strides_of\n"
            "d = obj.__cuda_array_interface__\n"
            "shape, dtype = tuple(d['shape']), np.dtype(d['typestr'])\n"
            "strides = d.get('strides') or c_strides_of(shape, dtype.itemsize)\n"
            "n = int(np.prod(shape))\n"
            "dst = gpuarray.empty(n * dtype.itemsize, np.uint8)\n"
            "meta = gpuarray.to_gpu(np.array([*shape, *strides, 0], dtype=np.int64))\n"
            "SourceModule(GATHER_SOURCE).get_function('gather')(obj, dst, np.int64(n), "
            "np.int32(len(shape)), np.int32(dtype.itemsize), meta, block=(256, 1, 1), "
            "grid=(max(1, -(-n // 256)), 1))\n"
            "result = dst.get().view(dtype).reshape(shape)\n"
        )
