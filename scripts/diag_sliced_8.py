"""Every 8th item of a CuPy array, handed to a numba `@cuda.jit` copy kernel by its CAI alone
and by DLPack, under numba-cuda and numba-cuda-mlir: whether the kernel reads the items the
strides describe. Their byte strides equal the contiguous strides counted in bits, which
`_typeof_cuda_array_interface_cached` (numba-cuda's `typing/typeof.py`) compares against the
item's bit width; the DLPack path types the argument through cuda.core's StridedMemoryView.
The object is wrapped as the matrix wraps it (`_staging.cai_only`, `dlpack_only`). Prints one
line per case and writes them as JSON to OUT (default: stdout only); one implementation a
process (`numba.cuda` or `numba_cuda_mlir.cuda`), caiconform importable:
    PYTHONPATH=. python3 scripts/diag_sliced_8.py MODULE [OUT]
"""

from __future__ import annotations

import importlib
import json
import sys

import cupy
import numpy as np

from caiconform.adapters._staging import cai_only, dlpack_only
from caiconform.adapters.numba_adapter import numpy_shim

numpy_shim()  # numba-cuda 0.30.4 compiles kernels against np.row_stack, which numpy 2.5 lacks


def cases():
    base1 = cupy.arange(64, dtype=np.float32)
    base2 = cupy.arange(3 * 32, dtype=np.float32).reshape(3, 32)
    yield "1-d x[::8] float32", base1[::8]
    yield "2-d x[:, ::8] float32", base2[:, ::8]
    yield "2-d F x.T[::8, :] float32", cupy.asfortranarray(base2.T)[::8, :]
    yield "1-d x[::8] int8", cupy.arange(64, dtype=np.int8)[::8]
    yield "1-d x[::2] float32 (control)", base1[::2]


def kernels(cuda):
    """1-d and 2-d copy kernels of `cuda` (numba-cuda's or numba-cuda-mlir's module)."""

    @cuda.jit
    def copy1(src, dst):
        i = cuda.grid(1)
        if i < src.shape[0]:
            dst[i] = src[i]

    @cuda.jit
    def copy2(src, dst):
        i, j = cuda.grid(2)
        if i < src.shape[0] and j < src.shape[1]:
            dst[i, j] = src[i, j]

    return copy1, copy2


def main(module: str, path: str | None) -> int:
    out = []
    cuda = importlib.import_module(module)
    copy1, copy2 = kernels(cuda)
    for name, x in cases():
        want = cupy.asnumpy(x)
        for how, wrap in (("CAI", cai_only), ("DLPack", dlpack_only)):
            dst = cuda.device_array(x.shape, dtype=x.dtype)
            kernel = copy1 if x.ndim == 1 else copy2
            grid = (1,) if x.ndim == 1 else (1, 1)
            block = (64,) if x.ndim == 1 else (8, 8)
            try:
                kernel[grid, block](wrap(x), dst)
                got = dst.copy_to_host()
                verdict = "OK" if np.array_equal(got, want) else "BUG"
                detail = f"got {got.ravel()[:6].tolist()} expected {want.ravel()[:6].tolist()}"
            except Exception as exc:
                verdict, detail = "ERROR", f"{type(exc).__name__}: {exc}"[:200]
            strides = x.__cuda_array_interface__["strides"]
            row = {"module": module, "case": name, "by": how, "strides": strides,
                   "verdict": verdict, "detail": detail}  # fmt: skip
            out.append(row)
            print(f"{verdict}: {module} {name} strides {strides} by {how}: {detail}")
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
