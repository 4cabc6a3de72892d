"""CUDA Array Interface rules (v3 text, with what v0, v1 and v2 differ in).

One entry per normative sentence of `cuda_array_interface_v3.rst` and `cuda_array_interface_v2.rst`.
Each quotes its sentence; its level is that sentence's word, or it is `derived` (the rule module,
`caiconform.spec.rules`, says how). PORTABILITY entries are no requirement of the text: they
quote the sentence that allows what they are about, name what real consumers commonly reject,
and are reported as warnings, never as violations.
"""

from __future__ import annotations

from caiconform.spec.rules import make

PY = "cai-v3#python-interface-specification"
MOTIVE = "cai-v3#design-motivations"
REQ = "cai-v3#interface-requirements"
NUMBA_SYNC = "cai-v3#synchronization-in-numba"
MULTI = "cai-v3#example-multi-streams"
LIFE_DATA = "cai-v3#lifetime-management-data"
LIFE_STREAM = "cai-v3#lifetime-management-streams"
NUMBA_LIFE = "cai-v3#lifetime-management-in-numba"
PTR = "cai-v3#pointer-attributes"
DIFF0 = "cai-v3#differences-with-cuda-array-interface-version-0"
DIFF1 = "cai-v3#differences-with-cuda-array-interface-version-1"
DIFF2 = "cai-v3#differences-with-cuda-array-interface-version-2"
V2 = "cai-v2#python-interface-specification"
INTEROP = "cai-v3#interoperability"

_D = {"dict_visible": True}

# One rule per entry, laid out as a table.
# fmt: off
RULES = (
    # --- the attribute and the dict ---------------------------------------------------------
    make("CAI-ATTR-DICT", "MUST", "0-3", "producer", PY,
         "The __cuda_array_interface__ attribute returns a dict.", **_D,
         quote="The __cuda_array_interface__ attribute returns a dictionary (dict) that must "
               "contain the following entries:"),
    make("CAI-ATTR-RAISES-ATTRIBUTEERROR", "SHOULD", "0-3", "producer", PY,
         "An object that cannot export raises AttributeError when the attribute is read, so "
         "hasattr() and getattr(obj, name, None) work; any other exception breaks consumers.",
         **_D,
         quote="The __cuda_array_interface__ attribute returns a dictionary (dict)", derived=True),
    make("CAI-KEYS-UNKNOWN", "SHOULD", "0-3", "producer", PY,
         "The dict holds only the entries the exported version defines (shape, typestr, data, "
         "version, strides, descr, mask from v1, stream from v3).", **_D,
         quote="The following are optional entries:", derived=True),
    # --- shape ----------------------------------------------------------------------------
    make("CAI-SHAPE-REQUIRED", "MUST", "0-3", "producer", PY,
         "The dict contains the entry 'shape'.", **_D,
         quote="The __cuda_array_interface__ attribute returns a dictionary (dict) that must "
               "contain the following entries:"),
    make("CAI-SHAPE-TUPLE", "MUST", "0-3", "producer", PY,
         "shape is a tuple (a list is not a tuple).", **_D,
         quote="A tuple of int (or long) representing the size of each dimension.", derived=True),
    make("CAI-SHAPE-INT", "MUST", "0-3", "producer", PY,
         "Each element of shape is a Python int (bool is not an int here).", **_D,
         quote="A tuple of int (or long) representing the size of each dimension.", derived=True),
    make("CAI-SHAPE-NONNEGATIVE", "MUST", "0-3", "producer", PY,
         "Each element of shape, the size of a dimension, is >= 0.", **_D,
         quote="A tuple of int (or long) representing the size of each dimension.", derived=True),
    # --- typestr --------------------------------------------------------------------------
    make("CAI-TYPESTR-REQUIRED", "MUST", "0-3", "producer", PY,
         "The dict contains the entry 'typestr'.", **_D,
         quote="The __cuda_array_interface__ attribute returns a dictionary (dict) that must "
               "contain the following entries:"),
    make("CAI-TYPESTR-STR", "MUST", "0-3", "producer", PY, "typestr is a str.", **_D,
         quote="typestr: str The type string.", derived=True),
    make("CAI-TYPESTR-GRAMMAR", "MUST", "0-3", "producer", PY,
         "typestr follows the numpy array interface grammar: a byte-order character (<, >, |), "
         "a kind code (t b i u f c m M O S U V) and an item size in bytes, with a [unit] for m/M.",
         **_D,
         quote="The type string. This has the same definition as typestr in the numpy array "
               "interface.", derived=True),
    # --- data -----------------------------------------------------------------------------
    make("CAI-DATA-REQUIRED", "MUST", "0-3", "producer", PY,
         "The dict contains the entry 'data'.", **_D,
         quote="The __cuda_array_interface__ attribute returns a dictionary (dict) that must "
               "contain the following entries:"),
    make("CAI-DATA-TUPLE", "MUST", "0-3", "producer", PY,
         "data is a 2-tuple (pointer, read-only flag).", **_D,
         quote="The data is a 2-tuple.", derived=True),
    make("CAI-DATA-POINTER-INT", "MUST", "0-3", "producer", PY,
         "The first element of data, the data pointer, is a Python int.", **_D,
         quote="The first element is the data pointer as a Python int (or long).", derived=True),
    make("CAI-DATA-POINTER-RANGE", "MUST", "0-3", "producer", PY,
         "The data pointer is an address: never negative and below 2**64.", **_D,
         quote="The first element is the data pointer as a Python int (or long).", derived=True),
    make("CAI-DATA-READONLY-BOOL", "MUST", "0-3", "producer", PY,
         "The second element of data, the read-only flag, is a Python bool.", **_D,
         quote="The second element is the read-only flag as a Python bool.", derived=True),
    make("CAI-DATA-DEVICE-ACCESSIBLE", "MUST", "0-3", "producer", PY,
         "The data is device-accessible: the pointer lies in memory a CUDA device can read.",
         quote="The data must be device-accessible."),
    make("CAI-DATA-ZERO-SIZE-NULL", "MUST", "2-3", "producer", PY,
         "For zero-size arrays the data pointer is 0.", **_D,
         quote="For zero-size arrays, use 0 here.", derived=True),
    make("CAI-DATA-NONZERO-SIZE-NONNULL", "MUST", "0-3", "producer", PY,
         "An array with at least one element has a nonzero data pointer (a null pointer is not "
         "device-accessible data).", **_D,
         quote="The data must be device-accessible.", derived=True),
    make("CAI-DATA-EXTENT-IN-ALLOCATION", "MUST", "0-3", "producer", PY,
         "Every byte the shape, strides and typestr reach from the data pointer lies in one "
         "device-accessible allocation.",
         quote="The data must be device-accessible.", derived=True),
    make("CAI-DATA-POINTER-CONTEXT", "SHOULD", "0-3", "consumer", PY,
         "A consumer that may be in another context than the producer obtains a pointer usable in "
         "its current context with cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_DEVICE_POINTER).",
         quote="Because the user of the interface may or may not be in the same context, the most "
               "common case is to use cuPointerGetAttribute with "
               "CU_POINTER_ATTRIBUTE_DEVICE_POINTER in the CUDA driver API (or the equivalent CUDA "
               "Runtime API) to retrieve a device pointer that is usable in the currently active "
               "context.", derived=True),
    make("CAI-PRODUCER-DESCRIBES-DATA", "MUST", "0-3", "producer", PY,
         "The exported dict describes the object's own elements: reading shape elements of "
         "typestr at the byte strides from the data pointer yields the object's values.",
         quote="Otherwise, a tuple of int (or long) is explicitly given for representing the "
               "number of bytes to skip to access the next element at each dimension.",
         derived=True),
    make("CAI-CONSUMER-READS-DESCRIBED", "MUST", "0-3", "consumer", PY,
         "A consumer reads the elements the dict describes: shape elements of typestr at the "
         "byte strides (C-contiguous when strides is None) from the data pointer.",
         quote="If strides is not given, or it is None, the array is in C-contiguous layout. "
               "Otherwise, a tuple of int (or long) is explicitly given for representing the "
               "number of bytes to skip to access the next element at each dimension.",
         derived=True),
    make("CAI-CONSUMER-ANY-MEMORY-KIND", "MUST", "0-3", "consumer", PY,
         "A consumer reads data in any device-accessible memory: device, stream-ordered pool, "
         "managed, mapped pinned host or VMM memory alike. The text asks only that 'the data "
         "must be device-accessible', and its Pointer Attributes section names host-accessible "
         "and managed pointers among those a consumer may meet.",
         quote="The data must be device-accessible.", derived=True),
    make("CAI-DATA-READONLY-HONOURED", "MUST", "0-3", "consumer", PY,
         "A consumer given data whose read-only flag is True does not write to it: it refuses "
         "writable access or exposes the data read-only.",
         quote="The second element is the read-only flag as a Python bool.", derived=True, duty=False),
    # --- copy semantics of consumer entry points (source: each library's own documentation,
    # quoted per entry point in caiconform/adapters/entries.py; the spec lists the adopters
    # and links their documentation under Interoperability) --------------------------------
    make("CAI-ENTRY-ZERO-COPY-SEES-WRITES", "MUST", "0-3", "consumer", INTEROP,
         "A consumer entry point its library documents as zero-copy (e.g. cupy.asarray: 'If a is "
         "already on the device, no copy is performed'; numba.cuda.as_cuda_array: 'No copying of "
         "the data is done') returns a view of the exported memory: a later write through the "
         "producer is visible through it.",
         quote="The following Python libraries have adopted the CUDA Array Interface:",
         derived=True),
    make("CAI-ENTRY-ZERO-COPY-WRITES-THROUGH", "MUST", "0-3", "consumer", INTEROP,
         "A write through the result of an entry point documented as zero-copy (a kernel "
         "argument included) reaches the producer's memory.",
         quote="The following Python libraries have adopted the CUDA Array Interface:",
         derived=True),
    make("CAI-ENTRY-COPY-INDEPENDENT", "MUST", "0-3", "consumer", INTEROP,
         "A consumer entry point its library documents as copying (e.g. cupy.array(copy=True): "
         "'this function always returns a new array'; torch.tensor: 'by copying data') returns "
         "memory of its own: a later write through the producer is not visible through it, and "
         "a write through it does not reach the producer's memory.",
         quote="The following Python libraries have adopted the CUDA Array Interface:",
         derived=True),
    # --- version --------------------------------------------------------------------------
    make("CAI-VERSION-REQUIRED", "MUST", "0-3", "producer", PY,
         "The dict contains the entry 'version'.", **_D,
         quote="The __cuda_array_interface__ attribute returns a dictionary (dict) that must "
               "contain the following entries:"),
    make("CAI-VERSION-INT", "MUST", "0-3", "producer", PY,
         "version is a Python int.", **_D,
         quote="An integer for the version of the interface being exported.", derived=True),
    make("CAI-VERSION-KNOWN", "MUST", "0-3", "producer", PY,
         "version names an interface version the specification defines: 0, 1, 2 or 3 (current).",
         **_D,
         quote="An integer for the version of the interface being exported. The current version is "
               "3.", derived=True),
    # --- strides --------------------------------------------------------------------------
    make("CAI-STRIDES-TYPE", "MUST", "0-3", "producer", PY,
         "strides, if given, is None or a tuple.", **_D,
         quote="strides: None or (integer, ...)", derived=True),
    make("CAI-STRIDES-INT", "MUST", "0-3", "producer", PY,
         "Each element of strides is a Python int: the number of bytes to skip to reach the next "
         "element of that dimension.", **_D,
         quote="Otherwise, a tuple of int (or long) is explicitly given for representing the "
               "number of bytes to skip to access the next element at each dimension.",
         derived=True),
    make("CAI-STRIDES-NDIM", "MUST", "0-3", "producer", PY,
         "strides has one element per dimension of shape.", **_D,
         quote="Otherwise, a tuple of int (or long) is explicitly given for representing the "
               "number of bytes to skip to access the next element at each dimension.",
         derived=True),
    make("CAI-STRIDES-NONE-C-CONTIGUOUS", "MUST", "2-3", "consumer", PY,
         "If strides is not given or is None, the consumer treats the array as C-contiguous.",
         quote="If strides is not given, or it is None, the array is in C-contiguous layout.",
         derived=True),
    # --- descr ----------------------------------------------------------------------------
    make("CAI-DESCR-GRAMMAR", "MUST", "0-3", "producer", PY,
         "descr, if given, follows the numpy array interface: a list of (name, format[, shape]) "
         "tuples, the format a typestr or a nested descr list.", **_D,
         quote="This is for describing more complicated types. This follows the same specification "
               "as in the numpy array interface.", derived=True),
    make("CAI-DESCR-CONSISTENT", "MUST", "0-3", "producer", PY,
         "descr describes the same item as typestr: its total item size equals typestr's, and a "
         "single unnamed field has typestr's format.", **_D,
         quote="This is for describing more complicated types. This follows the same specification "
               "as in the numpy array interface.", derived=True),
    make("CAI-DESCR-OBJECT-REFUSED", "SHOULD", "0-3", "consumer", PY,
         "A consumer does not make objects of items with object fields (kind O in typestr or "
         "descr): in the numpy array interface they hold PyObject pointers, no data a device "
         "can use and no object of the consumer's process; it refuses them or keeps their bytes "
         "opaque.",
         quote="This is for describing more complicated types. This follows the same specification "
               "as in the numpy array interface.", derived=True),
    # --- mask -----------------------------------------------------------------------------
    make("CAI-MASK-TYPE", "MUST", "1-3", "producer", PY,
         "mask, if given, is None or an object exposing __cuda_array_interface__.", **_D,
         quote="mask: None or object exposing the __cuda_array_interface__", derived=True),
    make("CAI-MASK-SHAPE", "MUST", "1-3", "producer", PY,
         "The mask has the same definition as numpy's: its shape is broadcastable to the array's "
         "shape.", **_D,
         quote="This has the same definition as mask in the numpy array interface.", derived=True),
    make("CAI-MASK-TRUTH", "SHOULD", "1-3", "consumer", PY,
         "A consumer interprets each mask element only as true or not true, true marking a valid "
         "element; with mask None all values are valid.",
         quote="All elements of the mask array should be interpreted only as true or not true "
               "indicating which elements of this array are valid."),
    make("CAI-MASK-NUMBA-NOTIMPLEMENTED", "MUST", "1-3", "consumer", PY,
         "Numba raises NotImplementedError when a masked array is passed to a GPU function.",
         quote="Numba does not currently support working with masked CUDA arrays and will raise a "
               "NotImplementedError exception if one is passed to a GPU function.", derived=True, duty=False),
    # --- stream ---------------------------------------------------------------------------
    make("CAI-STREAM-TYPE", "MUST", "3", "producer", PY,
         "stream, if given, is None or a Python int.", **_D,
         quote="stream: None or integer", derived=True),
    make("CAI-STREAM-ZERO-FORBIDDEN", "MUST", "3", "producer", PY,
         "stream is never 0 (ambiguous between None and the default stream, and between legacy "
         "and per-thread); use None, 1 or 2.", **_D,
         quote="0: This is disallowed as it would be ambiguous between None and the default "
               "stream, and also between the legacy and per-thread default streams."),
    make("CAI-STREAM-HANDLE", "MUST", "3", "producer", PY,
         "A stream other than 1 or 2 is a cudaStream_t handle: a pointer value, positive and "
         "below 2**64.", **_D,
         quote="Any other integer: a cudaStream_t represented as a Python integer.", derived=True),
    make("CAI-STREAM-LEGACY", "MUST", "3", "consumer", PY,
         "stream 1 means the legacy default stream.",
         quote="1: The legacy default stream.", derived=True),
    make("CAI-STREAM-PER-THREAD", "MUST", "3", "consumer", PY,
         "stream 2 means the per-thread default stream.",
         quote="2: The per-thread default stream.", derived=True),
    make("CAI-STREAM-LIVE", "MUST", "3", "producer", PY,
         "An integer stream names a valid stream: one the consumer can synchronize on or enqueue "
         "work in.",
         quote="Any other integer: a cudaStream_t represented as a Python integer.", derived=True),
    # --- synchronization: design ----------------------------------------------------------
    make("CAI-SYNC-RACE-FREE", "MUST", "3", "both", MOTIVE,
         "Producers and consumers exchanging data through the CAI do so without data races.",
         quote="Producers and Consumers that exchange data through the CAI must be able to do so "
               "without data races."),
    make("CAI-SYNC-CORRECT-BY-DEFAULT", "SHOULD", "3", "both", MOTIVE,
         "Race freedom holds without the user knowing the CAI: asynchronous producers and "
         "consumers are correct by default.",
         quote="Requirement 1 should be met without requiring the user to be aware of any "
               "particulars of the CAI - in other words, exchanging data between Producers and "
               "Consumers that operate on data asynchronously should be correct by default."),
    make("CAI-SYNC-EXCEPTION-DOCUMENTED", "MUST", "3", "both", MOTIVE,
         "A producer or consumer that needs the user to take steps for correct synchronization "
         "documents those steps explicitly.",
         quote="In this case, Users are required to understand the details of the CUDA Array "
               "Interface, and the Producer/Consumer library documentation must specify the steps "
               "that Users are required to take."),
    make("CAI-SYNC-EXCEPTION-AVOIDED", "SHOULD", "3", "both", MOTIVE,
         "The documented-exception route is avoided where possible; it is for libraries that "
         "cannot synchronize without the user.",
         quote="Use of this exception should be avoided where possible, as it is provided for "
               "libraries that cannot implement the synchronization semantics without the "
               "involvement of the User"),
    make("CAI-SYNC-USER-OVERRIDE", "SHOULD", "3", "user", MOTIVE,
         "A user who knows the CAI and both libraries is able to override synchronization to cut "
         "its cost, and then owns race freedom.",
         quote="Where the User is aware of the particulars of the CAI and implementation details "
               "of the Producer and Consumer, they should be able to, at their discretion, "
               "override some of the synchronization semantics of the interface to reduce the "
               "synchronization overhead."),
    # --- synchronization: consumer --------------------------------------------------------
    make("CAI-SYNC-NONE-NO-SYNC", "MAY", "3", "consumer", REQ,
         "When stream is absent or None the consumer need not synchronize and may enqueue work on "
         "the data at once on any stream.",
         quote="The Consumer may enqueue operations on the underlying data immediately on any "
               "stream."),
    make("CAI-SYNC-CONSUMER", "MUST", "3", "consumer", REQ,
         "When stream is an integer the consumer synchronizes on that stream before accessing the "
         "data, or enqueues its operations on the data in that stream.",
         quote="An optional stream upon which synchronization must take place at the point of "
               "consumption, either by synchronizing on the stream or enqueuing operations on the "
               "data on the given stream."),
    make("CAI-SYNC-CONSUMER-NO-OVERTAKE", "MUST", "3", "consumer", REQ,
         "A consumer that synchronized and works in its own stream ensures no later work in the "
         "provided stream runs before its own operations finish: an event wait in the provided "
         "stream, or not returning to user code until its stream completes.",
         quote="If the Consumer synchronizes on the provided stream prior to accessing the data, "
               "then it must ensure that no computation can take place in the provided stream "
               "until its operations in its own choice of stream have taken place."),
    make("CAI-SYNC-CONSUMER-ENQUEUE-RETURN", "MAY", "3", "consumer", REQ,
         "A consumer that only enqueues work on the provided stream may return to user code at "
         "once.",
         quote="If the consumer chooses to only enqueue operations on the data in the provided "
               "stream, then it may return control to the User code immediately after enqueueing "
               "its work, as the work will all be serialized on the exported array's stream."),
    make("CAI-SYNC-CONSUMER-IGNORE", "MAY", "3", "consumer", REQ,
         "A consumer the user set to ignore CAI synchronization may operate on the data at once in "
         "any stream even when stream is an integer.",
         quote="If the User has set the Consumer to ignore CAI synchronization semantics, the "
               "Consumer may assume it can operate on the data immediately in any stream with no "
               "further synchronization, even if the stream member has an integer value."),
    # --- synchronization: producer --------------------------------------------------------
    make("CAI-SYNC-PRODUCER-SUFFICIENT", "MUST", "3", "producer", REQ,
         "If work on the data is enqueued on any streams, synchronizing on the exported stream is "
         "sufficient to synchronize with all of it.",
         quote="When exporting an array through the CAI, Producers must ensure that: * If there is "
               "work on the data enqueued in one or more streams, then synchronization on the "
               "provided stream is sufficient to ensure synchronization with all pending work."),
    make("CAI-SYNC-PRODUCER-MULTI-STREAM", "MUST", "3", "producer", REQ,
         "A producer with work on the data on several streams records events after that work and "
         "makes the exported stream wait on them.",
         quote="If the Producer has enqueued work on the data on multiple streams, then it must "
               "enqueue events on those streams that follow the enqueued work, and then wait on "
               "those events in the provided stream."),
    make("CAI-SYNC-PRODUCER-NO-WORK", "MAY", "3", "producer", REQ,
         "With no work enqueued on the data, stream may be None or absent.",
         quote="If there is no work enqueued on the data, then the stream entry may be either "
               "None, or not provided."),
    make("CAI-SYNC-PRODUCER-OPT-OUT", "MAY", "3", "producer", REQ,
         "A producer may offer an option to always export stream None.",
         quote="Producers may provide a configuration option to always set stream to None."),
    make("CAI-SYNC-CONSUMER-OPT-OUT", "MAY", "3", "consumer", REQ,
         "A consumer may offer an option to ignore stream and act as if it were None.",
         quote="Consumers may provide a configuration option to ignore the value of stream and act "
               "as if it were None or not provided."),
    make("CAI-SYNC-OPT-OUT-NOT-DEFAULT", "SHOULD", "3", "both", REQ,
         "The synchronization opt-out options are not set by default in a producer or consumer.",
         quote="These options should not be set by default in either a Producer or a Consumer."),
    # --- synchronization: Numba ----------------------------------------------------------
    make("CAI-NUMBA-CONSUMER-SYNC", "MUST", "3", "consumer", NUMBA_SYNC,
         "Numba as a consumer synchronizes at once on an integer stream; a device array made from "
         "the object has that stream as its default stream.",
         quote="If stream is an integer, then Numba will immediately synchronize on the provided "
               "stream. A Numba Device Array created from an array-like object has its default "
               "stream set to the provided stream.", derived=True),
    make("CAI-NUMBA-PRODUCER-STREAM", "MUST", "3", "producer", NUMBA_SYNC,
         "Numba as a producer exports an array's default stream as stream, or None when it has "
         "none.",
         quote="If the exported CUDA Array has a default stream, then it is given as the stream "
               "entry. Otherwise, stream is set to None.", derived=True),
    make("CAI-NUMBA-SYNC-OVERRIDE", "MAY", "3", "consumer", NUMBA_SYNC,
         "NUMBA_CUDA_ARRAY_INTERFACE_SYNC=0 (or CUDA_ARRAY_INTERFACE_SYNC, or sync=False to "
         "as_cuda_array / from_cuda_array_interface) stops Numba synchronizing on imported "
         "streams (\"When set, Numba will not synchronize on the streams of imported "
         "arrays\"); the user may set it and then owns correctness.",
         quote="The User may override Numba's synchronization behavior by setting the environment "
               "variable NUMBA_CUDA_ARRAY_INTERFACE_SYNC or the config variable "
               "CUDA_ARRAY_INTERFACE_SYNC to 0"),
    make("CAI-NUMBA-USER-OTHER-STREAM", "SHOULD", "3", "user", MULTI,
         "A user launching on a stream other than a parameter's default stream records an event "
         "there and makes the default stream wait on it before handing the array on.",
         quote="When launching operations on a stream that is not the default stream for a given "
               "parameter, they should then insert an event into the stream that they are "
               "operating in, and wait on that event in the default stream for the parameter."),
    # --- lifetime -------------------------------------------------------------------------
    make("CAI-LIFETIME-NO-EFFECT", "MUST", "0-3", "producer", LIFE_DATA,
         "Reading __cuda_array_interface__ has no effect on the lifetime of the object; the dict "
         "holds no owner.",
         quote="Obtaining the value of the __cuda_array_interface__ property of any object has no "
               "effect on the lifetime of the object from which it was created. In particular, "
               "note that the interface has no slot for the owner of the data.", derived=True),
    make("CAI-LIFETIME-DATA-USER", "MUST", "0-3", "user", LIFE_DATA,
         "User code keeps the object owning the data alive for as long as the consumer may use "
         "it.",
         quote="The User code must preserve the lifetime of the object owning the data for as long "
               "as the Consumer might use it."),
    make("CAI-LIFETIME-DATA-HELD", "SHOULD", "0-3", "consumer", NUMBA_LIFE,
         "A consumer view that outlives the user's reference holds a reference to the owning "
         "object, as numba.cuda.as_cuda_array does, so the data is not freed under it.",
         quote="as_cuda_array: This creates a device array that holds a reference to the owning "
               "object.", derived=True),
    make("CAI-LIFETIME-RELEASED", "SHOULD", "0-3", "consumer", LIFE_DATA,
         "Consuming has no lasting effect on the owner's lifetime: once every consumer view is "
         "dropped, the owning object, and so its memory, can be freed.",
         quote="Obtaining the value of the __cuda_array_interface__ property of any object has no "
               "effect on the lifetime of the object from which it was created.", derived=True),
    make("CAI-LIFETIME-STREAM", "MUST", "3", "producer", LIFE_STREAM,
         "A producer exporting a stream ensures the stream lives at least as long as the object "
         "the interface was exported from.",
         quote="It is therefore required that a Producer exporting data on the interface with an "
               "associated stream ensures that the exported stream's lifetime is equal to or "
               "surpasses the lifetime of the object from which the interface was exported."),
    make("CAI-NUMBA-PRODUCER-LIFETIME", "MUST", "0-3", "user", NUMBA_LIFE,
         "Numba does not keep alive an object it exported from; the user keeps it alive while the "
         "interface may be used.",
         quote="Numba takes no steps to maintain the lifetime of an object from which the "
               "interface is exported - it is the user's responsibility to ensure that the "
               "underlying object is kept alive for the duration that the exported interface might "
               "be used.", derived=True),
    make("CAI-NUMBA-STREAM-LIFETIME", "MUST", "3", "producer", NUMBA_LIFE,
         "A Numba-managed stream exported on the interface lives at least as long as the array, "
         "which holds a reference to it.",
         quote="The lifetime of any Numba-managed stream exported on the interface is guaranteed "
               "to equal or surpass the lifetime of the underlying object, because the underlying "
               "object holds a reference to the stream.", derived=True),
    make("CAI-NUMBA-AS-CUDA-ARRAY-OWNER", "MUST", "0-3", "consumer", NUMBA_LIFE,
         "numba.cuda.as_cuda_array returns a device array holding a reference to the owning "
         "object.",
         quote="as_cuda_array: This creates a device array that holds a reference to the owning "
               "object.", derived=True),
    make("CAI-NUMBA-FROM-CAI-OWNER", "MUST", "0-3", "consumer", NUMBA_LIFE,
         "numba.cuda.from_cuda_array_interface holds no reference to the owner unless one is "
         "passed as owner.",
         quote="from_cuda_array_interface: This creates a device array with no reference to the "
               "owning object by default.", derived=True),
    make("CAI-DLPACK-AGREE", "SHOULD", "0-3", "producer", PY,
         "An object exporting both the CAI and DLPack (__dlpack__) describes the same memory "
         "through both: the same data pointer, shape, strides, element type and read-only flag.",
         quote="The CUDA Array Interface (or CAI) is created for interoperability between "
               "different implementations of CUDA array-like objects in various projects.",
         derived=True),
    # --- pointer attributes ---------------------------------------------------------------
    make("CAI-POINTER-ATTRIBUTES", "MAY", "0-3", "consumer", PTR,
         "A consumer may learn the owning context, host accessibility and managed-ness of the "
         "pointer through cuPointerGetAttribute or cudaPointerGetAttributes.",
         quote="Additional information about the data pointer can be retrieved using "
               "cuPointerGetAttribute or cudaPointerGetAttributes.", derived=True),
    # --- version differences --------------------------------------------------------------
    make("CAI-V0-NO-MASK", "MUST", "0", "producer", DIFF0,
         "Version 0 has no mask entry; a v0 export does not carry one.", **_D,
         quote="Version 0 of the CUDA Array Interface did not have the optional mask attribute to "
               "support masked arrays.", derived=True),
    make("CAI-V1-ZERO-SIZE-UNSPECIFIED", "MAY", "0-1", "consumer", DIFF1,
         "Versions 0 and 1 specify neither the pointer of zero-size arrays nor strides for "
         "C-contiguous arrays; a v0/v1 consumer cannot rely on either.",
         quote="Versions 0 and 1 of the CUDA Array Interface neither clarified the strides "
               "attribute for C-contiguous arrays nor specified the treatment for zero-size "
               "arrays.", derived=True),
    make("CAI-V2-NO-SYNC", "MAY", "0-2", "consumer", DIFF2,
         "Versions before 3 say nothing about synchronization: a v0-v2 export carries no stream "
         "and promises nothing about pending work.", **_D,
         quote="Prior versions of the CUDA Array Interface made no statement about "
               "synchronization.", derived=True),
    make("CAI-V2-STREAM-UNDEFINED", "SHOULD", "0-2", "producer", V2,
         "The stream entry is defined from version 3 on; a v0-v2 export that carries one is "
         "ignored by consumers of that version.", **_D,
         quote="The following are optional entries:", derived=True),
    # --- portability (not violations) ------------------------------------------------------
    make("CAI-PORT-STRIDES-ITEMSIZE", "PORTABILITY", "0-3", "producer", PY,
         "Strides that are not a multiple of the item size are legal but most consumers (CuPy, "
         "PyTorch, Numba) reject or mis-read them.", **_D,
         quote="Otherwise, a tuple of int (or long) is explicitly given for representing the "
               "number of bytes to skip to access the next element at each dimension."),
    make("CAI-PORT-BYTEORDER", "PORTABILITY", "0-3", "producer", PY,
         "A non-native byte order is legal but GPU consumers commonly reject it.", **_D,
         quote="The type string. This has the same definition as typestr in the numpy array "
               "interface."),
    make("CAI-PORT-OVERLAP", "PORTABILITY", "0-3", "producer", PY,
         "Overlapping layouts (a zero stride over a dimension of size > 1) are legal but break "
         "consumers that write or assume distinct elements.", **_D,
         quote="Otherwise, a tuple of int (or long) is explicitly given for representing the "
               "number of bytes to skip to access the next element at each dimension."),
    make("CAI-PORT-NEGATIVE-STRIDES", "PORTABILITY", "0-3", "producer", PY,
         "Negative strides are legal but several consumers (PyTorch, JAX) reject them.", **_D,
         quote="Otherwise, a tuple of int (or long) is explicitly given for representing the "
               "number of bytes to skip to access the next element at each dimension."),
    make("CAI-PORT-EXTENT-OVERFLOW", "PORTABILITY", "0-3", "producer", PY,
         "A byte extent or element count past 2**63 (64-bit signed indexing) overflows consumers' "
         "index arithmetic.", **_D,
         quote="A tuple of int (or long) representing the size of each dimension."),
    make("CAI-PORT-READONLY", "PORTABILITY", "0-3", "producer", PY,
         "A read-only export is legal but several consumers refuse it or silently make it "
         "writable.", **_D,
         quote="The second element is the read-only flag as a Python bool."),
    make("CAI-PORT-MASK", "PORTABILITY", "1-3", "producer", PY,
         "A non-None mask is legal but most consumers (Numba included) do not support masked "
         "arrays.", **_D,
         quote="mask: None or object exposing the __cuda_array_interface__"),
    make("CAI-PORT-MASK-SHAPE-EXACT", "PORTABILITY", "1-3", "producer", PY,
         "A mask whose shape is broadcastable but not equal to the array's is legal but consumers "
         "commonly expect equal shapes.", **_D,
         quote="This has the same definition as mask in the numpy array interface."),
    make("CAI-PORT-TYPESTR-KIND", "PORTABILITY", "0-3", "producer", PY,
         "Kinds other than b, i, u, f, c (bit fields, datetimes, objects, strings, void), and "
         "the extended-precision f16 and c32, are legal but few GPU consumers accept them.",
         **_D,
         quote="The type string. This has the same definition as typestr in the numpy array "
               "interface."),
    make("CAI-PORT-TYPESTR-OPAQUE", "PORTABILITY", "0-3", "producer", PY,
         "An element type with no numpy typestr code (bfloat16, float8) can only be exported as "
         "raw bytes of its size (kind V): legal and byte-exact, but the element type is lost and "
         "consumers that want numbers refuse it or must be told the type out of band.",
         quote="The type string. This has the same definition as typestr in the numpy array "
               "interface."),
    make("CAI-PORT-DESCR-FIELDS", "PORTABILITY", "0-3", "consumer", PY,
         "A consumer may read a structured export (typestr V<n> with named fields in descr) as "
         "opaque bytes, dropping descr: legal (descr is optional), but the field names and "
         "types are lost to its users.",
         quote="The following are optional entries:"),
    make("CAI-PORT-OPAQUE-EXPORT", "PORTABILITY", "0-3", "producer", PY,
         "A producer holding an element type with no numpy typestr code can still export it as "
         "raw bytes (<V2, |V1); one that refuses leaves its users no CAI path for that array.",
         quote="The type string. This has the same definition as typestr in the numpy array "
               "interface."),
    make("CAI-PORT-OLDER-VERSION", "PORTABILITY", "0-2", "consumer", DIFF2,
         "Exports of versions 0-2 remain legal (the interface defines them), but some consumers "
         "accept version 3 only and cannot import them.",
         quote="An integer for the version of the interface being exported."),
    make("CAI-PORT-V2-PENDING", "PORTABILITY", "0-2", "producer", DIFF2,
         "A v0-v2 export cannot name a stream, so consumers read it at once; a producer that "
         "exports one while work on the data is still pending hands out unfinished data (legal, "
         "as those versions made no statement about synchronization, but wrong data).",
         quote="Prior versions of the CUDA Array Interface made no statement about "
               "synchronization."),
    make("CAI-PORT-ALIGNMENT", "PORTABILITY", "0-3", "producer", PY,
         "A data pointer not aligned to the item size is legal but misaligned loads fault or "
         "are refused in many consumers.", **_D,
         quote="The first element is the data pointer as a Python int (or long)."),
    make("CAI-PORT-ENTRY-MAY-COPY", "PORTABILITY", "0-3", "consumer", INTEROP,
         "A consumer entry point documented to copy only when necessary (jax.numpy.asarray: "
         "'Default is None, which will only copy when necessary') may alias the export or copy "
         "it; code relying on either (a later write seen, or not) is not portable.",
         quote="The following Python libraries have adopted the CUDA Array Interface:"),
    make("CAI-PORT-ENTRY-REFUSED", "PORTABILITY", "0-3", "consumer", INTEROP,
         "A library need not take CAI objects through every public call: a call other than its "
         "CAI import (e.g. assignment into a tensor, jax.device_put) that refuses one leaves its "
         "users to import through the library's CAI import first.",
         quote="The following Python libraries have adopted the CUDA Array Interface:"),
    make("CAI-PORT-LAYOUT-SUBSET", "PORTABILITY", "0-3", "consumer", PY,
         "A consumer may take only the layouts it can use (one dimension or contiguous: "
         "rmm.DeviceBuffer.copy_from_device, cuda.compute's iterators; compact strides: JAX) "
         "and refuse the rest by name; a multi-dimensional or strided export is legal, but "
         "such a consumer cannot import it.",
         quote="Otherwise, a tuple of int (or long) is explicitly given for representing the "
               "number of bytes to skip to access the next element at each dimension."),
    make("CAI-PORT-STRIDES-OMITTED-V01", "PORTABILITY", "0-1", "producer", DIFF1,
         "A v0/v1 export without explicit strides relies on a C-contiguous reading those versions "
         "did not state.", **_D,
         quote="Versions 0 and 1 of the CUDA Array Interface neither clarified the strides "
               "attribute for C-contiguous arrays nor specified the treatment for zero-size "
               "arrays."),
)
# fmt: on
