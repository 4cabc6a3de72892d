"""CuPy as a CAI producer (cupy.ndarray) and consumer (`cupy.asarray`).

What CuPy does, read in `cupy/_core/core.pyx`:
- export: `ndarray.__cuda_array_interface__` builds shape, typestr, descr, data, strides (None
  when C-contiguous) and, with CUPY_CUDA_ARRAY_INTERFACE_EXPORT_VERSION=3 (the default),
  `stream` = the *current* stream at the time the attribute is read, the null stream replaced
  by the default-stream handle because the spec forbids 0;
- import: `_convert_object_with_cuda_array_interface` rejects a mask (ValueError), wraps the
  pointer in `UnownedMemory` owned by the exporting object, and synchronizes on `stream` with
  `cudaStreamSynchronize` unless CUPY_CUDA_ARRAY_INTERFACE_SYNC=0.

Producer views are `cupy.ndarray(shape, dtype, memptr=buf.data + offset, strides=...)` over a
uint8 allocation, so any byte strides (negative, zero, not a multiple of the item size) are
CuPy's own to accept or refuse. Side streams are `cupy.cuda.Stream()` (blocking, the default);
`nonblocking` is `cupy.cuda.Stream(non_blocking=True)`, `external` a `cupy.cuda.ExternalStream`
over a raw non-blocking stream, `library-default` `cupy.cuda.Stream.null`; in those three the
array's interface is read inside `with stream:`, so CuPy exports that stream.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from caiconform.adapters import _staging
from caiconform.adapters._repro import RAW_STREAM, Array, Pending, Repro, Snip
from caiconform.adapters._scenarios import (
    LEGACY_HANDLE,
    UnderStream,
    produce_staged,
    shared_raw_stream,
)
from caiconform.adapters.base import Adapter, SkipExchange
from caiconform.spec.layout import Layout
from caiconform.spec.scenarios import LIBRARY_STREAM_SCENARIOS

__all__ = ["CupyAdapter", "ExportVersion", "SUPPORTED"]

#: CuPy holds every numeric numpy dtype, float16 and complex included.
SUPPORTED = frozenset(_staging.ALL_DTYPE_KEYS)


_managed: list[Any] = []


def _managed_pool() -> Any:
    """This process's CuPy memory pool of managed memory (made once)."""
    import cupy

    if not _managed:
        _managed.append(cupy.cuda.MemoryPool(cupy.cuda.malloc_managed))
    return _managed[0]


class _CupyBackend:
    library = "cupy"

    def __init__(self) -> None:
        import cupy

        self.cupy = cupy

    def upload(self, image: np.ndarray) -> Any:
        """`image` in memory of the example's kind (`memkinds.current_kind`): managed memory
        from a `cupy.cuda.MemoryPool(cupy.cuda.malloc_managed)`, CuPy's own managed
        allocator, else the default pool's device memory."""
        from caiconform.cuda.memkinds import current_kind

        if current_kind() != "managed":
            return self.cupy.asarray(image)
        with self.cupy.cuda.using_allocator(_managed_pool().malloc):
            return self.cupy.asarray(image)

    def synchronize(self) -> None:
        self.cupy.cuda.Device().synchronize()

    def stream(self, kind: str) -> Any:
        cuda = self.cupy.cuda
        if kind == "side":
            return cuda.Stream()
        if kind == "unsynced":
            return cuda.Stream(non_blocking=True)
        if kind == "legacy":
            return cuda.Stream.null
        if kind == "per-thread":
            return cuda.Stream.ptds
        if kind == "nonblocking":
            return cuda.Stream(non_blocking=True)
        if kind == "external":
            return cuda.ExternalStream(shared_raw_stream())
        if kind == "library-default":
            return cuda.Stream.null
        if kind == "export":
            return cuda.get_current_stream()
        raise SkipExchange(f"cupy has no stream of kind {kind!r}")

    def handle(self, stream: Any) -> int:
        return stream.ptr or LEGACY_HANDLE

    def export_under(self, array: Any, stream: Any) -> Any:
        return UnderStream(array, lambda: stream)

    def copy_range(self, buf: Any, lo: int, hi: int, nbytes: int, stream: Any) -> None:
        with stream:
            buf[lo:hi] = buf[nbytes + lo : nbytes + hi]

    def wait(self, waiter: Any, streams: list[Any]) -> None:
        for stream in streams:
            waiter.wait_event(stream.record())

    def view(self, buf: Any, layout: Layout, dtype: np.dtype, stream: Any | None) -> Any:
        strides = layout.effective_strides(dtype.itemsize)
        return self.cupy.ndarray(
            layout.shape, dtype, memptr=buf.data + layout.offset, strides=strides
        )


class ExportVersion:
    """A CuPy array whose interface is read with `cupy._util.CUDA_ARRAY_INTERFACE_EXPORT_VERSION`
    set to `version` (what the environment variable sets at import; CuPy's own tests set the
    attribute the same way), the previous value restored after each read."""

    def __init__(self, array: Any, version: int) -> None:
        self.array = array
        self.version = version

    @property
    def __cuda_array_interface__(self) -> dict:
        from cupy import _util

        before = _util.CUDA_ARRAY_INTERFACE_EXPORT_VERSION
        _util.CUDA_ARRAY_INTERFACE_EXPORT_VERSION = self.version
        try:
            return self.array.__cuda_array_interface__
        finally:
            _util.CUDA_ARRAY_INTERFACE_EXPORT_VERSION = before


class _CupyRepro(Repro):
    """The adapter's calls as a reproducer writes them: `cupy.asarray` (a strided
    `cupy.ndarray` over an uploaded image), its streams, `cupy.asarray(obj)` and
    `cupy.from_dlpack(obj)`, a write by assignment, and the adapter's unexportable object and
    export setting."""

    imports = ("import cupy",)
    distributions = {"cupy": "cupy"}

    def consume(self, array: Array | None) -> Snip | None:
        return Snip("result = cupy.asnumpy(cupy.asarray(obj))", self.imports)

    def consume_dlpack(self, array: Array) -> Snip | None:
        return Snip("result = cupy.asnumpy(cupy.from_dlpack(obj))", self.imports)

    def from_dlpack(self, copy: bool | None, own_device: bool) -> Snip | None:
        device = "dev" if own_device else "None"  # CuPy takes the DLPack tuple itself
        return Snip(
            f"kept = cupy.from_dlpack(obj, device={device}, copy={copy})\n"
            "result = cupy.asnumpy(kept)",
            self.imports,
        )

    def reread(self) -> Snip | None:
        return Snip("again = cupy.asnumpy(kept)", self.imports)

    def hold(self) -> Snip | None:
        return Snip("view = cupy.asarray(obj)", self.imports)

    def write(self, ndim: int) -> Snip | None:
        return Snip(
            "view[...] = source\ncupy.cuda.Device().synchronize()",
            self.imports,
            prepare="source = cupy.asarray(new)",
        )

    def hold_dlpack(self) -> Snip | None:
        return Snip("view = cupy.from_dlpack(obj)\nat = view.data.ptr", self.imports)

    def produce(self, array: Array) -> Snip | None:
        if array.plain:
            return Snip("obj = cupy.asarray(values)", self.imports)
        strides = array.strides or ()
        return Snip(
            "buf = cupy.asarray(image)\n"
            f"obj = cupy.ndarray({array.shape}, dtype, memptr=buf.data + {array.offset}, "
            f"strides={strides or None})",
            self.imports,
        )

    def pending(self, scenario: str, array: Array) -> Pending | Snip | None:
        stream = {
            "pending": "cupy.cuda.Stream()",
            "multi-stream": "cupy.cuda.Stream()",
            "unsynced": "cupy.cuda.Stream(non_blocking=True)",
            "nonblocking": "cupy.cuda.Stream(non_blocking=True)",
            "legacy": "cupy.cuda.Stream.null",
            "library-default": "cupy.cuda.Stream.null",
            "per-thread": "cupy.cuda.Stream.ptds",
            "external": f"cupy.cuda.ExternalStream({RAW_STREAM})",
        }.get(scenario)
        if stream is None:
            return None
        return Pending(
            stream,
            "stream.ptr",
            "with stream:\n    buf[:n] = buf[n:]",
            "stream" if scenario in LIBRARY_STREAM_SCENARIOS else None,
            "buf = cupy.asarray(image2)\ncupy.cuda.Device().synchronize()",
            f"array = cupy.ndarray({array.shape}, dtype, memptr=buf.data, strides={array.strides})",
            self.imports,
        )

    def unexportable(self, kind: str) -> Snip | None:
        if kind != "sparse-csr":
            return None
        return Snip(
            "import cupyx.scipy.sparse\n"
            "obj = cupyx.scipy.sparse.csr_matrix(cupy.eye(3, dtype=cupy.float32))",
            self.imports,
        )

    def export_setting(self, setting: str) -> str | None:
        if setting != "CUPY_CUDA_ARRAY_INTERFACE_EXPORT_VERSION=2":
            return None
        return 'os.environ["CUPY_CUDA_ARRAY_INTERFACE_EXPORT_VERSION"] = "2"  # read at import'


class CupyAdapter(Adapter):
    """CuPy arrays; consumes through `cupy.asarray(obj)` then `cupy.asnumpy`."""

    name = "cupy"
    module = "cupy"
    consume_is_library_call = True
    capabilities = frozenset(
        {"produce", "consume", "streams", "dlpack", "write", "consume-dlpack", "dlpack-copy"}
    )
    memory_kinds = ("device", "managed")
    repro: Repro = _CupyRepro()

    def available(self) -> tuple[bool, str]:
        return _staging.on_gpu(super().available())

    def version(self) -> str | None:
        return _staging.distribution_version("cupy")

    def produce(
        self, values: np.ndarray, layout: Layout, typestr: str, stream_scenario: str = "none"
    ) -> Any:
        values, dtype = _staging.check_request(
            "cupy", values, layout, typestr, stream_scenario, SUPPORTED
        )
        backend = _CupyBackend()
        if values.size == 0:
            if stream_scenario != "none":
                raise SkipExchange("a zero-size array has no data for pending work to write")
            return backend.cupy.empty(layout.shape, dtype)
        return produce_staged(backend, values, layout, dtype, stream_scenario)

    #: cupy/_util.pyx reads CUPY_CUDA_ARRAY_INTERFACE_EXPORT_VERSION once, at import, into
    #: `cupy._util.CUDA_ARRAY_INTERFACE_EXPORT_VERSION`, which each export reads; at 2 the
    #: docs say "the CuPy stream ... will not be exported"
    export_settings = (("CUPY_CUDA_ARRAY_INTERFACE_EXPORT_VERSION=2", 2),)

    def produce_under(self, setting: str, values: np.ndarray, layout: Layout, typestr: str) -> Any:
        versions = dict(self.export_settings)
        if setting not in versions:
            return super().produce_under(setting, values, layout, typestr)
        return ExportVersion(self.produce(values, layout, typestr), versions[setting])

    #: a sparse matrix holds its device data in several arrays and exports none of them
    unexportable_kinds = ("sparse-csr",)

    def unexportable(self, kind: str) -> Any:
        if kind == "sparse-csr":
            import cupy
            import cupyx.scipy.sparse

            return cupyx.scipy.sparse.csr_matrix(cupy.eye(3, dtype=cupy.float32))
        return super().unexportable(kind)

    def consume(self, obj: Any) -> np.ndarray:
        import cupy

        return cupy.asnumpy(cupy.asarray(_staging.cai_only(obj)))

    def consume_dlpack(self, obj: Any) -> np.ndarray:
        """`cupy.from_dlpack(obj)` (cupy/_core/dlpack.pyx: `__dlpack__` with CuPy's current
        stream, the default stream's handle for the null one, and `max_version`), then
        `cupy.asnumpy`. `cupy.asarray` takes no `__dlpack__` (core.pxd,
        `_convert_from_cupy_like`: the CAI only), so this is CuPy's one DLPack import."""
        import cupy

        return cupy.asnumpy(cupy.from_dlpack(_staging.dlpack_only(obj)))

    def consume_dlpack_with(
        self, obj: Any, *, copy: bool | None = None, device: tuple[int, int] | None = None
    ) -> tuple[np.ndarray, Any]:
        """`cupy.from_dlpack(obj, device=device, copy=copy)` (cupy/_core/dlpack.pyx,
        `from_dlpack(array, *, device=None, copy=None)`: `device` is the DLPack tuple itself,
        and any device but None raises NotImplementedError; `copy` goes to `__dlpack__` as it
        is, so the producer makes the copy), then `cupy.asnumpy`."""
        import cupy

        result = cupy.from_dlpack(_staging.dlpack_only(obj), device=device, copy=copy)
        return cupy.asnumpy(result), result

    def read_result(self, result: Any) -> np.ndarray:
        import cupy

        return cupy.asnumpy(result)

    def own_array(self, values: np.ndarray) -> Any:
        import cupy

        array = cupy.asarray(values)
        cupy.cuda.Device().synchronize()
        return array

    def own_values(self, obj: Any) -> np.ndarray:
        import cupy

        return cupy.asnumpy(obj)

    def repro_produce(self) -> str:
        return "import cupy\nobj = cupy.asarray(values)\n"

    def repro_consume(self) -> str:
        return "import cupy\nresult = cupy.asnumpy(cupy.asarray(obj))\n"

    def repro_consume_dlpack(self) -> str:
        return "import cupy\nresult = cupy.asnumpy(cupy.from_dlpack(obj))\n"
