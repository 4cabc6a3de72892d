"""The GPU checks of an EMM plugin by contract area, one mixin of `emm.checks.GpuChecks` each:
`binding` (one instance per context, the allocation paths, a fresh process, Numba's own
allocations), `memalloc` (memalloc, an impossible size, the pointer's finalizer), `host_memory`
(memhostalloc, mempin), `memory_info` (get_memory_info), `ipc` (get_ipc_handle, the handle opened
in another process), `defer` (defer_cleanup), `lifecycle` (initialize, reset and their routing);
`base` holds what they share.
"""
