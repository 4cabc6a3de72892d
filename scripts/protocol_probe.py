"""Which protocol each consumer path of each installed GPU library reads when an object offers both.

Usage: python3 scripts/protocol_probe.py [--out FILE.json] [--libraries a,b] [--timeout S]

A device array (CuPy's, else PyTorch's, else one made with cuda.core) is wrapped in `Both`, an
object exposing `__cuda_array_interface__` (a property) and `__dlpack__` / `__dlpack_device__`
(methods), each counting its calls (`__dlpack__` keeps its arguments too: stream, max_version,
copy). The wrapper is no array of any library, so no path can short-circuit it as its own type
(cuda.core's fast path for `torch.Tensor`, CuPy's for `cupy.ndarray`). Each consumer path of
each library (`PATHS`) takes the wrapper; the protocol read is the one whose counter moved
("both" when both did, "neither" when the path failed before reading), and the values it read
back are compared with the ones uploaded.

Each library runs in a child process of its own (a fresh CUDA context; a library that crashes
the process is recorded as such, not the end of the probe): one not importable is skipped
with the import error, one that raises anywhere is recorded with the exception, per path. The
markdown table goes to stdout, everything (versions, counts, `__dlpack__` arguments, errors)
to `--out` as JSON. Needs numpy and whichever libraries are installed; nothing of caiconform.
docs/protocols.md says, per path, what each library's source reads, and takes the measured
column from this table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

#: the values uploaded: float32, 3 x 4, C order, no two alike
VALUES = (np.arange(12, dtype=np.float32).reshape(3, 4) * 1.5 + 1.0).astype(np.float32)


class Both:
    """A device array seen through both protocols, each access counted.

    `cai` counts reads of `__cuda_array_interface__`, `dlpack` holds the keyword arguments of
    each `__dlpack__` call, `device` counts `__dlpack_device__` calls. `__len__` is there
    because Warp's `wp.array` asks for it before either protocol."""

    def __init__(self, cai: Callable[[], dict], dlpack: Any, shape: tuple[int, ...]) -> None:
        self._cai = cai
        self._source = dlpack
        self._shape = shape
        self.cai = 0
        self.dlpack: list[dict] = []
        self.device = 0

    @property
    def __cuda_array_interface__(self) -> dict:
        self.cai += 1
        return self._cai()

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        self.dlpack.append({**{f"arg{i}": a for i, a in enumerate(args)}, **kwargs})
        return self._source.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        self.device += 1
        return self._source.__dlpack_device__()

    def __len__(self) -> int:
        return self._shape[0]

    def reset(self) -> None:
        self.cai, self.dlpack, self.device = 0, [], 0


class Source:
    """The device array behind `Both`, made by the first library that works here."""

    def __init__(self) -> None:
        self.name, self.array, self.keep, errors = "", None, None, []
        for name, make in (("cupy", _cupy_source), ("torch", _torch_source)):
            try:
                self.array, self.keep = make()
                self.name = name
                return
            except Exception as exc:  # noqa: BLE001 - the next source is tried, the reason kept
                errors.append(f"{name}: {_one_line(exc)}")
        try:
            self.array, self.keep = _cuda_core_source()
            self.name = "cuda.core"
        except Exception as exc:  # noqa: BLE001 - no source at all: the library is not probed
            errors.append(f"cuda.core: {_one_line(exc)}")
            raise RuntimeError("no device array could be made: " + "; ".join(errors)) from None

    def both(self) -> Both:
        array = self.array
        return Both(lambda: array.__cuda_array_interface__, array, VALUES.shape)


def _cupy_source() -> tuple[Any, Any]:
    import cupy

    array = cupy.asarray(VALUES)
    cupy.cuda.Device().synchronize()
    return array, None


def _torch_source() -> tuple[Any, Any]:
    import torch

    array = torch.as_tensor(VALUES, device="cuda")
    torch.cuda.synchronize()
    return array, None


class _CoreArray:
    """A cuda.core allocation holding VALUES: its CAI written here, its DLPack export cuda.core's
    own (`StridedMemoryView.from_buffer(...).__dlpack__`)."""

    def __init__(self) -> None:
        from cuda.bindings import driver
        from cuda.core import Device
        from cuda.core.utils import StridedMemoryView

        device = Device()
        device.set_current()
        stream = device.create_stream()
        self.buffer = device.allocate(VALUES.nbytes, stream=stream)
        stream.sync()
        host = np.ascontiguousarray(VALUES)
        (err,) = driver.cuMemcpyHtoD(int(self.buffer.handle), host.ctypes.data, host.nbytes)
        if err != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuMemcpyHtoD: {err.name}")
        self.view = StridedMemoryView.from_buffer(self.buffer, VALUES.shape, dtype=VALUES.dtype)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {
            "shape": VALUES.shape,
            "typestr": VALUES.dtype.str,
            "data": (int(self.buffer.handle), False),
            "strides": None,
            "version": 3,
        }

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self.view.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return self.view.__dlpack_device__()


def _cuda_core_source() -> tuple[Any, Any]:
    array = _CoreArray()
    return array, array


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _read_device(ptr: int, shape: tuple[int, ...], dtype: Any, strides: Any = None) -> np.ndarray:
    """The elements at `ptr` (element `strides`; None: C order) copied to the host with the
    driver API (`cuMemcpyDtoH` of their byte extent)."""
    from cuda.bindings import driver

    dtype = np.dtype(dtype)
    steps = (
        np.empty(shape, dtype).strides
        if strides is None
        else tuple(s * dtype.itemsize for s in strides)
    )
    lo = sum((n - 1) * s for n, s in zip(shape, steps, strict=True) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(shape, steps, strict=True) if s > 0) + dtype.itemsize
    raw = np.empty(hi - lo, np.uint8)
    (err,) = driver.cuMemcpyDtoH(raw.ctypes.data, ptr + lo, hi - lo)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuMemcpyDtoH: {err.name}")
    return np.ndarray(shape, dtype, buffer=raw, offset=-lo, strides=steps).copy()


# ---------------------------------------------------------------------------------------------
# the consumer paths: each takes (obj, source) and returns the host values it read


def _torch_paths() -> dict[str, Callable]:
    import torch

    return {
        'torch.as_tensor(obj, device="cuda")': lambda o, s: (
            torch.as_tensor(o, device="cuda").cpu().numpy()
        ),
        'torch.asarray(obj, device="cuda")': lambda o, s: (
            torch.asarray(o, device="cuda").cpu().numpy()
        ),
        "torch.from_dlpack(obj)": lambda o, s: torch.from_dlpack(o).cpu().numpy(),
    }


def _cupy_paths() -> dict[str, Callable]:
    import cupy

    copy = cupy.ElementwiseKernel("T x", "T y", "y = x", "caiconform_probe_copy")

    def kernel(o: Any, s: Any) -> np.ndarray:
        out = cupy.empty(VALUES.shape, VALUES.dtype)
        copy(o, out)
        return cupy.asnumpy(out)

    return {
        "cupy.asarray(obj)": lambda o, s: cupy.asnumpy(cupy.asarray(o)),
        "cupy.from_dlpack(obj)": lambda o, s: cupy.asnumpy(cupy.from_dlpack(o)),
        "cupy.ElementwiseKernel argument": kernel,
    }


def _jax_paths() -> dict[str, Callable]:
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    import jax.dlpack
    import jax.numpy as jnp

    if not jax.devices("gpu"):
        raise RuntimeError("jax has no GPU device")
    return {
        "jnp.asarray(obj)": lambda o, s: np.asarray(jnp.asarray(o)),
        "jnp.array(obj)": lambda o, s: np.asarray(jnp.array(o)),
        "jax.dlpack.from_dlpack(obj)": lambda o, s: np.asarray(jax.dlpack.from_dlpack(o)),
        "jnp.from_dlpack(obj)": lambda o, s: np.asarray(jnp.from_dlpack(o)),
    }


def _numba_paths(module: str = "numba.cuda") -> dict[str, Callable]:
    """numba-cuda's paths, or numba-cuda-mlir's (`module` "numba_cuda_mlir.cuda": the same API)."""
    import importlib

    if module == "numba.cuda" and not hasattr(np, "row_stack"):
        # numba-cuda 0.30.4 registers an overload of np.row_stack, which numpy 2.5 removed:
        # the alias is restored so that kernels compile (caiconform's numba adapter does too)
        np.row_stack = np.vstack
    cuda = importlib.import_module(module)

    if not cuda.is_available():
        raise RuntimeError("numba.cuda.is_available() is False")

    @cuda.jit
    def copy2(src, dst):
        i, j = cuda.grid(2)
        if i < src.shape[0] and j < src.shape[1]:
            dst[i, j] = src[i, j]

    def kernel(o: Any, s: Any) -> np.ndarray:
        dst = cuda.device_array(VALUES.shape, VALUES.dtype)
        copy2[(1, 1), (16, 16)](o, dst)
        return dst.copy_to_host()

    name = module.split(".")[0]
    return {
        f"{name} cuda.as_cuda_array(obj)": lambda o, s: cuda.as_cuda_array(o).copy_to_host(),
        f"{name} cuda.to_device(obj)": lambda o, s: cuda.to_device(o).copy_to_host(),
        f"{name} @cuda.jit kernel argument": kernel,
    }


def _cuda_core_paths() -> dict[str, Callable]:
    from cuda.core import Device
    from cuda.core.utils import StridedMemoryView, args_viewable_as_strided_memory

    device = Device()
    device.set_current()
    stream = device.create_stream()
    handle = int(stream.handle)

    def read(view: Any) -> np.ndarray:
        stream.sync()
        return _read_device(int(view.ptr), tuple(view.shape), view.dtype, view.strides)

    @args_viewable_as_strided_memory((0,))
    def decorated(arg: Any) -> np.ndarray:
        return read(arg.view(handle))

    def constructor(o: Any, s: Any) -> np.ndarray:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return read(StridedMemoryView(o, stream_ptr=handle))

    return {
        "cuda.core StridedMemoryView.from_any_interface(obj, s)": lambda o, s: read(
            StridedMemoryView.from_any_interface(o, stream_ptr=handle)
        ),
        "cuda.core StridedMemoryView(obj, s) (deprecated)": constructor,
        "cuda.core StridedMemoryView.from_dlpack(obj, s)": lambda o, s: read(
            StridedMemoryView.from_dlpack(o, stream_ptr=handle)
        ),
        "cuda.core args_viewable_as_strided_memory": lambda o, s: decorated(o),
    }


def _cccl_paths() -> dict[str, Callable]:
    from cuda.compute import OpKind, unary_transform

    def transform(o: Any, s: Any) -> np.ndarray:
        out = _empty_like_source(s)
        unary_transform(d_in=o, d_out=out, op=OpKind.IDENTITY, num_items=VALUES.size)
        return _source_to_host(s, out)

    return {"cuda.compute.unary_transform(d_in=obj)": transform}


def _warp_paths() -> dict[str, Callable]:
    import warp as wp

    wp.init()
    return {
        'wp.array(obj, device="cuda:0")': lambda o, s: wp.array(o, device="cuda:0").numpy(),
        "wp.from_dlpack(obj)": lambda o, s: wp.from_dlpack(o).numpy(),
    }


def _rmm_paths() -> dict[str, Callable]:
    import rmm

    def copy(o: Any, s: Any) -> np.ndarray:
        buffer = rmm.DeviceBuffer(size=VALUES.nbytes)
        buffer.copy_from_device(o)
        raw = np.asarray(buffer.copy_to_host(), dtype=np.uint8)
        return raw.view(VALUES.dtype).reshape(VALUES.shape)

    return {"rmm.DeviceBuffer.copy_from_device(obj)": copy}


def _pycuda_paths() -> dict[str, Callable]:
    import pycuda.autoprimaryctx
    from pycuda import gpuarray
    from pycuda.compiler import SourceModule

    module = SourceModule(
        "__global__ void copy(const float *src, float *dst, int n)"
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) dst[i] = src[i]; }"
    )
    copy = module.get_function("copy")

    def kernel(o: Any, s: Any) -> np.ndarray:
        dst = gpuarray.empty(VALUES.size, np.float32)
        copy(o, dst, np.int32(VALUES.size), block=(32, 1, 1), grid=(1, 1))
        pycuda.autoprimaryctx.context.synchronize()
        return dst.get().reshape(VALUES.shape)

    return {"pycuda kernel argument": kernel}


def _pyarrow_paths() -> dict[str, Callable]:
    from pyarrow import cuda

    def buffer(o: Any, s: Any) -> np.ndarray:
        buf = cuda.Context(0).buffer_from_object(o)
        return np.frombuffer(buf.copy_to_host(), np.float32).reshape(VALUES.shape)

    return {"pyarrow.cuda Context.buffer_from_object(obj)": buffer}


def _dali_paths() -> dict[str, Callable]:
    from nvidia.dali.tensors import TensorGPU

    return {'TensorGPU(obj, "", 0)': lambda o, s: np.array(TensorGPU(o, "", 0).as_cpu())}


def _mpi4py_paths() -> dict[str, Callable]:
    from mpi4py import MPI

    query = getattr(MPI, "Query_cuda_support", None)
    if query is None or not query():
        # a non-CUDA-aware MPI reads a device pointer as host memory: the process would crash
        raise RuntimeError("MPI is not CUDA-aware (MPI.Query_cuda_support), not probed")

    def sendrecv(o: Any, s: Any) -> np.ndarray:
        host = np.empty_like(VALUES)
        MPI.COMM_SELF.Sendrecv([o, MPI.BYTE], 0, 0, [host.reshape(-1).view(np.uint8), MPI.BYTE])
        return host

    return {"mpi4py COMM_SELF.Sendrecv([obj, MPI.BYTE])": sendrecv}


def _empty_like_source(source: Source) -> Any:
    if source.name == "cupy":
        import cupy

        return cupy.empty(VALUES.shape, VALUES.dtype)
    if source.name == "torch":
        import torch

        return torch.empty(VALUES.shape, dtype=torch.float32, device="cuda")
    raise RuntimeError(f"no output array of {source.name} for this path")


def _source_to_host(source: Source, array: Any) -> np.ndarray:
    if source.name == "cupy":
        import cupy

        return cupy.asnumpy(array)
    return array.cpu().numpy()


#: library -> (the module whose import says it is installed, its paths)
PATHS: dict[str, tuple[str, Callable[[], dict[str, Callable]]]] = {
    "torch": ("torch", _torch_paths),
    "cupy": ("cupy", _cupy_paths),
    "jax": ("jax", _jax_paths),
    "numba": ("numba.cuda", _numba_paths),
    "numba-mlir": ("numba_cuda_mlir.cuda", lambda: _numba_paths("numba_cuda_mlir.cuda")),
    "cuda.core": ("cuda.core", _cuda_core_paths),
    "cuda.cccl": ("cuda.compute", _cccl_paths),
    "warp": ("warp", _warp_paths),
    "rmm": ("rmm", _rmm_paths),
    "pycuda": ("pycuda.driver", _pycuda_paths),
    "pyarrow": ("pyarrow.cuda", _pyarrow_paths),
    "dali": ("nvidia.dali", _dali_paths),
    "mpi4py": ("mpi4py", _mpi4py_paths),
}
#: distribution names, for the versions recorded
_DISTRIBUTIONS = {
    "torch": "torch",
    "cupy": "cupy-cuda13x",
    "jax": "jax",
    "numba": "numba-cuda",
    "numba-mlir": "numba-cuda-mlir",
    "cuda.core": "cuda-core",
    "cuda.cccl": "cuda-cccl",
    "warp": "warp-lang",
    "rmm": "rmm-cu13",
    "pycuda": "pycuda",
    "pyarrow": "pyarrow",
    "dali": "nvidia-dali-cuda130",
    "mpi4py": "mpi4py",
}


def _version(library: str) -> str | None:
    from importlib import metadata

    for dist in (_DISTRIBUTIONS.get(library, library), library.split(".")[0]):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    if library == "cupy":
        for dist in ("cupy-cuda12x", "cupy"):
            try:
                return metadata.version(dist)
            except metadata.PackageNotFoundError:
                continue
    return None


def protocol_of(cai: int, dlpack: int) -> str:
    """The protocol a path read, from how often each was accessed."""
    if cai and dlpack:
        return "both"
    return "cai" if cai else "dlpack" if dlpack else "neither"


def _jsonable(value: Any) -> Any:
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return repr(value)


def probe_library(library: str) -> dict:
    """Every path of `library` against a fresh `Both`, in this process."""
    import importlib

    module, paths_of = PATHS[library]
    record: dict[str, Any] = {"library": library, "version": _version(library), "paths": []}
    try:
        importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - not installed (or broken): skipped, with why
        return {
            **record,
            "status": "skipped",
            "reason": f"{module} not importable: {_one_line(exc)}",
        }
    try:
        paths = paths_of()
        source = Source()
    except Exception as exc:  # noqa: BLE001 - no device, no source array: nothing to probe
        return {**record, "status": "error", "reason": _one_line(exc)}
    record["source"] = source.name
    for path, call in paths.items():
        obj = source.both()
        entry: dict[str, Any] = {"path": path}
        started = time.perf_counter()
        try:
            got = call(obj, source)
            entry["values"] = "right" if _same(got) else f"wrong: {_differ(got)}"
            entry["error"] = None
        except Exception as exc:  # noqa: BLE001 - recorded per path, the probe goes on
            entry["values"] = "none"
            entry["error"] = _one_line(exc)
            entry["traceback"] = traceback.format_exc(limit=6)[-2000:]
        entry["seconds"] = round(time.perf_counter() - started, 3)
        entry["cai_reads"] = obj.cai
        entry["dlpack_calls"] = _jsonable(obj.dlpack)
        entry["dlpack_device_calls"] = obj.device
        entry["protocol"] = protocol_of(obj.cai, len(obj.dlpack))
        record["paths"].append(entry)
    record["status"] = "ran"
    return record


def _same(got: Any) -> bool:
    got = np.asarray(got)
    return got.shape == VALUES.shape and bool(np.array_equal(got.astype(np.float32), VALUES))


def _differ(got: Any) -> str:
    got = np.asarray(got)
    if got.shape != VALUES.shape:
        return f"shape {got.shape}, expected {VALUES.shape}"
    return f"{got.reshape(-1)[:4].tolist()}..., expected {VALUES.reshape(-1)[:4].tolist()}..."


def _run_child(library: str, timeout: float) -> dict:
    """`probe_library(library)` in a child process; a crash or a hang is the record."""
    base = {"library": library, "version": None, "paths": []}
    try:
        done = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--child", library],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {**base, "status": "error", "reason": f"the probe did not finish in {timeout:g} s"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                break
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
    how = f"signal {-done.returncode}" if done.returncode < 0 else f"exit {done.returncode}"
    return {**base, "status": "error", "reason": f"the probe process died ({how}): {tail}"}


def markdown(records: list[dict]) -> str:
    """The table docs/protocols.md takes its measured column from."""
    lines = [
        "| library | version | path | protocol read | CAI reads | `__dlpack__` calls "
        "(arguments) | values | error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for record in records:
        if record["status"] != "ran":
            lines.append(
                f"| {record['library']} | {record.get('version') or ''} | — | "
                f"{record['status']} | | | | {_cell(record.get('reason', ''))} |"
            )
            continue
        for entry in record["paths"]:
            calls = entry["dlpack_calls"]
            args = "; ".join(
                ", ".join(f"{k}={v}" for k, v in call.items()) or "no arguments" for call in calls
            )
            lines.append(
                f"| {record['library']} | {record.get('version') or ''} | `{entry['path']}` | "
                f"**{entry['protocol']}** | {entry['cai_reads']} | {len(calls)}"
                f"{f' ({_cell(args)})' if calls else ''} | {entry['values']} | "
                f"{_cell(entry['error'] or '')} |"
            )
    return "\n".join(lines)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the JSON record here")
    parser.add_argument("--libraries", help="comma-separated subset of: " + ", ".join(PATHS))
    parser.add_argument("--timeout", type=float, default=150.0, help="seconds per library")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(probe_library(args.child)))
        return 0
    libraries = list(PATHS) if not args.libraries else args.libraries.split(",")
    unknown = [name for name in libraries if name not in PATHS]
    if unknown:
        parser.error(f"unknown libraries {unknown}; known: {', '.join(PATHS)}")
    records = [_run_child(library, args.timeout) for library in libraries]
    table = markdown(records)
    print(table)
    if args.out:
        document = {
            "schema": "caiconform-protocol-probe/1",
            "python": platform.python_version(),
            "numpy": np.__version__,
            "machine": platform.platform(),
            "values": {"dtype": VALUES.dtype.str, "shape": list(VALUES.shape)},
            "libraries": records,
            "markdown": table,
        }
        with open(args.out, "w") as fh:
            json.dump(document, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
