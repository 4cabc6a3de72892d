"""Per-library snippets of the standalone reproducers, keyed by adapter name.

Each snippet is what a user of that library writes, the same call the library's adapter makes
(caiconform/adapters/*.py say why each is the library's own CAI path):

- `consume(name, array)`: read the object `obj` into a host numpy array `result`;
- `consume_dlpack(name, array)`: the same through the library's own DLPack import
  (`DLPACK_CONSUME`), the adapters' `consume_dlpack`;
- `hold(name)` / `write(name)`: the library's own device object `view` over `obj`, and a write
  of the host array `new` through it (the readonly and lifetime families);
- `produce(name, array)`: the library's own array `obj` holding the host array `values` in the
  example's layout (a plain upload, or a strided view of an uploaded `image`);
- `pending(name, scenario)`: the library's stream of a stream scenario, its raw handle, its
  device-to-device copy of the final bytes over the sentinel, and whether it exports the
  stream it is inside (`with stream:`).

A snippet is a `Snip`: import lines, module-level setup and the code (a script carries the
helpers of `_text.HELPERS` its code refers to). None where the library has no such path (or
the reproducers do not know it): the caller then writes no script and says why.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from caiconform.report.standalone._text import Array, c_strides

__all__ = [
    "Snip",
    "CONSUMERS",
    "DLPACK_CONSUME",
    "DLPACK_CONSUMERS",
    "consume",
    "consume_dlpack",
    "hold",
    "write",
    "produce",
    "pending",
    "imports_of",
]


@dataclass(frozen=True)
class Snip:
    code: str
    imports: tuple[str, ...] = ()
    setup: str = ""
    #: lines run before `code` whose failure is not the library refusing (a write's source)
    prepare: str = ""


_JAX = (
    "import os",
    'os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share the GPU',
    "import jax",
    "import jax.numpy as jnp",
    'jax.config.update("jax_enable_x64", True)  # else 64-bit values are narrowed',
)
_IMPORTS: dict[str, tuple[str, ...]] = {
    "reference": (),
    "numba": ("from numba import cuda",),
    "numba-from-cai": ("from numba import cuda",),
    "numba-kernel": ("from numba import cuda",),
    "numba-mlir": ("from numba_cuda_mlir import cuda",),
    "numba-mlir-from-cai": ("from numba_cuda_mlir import cuda",),
    "numba-mlir-kernel": ("from numba_cuda_mlir import cuda",),
    "cupy": ("import cupy",),
    "torch": ("import torch",),
    "jax": _JAX,
    "cuda.core": ("from cuda.core import Device", "from cuda.core.utils import StridedMemoryView"),
    "cuda.cccl": ("from cuda.compute import OpKind, unary_transform",),
    "pycuda": (
        "import pycuda.autoprimaryctx  # the primary context, shared with the other libraries",
        "from pycuda import gpuarray",
        "from pycuda.compiler import SourceModule",
    ),
    "rmm": ("import rmm",),
    "warp": ("import warp as wp",),
}
CONSUMERS = tuple(_IMPORTS)


def imports_of(name: str) -> tuple[str, ...]:
    return _IMPORTS[name]


#: numba-cuda-mlir's adapters -> the numba-cuda adapter whose lines they take (the same API,
#: `adapters.numba_impls`), with these imports in place of numba-cuda's
_MLIR = {
    "numba-mlir": "numba",
    "numba-mlir-from-cai": "numba-from-cai",
    "numba-mlir-kernel": "numba-kernel",
}
_MLIR_IMPORTS = {
    "from numba import cuda": "from numba_cuda_mlir import cuda",
    "from numba.cuda.cudadrv.devicearray import DeviceNDArray": (
        "from numba_cuda_mlir.numba_cuda.cudadrv.devicearray import DeviceNDArray"
    ),
}


def _as_mlir(snip: Any) -> Any:
    """numba-cuda's `Snip` or `Pending` with numba-cuda-mlir's imports, and no numpy shim
    (numba-cuda-mlir 0.6.0 overloads `np.row_stack` only where numpy has it)."""
    if snip is None:
        return None
    changes: dict[str, Any] = {"imports": tuple(_MLIR_IMPORTS.get(i, i) for i in snip.imports)}
    if isinstance(snip, Snip):
        changes["setup"] = snip.setup.replace(_NUMPY_SHIM + "\n\n\n", "")
    return dataclasses.replace(snip, **changes)


_NUMPY_SHIM = (
    'if not hasattr(np, "row_stack"):  # numba-cuda compiles kernels against np.row_stack\n'
    "    np.row_stack = np.vstack"
)


def _copy_kernel(ndim: int) -> str:
    """A numba kernel copying `src` into `dst` element by element, for arrays of rank `ndim`."""
    if ndim == 0:
        return "@cuda.jit\ndef copy(src, dst):\n    dst[()] = src[()]\n"
    names = "ijk"[:ndim]
    idx = ", ".join(names)
    cond = " and ".join(f"{n} < src.shape[{d}]" for d, n in enumerate(names))
    grid = f"cuda.grid({ndim})" if ndim > 1 else "cuda.grid(1)"
    return (
        "@cuda.jit\n"
        "def copy(src, dst):\n"
        f"    {idx} = {grid}\n"
        f"    if {cond}:\n"
        f"        dst[{idx}] = src[{idx}]\n"
    )


def _launch(ndim: int) -> str:
    """grid, block of the copy kernel over `shape` (ndim 0-3)."""
    if ndim == 0:
        return "(1,), (1,)"
    block = {1: (128,), 2: (16, 16), 3: (8, 8, 4)}[ndim]
    grid = ", ".join(f"-(-shape[{d}] // {b})" for d, b in enumerate(block))
    return f"({grid},), {block}"


_GATHER = '''GATHER = r"""
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


def consume(name: str, array: Array | None = None) -> Snip | None:
    """Lines reading `obj` into the host array `result` with consumer `name`."""
    if name in _MLIR:
        return _as_mlir(consume(_MLIR[name], array))
    ndim = len(array.shape) if array is not None else 1
    imports = _IMPORTS.get(name)
    if imports is None:
        return None
    if name == "reference":
        return Snip("result = read_back(obj.__cuda_array_interface__)")
    if name == "numba":
        return Snip("result = cuda.as_cuda_array(obj).copy_to_host()", imports)
    if name == "numba-from-cai":
        return Snip(
            "desc = obj.__cuda_array_interface__\n"
            "result = cuda.from_cuda_array_interface(desc, owner=obj).copy_to_host()",
            imports,
        )
    if name == "numba-kernel":
        if ndim > 3:
            return None
        return Snip(
            "desc = obj.__cuda_array_interface__  # the kernel takes obj itself\n"
            'shape = tuple(desc["shape"])\n'
            'dst = cuda.device_array(shape, np.dtype(desc["typestr"]))\n'
            f"if dst.size:\n    copy[{_launch(ndim)}](obj, dst)\n"
            "result = dst.copy_to_host()",
            imports,
            setup=_NUMPY_SHIM + "\n\n\n" + _copy_kernel(ndim),
        )
    if name == "cupy":
        return Snip("result = cupy.asnumpy(cupy.asarray(obj))", imports)
    if name == "torch":
        return Snip('result = torch.as_tensor(obj, device="cuda").cpu().numpy()', imports)
    if name == "jax":
        return Snip("result = np.asarray(jnp.asarray(obj))", imports)
    if name == "cuda.core":
        return Snip(
            "device = Device()\n"
            "device.set_current()\n"
            "stream = device.create_stream()  # cuda.core orders it after the exported stream\n"
            "view = StridedMemoryView.from_cuda_array_interface(obj, stream_ptr=int(stream.handle))\n"
            "dtype = np.dtype(view.dtype)\n"
            "steps = None if view.strides is None else [s * dtype.itemsize for s in view.strides]\n"
            "result = read_at(int(view.ptr), tuple(view.shape), dtype, steps, int(stream.handle))",
            imports,
        )
    if name == "cuda.cccl":
        return Snip(
            "desc = obj.__cuda_array_interface__\n"
            'shape, dtype = tuple(desc["shape"]), np.dtype(desc["typestr"])\n'
            "n = int(np.prod(shape, dtype=np.int64))\n"
            'out = Exported({"shape": (n,), "typestr": desc["typestr"], "version": 3,\n'
            '                "data": (int(ck(cu.cuMemAlloc(max(n * dtype.itemsize, 1)))), False),\n'
            '                "strides": None})\n'
            "if n:\n"
            "    unary_transform(d_in=obj, d_out=out, op=OpKind.IDENTITY, num_items=n)\n"
            "ck(cu.cuCtxSynchronize())\n"
            'fortran = len(shape) > 1 and desc.get("strides") is not None and tuple(\n'
            '    desc["strides"]) == np.empty(shape, dtype, order="F").strides != np.empty(shape, dtype).strides\n'
            'result = read_back(out.desc).reshape(shape, order="F" if fortran else "C")',
            imports,
        )
    if name == "pycuda":
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
            imports,
            setup=_GATHER,
        )
    if name == "rmm":
        return Snip(
            "desc = obj.__cuda_array_interface__\n"
            'dtype = np.dtype(desc["typestr"])\n'
            'buffer = rmm.DeviceBuffer(size=int(np.prod(desc["shape"])) * dtype.itemsize)\n'
            "buffer.copy_from_device(obj)\n"
            'result = np.asarray(buffer.copy_to_host()).view(dtype).reshape(desc["shape"])',
            imports,
        )
    if name == "warp":
        return Snip(
            "class Sized(Exported):  # Warp asks the object for len() before its CAI\n"
            "    def __len__(self):\n"
            '        return self.desc["shape"][0]\n\n\n'
            'result = wp.array(Sized(obj.__cuda_array_interface__, obj), device="cuda:0").numpy()',
            imports,
        )
    return None


#: consumer -> the lines reading `obj` into `result` through the library's own DLPack import
#: (the adapters' `consume_dlpack`, whose docstrings say why each is that library's path);
#: `obj` may expose the CAI too, which these calls never read
DLPACK_CONSUME: dict[str, str] = {
    "torch": "result = torch.from_dlpack(obj).cpu().numpy()",
    "cupy": "result = cupy.asnumpy(cupy.from_dlpack(obj))",
    "jax": "result = np.asarray(jnp.from_dlpack(obj))",
    "warp": "result = wp.from_dlpack(obj).numpy()",
    "cuda.core": (
        "device = Device()\n"
        "device.set_current()\n"
        "stream = device.create_stream()  # handed to obj.__dlpack__ as the consumer stream\n"
        "view = StridedMemoryView.from_dlpack(obj, stream_ptr=int(stream.handle))\n"
        "dtype = np.dtype(view.dtype)\n"
        "steps = None if view.strides is None else [s * dtype.itemsize for s in view.strides]\n"
        "result = read_at(int(view.ptr), tuple(view.shape), dtype, steps, int(stream.handle))"
    ),
    "numba-kernel": (
        "view = StridedMemoryView.from_dlpack(obj, stream_ptr=-1)  # shape and dtype only\n"
        "shape = tuple(view.shape)\n"
        "dst = cuda.device_array(shape, view.dtype)\n"
        "if dst.size:\n"
        "    copy[{launch}](obj, dst)  # numba types and passes obj by its __dlpack__\n"
        "result = dst.copy_to_host()"
    ),
}
DLPACK_CONSUMERS = tuple(DLPACK_CONSUME)


def consume_dlpack(name: str, array: Array | None = None) -> Snip | None:
    """Lines reading `obj` into the host array `result` with consumer `name`'s DLPack import
    (`DLPACK_CONSUME`); None where the reproducers know none (mpi4py's needs caiconform to
    size its host buffer, the CAI-only libraries have none)."""
    if name in _MLIR:
        return _as_mlir(consume_dlpack(_MLIR[name], array))
    code = DLPACK_CONSUME.get(name)
    if code is None:
        return None
    imports = _IMPORTS[name]
    if name == "cuda.core":
        return Snip(code, imports)
    if name == "numba-kernel":
        ndim = len(array.shape) if array is not None else 1
        if ndim > 3:
            return None
        return Snip(
            code.format(launch=_launch(ndim)),
            (*imports, "from cuda.core.utils import StridedMemoryView"),
            setup=_NUMPY_SHIM + "\n\n\n" + _copy_kernel(ndim),
        )
    return Snip(code, imports)


def hold(name: str) -> Snip | None:
    """Lines making `view`, the library's own device object over `obj`."""
    if name in _MLIR:
        return _as_mlir(hold(_MLIR[name]))
    imports = _IMPORTS.get(name)
    code = {
        "numba": "view = cuda.as_cuda_array(obj)",
        "numba-kernel": "view = cuda.as_cuda_array(obj)",
        "numba-from-cai": (
            "view = cuda.from_cuda_array_interface(obj.__cuda_array_interface__, owner=obj)"
        ),
        "cupy": "view = cupy.asarray(obj)",
        "torch": 'view = torch.as_tensor(obj, device="cuda")',
        "jax": "view = jnp.asarray(obj)",
        "cuda.core": "view = StridedMemoryView.from_cuda_array_interface(obj, stream_ptr=-1)",
    }.get(name)
    return None if code is None or imports is None else Snip(code, imports)


def write(name: str, ndim: int) -> Snip | None:
    """Lines writing the host array `new` through `view` with the library's own API (an
    exception: the library refused the write)."""
    if name in _MLIR:
        return _as_mlir(write(_MLIR[name], ndim))
    imports = _IMPORTS.get(name)
    if name in ("numba", "numba-from-cai"):
        return Snip("view.copy_to_device(np.ascontiguousarray(new))\ncuda.synchronize()", imports)
    if name == "numba-kernel" and ndim <= 3:
        return Snip(
            f"shape = new.shape\ncopy[{_launch(ndim)}](cuda.to_device(new), obj)  "
            "# obj itself is the kernel's destination\ncuda.synchronize()",
            imports,
            setup=_NUMPY_SHIM + "\n\n\n" + _copy_kernel(ndim),
        )
    if name == "cupy":
        return Snip(
            "view[...] = source\ncupy.cuda.Device().synchronize()",
            imports,
            prepare="source = cupy.asarray(new)",
        )
    if name == "torch":
        return Snip(
            "view.copy_(source)\ntorch.cuda.synchronize()",
            imports,
            prepare='source = torch.as_tensor(new, device="cuda")',
        )
    if name == "cuda.core":
        return Snip(
            "if view.readonly:\n"
            '    raise PermissionError("cuda.core exposes the view read-only")\n'
            "ck(cu.cuMemcpyHtoD(int(view.ptr), np.ascontiguousarray(new).ctypes.data, new.nbytes))",
            imports,
        )
    return None


#: producers whose plain upload of `values` is one call
_UPLOAD = {
    "cupy": "obj = cupy.asarray(values)",
    "numba": "obj = cuda.to_device(values)",
    "torch": 'obj = torch.as_tensor(values, device="cuda")',
    "jax": 'obj = jax.device_put(values, jax.devices("gpu")[0]).block_until_ready()',
    "rmm": "obj = rmm.DeviceBuffer.to_device(values.tobytes())",
    "pycuda": "obj = gpuarray.to_gpu(values)",
    "warp": 'obj = wp.array(values, device="cuda:0")',
}


def produce(name: str, array: Array) -> Snip | None:
    """Lines making the producer's object `obj` over `values` (and, for a strided layout, the
    host `image` of the allocation) in `array`'s layout; None when the library cannot express
    that layout here."""
    if name in _MLIR:
        return _as_mlir(produce(_MLIR[name], array))
    imports = _IMPORTS.get(name)
    if imports is None or array.typestr in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        return None
    if array.plain and name in _UPLOAD:
        if name == "rmm" and (array.export_typestr != "|u1" or len(array.shape) != 1):
            return None
        return Snip(_UPLOAD[name], imports)
    strides = array.strides or ()
    if name == "cupy":
        return Snip(
            "buf = cupy.asarray(image)\n"
            f"obj = cupy.ndarray({array.shape}, dtype, memptr=buf.data + {array.offset}, "
            f"strides={strides or None})",
            imports,
        )
    if name == "numba":
        return Snip(
            "buf = cuda.to_device(image)\n"
            f"obj = DeviceNDArray({array.shape}, {strides or c_strides(array.shape, array.itemsize)}, "
            "dtype, "
            f"gpu_data=buf.gpu_data.view({array.offset}))",
            (*imports, "from numba.cuda.cudadrv.devicearray import DeviceNDArray"),
        )
    if name == "torch":
        size = array.itemsize
        if any(s < 0 or s % size for s in strides) or array.offset % size:
            return None
        elements = [s // size for s in strides] if strides else None
        padded = -(-array.alloc // 16) * 16
        return Snip(
            f'buf = torch.zeros({padded}, dtype=torch.uint8, device="cuda")\n'
            "buf[: image.size] = torch.from_numpy(image).cuda()\n"
            "typed = buf.view(torch.from_numpy(np.empty(0, dtype)).dtype)\n"
            f"obj = torch.as_strided(typed, {array.shape}, "
            f"{elements if elements is not None else 'typed.new_empty(' + repr(array.shape) + ').stride()'}, "
            f"{array.offset // size})",
            imports,
        )
    return None


@dataclass(frozen=True)
class Pending:
    """A library's stream for a scenario: `stream_src` makes `stream`, `handle_src` is its raw
    handle, `copy_src` enqueues buf[:n] = buf[n:] on it, `under` enters it as current."""

    stream_src: str
    handle_src: str
    copy_src: str
    under: str | None
    upload_src: str
    view_src: str
    imports: tuple[str, ...]


#: scenarios whose stream the library exports because the array is read inside `with stream:`
LIBRARY_STREAM_SCENARIOS = ("nonblocking", "external", "library-default")


def pending(name: str, scenario: str, array: Array) -> Pending | None:
    """How library `name` leaves its final write pending in `scenario` (the adapters'
    `_scenarios.produce_staged`): None where it cannot (or the reproducers do not know how)."""
    if name in _MLIR:
        return _as_mlir(pending(_MLIR[name], scenario, array))
    raw = "int(ck(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value)))"
    shape, strides = array.shape, array.strides
    if name == "cupy":
        stream = {
            "pending": "cupy.cuda.Stream()",
            "multi-stream": "cupy.cuda.Stream()",
            "unsynced": "cupy.cuda.Stream(non_blocking=True)",
            "nonblocking": "cupy.cuda.Stream(non_blocking=True)",
            "legacy": "cupy.cuda.Stream.null",
            "library-default": "cupy.cuda.Stream.null",
            "per-thread": "cupy.cuda.Stream.ptds",
            "external": f"cupy.cuda.ExternalStream({raw})",
        }.get(scenario)
        if stream is None:
            return None
        return Pending(
            stream,
            "stream.ptr",
            "with stream:\n    buf[:n] = buf[n:]",
            "stream" if scenario in LIBRARY_STREAM_SCENARIOS else None,
            "buf = cupy.asarray(image2)\ncupy.cuda.Device().synchronize()",
            f"array = cupy.ndarray({shape}, dtype, memptr=buf.data, strides={strides})",
            _IMPORTS["cupy"],
        )
    if name == "torch":
        stream = {
            "pending": "torch.cuda.Stream()",
            "multi-stream": "torch.cuda.Stream()",
            "unsynced": "torch.cuda.Stream()",
            "nonblocking": "torch.cuda.Stream()",
            "legacy": "torch.cuda.default_stream()",
            "library-default": "torch.cuda.default_stream()",
            "external": f"torch.cuda.ExternalStream({raw})",
        }.get(scenario)
        if stream is None:
            return None
        return Pending(
            stream,
            "stream.cuda_stream",
            "with torch.cuda.stream(stream):\n    buf[:n].copy_(buf[n:], non_blocking=True)",
            "torch.cuda.stream(stream)" if scenario in LIBRARY_STREAM_SCENARIOS else None,
            "buf = torch.from_numpy(image2).cuda()\ntorch.cuda.synchronize()",
            f"array = buf[:n].view(torch.from_numpy(np.empty(0, dtype)).dtype).reshape({shape})",
            _IMPORTS["torch"],
        )
    if name == "numba":
        stream = {
            "pending": "cuda.stream()",
            "multi-stream": "cuda.stream()",
            "unsynced": "cuda.stream()",
            "legacy": "cuda.legacy_default_stream()",
            "per-thread": "cuda.per_thread_default_stream()",
            "library-default": "cuda.default_stream()",
            "external": f"cuda.external_stream({raw})",
        }.get(scenario)
        if stream is None:
            return None
        exported = "0" if scenario == "unsynced" else "stream"
        return Pending(
            stream,
            "int(stream)",
            "buf[:n].copy_to_device(buf[n:], stream=stream)",
            None,
            "buf = cuda.to_device(image2)\ncuda.synchronize()",
            f"array = DeviceNDArray({shape}, {strides or c_strides(shape, array.itemsize)}, dtype, "
            f"stream={exported}, "
            "gpu_data=buf.gpu_data)",
            (*_IMPORTS["numba"], "from numba.cuda.cudadrv.devicearray import DeviceNDArray"),
        )
    return None
