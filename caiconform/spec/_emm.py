"""Numba External Memory Management (EMM) plugin interface rules.

One entry per normative sentence of `external_memory_management.rst`. EMM rules carry no CAI
versions: the plugin interface has its own `interface_version`, currently 1.
"""

from __future__ import annotations

from caiconform.spec.rules import make

OVERVIEW = "emm#overview-of-external-memory-management"
DEALLOC = "emm#effects-on-deallocation-strategies"
OTHER = "emm#management-of-other-objects"
ASYNC = "emm#asynchronous-allocation-and-deallocation"
IMPL = "emm#implementing-an-emm-plugin"
HOST = "emm#host-only-cuda-memory-manager"
MIXIN = "emm#the-ipc-handle-mixin"
PTRS = "emm#memory-pointers"
INFO = "emm#memory-info"
IPC = "emm#ipc"
ENV = "emm#environment-variable"
FUNC = "emm#function"
RESET = "emm#resetting-the-memory-manager"

# One rule per entry, laid out as a table.
# fmt: off
RULES = (
    make("EMM-NUMBA-NO-DIRECT-ALLOC", "MUST", "", "numba", OVERVIEW,
         "With a plugin in use, Numba allocates and frees device memory only through the plugin, "
         "never calling cuMemAlloc or cuMemFree itself."),
    make("EMM-DEVICE-MEMORY", "MUST", "", "plugin", OVERVIEW,
         "A plugin takes responsibility for the management of device memory."),
    make("EMM-DEALLOC-STRATEGY", "MAY", "", "plugin", DEALLOC,
         "The plugin implements the deallocation strategy (Numba's own deferral is not used); it "
         "may free at once, pool, or defer."),
    make("EMM-DEFER-CLEANUP-DOCUMENTED", "SHOULD", "", "plugin", DEALLOC,
         "A plugin is accompanied by documentation of how defer_cleanup behaves with it."),
    make("EMM-NUMBA-OTHER-OBJECTS", "MUST", "", "numba", OTHER,
         "Events, streams and modules are still managed by Numba with a plugin in use."),
    make("EMM-SYNCHRONOUS", "MUST", "", "plugin", ASYNC,
         "Allocation and deallocation through the plugin are synchronous: memory returned by "
         "memalloc is usable at once."),
    make("EMM-SUBCLASS", "MUST", "", "plugin", IMPL,
         "A plugin derives from numba.cuda.BaseCUDAMemoryManager and leaves no abstract method "
         "unimplemented."),
    make("EMM-ONE-INSTANCE-PER-CONTEXT", "MUST", "", "numba", IMPL,
         "Numba makes one plugin instance per context; the owning context is self.context."),
    make("EMM-CONSTRUCT-NO-CUDA", "SHOULD", "", "plugin", IMPL,
         "Constructing a plugin (with context=None) makes no CUDA calls: all its methods are "
         "invoked by Numba, initialization included."),
    make("EMM-TRANSPARENT", "MUST", "", "plugin", IMPL,
         "A plugin is transparent to code using Numba: user code never needs to call its methods."),
    make("EMM-ALLOC-POINTER-OBJECT", "MUST", "", "plugin", IMPL,
         "memalloc, memhostalloc and mempin allocate or pin through the underlying library and "
         "return a memory pointer instance for Numba."),
    make("EMM-ALLOC-CURRENT-CONTEXT", "MUST", "", "numba", IMPL,
         "Allocation methods are called with the plugin's own context current; the memory they "
         "return belongs to that context's device."),
    make("EMM-ALLOC-VALID", "MUST", "", "plugin", IMPL,
         "memalloc returns a nonzero device pointer to at least the requested bytes in one "
         "allocation, disjoint from other live allocations; an allocation it cannot make raises."),
    make("EMM-INITIALIZE-BEFORE-USE", "MUST", "", "numba", IMPL,
         "Numba calls initialize before the first use of the plugin object for a context."),
    make("EMM-INITIALIZE-PREPARES", "SHOULD", "", "plugin", IMPL,
         "initialize prepares the underlying library for allocations in the current context: "
         "once it returns, the allocation methods work there."),
    make("EMM-INITIALIZE-IDEMPOTENT", "MUST", "", "plugin", IMPL,
         "initialize may be called many times and does not invalidate earlier state (live "
         "allocations stay valid)."),
    make("EMM-RESET-FREES", "MUST", "", "plugin", IMPL,
         "reset cleans up all allocations in the context; allocations made afterwards work."),
    make("EMM-RESET-BEFORE-INITIALIZE", "MUST", "", "plugin", IMPL,
         "reset may be called before initialize and must not fail then."),
    make("EMM-NUMBA-RESET-ROUTED", "MUST", "", "numba", IMPL,
         "Numba calls the plugin's reset when all allocations in the context are to be cleaned "
         "up: a context's reset() reaches it (\"The reset method is called when all "
         "allocations in the context are to be cleaned up\")."),
    make("EMM-IPC-HANDLE", "SHOULD", "", "plugin", IMPL,
         "get_ipc_handle returns an IpcHandle for a given MemoryPointer, built from the "
         "allocation's base address, which only the plugin's library knows."),
    make("EMM-NUMBA-IPC-ROUTED", "MUST", "", "numba", IMPL,
         "Numba asks the plugin for a device array's IPC handle (\"part of the EMM interface "
         "(rather than being handled within Numba) because the base address of the allocation "
         "is only known by the underlying library\"): get_ipc_handle() wraps the plugin's "
         "IpcHandle for the array's memory."),
    make("EMM-NUMBA-IPC-CLOSE", "MUST", "", "numba", IMPL,
         "Closing an IPC handle is handled by Numba, not by the plugin."),
    make("EMM-MEMORY-INFO", "SHOULD", "", "plugin", IMPL,
         "get_memory_info preferably returns the free and total device memory of the context."),
    make("EMM-NUMBA-MEMORY-INFO-ROUTED", "MUST", "", "numba", IMPL,
         "A context's get_memory_info() is the plugin's get_memory_info answer, or its "
         "exception (\"all its methods are invoked by Numba\"; the method \"provides a count "
         "of the total and free memory on the device for the context\")."),
    make("EMM-MEMORY-INFO-RAISES", "MUST", "", "plugin", IMPL,
         "If memory info is not provided, get_memory_info raises (RuntimeError per the text; "
         "Numba's base and RMM raise NotImplementedError)."),
    make("EMM-DEFER-CLEANUP", "MUST", "", "plugin", IMPL,
         "defer_cleanup returns a context manager under which expensive cleanup is avoided; it "
         "nests, lets exceptions through, and deferred frees happen after it exits."),
    make("EMM-INTERFACE-VERSION", "MUST", "", "plugin", IMPL,
         "interface_version is 1."),
    make("EMM-NUMBA-INTERFACE-VERSION-CHECKED", "MUST", "", "numba", IMPL,
         "set_memory_manager refuses a plugin whose interface_version does not match Numba's "
         "(\"used to ensure that the plugin version matches the interface provided by the "
         "version of Numba\") and keeps the manager it had."),
    make("EMM-HOSTONLY-MEMALLOC", "MUST", "", "plugin", HOST,
         "A plugin deriving from HostOnlyCUDAMemoryManager still implements memalloc."),
    make("EMM-HOSTONLY-RESET-SUPER", "MUST", "", "plugin", HOST,
         "A HostOnly plugin that overrides reset calls super().reset() so host allocations are "
         "cleaned up."),
    make("EMM-HOSTONLY-DEFER-SUPER", "MUST", "", "plugin", HOST,
         "A HostOnly plugin that overrides defer_cleanup holds super().defer_cleanup() active so "
         "host cleanup is deferred too."),
    make("EMM-IPC-MIXIN", "MAY", "", "plugin", MIXIN,
         "A plugin may mix in GetIpcHandleMixin, which finds the allocation base through the "
         "driver, when that is right for its allocations."),
    make("EMM-POINTER-MEMALLOC", "MUST", "", "plugin", PTRS,
         "memalloc returns a MemoryPointer."),
    make("EMM-POINTER-MAPPED", "MUST", "", "plugin", PTRS,
         "memhostalloc or mempin return MappedMemory when the host memory is mapped into the "
         "device address space."),
    make("EMM-POINTER-PINNED", "MUST", "", "plugin", PTRS,
         "memhostalloc or mempin return PinnedMemory when the host memory is not mapped."),
    make("EMM-POINTER-FINALIZER", "MUST", "", "plugin", PTRS,
         "A memory pointer's finalizer runs once, when the buffer is no longer needed, and tells "
         "the memory manager it may free or unpin it (the free itself may be deferred)."),
    make("EMM-MEMORYINFO-TYPE", "MUST", "", "plugin", INFO,
         "A get_memory_info result is a MemoryInfo named tuple (free, total) with "
         "0 <= free <= total."),
    make("EMM-IPCHANDLE-TYPE", "MUST", "", "plugin", IPC,
         "get_ipc_handle returns an IpcHandle instance."),
    make("EMM-IPCHANDLE-BASE", "SHOULD", "", "plugin", IPC,
         "The memory passed to get_ipc_handle is the IpcHandle's base."),
    make("EMM-IPCHANDLE-HANDLE", "MUST", "", "plugin", IPC,
         "The handle holds a CUDA IPC memory handle obtained from the underlying library "
         "(CUipcMemHandle in cuda-python Numba, 64 bytes)."),
    make("EMM-IPCHANDLE-SIZE", "MUST", "", "plugin", IPC,
         "The IpcHandle's size matches the original allocation's size (memory.size)."),
    make("EMM-IPCHANDLE-SOURCE-INFO", "SHOULD", "", "plugin", IPC,
         "source_info identifies the exporting device (context.device.get_device_identity())."),
    make("EMM-IPCHANDLE-OFFSET", "MUST", "", "plugin", IPC,
         "When the memory does not start at the base of a driver allocation (a pool), the "
         "IpcHandle carries the offset from that base; opened elsewhere it reaches the same bytes."),
    make("EMM-IPC-OPEN-OTHER-PROCESS", "MUST", "", "numba", IPC,
         "An IPC handle opens in another process (not the exporting one) and shows the exported "
         "bytes."),
    make("EMM-SET-ENV", "MUST", "", "numba", ENV,
         "With NUMBA_CUDA_MEMORY_MANAGER set, Numba imports that module and uses its "
         "_numba_memory_manager global as the memory manager class."),
    make("EMM-SET-FUNCTION", "MUST", "", "numba", FUNC,
         "numba.cuda.set_memory_manager sets the plugin class; it is called before contexts are "
         "created, since instances are made with contexts."),
    make("EMM-SET-ONCE", "SHOULD", "", "user", RESET,
         "The memory manager is set once before any CUDA use and left unchanged."),
    make("EMM-CONTEXT-BOUND", "MUST", "", "numba", RESET,
         "A context is bound to its memory manager instance for its lifetime; changing the "
         "manager affects only contexts created afterwards."),
    make("EMM-CLOSE-INVALIDATES", "MUST", "", "user", RESET,
         "numba.cuda.close destroys contexts and invalidates their arrays, streams, events and "
         "modules; @cuda.jit functions must be redefined."),
)
# fmt: on
