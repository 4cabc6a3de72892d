"""Numba (numba-cuda) as a CAI producer (device arrays) and three consumers.

What numba-cuda does, read in `numba/cuda/api.py` and `numba/cuda/cudadrv/devicearray.py`:
- export: `DeviceNDArray.__cuda_array_interface__` gives shape, strides (None when
  contiguous), data = (pointer, False), typestr, `stream` = int(array's default stream) or None
  when the array has none, version 3;
- import: `cuda.from_cuda_array_interface(desc, owner=None, sync=True)` rejects a mask
  (NotImplementedError), wraps the pointer in a `MemoryPointer` owned by `owner`, and, when
  `stream` is given, makes it the array's default stream and synchronizes on it (unless
  `sync=False` or NUMBA_CUDA_ARRAY_INTERFACE_SYNC=0); `cuda.as_cuda_array(obj)` does the same
  with `owner=obj` after `is_cuda_array(obj)`;
- kernel launch: an argument exposing the CAI is imported the same way, synchronizing on its
  stream before the launch.
- `DeviceNDArray.copy_to_host` raises NotImplementedError for negative strides, so host
  read-back of such an import copies the array's byte extent (itself imported with
  `from_cuda_array_interface` as a uint8 array owned by the import) and lays it out in numpy.

Three consumers, three adapter names:
- `numba`: `cuda.as_cuda_array(obj)`;
- `numba-from-cai`: `cuda.from_cuda_array_interface(obj.__cuda_array_interface__, owner=obj)`;
- `numba-kernel`: the object itself passed to a `@cuda.jit` kernel that copies it element by
  element into a Numba device array (ndim 0-3), which is read back.

The producer builds `DeviceNDArray(shape, strides, dtype, stream=..., gpu_data=...)` over a
uint8 device array's memory at the layout's offset, recording the scenario's stream as the
array's default stream, which is what numba exports.

Every class and helper here takes the implementation it drives (`numba_impls`: numba-cuda by
default); `numba_mlir_adapter` sets numba-cuda-mlir, whose API is the same under
`numba_cuda_mlir.cuda`.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from caiconform.adapters import _staging
from caiconform.adapters._repro import RAW_STREAM, Array, Pending, Repro, Snip, c_strides
from caiconform.adapters._scenarios import produce_staged
from caiconform.adapters.base import Adapter, SkipExchange
from caiconform.adapters.numba_impls import DEFAULT, IMPLS
from caiconform.spec.dtypes import OPAQUE
from caiconform.spec.layout import Layout, byte_extent

__all__ = [
    "NumbaAdapter",
    "NumbaFromCAIAdapter",
    "NumbaKernelAdapter",
    "SUPPORTED",
    "KERNEL_NDIMS",
    "launch_shape",
    "kernels_work",
    "numpy_shim",
    "shim_needed",
    "REPRO_SHIM",
]

#: device arrays hold any numpy dtype as bytes; kernels type every numeric dtype, float16 too.
SUPPORTED = frozenset(_staging.ALL_DTYPE_KEYS)

#: ranks the copy kernel is written for (one kernel per rank; numba types arrays by rank)
KERNEL_NDIMS = (0, 1, 2, 3)

_BLOCK = {1: (128,), 2: (16, 16), 3: (8, 8, 4)}


def launch_shape(shape: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(grid, block) covering `shape` with the block shape used for its rank."""
    if len(shape) == 0:
        return (1,), (1,)
    block = _BLOCK[len(shape)]
    grid = tuple(-(-extent // b) for extent, b in zip(shape, block, strict=True))
    return grid, block


#: what `numpy_shim` did in this process ("" when nothing was needed)
NUMPY_SHIM: list[str] = []
_ROW_STACK_SHIM = "np.row_stack = np.vstack"


def numpy_shim() -> str:
    """numba-cuda 0.30.4 compiles no kernel against numpy 2.5: `numba/cuda/np/arrayobj.py`
    (imported with the CUDA target's implementations at the first kernel compile) registers
    `overload(np.row_stack)(impl_np_vstack)` under `if numpy_version >= (2, 0)`, and numpy
    2.5 has removed that alias of `np.vstack` (deprecated in 2.0): AttributeError. Restore
    that alias, and only that, before caiconform compiles a kernel; the adapter's version
    string says the shim is active, so every report of numba-kernel states it. Returns what
    was done ("" if nothing)."""
    if not NUMPY_SHIM:
        if hasattr(np, "row_stack"):
            NUMPY_SHIM.append("")
        else:
            np.row_stack = np.vstack
            NUMPY_SHIM.append(_ROW_STACK_SHIM)
    return NUMPY_SHIM[0]


def shim_needed() -> str:
    """What `numpy_shim` did, or would do, in this process ("" when numpy has the alias of its
    own), without touching numpy."""
    if NUMPY_SHIM:
        return NUMPY_SHIM[0]
    return "" if hasattr(np, "row_stack") else _ROW_STACK_SHIM


#: where the copy kernels' compiled code is kept on disk for every process of a run and the
#: runs after it (numba's own cache, `cache=True`), one folder per implementation:
#: `$CAICONFORM_NUMBA_CACHE`, else `<tempdir>/caiconform-numba-<uid>` (`diskcache.cache_dir`)
CACHE_ENV = "CAICONFORM_NUMBA_CACHE"


@contextlib.contextmanager
def _kernel_cache(impl: str) -> Iterator[None]:
    """Numba's cache folder set to caiconform's for `impl` while its kernels are decorated.

    Numba compiles a kernel per argument signature (dtype, rank, layout) in every process, and
    a run's examples execute in children replaced after every crash or poisoned context: each
    new child compiled again what the last had (docs/performance.md, "Figures behind the
    code"). Numba's locator takes the folder when a `cache=True` kernel is made, so the
    library's own setting is back as it was for everything else afterwards."""
    import importlib

    from caiconform.diskcache import cache_dir

    configs = []
    with contextlib.suppress(ImportError):
        configs.append(importlib.import_module(f"{IMPLS[impl].package}.core.config"))
    if impl == DEFAULT and "numba.core.config" in sys.modules:  # numba-cuda 0.2x read numba's
        configs.append(sys.modules["numba.core.config"])
    before = [getattr(config, "CACHE_DIR", "") for config in configs]
    for config in configs:
        config.CACHE_DIR = str(cache_dir(CACHE_ENV, "numba") / impl)
    try:
        yield
    finally:
        for config, value in zip(configs, before, strict=True):
            config.CACHE_DIR = value


@functools.cache
def _copy_kernels(impl: str = DEFAULT) -> dict[int, Any]:
    """The jitted copy kernels of implementation `impl`, one per rank, compiled lazily per
    signature by numba (after `numpy_shim` where that implementation needs it) or read from
    the run's kernel cache (`_kernel_cache`): a cached kernel is typed and launched on its
    argument's CAI as a compiled one is. Compiled without NVVM's optimisations (`opt=False`):
    a run compiles a hundred or more signatures of each, and a copy loop has nothing to gain
    from them, while the argument's typing and launch, which the consumer is judged on, are
    the same (docs/performance.md, "Figures behind the code")."""
    if IMPLS[impl].needs_shim:
        numpy_shim()
    cuda = IMPLS[impl].import_cuda()

    def copy0(src, dst):
        dst[()] = src[()]

    def copy1(src, dst):
        i = cuda.grid(1)
        if i < src.shape[0]:
            dst[i] = src[i]

    def copy2(src, dst):
        i, j = cuda.grid(2)
        if i < src.shape[0] and j < src.shape[1]:
            dst[i, j] = src[i, j]

    def copy3(src, dst):
        i, j, k = cuda.grid(3)
        if i < src.shape[0] and j < src.shape[1] and k < src.shape[2]:
            dst[i, j, k] = src[i, j, k]

    with _kernel_cache(impl):
        jit = cuda.jit(cache=True, opt=False)
        kernels = {0: jit(copy0), 1: jit(copy1), 2: jit(copy2), 3: jit(copy3)}
    for kernel in kernels.values():
        _lock_saves(kernel)
    return kernels


def _lock_saves(dispatcher: Any) -> None:
    """Make `dispatcher`'s disk-cache saves hold a lock on its index file across processes.

    Numba's `IndexDataCacheFile.save` reads the index, picks the first data file name the
    index does not list, and writes both, unlocked: two processes saving two signatures at
    once can pick the same name, and the index left then maps one signature to the other's
    kernel, which `CUDADispatcher.compile` loads and registers for the argument types it was
    asked for. A run's workers save the same kernels side by side, so every save of
    caiconform's copy kernels takes an `flock` first (`diskcache.DiskBuilds.locked`, on the
    index's name). Only these dispatchers' cache
    objects are changed, never numba's classes; a dispatcher without that cache layout (a
    disabled cache, another implementation's layout) is left as it is."""
    from caiconform.diskcache import DiskBuilds

    cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    save = getattr(cache_file, "save", None)
    index = getattr(cache_file, "_index_path", None)
    if save is None or not isinstance(index, str):
        return
    builds = DiskBuilds(Path(index).parent)
    name = Path(index).name

    def locked_save(key: Any, data: Any) -> None:
        with builds.locked(name):
            save(key, data)

    cache_file.save = locked_save


def _kernel_copy(
    src: Any, shape: tuple[int, ...], dtype: np.dtype, impl: str = DEFAULT
) -> np.ndarray:
    """Launch the copy kernel on `src` (a CAI object or a numba array) and read the copy back."""
    cuda = IMPLS[impl].import_cuda()

    if len(shape) not in KERNEL_NDIMS:
        raise SkipExchange(f"the numba copy kernel covers ndim 0-3, not {len(shape)}")
    dst = cuda.device_array(shape, dtype=dtype)
    if dst.size:
        grid, block = launch_shape(shape)
        _copy_kernels(impl)[len(shape)][grid, block](src, dst)
    return dst.copy_to_host()


def _to_host(array: Any, impl: str = DEFAULT) -> np.ndarray:
    """Read a numba device array back: `copy_to_host`, or, for negative strides (which
    `copy_to_host` does not implement), a copy of its byte extent laid out in numpy."""
    if all(s >= 0 for s in array.strides):
        return array.copy_to_host()
    cuda = IMPLS[impl].import_cuda()

    shape, strides, dtype = tuple(array.shape), tuple(array.strides), array.dtype
    lo, hi = byte_extent(shape, strides, dtype.itemsize)
    extent = {
        "shape": (hi - lo,),
        "typestr": "|u1",
        "data": (array.__cuda_array_interface__["data"][0] + lo, False),
        "version": 3,
    }
    raw = cuda.from_cuda_array_interface(extent, owner=array, sync=False).copy_to_host()
    return np.ndarray(shape, dtype, buffer=raw, offset=-lo, strides=strides).copy()


@functools.cache
def kernels_work(impl: str = DEFAULT) -> tuple[bool, str]:
    """(True, "") when numba can compile and launch the copy kernel here, else the reason.

    Checked once by launching the 1-D kernel on a one-element array: numba-cuda can import and
    move memory yet fail to compile any kernel (numba-cuda 0.30.4 with numpy 2.5 fails on the
    removed `np.row_stack`), which would otherwise surface as an error in every exchange."""
    cuda = IMPLS[impl].import_cuda()

    try:
        src = cuda.to_device(np.zeros(1, np.float32))
        dst = cuda.device_array(1, np.float32)
        _copy_kernels(impl)[1][1, 1](src, dst)
        cuda.synchronize()
    except Exception as exc:  # any failure to compile or launch is the reason
        first = (str(exc).strip().splitlines() or [""])[0]
        return False, f"{impl} cannot compile/launch kernels here: {type(exc).__name__}: {first}"
    return True, ""


#: memory kinds Numba makes itself (`caiconform.cuda.memkinds`) -> the numba.cuda function
_KINDS = {"managed": "managed_array", "host-mapped": "mapped_array"}


class _NumbaBackend:
    library = "numba"

    def __init__(self, impl: str = DEFAULT) -> None:
        self.impl = IMPLS[impl]
        self.cuda = self.impl.import_cuda()

    def upload(self, image: np.ndarray) -> Any:
        """`image` in memory of the example's kind (`memkinds.current_kind`): Numba's own
        `managed_array` or `mapped_array` (host-mapped pinned), else `to_device`."""
        from caiconform.cuda.memkinds import current_kind

        kind = current_kind()
        if kind not in _KINDS:
            return self.cuda.to_device(image)
        buf = getattr(self.cuda, _KINDS[kind])(image.shape, dtype=image.dtype)
        # written from the host, which both kinds allow: numba-cuda 0.30.4's copy_to_device
        # on them raises AttributeError ('ManagedNDArray' object has no attribute '_dummy')
        np.copyto(np.ndarray.view(buf, np.ndarray), image)
        return buf

    def synchronize(self) -> None:
        self.cuda.synchronize()

    def stream(self, kind: str) -> Any:
        if kind == "legacy":
            return self.cuda.legacy_default_stream()
        if kind == "per-thread":
            return self.cuda.per_thread_default_stream()
        if kind == "library-default":
            return self.cuda.default_stream()
        if kind == "external":
            from caiconform.adapters._scenarios import shared_raw_stream

            return self.cuda.external_stream(shared_raw_stream())
        if kind == "nonblocking":
            raise SkipExchange(
                "numba makes blocking streams only (cuda.stream()); a non-blocking one is the "
                "'external' scenario (cuda.external_stream over a raw non-blocking stream)"
            )
        # numba has no non-blocking option: "unsynced" work stays on a blocking stream, which
        # the legacy default stream waits for implicitly
        return self.cuda.stream()

    def handle(self, stream: Any) -> int:
        return int(stream)

    def copy_range(self, buf: Any, lo: int, hi: int, nbytes: int, stream: Any) -> None:
        buf[lo:hi].copy_to_device(buf[nbytes + lo : nbytes + hi], stream=stream)

    def wait(self, waiter: Any, streams: list[Any]) -> None:
        for stream in streams:
            event = self.cuda.event()
            event.record(stream=stream)
            event.wait(stream=waiter)

    def view(self, buf: Any, layout: Layout, dtype: np.dtype, stream: Any | None) -> Any:
        DeviceNDArray = self.impl.submodule("cudadrv.devicearray").DeviceNDArray  # noqa: N806

        return DeviceNDArray(
            layout.shape,
            layout.effective_strides(dtype.itemsize),
            dtype,
            stream=0 if stream is None else stream,
            gpu_data=buf.gpu_data.view(layout.offset),
        )


#: a reproducer's lines restoring what `numpy_shim` restores, before its kernel is compiled
REPRO_SHIM = (
    'if not hasattr(np, "row_stack"):  # numba-cuda compiles kernels against np.row_stack\n'
    f"    {_ROW_STACK_SHIM}"
)


#: a reproducer's `CAIOnly`: the kernel is handed the object by its CAI alone, as the
#: numba-kernel consumer is (`_staging.CAIOnly`), since numba-cuda types an argument that has
#: `__dlpack__` by its DLPack export first
_REPRO_CAI_ONLY = (
    "class CAIOnly:  # obj's CAI alone, as an array of a CAI-only library exports it\n"
    "    def __init__(self, obj):\n"
    "        self.obj = obj\n\n"
    "    @property\n"
    "    def __cuda_array_interface__(self):\n"
    "        return self.obj.__cuda_array_interface__\n"
)


def _repro_kernel(ndim: int) -> str:
    """A reproducer's kernel copying `src` into `dst` element by element, for arrays of rank
    `ndim` (the reproducers' counterpart of `_copy_kernels`)."""
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


def _repro_launch(ndim: int) -> str:
    """The copy kernel's grid, block over `shape` (ndim 0-3), as `launch_shape` computes them."""
    if ndim == 0:
        return "(1,), (1,)"
    block = _BLOCK[ndim]
    grid = ", ".join(f"-(-shape[{d}] // {b})" for d, b in enumerate(block))
    return f"({grid},), {block}"


class _NumbaLines(Repro):
    """What a reproducer writes of every numba-cuda adapter: the import, the view
    `cuda.as_cuda_array` makes and a write through it."""

    imports = ("from numba import cuda",)
    distributions = {"numba": "numba-cuda"}
    device_array = "from numba.cuda.cudadrv.devicearray import DeviceNDArray"

    def hold(self) -> Snip | None:
        return Snip("view = cuda.as_cuda_array(obj)", self.imports)

    def write(self, ndim: int) -> Snip | None:
        return Snip(
            "view.copy_to_device(np.ascontiguousarray(new))\ncuda.synchronize()", self.imports
        )


class _NumbaRepro(_NumbaLines):
    """`numba`: `cuda.to_device` (a strided `DeviceNDArray` over an uploaded image), its
    streams, and `cuda.as_cuda_array(obj)`."""

    def consume(self, array: Array | None) -> Snip | None:
        return Snip("result = cuda.as_cuda_array(obj).copy_to_host()", self.imports)

    def produce(self, array: Array) -> Snip | None:
        if array.plain:
            return Snip("obj = cuda.to_device(values)", self.imports)
        strides = array.strides or ()
        return Snip(
            "buf = cuda.to_device(image)\n"
            f"obj = DeviceNDArray({array.shape}, {strides or c_strides(array.shape, array.itemsize)}, "
            "dtype, "
            f"gpu_data=buf.gpu_data.view({array.offset}))",
            (*self.imports, self.device_array),
        )

    def pending(self, scenario: str, array: Array) -> Pending | Snip | None:
        stream = {
            "pending": "cuda.stream()",
            "multi-stream": "cuda.stream()",
            "unsynced": "cuda.stream()",
            "legacy": "cuda.legacy_default_stream()",
            "per-thread": "cuda.per_thread_default_stream()",
            "library-default": "cuda.default_stream()",
            "external": f"cuda.external_stream({RAW_STREAM})",
        }.get(scenario)
        if stream is None:
            return None
        shape, strides = array.shape, array.strides
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
            (*self.imports, self.device_array),
        )


class NumbaAdapter(Adapter):
    """Numba device arrays; consumes through `cuda.as_cuda_array(obj)`."""

    name = "numba"
    module = "numba.cuda"
    distribution = "numba-cuda"
    #: the `numba_impls` implementation this adapter drives
    implementation = "numba-cuda"
    #: the adapter of this implementation that produces (the consumer variants name it)
    producer_name = "numba"
    #: how a reproducer imports this implementation's `cuda`
    repro_import = "from numba import cuda\n"
    consume_is_library_call = True
    capabilities = frozenset({"produce", "consume", "streams", "write"})
    memory_kinds = ("device", *_KINDS)
    repro: Repro = _NumbaRepro()

    def cuda_module(self) -> Any:
        """The `cuda` module of this adapter's implementation (imports it)."""
        return IMPLS[self.implementation].import_cuda()

    def available(self) -> tuple[bool, str]:
        try:
            cuda = self.cuda_module()
        except Exception as exc:  # any import failure means unavailable, with the reason
            return False, f"{self.module} not importable: {type(exc).__name__}: {exc}"
        if not cuda.is_available():
            return False, f"{self.module}.is_available() is False (no usable CUDA driver / device)"
        return True, ""

    def produce(
        self, values: np.ndarray, layout: Layout, typestr: str, stream_scenario: str = "none"
    ) -> Any:
        values, dtype = _staging.check_request(
            self.name, values, layout, typestr, stream_scenario, SUPPORTED
        )
        if values.size == 0:
            if stream_scenario != "none":
                raise SkipExchange("a zero-size array has no data for pending work to write")
            return self.cuda_module().device_array(layout.shape, dtype=dtype)
        backend = _NumbaBackend(self.implementation)
        return produce_staged(backend, values, layout, dtype, stream_scenario)

    def consume(self, obj: Any) -> np.ndarray:
        cuda = self.cuda_module()
        return _to_host(cuda.as_cuda_array(_staging.cai_only(obj)), self.implementation)

    def own_array(self, values: np.ndarray) -> Any:
        cuda = self.cuda_module()
        array = cuda.to_device(values)
        cuda.synchronize()
        return array

    def own_values(self, obj: Any) -> np.ndarray:
        return _to_host(obj, self.implementation)

    def repro_produce(self) -> str:
        return f"{self.repro_import}obj = cuda.to_device(values)\n"

    def repro_consume(self) -> str:
        return f"{self.repro_import}result = cuda.as_cuda_array(obj).copy_to_host()\n"


class _FromCAIRepro(_NumbaLines):
    """`numba-from-cai`: `cuda.from_cuda_array_interface(desc, owner=obj)`."""

    def consume(self, array: Array | None) -> Snip | None:
        return Snip(
            "desc = obj.__cuda_array_interface__\n"
            "result = cuda.from_cuda_array_interface(desc, owner=obj).copy_to_host()",
            self.imports,
        )

    def hold(self) -> Snip | None:
        return Snip(
            "view = cuda.from_cuda_array_interface(obj.__cuda_array_interface__, owner=obj)",
            self.imports,
        )


class NumbaFromCAIAdapter(NumbaAdapter):
    """Consumes through `cuda.from_cuda_array_interface(desc, owner=obj)`; produces nothing of
    its own (the `numba` adapter is the producer)."""

    name = "numba-from-cai"
    capabilities = frozenset({"consume", "write"})
    repro: Repro = _FromCAIRepro()

    def produce(
        self, values: np.ndarray, layout: Layout, typestr: str, stream_scenario: str = "none"
    ) -> Any:
        raise SkipExchange(
            f"{self.name} is a consumer variant; the producer is {self.producer_name!r}"
        )

    def consume(self, obj: Any) -> np.ndarray:
        cuda = self.cuda_module()
        wrapped = _staging.cai_only(obj)
        return _to_host(
            cuda.from_cuda_array_interface(wrapped.__cuda_array_interface__, owner=wrapped),
            self.implementation,
        )

    def repro_consume(self) -> str:
        return (
            f"{self.repro_import}"
            "result = cuda.from_cuda_array_interface(obj.__cuda_array_interface__, "
            "owner=obj).copy_to_host()\n"
        )


class _KernelRepro(_NumbaLines):
    """`numba-kernel`: the object passed to a `@cuda.jit` copy kernel (ndim 0-3), by its CAI
    or by its `__dlpack__`, and as the kernel's destination of a write."""

    def consume(self, array: Array | None) -> Snip | None:
        ndim = len(array.shape) if array is not None else 1
        if ndim > 3:
            return None
        return Snip(
            "desc = obj.__cuda_array_interface__\n"
            'shape = tuple(desc["shape"])\n'
            'dst = cuda.device_array(shape, np.dtype(desc["typestr"]))\n'
            f"if dst.size:\n    copy[{_repro_launch(ndim)}](CAIOnly(obj), dst)\n"
            "result = dst.copy_to_host()",
            self.imports,
            setup=REPRO_SHIM + "\n\n\n" + _REPRO_CAI_ONLY + "\n\n" + _repro_kernel(ndim),
        )

    def consume_dlpack(self, array: Array) -> Snip | None:
        """The destination's shape and type are the example's (numpy dtypes only:
        `cuda.device_array`), not read through a second DLPack consumer in the script, whose
        capsule and refusals would be counted as numba's."""
        ndim = len(array.shape)
        if ndim > 3 or array.typestr in OPAQUE or array.descr:
            return None
        return Snip(
            f"shape = {array.shape}\n"
            "dst = cuda.device_array(shape, dtype)  # the example's shape and type\n"
            "if dst.size:\n"
            f"    copy[{_repro_launch(ndim)}](obj, dst)  # numba takes obj by its __dlpack__\n"
            "result = dst.copy_to_host()",
            self.imports,
            setup=REPRO_SHIM + "\n\n\n" + _repro_kernel(ndim),
        )

    def write(self, ndim: int) -> Snip | None:
        if ndim > 3:
            return None
        return Snip(
            f"shape = new.shape\ncopy[{_repro_launch(ndim)}](cuda.to_device(new), obj)  "
            "# obj itself is the kernel's destination\ncuda.synchronize()",
            self.imports,
            setup=REPRO_SHIM + "\n\n\n" + _repro_kernel(ndim),
        )


class NumbaKernelAdapter(NumbaAdapter):
    """Consumes by passing the object straight to a `@cuda.jit` copy kernel."""

    name = "numba-kernel"
    consume_is_library_call = False  # its consume launches a gather kernel of ours
    capabilities = frozenset({"consume", "write", "kernel", "consume-dlpack"})
    repro: Repro = _KernelRepro()

    def available(self) -> tuple[bool, str]:
        ok, why = super().available()
        return kernels_work(self.implementation) if ok else (ok, why)

    def version(self) -> str | None:
        """The implementation's version, with "+shim(...)" when `numpy_shim` acts (or would)
        here for an implementation that needs it."""
        base = super().version()
        shim = shim_needed() if IMPLS[self.implementation].needs_shim else ""
        return f"{base}+shim({shim})" if base and shim else base

    def produce(
        self, values: np.ndarray, layout: Layout, typestr: str, stream_scenario: str = "none"
    ) -> Any:
        raise SkipExchange(
            f"{self.name} is a consumer variant; the producer is {self.producer_name!r}"
        )

    def consume(self, obj: Any) -> np.ndarray:
        wrapped = _staging.cai_only(obj)
        desc = wrapped.__cuda_array_interface__
        shape = tuple(desc["shape"])
        return _kernel_copy(wrapped, shape, np.dtype(desc["typestr"]), self.implementation)

    def consume_dlpack(self, obj: Any) -> np.ndarray:
        """The object passed to the same copy kernel. numba-cuda 0.30.4 types a kernel argument
        by its `__dlpack__` before its CAI (`typing/typeof.py`, `typeof_impl`) and hands it to
        the launch through `StridedMemoryView.from_dlpack` (`cudadrv/devicearray.py`,
        `_to_strided_memory_view`): numba has no `from_dlpack` of its own. The destination's
        shape and element type are read by caiconform (`dlpack.export` of the producer itself,
        so the wrapper's `calls` hold numba's calls only), as `consume` reads them from the
        dict; `cuda.device_array` takes numpy dtypes, so a type numpy lacks is a skip. That
        reading goes to the producer's own object (`_staging.unwrapped`), past every view a
        family holds, so none of them sees a capsule numba did not ask for."""
        from caiconform import dlpack
        from caiconform.spec.dtypes import is_named

        wrapped = _staging.dlpack_only(obj)
        capsule, _ = dlpack.export(_staging.unwrapped(wrapped))
        typestr = capsule.typestr
        if typestr == "?" or is_named(typestr):
            raise SkipExchange(
                f"the copy kernel's destination (cuda.device_array) has no numpy dtype for the "
                f"exported element type {typestr!r}"
            )
        return _kernel_copy(wrapped, capsule.shape, np.dtype(typestr), self.implementation)

    def repro_consume(self) -> str:
        return (
            f"{self.repro_import}"
            "@cuda.jit\n"
            "def copy1(src, dst):\n"
            "    i = cuda.grid(1)\n"
            "    if i < src.shape[0]:\n"
            "        dst[i] = src[i]\n"
            "dst = cuda.device_array(obj.__cuda_array_interface__['shape'], "
            "obj.__cuda_array_interface__['typestr'])\n"
            "copy1[(dst.size + 127) // 128, 128](obj, dst)\n"
            "result = dst.copy_to_host()\n"
        )

    def repro_consume_dlpack(self) -> str:
        return (
            f"{self.repro_import}"
            "from cuda.core.utils import StridedMemoryView\n"
            "@cuda.jit\n"
            "def copy1(src, dst):\n"
            "    i = cuda.grid(1)\n"
            "    if i < src.shape[0]:\n"
            "        dst[i] = src[i]\n"
            "view = StridedMemoryView.from_dlpack(obj, stream_ptr=-1)  # shape, dtype\n"
            "dst = cuda.device_array(view.shape, view.dtype)\n"
            "copy1[(dst.size + 127) // 128, 128](obj, dst)  # numba takes obj.__dlpack__\n"
            "result = dst.copy_to_host()\n"
        )
