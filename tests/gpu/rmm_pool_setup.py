"""`caiconform emm-check --setup tests.gpu.rmm_pool_setup:use_pool` target: RMM with a pool.

With a pool resource, RMM's memalloc returns sub-allocations of one large driver allocation, so
its get_ipc_handle must report nonzero offsets: the case the EMM spec's IPC section warns about.
"""

from __future__ import annotations


def use_pool() -> None:
    """Make RMM's default resource a 512 MiB pool on device 0."""
    import rmm

    rmm.reinitialize(pool_allocator=True, initial_pool_size=512 << 20)
