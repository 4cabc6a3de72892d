"""Traceability: which rule states each normative sentence of the CAI and EMM spec texts.

`TRACE` maps a quote of the spec (an exact substring of one sentence or list item, with rst
markup stripped and whitespace collapsed) to the rule IDs that state it; `EXEMPT` lists the
sentences deliberately left without a rule, with the reason, so that the decision is visible.
`tests/test_trace.py` proves every quote is in its text, and that every sentence carrying a
normative word is covered by one of the two tables: a sentence added to a spec, or a rule
removed, fails the test instead of silently escaping the catalogue.

The CAI v2 text repeats most of v3's "Python Interface Specification" word for word; those
sentences are listed once in `_CAI_SHARED` and traced in both texts.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Trace", "Exempt", "TRACE", "EXEMPT"]


class Trace(NamedTuple):
    """A normative sentence of `spec` (a key of `rules.SPEC_FILES`) and the rules stating it."""

    spec: str
    quote: str
    rules: tuple[str, ...]


class Exempt(NamedTuple):
    """A sentence of `spec` deliberately given no rule, and why it states no obligation."""

    spec: str
    quote: str
    why: str


def _r(*rule_ids: str) -> tuple[str, ...]:
    return rule_ids


# Sentences the v2 and v3 texts share, traced in both.
# fmt: off
_CAI_SHARED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("attribute returns a dictionary (dict) that must contain the following entries",
     _r("CAI-ATTR-DICT", "CAI-SHAPE-REQUIRED", "CAI-TYPESTR-REQUIRED", "CAI-DATA-REQUIRED",
        "CAI-VERSION-REQUIRED")),
    ("shape: (integer, ...)", _r("CAI-SHAPE-TUPLE", "CAI-SHAPE-INT")),
    ("A tuple of int (or long) representing the size of each dimension",
     _r("CAI-SHAPE-TUPLE", "CAI-SHAPE-INT", "CAI-SHAPE-NONNEGATIVE")),
    ("typestr: str", _r("CAI-TYPESTR-STR")),
    ("The type string.", _r("CAI-TYPESTR-STR")),
    ("This has the same definition as typestr in the numpy array interface",
     _r("CAI-TYPESTR-GRAMMAR")),
    ("data: (integer, boolean)", _r("CAI-DATA-TUPLE")),
    ("The data is a 2-tuple", _r("CAI-DATA-TUPLE")),
    ("The first element is the data pointer as a Python int (or long)",
     _r("CAI-DATA-POINTER-INT", "CAI-DATA-POINTER-RANGE")),
    ("The data must be device-accessible",
     _r("CAI-DATA-DEVICE-ACCESSIBLE", "CAI-DATA-NONZERO-SIZE-NONNULL",
        "CAI-DATA-EXTENT-IN-ALLOCATION", "CAI-CONSUMER-ANY-MEMORY-KIND")),
    ("For zero-size arrays, use 0 here", _r("CAI-DATA-ZERO-SIZE-NULL")),
    ("The second element is the read-only flag as a Python bool",
     _r("CAI-DATA-READONLY-BOOL", "CAI-DATA-READONLY-HONOURED")),
    ("the most common case is to use cuPointerGetAttribute with "
     "CU_POINTER_ATTRIBUTE_DEVICE_POINTER", _r("CAI-DATA-POINTER-CONTEXT")),
    ("version: integer", _r("CAI-VERSION-INT")),
    ("An integer for the version of the interface being exported", _r("CAI-VERSION-INT")),
    ("The following are optional entries", _r("CAI-KEYS-UNKNOWN")),
    ("strides: None or (integer, ...)", _r("CAI-STRIDES-TYPE")),
    ("If strides is not given, or it is None, the array is in C-contiguous layout",
     _r("CAI-STRIDES-NONE-C-CONTIGUOUS", "CAI-CONSUMER-READS-DESCRIBED")),
    ("the number of bytes to skip to access the next element at each dimension",
     _r("CAI-STRIDES-TYPE", "CAI-STRIDES-INT", "CAI-STRIDES-NDIM",
        "CAI-PRODUCER-DESCRIBES-DATA", "CAI-CONSUMER-READS-DESCRIBED")),
    ("This is for describing more complicated types", _r("CAI-DESCR-GRAMMAR")),
    ("This follows the same specification as in the numpy array interface",
     _r("CAI-DESCR-GRAMMAR", "CAI-DESCR-CONSISTENT", "CAI-DESCR-OBJECT-REFUSED")),
    ("mask: None or object exposing the __cuda_array_interface__", _r("CAI-MASK-TYPE")),
    ("If None then all values in data are valid", _r("CAI-MASK-TRUTH")),
    ("All elements of the mask array should be interpreted only as true or not true",
     _r("CAI-MASK-TRUTH")),
    ("This has the same definition as mask in the numpy array interface", _r("CAI-MASK-SHAPE")),
    ("will raise a NotImplementedError exception if one is passed to a GPU function",
     _r("CAI-MASK-NUMBA-NOTIMPLEMENTED")),
    ("Additional information about the data pointer can be retrieved using "
     "cuPointerGetAttribute or cudaPointerGetAttributes", _r("CAI-POINTER-ATTRIBUTES")),
    ("the CUDA context that owns the pointer", _r("CAI-POINTER-ATTRIBUTES")),
    ("is the pointer host-accessible?", _r("CAI-POINTER-ATTRIBUTES")),
    ("is the pointer a managed memory?", _r("CAI-POINTER-ATTRIBUTES")),
    ("Version 0 of the CUDA Array Interface did not have the optional mask attribute",
     _r("CAI-V0-NO-MASK")),
    ("Versions 0 and 1 of the CUDA Array Interface neither clarified the strides attribute",
     _r("CAI-V1-ZERO-SIZE-UNSPECIFIED")),
)

_CAI_V3: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("The current version is 3", _r("CAI-VERSION-KNOWN")),
    ("stream: None or integer", _r("CAI-STREAM-TYPE")),
    ("An optional stream upon which synchronization must take place at the point of consumption",
     _r("CAI-SYNC-CONSUMER")),
    ("0: This is disallowed as it would be ambiguous between None and the default stream",
     _r("CAI-STREAM-ZERO-FORBIDDEN")),
    ("Any use case where 0 might be given should either use None, 1, or 2 instead",
     _r("CAI-STREAM-ZERO-FORBIDDEN")),
    ("1: The legacy default stream", _r("CAI-STREAM-LEGACY")),
    ("2: The per-thread default stream", _r("CAI-STREAM-PER-THREAD")),
    ("Any other integer: a cudaStream_t represented as a Python integer",
     _r("CAI-STREAM-HANDLE", "CAI-STREAM-LIVE")),
    ("When None, no synchronization is required", _r("CAI-SYNC-NONE-NO-SYNC")),
    # Design motivations
    ("must be able to do so without data races", _r("CAI-SYNC-RACE-FREE")),
    ("Requirement 1 should be met without requiring the user to be aware of any particulars",
     _r("CAI-SYNC-CORRECT-BY-DEFAULT")),
    ("explicitly document that the User is required to take additional steps",
     _r("CAI-SYNC-EXCEPTION-DOCUMENTED")),
    ("the Producer/Consumer library documentation must specify the steps that Users are "
     "required to take", _r("CAI-SYNC-EXCEPTION-DOCUMENTED")),
    ("Use of this exception should be avoided where possible", _r("CAI-SYNC-EXCEPTION-AVOIDED")),
    ("they should be able to, at their discretion, override some of the synchronization "
     "semantics", _r("CAI-SYNC-USER-OVERRIDE")),
    ("do not specify or guarantee correctness with respect to data races",
     _r("CAI-SYNC-USER-OVERRIDE")),
    ("Instead, the User is responsible for ensuring correctness with respect to data races",
     _r("CAI-SYNC-USER-OVERRIDE")),
    # Interface requirements: the consumer
    ("When stream is not present or is None", _r("CAI-SYNC-NONE-NO-SYNC")),
    ("No synchronization is required on the part of the Consumer", _r("CAI-SYNC-NONE-NO-SYNC")),
    ("The Consumer may enqueue operations on the underlying data immediately on any stream",
     _r("CAI-SYNC-NONE-NO-SYNC")),
    ("which the Consumer is expected to either", _r("CAI-SYNC-CONSUMER")),
    ("Synchronize on before accessing the data, or", _r("CAI-SYNC-CONSUMER")),
    ("Enqueue operations in when accessing the data", _r("CAI-SYNC-CONSUMER")),
    ("The Consumer can choose which mechanism to use", _r("CAI-SYNC-CONSUMER")),
    ("then it must ensure that no computation can take place in the provided stream",
     _r("CAI-SYNC-CONSUMER-NO-OVERTAKE")),
    ("Placing a wait on an event in the provided stream", _r("CAI-SYNC-CONSUMER-NO-OVERTAKE")),
    ("Avoiding returning control to the user code until after its operations",
     _r("CAI-SYNC-CONSUMER-NO-OVERTAKE")),
    ("then it may return control to the User code immediately after enqueueing its work",
     _r("CAI-SYNC-CONSUMER-ENQUEUE-RETURN")),
    ("This is sufficient to ensure correctness even if the User code were to induce the Producer",
     _r("CAI-SYNC-CONSUMER-ENQUEUE-RETURN")),
    ("If the User has set the Consumer to ignore CAI synchronization semantics",
     _r("CAI-SYNC-CONSUMER-IGNORE")),
    # Interface requirements: the producer
    ("When exporting an array through the CAI, Producers must ensure that",
     _r("CAI-SYNC-PRODUCER-SUFFICIENT")),
    ("synchronization on the provided stream is sufficient to ensure synchronization with all "
     "pending work", _r("CAI-SYNC-PRODUCER-SUFFICIENT")),
    ("If the Producer has no enqueued work, or work only enqueued on the stream identified by "
     "stream, then this condition is met", _r("CAI-SYNC-PRODUCER-SUFFICIENT")),
    ("then it must enqueue events on those streams that follow the enqueued work",
     _r("CAI-SYNC-PRODUCER-MULTI-STREAM")),
    ("Work is enqueued by the Producer on streams 7, 9, and 15",
     _r("CAI-SYNC-PRODUCER-MULTI-STREAM")),
    ("Events are then enqueued on each of streams 7, 9, and 15",
     _r("CAI-SYNC-PRODUCER-MULTI-STREAM")),
    ("Producer then tells stream 3 to wait on the events from Step 2",
     _r("CAI-SYNC-PRODUCER-MULTI-STREAM")),
    ("then the stream entry may be either None, or not provided",
     _r("CAI-SYNC-PRODUCER-NO-WORK")),
    # Interface requirements: the opt-outs
    ("Optionally, to facilitate the User relaxing conformance to synchronization semantics",
     _r("CAI-SYNC-PRODUCER-OPT-OUT", "CAI-SYNC-CONSUMER-OPT-OUT")),
    ("Producers may provide a configuration option to always set stream to None",
     _r("CAI-SYNC-PRODUCER-OPT-OUT")),
    ("Consumers may provide a configuration option to ignore the value of stream",
     _r("CAI-SYNC-CONSUMER-OPT-OUT")),
    ("This elides synchronization on the Producer-provided streams",
     _r("CAI-SYNC-CONSUMER-OPT-OUT")),
    ("These options should not be set by default in either a Producer or a Consumer",
     _r("CAI-SYNC-OPT-OUT-NOT-DEFAULT")),
    ("The CAI specification does not prescribe the exact mechanism by which these options are "
     "set", _r("CAI-SYNC-PRODUCER-OPT-OUT", "CAI-SYNC-CONSUMER-OPT-OUT")),
    # Synchronization in Numba
    ("If stream is an integer, then Numba will immediately synchronize on the provided stream",
     _r("CAI-NUMBA-CONSUMER-SYNC")),
    ("has its default stream set to the provided stream", _r("CAI-NUMBA-CONSUMER-SYNC")),
    ("If the exported CUDA Array has a default stream, then it is given as the stream entry",
     _r("CAI-NUMBA-PRODUCER-STREAM")),
    ("Otherwise, stream is set to None", _r("CAI-NUMBA-PRODUCER-STREAM")),
    ("Exchanging data either as a Producer or a Consumer will be correct without the need for "
     "any further action from the User",
     _r("CAI-NUMBA-CONSUMER-SYNC", "CAI-NUMBA-PRODUCER-STREAM")),
    ("The User is expected to either", _r("CAI-NUMBA-USER-OTHER-STREAM")),
    ("Avoid launching kernels or other operations on streams that are not the default stream "
     "for their parameters", _r("CAI-NUMBA-USER-OTHER-STREAM")),
    ("they should then insert an event into the stream that they are operating in",
     _r("CAI-NUMBA-USER-OTHER-STREAM")),
    ("The User may override Numba's synchronization behavior by setting the environment "
     "variable NUMBA_CUDA_ARRAY_INTERFACE_SYNC", _r("CAI-NUMBA-SYNC-OVERRIDE")),
    ("When set, Numba will not synchronize on the streams of imported arrays",
     _r("CAI-NUMBA-SYNC-OVERRIDE")),
    ("may also be elided by passing sync=False", _r("CAI-NUMBA-SYNC-OVERRIDE")),
    # Lifetime management
    ("has no effect on the lifetime of the object from which it was created",
     _r("CAI-LIFETIME-NO-EFFECT", "CAI-LIFETIME-RELEASED")),
    ("the interface has no slot for the owner of the data", _r("CAI-LIFETIME-NO-EFFECT")),
    ("The User code must preserve the lifetime of the object owning the data",
     _r("CAI-LIFETIME-DATA-USER")),
    ("It is therefore required that a Producer exporting data on the interface with an "
     "associated stream ensures", _r("CAI-LIFETIME-STREAM")),
    ("Numba takes no steps to maintain the lifetime of an object from which the interface is "
     "exported", _r("CAI-NUMBA-PRODUCER-LIFETIME")),
    ("The lifetime of any Numba-managed stream exported on the interface is guaranteed",
     _r("CAI-NUMBA-STREAM-LIFETIME")),
    ("Numba-managed streams are those created with", _r("CAI-NUMBA-STREAM-LIFETIME")),
    ("Streams not managed by Numba are created from an external stream",
     _r("CAI-NUMBA-STREAM-LIFETIME")),
    ("Which to use depends on whether the created device array should maintain the life of the "
     "object", _r("CAI-NUMBA-AS-CUDA-ARRAY-OWNER", "CAI-NUMBA-FROM-CAI-OWNER")),
    ("as_cuda_array: This creates a device array that holds a reference to the owning object",
     _r("CAI-NUMBA-AS-CUDA-ARRAY-OWNER", "CAI-LIFETIME-DATA-HELD")),
    ("As long as a reference to the device array is held, its underlying data will also be kept "
     "alive", _r("CAI-NUMBA-AS-CUDA-ARRAY-OWNER", "CAI-LIFETIME-DATA-HELD")),
    ("from_cuda_array_interface: This creates a device array with no reference to the owning "
     "object by default", _r("CAI-NUMBA-FROM-CAI-OWNER")),
    ("some other object to be considered the owner can be passed in the owner parameter",
     _r("CAI-NUMBA-FROM-CAI-OWNER")),
    # Version differences
    ("Prior versions of the CUDA Array Interface made no statement about synchronization",
     _r("CAI-V2-NO-SYNC", "CAI-V2-STREAM-UNDEFINED")),
)

_CAI_V2: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("The current version is 2", _r("CAI-VERSION-KNOWN")),
)

_EMM: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Overview
    ("Numba will make memory allocations and deallocations through the Plugin",
     _r("EMM-NUMBA-NO-DIRECT-ALLOC")),
    ("It will never directly call functions such as cuMemAlloc, cuMemFree",
     _r("EMM-NUMBA-NO-DIRECT-ALLOC")),
    ("EMM Plugins always take responsibility for the management of device memory",
     _r("EMM-DEVICE-MEMORY")),
    # Effects on deallocation strategies
    ("the deallocation strategy is implemented by the EMM, and Numba's internal deallocation "
     "mechanism is not used", _r("EMM-DEALLOC-STRATEGY")),
    ("The EMM Plugin could implement", _r("EMM-DEALLOC-STRATEGY")),
    ("A similar strategy to the Numba deallocation behaviour, or", _r("EMM-DEALLOC-STRATEGY")),
    ("deallocated memory might immediately be returned to a memory pool",
     _r("EMM-DEALLOC-STRATEGY")),
    ("an EMM Plugin should be accompanied by documentation of the behaviour of the defer_cleanup "
     "context manager", _r("EMM-DEFER-CLEANUP-DOCUMENTED")),
    ("a pool allocator could always immediately return memory to a pool even when the context "
     "manager is in use", _r("EMM-DEALLOC-STRATEGY", "EMM-DEFER-CLEANUP")),
    # Management of other objects; asynchronous allocation
    ("Numba manages the allocation and deallocation of events, streams, and modules",
     _r("EMM-NUMBA-OTHER-OBJECTS")),
    ("The management of events, streams, and modules is unchanged by the use of an EMM Plugin",
     _r("EMM-NUMBA-OTHER-OBJECTS")),
    ("does not provide support for asynchronous allocation and deallocation",
     _r("EMM-SYNCHRONOUS")),
    # Implementing an EMM plugin
    ("An EMM Plugin is implemented by deriving from BaseCUDAMemoryManager", _r("EMM-SUBCLASS")),
    ("Numba instantiates one instance of the EMM Plugin class per context",
     _r("EMM-ONE-INSTANCE-PER-CONTEXT")),
    ("The context that owns an EMM Plugin object is accessible through self.context",
     _r("EMM-ONE-INSTANCE-PER-CONTEXT")),
    ("The EMM Plugin is transparent to any code that uses Numba",
     _r("EMM-TRANSPARENT", "EMM-CONSTRUCT-NO-CUDA")),
    ("should use the underlying library to allocate and/or pin device or host memory",
     _r("EMM-ALLOC-POINTER-OBJECT", "EMM-ALLOC-VALID")),
    ("These methods are always called when the current CUDA context is the context that owns",
     _r("EMM-ALLOC-CURRENT-CONTEXT")),
    ("The initialize method is called by Numba prior to the first use of the EMM Plugin object",
     _r("EMM-INITIALIZE-BEFORE-USE")),
    ("This method should do anything required to prepare the underlying library for "
     "allocations", _r("EMM-INITIALIZE-PREPARES")),
    ("This method may be called multiple times, and must not invalidate previous state",
     _r("EMM-INITIALIZE-IDEMPOTENT")),
    ("The reset method is called when all allocations in the context are to be cleaned up",
     _r("EMM-RESET-FREES", "EMM-NUMBA-RESET-ROUTED")),
    ("It may be called even prior to initialize, and an EMM Plugin implementation needs to "
     "guard against this", _r("EMM-RESET-BEFORE-INITIALIZE")),
    ("the get_ipc_handle method should provide an IpcHandle for a given MemoryPointer instance",
     _r("EMM-IPC-HANDLE", "EMM-IPC-OPEN-OTHER-PROCESS")),
    ("because the base address of the allocation is only known by the underlying library",
     _r("EMM-IPC-HANDLE", "EMM-NUMBA-IPC-ROUTED")),
    ("Closing an IPC handle is handled internally within Numba", _r("EMM-NUMBA-IPC-CLOSE")),
    ("It is optional to provide memory info from the get_memory_info method",
     _r("EMM-MEMORY-INFO", "EMM-NUMBA-MEMORY-INFO-ROUTED")),
    ("It is preferrable to implement the method, but this may not be practical for all "
     "allocators", _r("EMM-MEMORY-INFO")),
    ("If memory info is not provided, this method should raise a RuntimeError",
     _r("EMM-MEMORY-INFO-RAISES")),
    ("The defer_cleanup method should return a context manager that ensures that expensive "
     "cleanup operations are avoided", _r("EMM-DEFER-CLEANUP")),
    ("the plugin documentation should include an explanation of how deferring cleanup affects "
     "deallocations", _r("EMM-DEFER-CLEANUP-DOCUMENTED")),
    ("The interface_version property is used to ensure that the plugin version matches",
     _r("EMM-INTERFACE-VERSION", "EMM-NUMBA-INTERFACE-VERSION-CHECKED")),
    ("At present, this should always be 1", _r("EMM-INTERFACE-VERSION")),
    # The host-only CUDA memory manager
    ("To use it, derive from HostOnlyCUDAMemoryManager instead of BaseCUDAMemoryManager",
     _r("EMM-SUBCLASS")),
    ("the EMM Plugin should still implement memalloc", _r("EMM-HOSTONLY-MEMALLOC")),
    ("If reset is overridden, it must also call super().reset()", _r("EMM-HOSTONLY-RESET-SUPER")),
    ("it must hold an active context manager from super().defer_cleanup()",
     _r("EMM-HOSTONLY-DEFER-SUPER")),
    # The IPC handle mixin
    ("An implementation of the get_ipc_handle() function is is provided in the "
     "GetIpcHandleMixin class", _r("EMM-IPC-MIXIN")),
    ("This uses the driver API to determine the base address of an allocation",
     _r("EMM-IPC-MIXIN")),
    ("it can be added by mixing in the GetIpcHandleMixin class", _r("EMM-IPC-MIXIN")),
    # Classes and structures of returned objects
    ("the classes and structures that need to be constructed by an EMM Plugin",
     _r("EMM-ALLOC-POINTER-OBJECT", "EMM-MEMORYINFO-TYPE", "EMM-IPCHANDLE-TYPE")),
    ("EMM Plugins should construct memory pointer instances that represent their allocations",
     _r("EMM-ALLOC-POINTER-OBJECT")),
    ("The appropriate memory pointer class to use in each method is",
     _r("EMM-POINTER-MEMALLOC", "EMM-POINTER-MAPPED", "EMM-POINTER-PINNED")),
    ("MemoryPointer: returned from memalloc", _r("EMM-POINTER-MEMALLOC")),
    ("MappedMemory: returned from memhostalloc or mempin when the host memory is mapped",
     _r("EMM-POINTER-MAPPED")),
    ("PinnedMemory: return from memhostalloc or mempin when the host memory is not mapped",
     _r("EMM-POINTER-PINNED")),
    ("Memory pointers can take a finalizer, which is a function that is called when the buffer "
     "is no longer needed", _r("EMM-POINTER-FINALIZER")),
    ("Usually the finalizer will make a call to the memory management library",
     _r("EMM-POINTER-FINALIZER")),
    ("it is not required to free the buffer immediately",
     _r("EMM-POINTER-FINALIZER", "EMM-DEALLOC-STRATEGY")),
    ("then it should return an instance of the MemoryInfo named tuple",
     _r("EMM-MEMORYINFO-TYPE")),
    ("An instance of IpcHandle is required to be returned from an implementation of "
     "get_ipc_handle", _r("EMM-IPCHANDLE-TYPE")),
    ("can be passed as the base parameter", _r("EMM-IPCHANDLE-BASE")),
    ("A suitable type for the handle can be constructed as ctypes.c_byte * 64",
     _r("EMM-IPCHANDLE-HANDLE")),
    ("The data for handle must be populated using a method for obtaining a CUDA IPC handle",
     _r("EMM-IPCHANDLE-HANDLE")),
    ("size should match the size of the original allocation", _r("EMM-IPCHANDLE-SIZE")),
    ("An appropriate value for source_info can be created by calling",
     _r("EMM-IPCHANDLE-SOURCE-INFO")),
    ("then the offset from the base must be provided", _r("EMM-IPCHANDLE-OFFSET")),
    # Setting the EMM plugin
    ("if an EMM Plugin is to be used, it must be configured",
     _r("EMM-SET-ENV", "EMM-SET-FUNCTION")),
    ("There are two mechanisms for configuring the use of an EMM Plugin",
     _r("EMM-SET-ENV", "EMM-SET-FUNCTION")),
    ("A module name can be provided in the environment variable, NUMBA_CUDA_MEMORY_MANAGER",
     _r("EMM-SET-ENV")),
    ("Numba will attempt to import the module, and and use its _numba_memory_manager global "
     "variable", _r("EMM-SET-ENV")),
    ("The set_memory_manager function can be used to set the memory manager at runtime",
     _r("EMM-SET-FUNCTION")),
    ("This should be called prior to the initialization of any contexts",
     _r("EMM-SET-FUNCTION")),
    ("It is recommended that the memory manager is set once prior to using any CUDA "
     "functionality", _r("EMM-SET-ONCE")),
    ("It is possible to set the memory manager multiple times", _r("EMM-CONTEXT-BOUND")),
    ("contexts are bound to an instance of a memory manager for their lifetime",
     _r("EMM-CONTEXT-BOUND")),
    ("Changing the memory manager will have no effect on existing contexts",
     _r("EMM-CONTEXT-BOUND")),
    ("numba.cuda.close can be used to destroy contexts after setting the memory manager",
     _r("EMM-CLOSE-INVALIDATES", "EMM-CONTEXT-BOUND")),
    ("This will invalidate any arrays, streams, events, and modules owned by the context",
     _r("EMM-CLOSE-INVALIDATES")),
    ("Attempting to use invalid arrays, streams, or events will likely fail with an exception",
     _r("EMM-CLOSE-INVALIDATES")),
    ("Attempting to use an invalid module will result in similar", _r("EMM-CLOSE-INVALIDATES")),
    ("all functions compiled with @cuda.jit prior to context destruction will need to be "
     "redefined", _r("EMM-CLOSE-INVALIDATES")),
)
# fmt: on

TRACE: tuple[Trace, ...] = (
    *(Trace("cai-v3", q, r) for q, r in (*_CAI_SHARED, *_CAI_V3)),
    *(Trace("cai-v2", q, r) for q, r in (*_CAI_SHARED, *_CAI_V2)),
    *(Trace("emm", q, r) for q, r in _EMM),
)

_HISTORY = "history or future plans: states nothing an implementation does today"
_MOTIVE = "motivation or overview prose; the obligations it leads to are traced where stated"
_TERMS = "definition of a term the traced sentences use; states no behaviour by itself"
_EXAMPLE = "example narration; the rule it illustrates is traced at its normative statement"
_INTEROP = "interoperability list: which projects adopted the interface, not what they must do"

# Sentences shared by the v2 and v3 texts, exempt in both.
# fmt: off
_CAI_SHARED_EXEMPT: tuple[tuple[str, str], ...] = (
    ("In the future, we may add a C-side interface", _HISTORY),
    ("Specification may change", "editorial status note of the text, not a requirement"),
)

_EXEMPT_ONLY: tuple[Exempt, ...] = (
    Exempt("cai-v3", "The CUDA Array Interface (or CAI) is created for interoperability", _MOTIVE),
    Exempt("cai-v2", "The cuda array interface is created for interoperability", _MOTIVE),
    Exempt("cai-v3", "In a future revision of the interface, this entry may be expanded",
           _HISTORY),
    Exempt("cai-v3", "Producer: The library / object on which", _TERMS),
    Exempt("cai-v3", "Consumer: The library / function that accesses", _TERMS),
    Exempt("cai-v3", "The User may implement User Code without knowledge of the CAI",
           _TERMS + " (the requirement it motivates is CAI-SYNC-CORRECT-BY-DEFAULT)"),
    Exempt("cai-v3", "Numba is neither strictly a Producer nor a Consumer", _MOTIVE),
    Exempt("cai-v3", "In Numba's terminology, an array's default stream is a property", _TERMS),
    Exempt("cai-v3", "It is not the same as the Default Stream in normal CUDA terminology",
           _TERMS),
    Exempt("cai-v3", "There is scope for Numba's synchronization implementation to be optimized",
           _HISTORY),
    Exempt("cai-v3", "This example shows how to ensure that a Consumer can safely consume",
           _EXAMPLE),
    Exempt("cai-v3", "First we need to import Numba and a consumer library", _EXAMPLE),
    Exempt("cai-v3", "Next we will create two streams", _EXAMPLE),
    Exempt("cai-v3", "If we were to pass x to a Consumer now, there is a risk", _EXAMPLE),
    Exempt("cai-v3", "To prevent operations in array_stream starting before the kernel launch "
           "is finished", _EXAMPLE),
    Exempt("cai-v3", "It is now safe for other_cai_library to consume x", _EXAMPLE),
    Exempt("cai-v3", "The following Python libraries have adopted the CUDA Array Interface",
           _INTEROP),
    Exempt("cai-v3", "TensorGPU objects expose the CUDA Array Interface", _INTEROP),
    Exempt("cai-v3", "The External Source operator consumes objects exporting", _INTEROP),
    Exempt("cai-v3", "If your project is not on this list, please feel free to report it",
           _INTEROP),
    Exempt("emm", "The CUDA Array Interface enables sharing of data between different Python "
           "libraries", _MOTIVE),
    Exempt("emm", "By default, Numba allocates memory on CUDA devices by interacting with the "
           "CUDA driver API", _MOTIVE + " (Numba's behaviour without a plugin)"),
    Exempt("emm", "it may be preferable for Numba to defer to another library for memory "
           "management", _MOTIVE),
    Exempt("emm", "An EMM Plugin can be a part of an external library", _MOTIVE),
    Exempt("emm", "However, not all CUDA-aware libraries also support managing host memory",
           _MOTIVE + " (the host-only manager's section)"),
    Exempt("emm", "Numba's internal deallocation-behavior is designed to increase efficiency",
           "describes Numba's own deallocation, which a plugin replaces (EMM-DEALLOC-STRATEGY)"),
    Exempt("emm", "This may be added to a future version of the interface", _HISTORY),
    Exempt("emm", "Some external memory managers will support management of on-device memory "
           "but not host memory", _MOTIVE),
    Exempt("emm", "The AutoFreePointer class need not be used directly",
           "documentation note on a helper class a plugin may ignore; no obligation"),
    Exempt("emm", "This is primarily useful for running the Numba test suite with an EMM Plugin",
           _EXAMPLE),
)
# fmt: on

EXEMPT: tuple[Exempt, ...] = (
    *(Exempt(spec, q, why) for spec in ("cai-v3", "cai-v2") for q, why in _CAI_SHARED_EXEMPT),
    *_EXEMPT_ONLY,
)
