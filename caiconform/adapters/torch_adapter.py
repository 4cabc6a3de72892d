"""PyTorch as a CAI producer (CUDA tensors) and consumer (`torch.as_tensor(obj, device="cuda")`).

What PyTorch does, read in `torch/_tensor.py` and `torch/csrc/utils/tensor_numpy.cpp`:
- export: `Tensor.__cuda_array_interface__` gives typestr, shape, strides (None when
  contiguous, else element strides times the item size), data = (data_ptr, False) with pointer
  0 for empty tensors, and `version=2` — no `stream` key, so nothing tells a consumer about
  work still queued on a side stream;
- import: `tensor_from_cuda_array_interface` parses shape/typestr/data/strides, raises
  TypeError for a read-only `data` flag, ValueError for strides that are not a multiple of the
  item size, and wraps the pointer with `at::from_blob` holding a reference to the object. The
  version read there does not look at `stream` (we record what the installed version does).

Producer tensors are `torch.as_strided` views of a uint8 allocation reinterpreted with
`Tensor.view(dtype)`; PyTorch strides are element counts >= 0, so negative strides and byte
strides that are not a multiple of the item size cannot be expressed (SkipExchange). Side
streams are `torch.cuda.Stream()`; the final write is `Tensor.copy_` inside
`torch.cuda.stream(s)`, with `record_stream` so the caching allocator keeps the bytes. In the
library-stream scenarios the tensor's interface is read inside `torch.cuda.stream(s)` (s a pool
stream, a `torch.cuda.ExternalStream` over a raw non-blocking stream, or
`torch.cuda.default_stream()`). bfloat16 and the float8 formats are exchanged as the tensor
dtypes they are (`Tensor.view(torch.bfloat16)` of the bytes); what PyTorch exports for them is
recorded, not assumed.
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
from caiconform.spec.dtypes import OPAQUE
from caiconform.spec.layout import Layout
from caiconform.spec.scenarios import LIBRARY_STREAM_SCENARIOS

__all__ = ["TorchAdapter", "TORCH_DTYPES", "supported_keys"]

#: dtype key -> attribute of the torch module. The unsigned 16/32/64-bit types exist from
#: PyTorch 2.3 on ("limited support"); older versions lack the attribute, so they drop out.
TORCH_DTYPES = {
    "bfloat16": "bfloat16",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "b1": "bool",
    "i1": "int8",
    "i2": "int16",
    "i4": "int32",
    "i8": "int64",
    "u1": "uint8",
    "u2": "uint16",
    "u4": "uint32",
    "u8": "uint64",
    "f2": "float16",
    "f4": "float32",
    "f8": "float64",
    "c8": "complex64",
    "c16": "complex128",
}


def supported_keys(torch_module: Any) -> frozenset[str]:
    """The dtype keys whose torch dtype exists in `torch_module` (the installed version)."""
    return frozenset(key for key, attr in TORCH_DTYPES.items() if hasattr(torch_module, attr))


#: allocation sizes are rounded up to this, so the byte buffer can be viewed as any dtype
_ALIGN = 16


class _TorchBackend:
    library = "torch"

    def __init__(self) -> None:
        import torch

        self.torch = torch

    def upload(self, image: np.ndarray) -> Any:
        padded = np.zeros(-(-image.size // _ALIGN) * _ALIGN, dtype=np.uint8)
        padded[: image.size] = image
        return self.torch.from_numpy(padded).to("cuda")

    def synchronize(self) -> None:
        self.torch.cuda.synchronize()

    def stream(self, kind: str) -> Any:
        cuda = self.torch.cuda
        if kind in ("side", "unsynced", "nonblocking"):
            return cuda.Stream()  # pool streams are created cudaStreamNonBlocking
        if kind == "external":
            return cuda.ExternalStream(shared_raw_stream())
        if kind in ("legacy", "library-default"):
            return cuda.default_stream()
        if kind == "per-thread":
            raise SkipExchange(
                "torch has no public handle on the per-thread default stream (its default "
                "stream is the legacy one unless built with per-thread default streams)"
            )
        if kind == "export":
            return cuda.current_stream()
        raise SkipExchange(f"torch has no stream of kind {kind!r}")

    def handle(self, stream: Any) -> int:
        return stream.cuda_stream or LEGACY_HANDLE

    def export_under(self, array: Any, stream: Any) -> Any:
        return UnderStream(array, lambda: self.torch.cuda.stream(stream))

    def copy_range(self, buf: Any, lo: int, hi: int, nbytes: int, stream: Any) -> None:
        with self.torch.cuda.stream(stream):
            buf[lo:hi].copy_(buf[nbytes + lo : nbytes + hi], non_blocking=True)
        buf.record_stream(stream)

    def wait(self, waiter: Any, streams: list[Any]) -> None:
        for stream in streams:
            waiter.wait_stream(stream)

    def view(self, buf: Any, layout: Layout, dtype: np.dtype, stream: Any | None) -> Any:
        itemsize = dtype.itemsize
        strides = layout.effective_strides(itemsize)
        typed = buf.view(getattr(self.torch, TORCH_DTYPES[_staging.dtype_key(dtype)]))
        return self.torch.as_strided(
            typed, layout.shape, [s // itemsize for s in strides], layout.offset // itemsize
        )


def _check_layout(layout: Layout, itemsize: int) -> None:
    strides = layout.effective_strides(itemsize)
    if any(s < 0 for s in strides):
        raise SkipExchange(f"torch tensors cannot have negative strides {tuple(strides)}")
    if any(s % itemsize for s in strides) or layout.offset % itemsize:
        raise SkipExchange(
            f"torch strides and storage offsets count elements; byte strides {tuple(strides)} "
            f"/ offset {layout.offset} are not multiples of the item size {itemsize}"
        )


class _TorchRepro(Repro):
    """The adapter's calls as a reproducer writes them: `torch.as_tensor(values)` (a strided
    `torch.as_strided` view of an uploaded image), its streams, `torch.as_tensor(obj)` and
    `torch.from_dlpack(obj)`, a write by `copy_`, and the adapter's unexportable tensors."""

    imports = ("import torch",)
    distributions = {"torch": "torch"}

    def consume(self, array: Array | None) -> Snip | None:
        return Snip('result = torch.as_tensor(obj, device="cuda").cpu().numpy()', self.imports)

    def consume_dlpack(self, array: Array) -> Snip | None:
        return Snip("result = torch.from_dlpack(obj).cpu().numpy()", self.imports)

    def from_dlpack(self, copy: bool | None, own_device: bool) -> Snip | None:
        device = 'f"cuda:{dev[1]}"' if own_device else "None"  # torch names CUDA memory cuda:N
        return Snip(
            f"kept = torch.from_dlpack(obj, device={device}, copy={copy})\n"
            "result = kept.cpu().numpy()",
            self.imports,
        )

    def reread(self) -> Snip | None:
        return Snip("again = kept.cpu().numpy()", self.imports)

    def hold(self) -> Snip | None:
        return Snip('view = torch.as_tensor(obj, device="cuda")', self.imports)

    def write(self, ndim: int) -> Snip | None:
        return Snip(
            "view.copy_(source)\ntorch.cuda.synchronize()",
            self.imports,
            prepare='source = torch.as_tensor(new, device="cuda")',
        )

    def hold_dlpack(self) -> Snip | None:
        return Snip("view = torch.from_dlpack(obj)\nat = view.data_ptr()", self.imports)

    def produce(self, array: Array) -> Snip | None:
        if array.plain:
            return Snip('obj = torch.as_tensor(values, device="cuda")', self.imports)
        strides = array.strides or ()
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
            self.imports,
        )

    def produce_named(self, array: Array) -> Snip | None:
        if array.typestr not in OPAQUE:
            return None
        return Snip(
            'obj = torch.as_tensor(np.frombuffer(values.tobytes(), np.uint8), device="cuda")'
            f".view(torch.{array.typestr}).reshape({array.shape})",
            self.imports,
        )

    def produce_named_dlpack(self, array: Array) -> Snip | None:
        return Snip(
            "obj = torch.from_numpy(values.view(np.uint8).reshape(-1).copy()).cuda()"
            f".view(torch.{array.typestr}).reshape({array.shape})",
            self.imports,
        )

    def pending(self, scenario: str, array: Array) -> Pending | Snip | None:
        stream = {
            "pending": "torch.cuda.Stream()",
            "multi-stream": "torch.cuda.Stream()",
            "unsynced": "torch.cuda.Stream()",
            "nonblocking": "torch.cuda.Stream()",
            "legacy": "torch.cuda.default_stream()",
            "library-default": "torch.cuda.default_stream()",
            "external": f"torch.cuda.ExternalStream({RAW_STREAM})",
        }.get(scenario)
        if stream is None:
            return None
        return Pending(
            stream,
            "stream.cuda_stream",
            "with torch.cuda.stream(stream):\n    buf[:n].copy_(buf[n:], non_blocking=True)",
            "torch.cuda.stream(stream)" if scenario in LIBRARY_STREAM_SCENARIOS else None,
            "buf = torch.from_numpy(image2).cuda()\ntorch.cuda.synchronize()",
            "array = buf[:n].view(torch.from_numpy(np.empty(0, dtype)).dtype)"
            f".reshape({array.shape})",
            self.imports,
        )

    def unexportable(self, kind: str) -> Snip | None:
        code = {
            "cpu": "obj = torch.arange(4, dtype=torch.float32)  # a CPU tensor",
            "sparse-cpu": (
                "obj = torch.sparse_coo_tensor(torch.tensor([[0, 2]]), "
                "torch.tensor([1.0, 2.0]), (4,))"
            ),
            "sparse-cuda": (
                'obj = torch.sparse_coo_tensor(torch.tensor([[0, 2]], device="cuda"), '
                'torch.tensor([1.0, 2.0], device="cuda"), (4,))'
            ),
            "requires-grad": 'obj = torch.zeros(4, device="cuda", requires_grad=True)',
        }.get(kind)
        return None if code is None else Snip(code, self.imports)


class TorchAdapter(Adapter):
    """PyTorch CUDA tensors; consumes through `torch.as_tensor(obj, device="cuda")`."""

    name = "torch"
    module = "torch"
    consume_is_library_call = True
    capabilities = frozenset(
        {
            "produce",
            "consume",
            "streams",
            "dlpack",
            "write",
            "consume-dlpack",
            "dlpack-c",
            "dlpack-copy",
        }
    )
    repro: Repro = _TorchRepro()

    def available(self) -> tuple[bool, str]:
        return _staging.on_gpu(super().available())

    def produce(
        self, values: np.ndarray, layout: Layout, typestr: str, stream_scenario: str = "none"
    ) -> Any:
        import torch

        values, dtype = _staging.check_request(
            "torch", values, layout, typestr, stream_scenario, supported_keys(torch)
        )
        if values.size == 0:
            if stream_scenario != "none":
                raise SkipExchange("a zero-size array has no data for pending work to write")
            torch_dtype = getattr(torch, TORCH_DTYPES[_staging.dtype_key(dtype)])
            return torch.empty(layout.shape, dtype=torch_dtype, device="cuda")
        _check_layout(layout, dtype.itemsize)
        return produce_staged(_TorchBackend(), values, layout, dtype, stream_scenario)

    #: what torch/_tensor.py refuses to export: a CPU tensor and a sparse one (AttributeError,
    #: "so that hasattr(cpu_tensor, ...) is False"), a CUDA tensor that requires grad
    #: (RuntimeError there, "matching tensor.__array__() behavior")
    unexportable_kinds = ("cpu", "sparse-cpu", "sparse-cuda", "requires-grad")

    def unexportable(self, kind: str) -> Any:
        import torch

        if kind == "cpu":
            return torch.arange(4, dtype=torch.float32)
        if kind in ("sparse-cpu", "sparse-cuda"):
            device = "cuda" if kind == "sparse-cuda" else "cpu"
            indices = torch.tensor([[0, 2]], device=device)
            values = torch.tensor([1.0, 2.0], device=device)
            return torch.sparse_coo_tensor(indices, values, (4,))
        if kind == "requires-grad":
            return torch.zeros(4, device="cuda", requires_grad=True)
        return super().unexportable(kind)

    def consume(self, obj: Any) -> np.ndarray:
        import torch

        return torch.as_tensor(_staging.cai_only(obj), device="cuda").cpu().numpy()

    def consume_dlpack(self, obj: Any) -> np.ndarray:
        """`torch.from_dlpack(obj)` (torch/utils/dlpack.py: `__dlpack__` with
        `max_version=(1, 0)` and the current stream, 1 for the legacy default one), read back
        as `own_values` reads a tensor, so bfloat16 and float8 come back as their bytes."""
        import torch

        return self.own_values(torch.from_dlpack(_staging.dlpack_only(obj)))

    def consume_dlpack_with(
        self, obj: Any, *, copy: bool | None = None, device: tuple[int, int] | None = None
    ) -> tuple[np.ndarray, Any]:
        """`torch.from_dlpack(obj, device=..., copy=copy)` (torch/utils/dlpack.py,
        `from_dlpack(ext_tensor, *, device=None, copy=None)`: a `copy` not None goes to
        `__dlpack__` as `copy`, a device as `dl_device=torch._C._torchDeviceToDLDevice(device)`,
        so the producer makes any copy). `device` is named as torch names it: "cuda:N" for CUDA
        (and CUDA managed) memory, "cpu" for kDLCPU."""
        import torch

        result = torch.from_dlpack(
            _staging.dlpack_only(obj), device=_torch_device(torch, device), copy=copy
        )
        return self.own_values(result), result

    def read_result(self, result: Any) -> np.ndarray:
        return self.own_values(result)

    def own_array(self, values: np.ndarray) -> Any:
        """`torch.from_numpy(values).to("cuda")`; a type numpy has no code for (bfloat16,
        float8) goes as integers of its size, `Tensor.view`ed as the torch dtype."""
        import torch

        key = _staging.dtype_key(values.dtype)
        if key not in supported_keys(torch):
            raise SkipExchange(f"torch has no dtype for {values.dtype}")
        if values.dtype.kind == "V":
            stored = values.view(f"<i{values.dtype.itemsize}")
            host = torch.from_numpy(stored).view(getattr(torch, TORCH_DTYPES[key]))
        else:
            host = torch.from_numpy(values)
        tensor = host.to("cuda")
        torch.cuda.synchronize()
        return tensor

    def own_values(self, obj: Any) -> np.ndarray:
        """`obj.cpu().numpy()`; a type numpy has no code for is read as integers of its size."""
        import torch

        if not isinstance(obj, torch.Tensor):
            raise SkipExchange(f"{type(obj).__name__} is no torch tensor")
        if obj.dtype in (torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2):
            obj = obj.view(torch.int16 if obj.element_size() == 2 else torch.int8)
        return obj.cpu().numpy()

    def repro_produce(self) -> str:
        return "import torch\nobj = torch.as_tensor(values, device='cuda')\n"

    def repro_consume(self) -> str:
        return "import torch\nresult = torch.as_tensor(obj, device='cuda').cpu().numpy()\n"

    def repro_consume_dlpack(self) -> str:
        return "import torch\nresult = torch.from_dlpack(obj).cpu().numpy()\n"


def _torch_device(torch: Any, device: tuple[int, int] | None) -> Any:
    """The torch.device a DLPack device tuple names (None for None); SkipExchange for a device
    type torch's from_dlpack takes no name for here."""
    if device is None:
        return None
    kind, number = int(device[0]), int(device[1])
    if kind in (2, 13):  # kDLCUDA, kDLCUDAManaged
        return torch.device("cuda", number)
    if kind == 1:  # kDLCPU
        return torch.device("cpu")
    raise SkipExchange(f"torch names no device of DLPack type {kind}")
