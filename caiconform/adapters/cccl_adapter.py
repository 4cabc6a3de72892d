"""cuda.cccl's parallel algorithms (`cuda.compute`) as a CAI consumer: a device-wide
`unary_transform` with `OpKind.IDENTITY` copies the object into a buffer of caiconform's.

What cuda.compute does, read in the cuda-cccl 1.2.1 wheel (the version carried to the GPU
machine):
- `cuda.compute.unary_transform(d_in=..., d_out=..., op=..., num_items=..., stream=None)`
  (`cuda/compute/algorithms/_transform.py`) takes "device arrays" — any object with
  `__cuda_array_interface__` (`_utils/protocols.is_device_array`);
- `_cccl_interop._device_array_to_cccl_iter` refuses a non-contiguous array
  ("Non-contiguous arrays are not supported.": `protocols.is_contiguous` accepts C or F
  order), reads the element type from `typestr` (`descr` for `|V`), the pointer from
  `data[0]` (after fast paths for `data_ptr()` and `.data.ptr`, which a CAI-only object
  lacks), and treats the memory as `num_items` elements in memory order;
- it reads neither `stream`, the read-only flag nor `mask`; the algorithm runs on the stream
  passed as `stream=` (a `__cuda_stream__` object), here none: the default stream;
- well-known operators (`OpKind`) need no JIT of Python code, so numba-cuda-mlir (the
  `cu13` extra) is not needed; with the v1 backend of this wheel they refuse "opaque"
  element types (complex, structured, other byte orders: `TypeEnum.STORAGE`).

The consumer calls the factory behind `unary_transform`, `make_unary_transform`, with the
device's `compute_capability=` and then the transform it returns (`_cccl_builds`: the compiled
build is shared between processes through a disk cache; the factory still reads every array's
CAI when cuda.compute would). It passes the CAI-only view as `d_in`, a flat caiconform device
buffer of the same element type as `d_out`, `num_items` = the element count, then reads the buffer back: the
elements in the order cuda.compute read them, laid out in F order when the dict's strides are
Fortran order, else in C order. (An array cuda.compute accepted although it is not contiguous
therefore reads back wrong, which is what such an exchange gives its users.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from caiconform.adapters import _staging
from caiconform.adapters._repro import Array, Repro, Snip
from caiconform.adapters.base import Adapter, SkipExchange

__all__ = ["CcclAdapter", "warm"]

#: how cuda.compute refuses an opaque element type for a well-known operator: a refusal of the
#: operator caiconform chose, not of the export (a custom operator would read it), so the
#: exchange is skipped; what cuda.compute says before it gets there (a missing key) stands
_OPAQUE_REFUSED = "is not supported for struct or other opaque types"


class _Flat:
    """A flat device buffer of caiconform's, described by the CAI cuda.compute reads."""

    __slots__ = ("desc",)

    def __init__(self, ptr: int, count: int, desc: dict) -> None:
        self.desc = {
            "shape": (count,),
            "typestr": desc["typestr"],
            "data": (ptr, False),
            "strides": None,
            "version": 3,
        }
        if "descr" in desc:
            self.desc["descr"] = desc["descr"]

    @property
    def __cuda_array_interface__(self) -> dict:
        return self.desc


def _f_contiguous(shape: tuple[int, ...], strides: Any, itemsize: int) -> bool:
    """True when explicit `strides` are Fortran order and not also C order."""
    if not strides or sum(extent > 1 for extent in shape) < 2:
        return False
    step = itemsize
    for extent, stride in zip(shape, strides, strict=True):
        if extent > 1 and stride != step:
            return False
        step *= extent
    return True


class _CcclRepro(Repro):
    """The adapter's call as a reproducer writes it: `unary_transform(d_in=obj, ...,
    op=OpKind.IDENTITY)` into a flat C-ordered buffer of the driver's, read back and laid out
    as `consume` lays it out."""

    imports = ("from cuda.compute import OpKind, unary_transform",)
    distributions = {"cuda.compute": "cuda-cccl"}

    def consume(self, array: Array | None) -> Snip | None:
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
            self.imports,
        )


class CcclAdapter(Adapter):
    """`cuda.compute.make_unary_transform(d_in=obj, d_out=buffer, op=OpKind.IDENTITY, ...)` and
    its call: what `unary_transform` does, with the build from `_cccl_builds`'s disk cache."""

    name = "cuda.cccl"
    module = "cuda.compute"
    distribution = "cuda-cccl"
    capabilities = frozenset({"consume", "kernel"})
    repro: Repro = _CcclRepro()

    def available(self) -> tuple[bool, str]:
        ok, why = _staging.on_gpu(super().available())
        if not ok:
            return ok, why
        import cuda.compute

        if not getattr(cuda.compute, "_BINDINGS_AVAILABLE", True):
            return False, "cuda.compute imports but its CUDA bindings are not available"
        return True, ""

    def consume(self, obj: Any) -> np.ndarray:
        from caiconform.adapters._cccl_builds import unary_identity
        from caiconform.cuda.device import synchronize
        from caiconform.cuda.memory import DeviceBuffer

        wrapped = _staging.cai_only(obj)
        desc = wrapped.__cuda_array_interface__
        shape = tuple(desc["shape"])
        dtype = np.dtype(desc["typestr"])
        count = int(np.prod(shape, dtype=np.int64))
        out = DeviceBuffer(count * dtype.itemsize)
        if count:
            try:
                unary_identity(wrapped, _Flat(out.ptr, count, desc), count)
            except TypeError as exc:
                if _OPAQUE_REFUSED not in str(exc):
                    raise
                raise SkipExchange(
                    f"cuda.compute's OpKind.IDENTITY takes no opaque element type ({dtype}: "
                    "complex, structured or another byte order); reading it needs a custom "
                    "operator compiled from Python, which this adapter does not build"
                ) from exc
        synchronize()
        flat = out.to_host().view(dtype)
        out.close()
        order = "F" if _f_contiguous(shape, desc.get("strides"), dtype.itemsize) else "C"
        return flat.reshape(shape, order=order)

    def repro_consume(self) -> str:
        return (
            "import numpy as np\n"
            "import cupy\n"
            "from cuda.compute import OpKind, unary_transform\n"
            "d = obj.__cuda_array_interface__\n"
            "n = int(np.prod(d['shape']))\n"
            "out = cupy.empty(n, dtype=d['typestr'])\n"
            "unary_transform(d_in=obj, d_out=out, op=OpKind.IDENTITY, num_items=n)\n"
            "result = out.get().reshape(d['shape'])  # C order; an F-order input differs\n"
        )


def warm(typestrs: list[str]) -> dict[str, str]:
    """Make the builds the cuda.cccl consumer needs for `typestrs` exactly as its `consume`
    would (a `CAIOnly` input, a `_Flat` output: cuda.compute's key holds their classes and
    dtypes), one element copied onto itself each: each is read from disk or compiled and
    written there, under its lock, for the run's workers. Returns each typestr's source
    (`unary_identity`) or the error met; `{"skipped": why}` when cuda.cccl is unusable here."""
    from caiconform.adapters._cccl_builds import unary_identity
    from caiconform.cuda.device import synchronize
    from caiconform.cuda.memory import DeviceBuffer

    ok, why = CcclAdapter().available()
    if not ok:
        return {"skipped": why}
    done: dict[str, str] = {}
    for typestr in typestrs:
        try:
            buffer = DeviceBuffer(np.dtype(typestr).itemsize)
            try:
                one = _Flat(buffer.ptr, 1, {"typestr": typestr})
                done[typestr] = unary_identity(
                    _staging.cai_only(one), _Flat(buffer.ptr, 1, one.desc), 1
                )
                synchronize()
            finally:
                buffer.close()
        except Exception as exc:  # noqa: BLE001 -- recorded: the cell meets it again, and reports it
            done[typestr] = f"{type(exc).__name__}: {exc}"[:200]
    return done
