"""RMM's memory resources as `caiconform emm-check --setup` functions.

RMM's Numba plugin (`rmm.allocators.numba:RMMNumbaManager`) allocates from whatever resource is
current on the device, so one plugin class is as many plugins as there are resources: a pool
hands out sub-allocations (IPC handles need the offset into the pool's block), managed memory
comes from `cuMemAllocManaged`, the async resource from a driver pool (pointer attributes differ).
Each function here makes one resource current, small enough to share the GPU with a test run:

    caiconform emm-check rmm.allocators.numba:RMMNumbaManager \\
        --setup caiconform.emm.rmm_setups:pool

`RESOURCES` names them in the order the GPU script checks them. RMM is imported when a
function is called, never at import.
"""

from __future__ import annotations

__all__ = ["RESOURCES", "arena", "binning", "cuda_async", "managed", "pool"]

#: bytes a pool or arena reserves at the start: enough for the checker's largest allocation
#: (2**20 + 3 bytes) many times over, small beside any GPU
INITIAL_BYTES = 1 << 28


def _set(resource) -> None:
    import rmm

    rmm.mr.set_current_device_resource(resource)


def pool() -> None:
    """`PoolMemoryResource` over `cudaMalloc`: sub-allocations inside one large block."""
    import rmm

    _set(rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), initial_pool_size=INITIAL_BYTES))


def managed() -> None:
    """`ManagedMemoryResource`: every allocation is `cudaMallocManaged` memory."""
    import rmm

    _set(rmm.mr.ManagedMemoryResource())


def arena() -> None:
    """`ArenaMemoryResource` over `cudaMalloc`: per-thread arenas inside one global arena."""
    import rmm

    _set(rmm.mr.ArenaMemoryResource(rmm.mr.CudaMemoryResource(), arena_size=INITIAL_BYTES))


def binning() -> None:
    """`BinningMemoryResource`: 1 KiB-1 MiB sizes from fixed-size bins, larger from upstream."""
    import rmm

    _set(rmm.mr.BinningMemoryResource(rmm.mr.CudaMemoryResource(), 10, 20))


def cuda_async() -> None:
    """`CudaAsyncMemoryResource`: `cudaMallocAsync` from a driver memory pool."""
    import rmm

    _set(rmm.mr.CudaAsyncMemoryResource())


#: the setups in the order scripts/gpu_check_change.sh checks RMM's plugin over them
RESOURCES = ("pool", "managed", "arena", "binning", "cuda_async")
