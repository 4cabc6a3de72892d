"""Is a worker still fit for the next example? Checked after every example, in the worker.

A library can leave the CUDA context with a sticky error (an illegal address, a failed launch):
every later call in that process fails, so the examples that follow would be blamed for it. The
example that left the error behind is classified `poisoned` and the worker is replaced.

The CUDA check runs only when the process has loaded a CUDA library (`cuda.bindings`, through
which every CUDA path of caiconform goes, or an array library that talks to the driver itself)
*and* a context is current on this thread: a CPU-only example never pays for or depends on a
CUDA driver, and the check never creates a context of its own. After its first check a worker
keeps one byte in the context (`cuda.device.anchor_context`): the later checks' allocation then
costs the NVIDIA driver no ioctl, and the host's workers wait for one another in those
(docs/performance.md).
Health hooks ("module:function" returning `(ok, reason)`) let other states count as poison; the
tests use one to simulate a sticky error without a GPU.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from caiconform.runner.resolve import resolve

__all__ = ["check"]

#: modules whose presence means the example may have used a CUDA context
CUDA_MODULES = ("cuda.bindings", "cupy", "torch", "numba.cuda", "jax")


def _cuda_context() -> tuple[bool, str]:
    if not any(name in sys.modules for name in CUDA_MODULES):
        return True, ""
    from caiconform.cuda import context_healthy, gpu_available

    if not gpu_available()[0]:
        return True, ""  # no GPU, so no context to poison
    from cuda.bindings import driver

    err, ctx = driver.cuCtxGetCurrent()
    if err == driver.CUresult.CUDA_ERROR_NOT_INITIALIZED:
        return True, ""
    if err != driver.CUresult.CUDA_SUCCESS:
        return False, f"cuCtxGetCurrent failed: {err.name}"
    if ctx is None or int(ctx) == 0:
        return True, ""  # this thread never made a context current
    ok, why = context_healthy()
    if ok:
        from caiconform.cuda.device import anchor_context

        anchor_context()  # the next checks' byte costs the driver no ioctl
    return ok, why


def check(hooks: Sequence[str] = ()) -> tuple[bool, str]:
    """(True, "") when the process can run another example, else (False, why). A hook that
    raises counts as unhealthy: a worker in a state its own checks cannot inspect is not trusted."""
    try:
        ok, why = _cuda_context()
    except Exception as exc:
        ok, why = False, f"{type(exc).__name__}: {exc}"
    if not ok:
        return False, f"CUDA context unusable after the example: {why}"
    for hook in hooks:
        try:
            ok, why = resolve(hook)()
        except Exception as exc:
            return False, f"health hook {hook} raised {type(exc).__name__}: {exc}"
        if not ok:
            return False, f"health hook {hook}: {why}"
    return True, ""
