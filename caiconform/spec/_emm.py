"""Numba External Memory Management (EMM) plugin interface rules.

One entry per normative sentence of `external_memory_management.rst`, quoting it; its level is
that sentence's word, or it is `derived` (`caiconform.spec.rules` says how). EMM rules carry no
CAI versions: the plugin interface has its own `interface_version`, currently 1.
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
         "never calling cuMemAlloc or cuMemFree itself.",
         quote="Numba will make memory allocations and deallocations through the Plugin. It will "
               "never directly call functions such as cuMemAlloc, cuMemFree, etc.", derived=True),
    make("EMM-DEVICE-MEMORY", "MUST", "", "plugin", OVERVIEW,
         "A plugin takes responsibility for the management of device memory.",
         quote="EMM Plugins always take responsibility for the management of device memory.",
         derived=True),
    make("EMM-DEALLOC-STRATEGY", "MAY", "", "plugin", DEALLOC,
         "The plugin implements the deallocation strategy (Numba's own deferral is not used); it "
         "may free at once, pool, or defer.",
         quote="When an EMM Plugin is in use, the deallocation strategy is implemented by the EMM, "
               "and Numba's internal deallocation mechanism is not used. The EMM Plugin could "
               "implement:", derived=True),
    make("EMM-DEFER-CLEANUP-DOCUMENTED", "SHOULD", "", "plugin", DEALLOC,
         "A plugin is accompanied by documentation of how defer_cleanup behaves with it.",
         quote="an EMM Plugin should be accompanied by documentation of the behaviour of the "
               "defer_cleanup context manager when it is in use."),
    make("EMM-NUMBA-OTHER-OBJECTS", "MUST", "", "numba", OTHER,
         "Events, streams and modules are still managed by Numba with a plugin in use.",
         quote="The management of events, streams, and modules is unchanged by the use of an EMM "
               "Plugin.", derived=True),
    make("EMM-SYNCHRONOUS", "MUST", "", "plugin", ASYNC,
         "Allocation and deallocation through the plugin are synchronous: memory returned by "
         "memalloc is usable at once.",
         quote="The present EMM Plugin interface does not provide support for asynchronous "
               "allocation and deallocation.", derived=True),
    make("EMM-SUBCLASS", "MUST", "", "plugin", IMPL,
         "A plugin derives from numba.cuda.BaseCUDAMemoryManager and leaves no abstract method "
         "unimplemented.",
         quote="An EMM Plugin is implemented by deriving from BaseCUDAMemoryManager.",
         derived=True),
    make("EMM-ONE-INSTANCE-PER-CONTEXT", "MUST", "", "numba", IMPL,
         "Numba makes one plugin instance per context; the owning context is self.context.",
         quote="Numba instantiates one instance of the EMM Plugin class per context. The context "
               "that owns an EMM Plugin object is accessible through self.context, if required.",
         derived=True),
    make("EMM-CONSTRUCT-NO-CUDA", "SHOULD", "", "plugin", IMPL,
         "Constructing a plugin (with context=None) makes no CUDA calls: all its methods are "
         "invoked by Numba, initialization included.",
         quote="The EMM Plugin is transparent to any code that uses Numba - all its methods are "
               "invoked by Numba, and never need to be called by code that uses Numba.",
         derived=True),
    make("EMM-TRANSPARENT", "MUST", "", "plugin", IMPL,
         "A plugin is transparent to code using Numba: user code never needs to call its methods.",
         quote="The EMM Plugin is transparent to any code that uses Numba - all its methods are "
               "invoked by Numba, and never need to be called by code that uses Numba.",
         derived=True),
    make("EMM-ALLOC-POINTER-OBJECT", "SHOULD", "", "plugin", IMPL,
         "memalloc, memhostalloc and mempin allocate or pin through the underlying library and "
         "return a memory pointer instance for Numba.",
         quote="The allocation methods memalloc, memhostalloc, and mempin, should use the "
               "underlying library to allocate and/or pin device or host memory, and construct an "
               "instance of a memory pointer representing the memory to return back to Numba."),
    make("EMM-ALLOC-CURRENT-CONTEXT", "MUST", "", "numba", IMPL,
         "Allocation methods are called with the plugin's own context current; the memory they "
         "return belongs to that context's device.",
         quote="These methods are always called when the current CUDA context is the context that "
               "owns the EMM Plugin instance.", derived=True),
    make("EMM-ALLOC-VALID", "MUST", "", "plugin", IMPL,
         "memalloc returns a nonzero device pointer to at least the requested bytes in one "
         "allocation, disjoint from other live allocations; an allocation it cannot make raises.",
         quote="EMM Plugins always take responsibility for the management of device memory.",
         derived=True),
    make("EMM-INITIALIZE-BEFORE-USE", "MUST", "", "numba", IMPL,
         "Numba calls initialize before the first use of the plugin object for a context.",
         quote="The initialize method is called by Numba prior to the first use of the EMM Plugin "
               "object for a context.", derived=True),
    make("EMM-INITIALIZE-PREPARES", "SHOULD", "", "plugin", IMPL,
         "initialize prepares the underlying library for allocations in the current context: "
         "once it returns, the allocation methods work there.",
         quote="This method should do anything required to prepare the underlying library for "
               "allocations in the current context."),
    make("EMM-INITIALIZE-IDEMPOTENT", "MUST", "", "plugin", IMPL,
         "initialize may be called many times and does not invalidate earlier state (live "
         "allocations stay valid).",
         quote="This method may be called multiple times, and must not invalidate previous state "
               "when it is called."),
    make("EMM-RESET-FREES", "MUST", "", "plugin", IMPL,
         "reset cleans up all allocations in the context; allocations made afterwards work.",
         quote="The reset method is called when all allocations in the context are to be cleaned "
               "up.", derived=True),
    make("EMM-RESET-BEFORE-INITIALIZE", "MUST", "", "plugin", IMPL,
         "reset may be called before initialize and must not fail then.",
         quote="It may be called even prior to initialize, and an EMM Plugin implementation needs "
               "to guard against this.", derived=True),
    make("EMM-NUMBA-RESET-ROUTED", "MUST", "", "numba", IMPL,
         "Numba calls the plugin's reset when all allocations in the context are to be cleaned "
         "up: a context's reset() reaches it (\"The reset method is called when all "
         "allocations in the context are to be cleaned up\").",
         quote="The reset method is called when all allocations in the context are to be cleaned "
               "up.", derived=True),
    make("EMM-IPC-HANDLE", "SHOULD", "", "plugin", IMPL,
         "get_ipc_handle returns an IpcHandle for a given MemoryPointer, built from the "
         "allocation's base address, which only the plugin's library knows.",
         quote="To support inter-GPU communication, the get_ipc_handle method should provide an "
               "IpcHandle for a given MemoryPointer instance."),
    make("EMM-NUMBA-IPC-ROUTED", "MUST", "", "numba", IMPL,
         "Numba asks the plugin for a device array's IPC handle (\"part of the EMM interface "
         "(rather than being handled within Numba) because the base address of the allocation "
         "is only known by the underlying library\"): get_ipc_handle() wraps the plugin's "
         "IpcHandle for the array's memory.",
         quote="This method is part of the EMM interface (rather than being handled within Numba) "
               "because the base address of the allocation is only known by the underlying "
               "library.", derived=True),
    make("EMM-NUMBA-IPC-CLOSE", "MUST", "", "numba", IMPL,
         "Closing an IPC handle is handled by Numba, not by the plugin.",
         quote="Closing an IPC handle is handled internally within Numba.", derived=True),
    make("EMM-MEMORY-INFO", "SHOULD", "", "plugin", IMPL,
         "get_memory_info preferably returns the free and total device memory of the context.",
         quote="It is preferrable to implement the method, but this may not be practical for all "
               "allocators.", derived=True),
    make("EMM-NUMBA-MEMORY-INFO-ROUTED", "MUST", "", "numba", IMPL,
         "A context's get_memory_info() is the plugin's get_memory_info answer, or its "
         "exception (\"all its methods are invoked by Numba\"; the method \"provides a count "
         "of the total and free memory on the device for the context\").",
         quote="It is optional to provide memory info from the get_memory_info method, which "
               "provides a count of the total and free memory on the device for the context.",
         derived=True),
    make("EMM-MEMORY-INFO-RAISES", "SHOULD", "", "plugin", IMPL,
         "If memory info is not provided, get_memory_info raises (RuntimeError per the text; "
         "Numba's base and RMM raise NotImplementedError).",
         quote="If memory info is not provided, this method should raise a RuntimeError."),
    make("EMM-DEFER-CLEANUP", "SHOULD", "", "plugin", IMPL,
         "defer_cleanup returns a context manager under which expensive cleanup is avoided; it "
         "nests, lets exceptions through, and deferred frees happen after it exits.",
         quote="The defer_cleanup method should return a context manager that ensures that "
               "expensive cleanup operations are avoided whilst it is active."),
    make("EMM-INTERFACE-VERSION", "SHOULD", "", "plugin", IMPL,
         "interface_version is 1.",
         quote="The interface_version property is used to ensure that the plugin version matches "
               "the interface provided by the version of Numba. At present, this should always be "
               "1."),
    make("EMM-NUMBA-INTERFACE-VERSION-CHECKED", "MUST", "", "numba", IMPL,
         "set_memory_manager refuses a plugin whose interface_version does not match Numba's "
         "(\"used to ensure that the plugin version matches the interface provided by the "
         "version of Numba\") and keeps the manager it had.",
         quote="The interface_version property is used to ensure that the plugin version matches "
               "the interface provided by the version of Numba.", derived=True),
    make("EMM-HOSTONLY-MEMALLOC", "SHOULD", "", "plugin", HOST,
         "A plugin deriving from HostOnlyCUDAMemoryManager still implements memalloc.",
         quote="The host-only memory manager implements memhostalloc and mempin - the EMM Plugin "
               "should still implement memalloc."),
    make("EMM-HOSTONLY-RESET-SUPER", "MUST", "", "plugin", HOST,
         "A HostOnly plugin that overrides reset calls super().reset() so host allocations are "
         "cleaned up.",
         quote="If reset is overridden, it must also call super().reset() to allow the host "
               "allocations to be cleaned up."),
    make("EMM-HOSTONLY-DEFER-SUPER", "MUST", "", "plugin", HOST,
         "A HostOnly plugin that overrides defer_cleanup holds super().defer_cleanup() active so "
         "host cleanup is deferred too.",
         quote="If defer_cleanup is overridden, it must hold an active context manager from "
               "super().defer_cleanup() to ensure that host-side cleanup is also deferred."),
    make("EMM-IPC-MIXIN", "MAY", "", "plugin", MIXIN,
         "A plugin may mix in GetIpcHandleMixin, which finds the allocation base through the "
         "driver, when that is right for its allocations.",
         quote="If this implementation is appropriate for an EMM plugin, it can be added by mixing "
               "in the GetIpcHandleMixin class:", derived=True),
    make("EMM-POINTER-MEMALLOC", "SHOULD", "", "plugin", PTRS,
         "memalloc returns a MemoryPointer.",
         quote="EMM Plugins should construct memory pointer instances that represent their "
               "allocations, for return to Numba. The appropriate memory pointer class to use in "
               "each method is:"),
    make("EMM-POINTER-MAPPED", "SHOULD", "", "plugin", PTRS,
         "memhostalloc or mempin return MappedMemory when the host memory is mapped into the "
         "device address space.",
         quote="EMM Plugins should construct memory pointer instances that represent their "
               "allocations, for return to Numba. The appropriate memory pointer class to use in "
               "each method is:"),
    make("EMM-POINTER-PINNED", "SHOULD", "", "plugin", PTRS,
         "memhostalloc or mempin return PinnedMemory when the host memory is not mapped.",
         quote="EMM Plugins should construct memory pointer instances that represent their "
               "allocations, for return to Numba. The appropriate memory pointer class to use in "
               "each method is:"),
    make("EMM-POINTER-FINALIZER", "MUST", "", "plugin", PTRS,
         "A memory pointer's finalizer runs once, when the buffer is no longer needed, and tells "
         "the memory manager it may free or unpin it (the free itself may be deferred).",
         quote="Memory pointers can take a finalizer, which is a function that is called when the "
               "buffer is no longer needed.", derived=True),
    make("EMM-MEMORYINFO-TYPE", "SHOULD", "", "plugin", INFO,
         "A get_memory_info result is a MemoryInfo named tuple (free, total) with "
         "0 <= free <= total.",
         quote="If an implementation of get_memory_info is to provide a result, then it should "
               "return an instance of the MemoryInfo named tuple:"),
    make("EMM-IPCHANDLE-TYPE", "MUST", "", "plugin", IPC,
         "get_ipc_handle returns an IpcHandle instance.",
         quote="An instance of IpcHandle is required to be returned from an implementation of "
               "get_ipc_handle:"),
    make("EMM-IPCHANDLE-BASE", "MAY", "", "plugin", IPC,
         "The memory passed to get_ipc_handle is the IpcHandle's base.",
         quote="The memory parameter passed to the get_ipc_handle method of an EMM Plugin can be "
               "passed as the base parameter.", derived=True),
    make("EMM-IPCHANDLE-HANDLE", "MUST", "", "plugin", IPC,
         "The handle holds a CUDA IPC memory handle obtained from the underlying library "
         "(CUipcMemHandle in cuda-python Numba, 64 bytes).",
         quote="The data for handle must be populated using a method for obtaining a CUDA IPC "
               "handle appropriate to the underlying library."),
    make("EMM-IPCHANDLE-SIZE", "SHOULD", "", "plugin", IPC,
         "The IpcHandle's size matches the original allocation's size (memory.size).",
         quote="size should match the size of the original allocation, which can be obtained with "
               "memory.size in get_ipc_handle."),
    make("EMM-IPCHANDLE-SOURCE-INFO", "MAY", "", "plugin", IPC,
         "source_info identifies the exporting device (context.device.get_device_identity()).",
         quote="An appropriate value for source_info can be created by calling "
               "self.context.device.get_device_identity().", derived=True),
    make("EMM-IPCHANDLE-OFFSET", "MUST", "", "plugin", IPC,
         "When the memory does not start at the base of a driver allocation (a pool), the "
         "IpcHandle carries the offset from that base; opened elsewhere it reaches the same bytes.",
         quote="If the underlying memory does not point to the base of an allocation returned by "
               "the CUDA driver or runtime API (e.g. if a pool allocator is in use) then the "
               "offset from the base must be provided."),
    make("EMM-IPC-OPEN-OTHER-PROCESS", "SHOULD", "", "numba", IPC,
         "An IPC handle opens in another process (not the exporting one) and shows the exported "
         "bytes.",
         quote="To support inter-GPU communication, the get_ipc_handle method should provide an "
               "IpcHandle for a given MemoryPointer instance.", derived=True),
    make("EMM-SET-ENV", "MUST", "", "numba", ENV,
         "With NUMBA_CUDA_MEMORY_MANAGER set, Numba imports that module and uses its "
         "_numba_memory_manager global as the memory manager class.",
         quote="If this environment variable is set, Numba will attempt to import the module, and "
               "and use its _numba_memory_manager global variable as the memory manager class.",
         derived=True),
    make("EMM-SET-FUNCTION", "MUST", "", "numba", FUNC,
         "numba.cuda.set_memory_manager sets the plugin class; it is called before contexts are "
         "created, since instances are made with contexts.",
         quote="The set_memory_manager function can be used to set the memory manager at runtime.",
         derived=True),
    make("EMM-SET-ONCE", "SHOULD", "", "user", RESET,
         "The memory manager is set once before any CUDA use and left unchanged.",
         quote="It is recommended that the memory manager is set once prior to using any CUDA "
               "functionality, and left unchanged for the remainder of execution."),
    make("EMM-CONTEXT-BOUND", "MUST", "", "numba", RESET,
         "A context is bound to its memory manager instance for its lifetime; changing the "
         "manager affects only contexts created afterwards.",
         quote="At the time of their creation, contexts are bound to an instance of a memory "
               "manager for their lifetime.", derived=True),
    make("EMM-CLOSE-INVALIDATES", "MUST", "", "user", RESET,
         "numba.cuda.close destroys contexts and invalidates their arrays, streams, events and "
         "modules; @cuda.jit functions must be redefined.",
         quote="This will invalidate any arrays, streams, events, and modules owned by the "
               "context.", derived=True),
)
# fmt: on
