"""CUDA Array Interface rules (v3 text, with what v0, v1 and v2 differ in).

One entry per normative sentence of `cuda_array_interface_v3.rst` and `cuda_array_interface_v2.rst`.
PORTABILITY entries are not in the text: they name what the text allows but real consumers
commonly reject, and are reported as warnings, never as violations.
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
         "The __cuda_array_interface__ attribute returns a dict.", **_D),
    make("CAI-ATTR-RAISES-ATTRIBUTEERROR", "SHOULD", "0-3", "producer", PY,
         "An object that cannot export raises AttributeError when the attribute is read, so "
         "hasattr() and getattr(obj, name, None) work; any other exception breaks consumers.",
         **_D),
    make("CAI-KEYS-UNKNOWN", "SHOULD", "0-3", "producer", PY,
         "The dict holds only the entries the exported version defines (shape, typestr, data, "
         "version, strides, descr, mask from v1, stream from v3).", **_D),
    # --- shape ----------------------------------------------------------------------------
    make("CAI-SHAPE-REQUIRED", "MUST", "0-3", "producer", PY,
         "The dict contains the entry 'shape'.", **_D),
    make("CAI-SHAPE-TUPLE", "MUST", "0-3", "producer", PY,
         "shape is a tuple (a list is not a tuple).", **_D),
    make("CAI-SHAPE-INT", "MUST", "0-3", "producer", PY,
         "Each element of shape is a Python int (bool is not an int here).", **_D),
    make("CAI-SHAPE-NONNEGATIVE", "MUST", "0-3", "producer", PY,
         "Each element of shape, the size of a dimension, is >= 0.", **_D),
    # --- typestr --------------------------------------------------------------------------
    make("CAI-TYPESTR-REQUIRED", "MUST", "0-3", "producer", PY,
         "The dict contains the entry 'typestr'.", **_D),
    make("CAI-TYPESTR-STR", "MUST", "0-3", "producer", PY, "typestr is a str.", **_D),
    make("CAI-TYPESTR-GRAMMAR", "MUST", "0-3", "producer", PY,
         "typestr follows the numpy array interface grammar: a byte-order character (<, >, |), "
         "a kind code (t b i u f c m M O S U V) and an item size in bytes, with a [unit] for m/M.",
         **_D),
    # --- data -----------------------------------------------------------------------------
    make("CAI-DATA-REQUIRED", "MUST", "0-3", "producer", PY,
         "The dict contains the entry 'data'.", **_D),
    make("CAI-DATA-TUPLE", "MUST", "0-3", "producer", PY,
         "data is a 2-tuple (pointer, read-only flag).", **_D),
    make("CAI-DATA-POINTER-INT", "MUST", "0-3", "producer", PY,
         "The first element of data, the data pointer, is a Python int.", **_D),
    make("CAI-DATA-POINTER-RANGE", "MUST", "0-3", "producer", PY,
         "The data pointer is an address: never negative and below 2**64.", **_D),
    make("CAI-DATA-READONLY-BOOL", "MUST", "0-3", "producer", PY,
         "The second element of data, the read-only flag, is a Python bool.", **_D),
    make("CAI-DATA-DEVICE-ACCESSIBLE", "MUST", "0-3", "producer", PY,
         "The data is device-accessible: the pointer lies in memory a CUDA device can read."),
    make("CAI-DATA-ZERO-SIZE-NULL", "MUST", "2-3", "producer", PY,
         "For zero-size arrays the data pointer is 0.", **_D),
    make("CAI-DATA-NONZERO-SIZE-NONNULL", "MUST", "0-3", "producer", PY,
         "An array with at least one element has a nonzero data pointer (a null pointer is not "
         "device-accessible data).", **_D),
    make("CAI-DATA-EXTENT-IN-ALLOCATION", "MUST", "0-3", "producer", PY,
         "Every byte the shape, strides and typestr reach from the data pointer lies in one "
         "device-accessible allocation."),
    make("CAI-DATA-POINTER-CONTEXT", "SHOULD", "0-3", "consumer", PY,
         "A consumer that may be in another context than the producer obtains a pointer usable in "
         "its current context with cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_DEVICE_POINTER)."),
    make("CAI-PRODUCER-DESCRIBES-DATA", "MUST", "0-3", "producer", PY,
         "The exported dict describes the object's own elements: reading shape elements of "
         "typestr at the byte strides from the data pointer yields the object's values."),
    make("CAI-CONSUMER-READS-DESCRIBED", "MUST", "0-3", "consumer", PY,
         "A consumer reads the elements the dict describes: shape elements of typestr at the "
         "byte strides (C-contiguous when strides is None) from the data pointer."),
    make("CAI-CONSUMER-ANY-MEMORY-KIND", "MUST", "0-3", "consumer", PY,
         "A consumer reads data in any device-accessible memory: device, stream-ordered pool, "
         "managed, mapped pinned host or VMM memory alike. The text asks only that 'the data "
         "must be device-accessible', and its Pointer Attributes section names host-accessible "
         "and managed pointers among those a consumer may meet."),
    make("CAI-DATA-READONLY-HONOURED", "MUST", "0-3", "consumer", PY,
         "A consumer given data whose read-only flag is True does not write to it: it refuses "
         "writable access or exposes the data read-only."),
    # --- copy semantics of consumer entry points (source: each library's own documentation,
    # quoted per entry point in caiconform/adapters/entries.py; the spec lists the adopters
    # and links their documentation under Interoperability) --------------------------------
    make("CAI-ENTRY-ZERO-COPY-SEES-WRITES", "MUST", "0-3", "consumer", INTEROP,
         "A consumer entry point its library documents as zero-copy (e.g. cupy.asarray: 'If a is "
         "already on the device, no copy is performed'; numba.cuda.as_cuda_array: 'No copying of "
         "the data is done') returns a view of the exported memory: a later write through the "
         "producer is visible through it."),
    make("CAI-ENTRY-ZERO-COPY-WRITES-THROUGH", "MUST", "0-3", "consumer", INTEROP,
         "A write through the result of an entry point documented as zero-copy (a kernel "
         "argument included) reaches the producer's memory."),
    make("CAI-ENTRY-COPY-INDEPENDENT", "MUST", "0-3", "consumer", INTEROP,
         "A consumer entry point its library documents as copying (e.g. cupy.array(copy=True): "
         "'this function always returns a new array'; torch.tensor: 'by copying data') returns "
         "memory of its own: a later write through the producer is not visible through it, and "
         "a write through it does not reach the producer's memory."),
    # --- version --------------------------------------------------------------------------
    make("CAI-VERSION-REQUIRED", "MUST", "0-3", "producer", PY,
         "The dict contains the entry 'version'.", **_D),
    make("CAI-VERSION-INT", "MUST", "0-3", "producer", PY,
         "version is a Python int.", **_D),
    make("CAI-VERSION-KNOWN", "MUST", "0-3", "producer", PY,
         "version names an interface version the specification defines: 0, 1, 2 or 3 (current).",
         **_D),
    # --- strides --------------------------------------------------------------------------
    make("CAI-STRIDES-TYPE", "MUST", "0-3", "producer", PY,
         "strides, if given, is None or a tuple.", **_D),
    make("CAI-STRIDES-INT", "MUST", "0-3", "producer", PY,
         "Each element of strides is a Python int: the number of bytes to skip to reach the next "
         "element of that dimension.", **_D),
    make("CAI-STRIDES-NDIM", "MUST", "0-3", "producer", PY,
         "strides has one element per dimension of shape.", **_D),
    make("CAI-STRIDES-NONE-C-CONTIGUOUS", "MUST", "2-3", "consumer", PY,
         "If strides is not given or is None, the consumer treats the array as C-contiguous."),
    # --- descr ----------------------------------------------------------------------------
    make("CAI-DESCR-GRAMMAR", "MUST", "0-3", "producer", PY,
         "descr, if given, follows the numpy array interface: a list of (name, format[, shape]) "
         "tuples, the format a typestr or a nested descr list.", **_D),
    make("CAI-DESCR-CONSISTENT", "MUST", "0-3", "producer", PY,
         "descr describes the same item as typestr: its total item size equals typestr's, and a "
         "single unnamed field has typestr's format.", **_D),
    make("CAI-DESCR-OBJECT-REFUSED", "SHOULD", "0-3", "consumer", PY,
         "A consumer does not make objects of items with object fields (kind O in typestr or "
         "descr): in the numpy array interface they hold PyObject pointers, no data a device "
         "can use and no object of the consumer's process; it refuses them or keeps their bytes "
         "opaque."),
    # --- mask -----------------------------------------------------------------------------
    make("CAI-MASK-TYPE", "MUST", "1-3", "producer", PY,
         "mask, if given, is None or an object exposing __cuda_array_interface__.", **_D),
    make("CAI-MASK-SHAPE", "MUST", "1-3", "producer", PY,
         "The mask has the same definition as numpy's: its shape is broadcastable to the array's "
         "shape.", **_D),
    make("CAI-MASK-TRUTH", "MUST", "1-3", "consumer", PY,
         "A consumer interprets each mask element only as true or not true, true marking a valid "
         "element; with mask None all values are valid."),
    make("CAI-MASK-NUMBA-NOTIMPLEMENTED", "MUST", "1-3", "consumer", PY,
         "Numba raises NotImplementedError when a masked array is passed to a GPU function."),
    # --- stream ---------------------------------------------------------------------------
    make("CAI-STREAM-TYPE", "MUST", "3", "producer", PY,
         "stream, if given, is None or a Python int.", **_D),
    make("CAI-STREAM-ZERO-FORBIDDEN", "MUST", "3", "producer", PY,
         "stream is never 0 (ambiguous between None and the default stream, and between legacy "
         "and per-thread); use None, 1 or 2.", **_D),
    make("CAI-STREAM-HANDLE", "MUST", "3", "producer", PY,
         "A stream other than 1 or 2 is a cudaStream_t handle: a pointer value, positive and "
         "below 2**64.", **_D),
    make("CAI-STREAM-LEGACY", "MUST", "3", "consumer", PY,
         "stream 1 means the legacy default stream."),
    make("CAI-STREAM-PER-THREAD", "MUST", "3", "consumer", PY,
         "stream 2 means the per-thread default stream."),
    make("CAI-STREAM-LIVE", "MUST", "3", "producer", PY,
         "An integer stream names a valid stream: one the consumer can synchronize on or enqueue "
         "work in."),
    # --- synchronization: design ----------------------------------------------------------
    make("CAI-SYNC-RACE-FREE", "MUST", "3", "both", MOTIVE,
         "Producers and consumers exchanging data through the CAI do so without data races."),
    make("CAI-SYNC-CORRECT-BY-DEFAULT", "SHOULD", "3", "both", MOTIVE,
         "Race freedom holds without the user knowing the CAI: asynchronous producers and "
         "consumers are correct by default."),
    make("CAI-SYNC-EXCEPTION-DOCUMENTED", "MUST", "3", "both", MOTIVE,
         "A producer or consumer that needs the user to take steps for correct synchronization "
         "documents those steps explicitly."),
    make("CAI-SYNC-EXCEPTION-AVOIDED", "SHOULD", "3", "both", MOTIVE,
         "The documented-exception route is avoided where possible; it is for libraries that "
         "cannot synchronize without the user."),
    make("CAI-SYNC-USER-OVERRIDE", "MAY", "3", "user", MOTIVE,
         "A user who knows the CAI and both libraries may override synchronization to cut its "
         "cost, and then owns race freedom."),
    # --- synchronization: consumer --------------------------------------------------------
    make("CAI-SYNC-NONE-NO-SYNC", "MAY", "3", "consumer", REQ,
         "When stream is absent or None the consumer need not synchronize and may enqueue work on "
         "the data at once on any stream."),
    make("CAI-SYNC-CONSUMER", "MUST", "3", "consumer", REQ,
         "When stream is an integer the consumer synchronizes on that stream before accessing the "
         "data, or enqueues its operations on the data in that stream."),
    make("CAI-SYNC-CONSUMER-NO-OVERTAKE", "MUST", "3", "consumer", REQ,
         "A consumer that synchronized and works in its own stream ensures no later work in the "
         "provided stream runs before its own operations finish: an event wait in the provided "
         "stream, or not returning to user code until its stream completes."),
    make("CAI-SYNC-CONSUMER-ENQUEUE-RETURN", "MAY", "3", "consumer", REQ,
         "A consumer that only enqueues work on the provided stream may return to user code at "
         "once."),
    make("CAI-SYNC-CONSUMER-IGNORE", "MAY", "3", "consumer", REQ,
         "A consumer the user set to ignore CAI synchronization may operate on the data at once in "
         "any stream even when stream is an integer."),
    # --- synchronization: producer --------------------------------------------------------
    make("CAI-SYNC-PRODUCER-SUFFICIENT", "MUST", "3", "producer", REQ,
         "If work on the data is enqueued on any streams, synchronizing on the exported stream is "
         "sufficient to synchronize with all of it."),
    make("CAI-SYNC-PRODUCER-MULTI-STREAM", "MUST", "3", "producer", REQ,
         "A producer with work on the data on several streams records events after that work and "
         "makes the exported stream wait on them."),
    make("CAI-SYNC-PRODUCER-NO-WORK", "MAY", "3", "producer", REQ,
         "With no work enqueued on the data, stream may be None or absent."),
    make("CAI-SYNC-PRODUCER-OPT-OUT", "MAY", "3", "producer", REQ,
         "A producer may offer an option to always export stream None."),
    make("CAI-SYNC-CONSUMER-OPT-OUT", "MAY", "3", "consumer", REQ,
         "A consumer may offer an option to ignore stream and act as if it were None."),
    make("CAI-SYNC-OPT-OUT-NOT-DEFAULT", "SHOULD", "3", "both", REQ,
         "The synchronization opt-out options are not set by default in a producer or consumer."),
    # --- synchronization: Numba ----------------------------------------------------------
    make("CAI-NUMBA-CONSUMER-SYNC", "MUST", "3", "consumer", NUMBA_SYNC,
         "Numba as a consumer synchronizes at once on an integer stream; a device array made from "
         "the object has that stream as its default stream."),
    make("CAI-NUMBA-PRODUCER-STREAM", "MUST", "3", "producer", NUMBA_SYNC,
         "Numba as a producer exports an array's default stream as stream, or None when it has "
         "none."),
    make("CAI-NUMBA-SYNC-OVERRIDE", "MAY", "3", "consumer", NUMBA_SYNC,
         "NUMBA_CUDA_ARRAY_INTERFACE_SYNC=0 (or CUDA_ARRAY_INTERFACE_SYNC, or sync=False to "
         "as_cuda_array / from_cuda_array_interface) stops Numba synchronizing on imported "
         "streams (\"When set, Numba will not synchronize on the streams of imported "
         "arrays\"); the user may set it and then owns correctness."),
    make("CAI-NUMBA-USER-OTHER-STREAM", "SHOULD", "3", "user", MULTI,
         "A user launching on a stream other than a parameter's default stream records an event "
         "there and makes the default stream wait on it before handing the array on."),
    # --- lifetime -------------------------------------------------------------------------
    make("CAI-LIFETIME-NO-EFFECT", "MUST", "0-3", "producer", LIFE_DATA,
         "Reading __cuda_array_interface__ has no effect on the lifetime of the object; the dict "
         "holds no owner."),
    make("CAI-LIFETIME-DATA-USER", "MUST", "0-3", "user", LIFE_DATA,
         "User code keeps the object owning the data alive for as long as the consumer may use "
         "it."),
    make("CAI-LIFETIME-DATA-HELD", "SHOULD", "0-3", "consumer", NUMBA_LIFE,
         "A consumer view that outlives the user's reference holds a reference to the owning "
         "object, as numba.cuda.as_cuda_array does, so the data is not freed under it."),
    make("CAI-LIFETIME-RELEASED", "SHOULD", "0-3", "consumer", LIFE_DATA,
         "Consuming has no lasting effect on the owner's lifetime: once every consumer view is "
         "dropped, the owning object, and so its memory, can be freed."),
    make("CAI-LIFETIME-STREAM", "MUST", "3", "producer", LIFE_STREAM,
         "A producer exporting a stream ensures the stream lives at least as long as the object "
         "the interface was exported from."),
    make("CAI-NUMBA-PRODUCER-LIFETIME", "MUST", "0-3", "user", NUMBA_LIFE,
         "Numba does not keep alive an object it exported from; the user keeps it alive while the "
         "interface may be used."),
    make("CAI-NUMBA-STREAM-LIFETIME", "MUST", "3", "producer", NUMBA_LIFE,
         "A Numba-managed stream exported on the interface lives at least as long as the array, "
         "which holds a reference to it."),
    make("CAI-NUMBA-AS-CUDA-ARRAY-OWNER", "MUST", "0-3", "consumer", NUMBA_LIFE,
         "numba.cuda.as_cuda_array returns a device array holding a reference to the owning "
         "object."),
    make("CAI-NUMBA-FROM-CAI-OWNER", "MUST", "0-3", "consumer", NUMBA_LIFE,
         "numba.cuda.from_cuda_array_interface holds no reference to the owner unless one is "
         "passed as owner."),
    make("CAI-DLPACK-AGREE", "SHOULD", "0-3", "producer", PY,
         "An object exporting both the CAI and DLPack (__dlpack__) describes the same memory "
         "through both: the same data pointer, shape, strides, element type and read-only flag."),
    # --- pointer attributes ---------------------------------------------------------------
    make("CAI-POINTER-ATTRIBUTES", "MAY", "0-3", "consumer", PTR,
         "A consumer may learn the owning context, host accessibility and managed-ness of the "
         "pointer through cuPointerGetAttribute or cudaPointerGetAttributes."),
    # --- version differences --------------------------------------------------------------
    make("CAI-V0-NO-MASK", "MUST", "0", "producer", DIFF0,
         "Version 0 has no mask entry; a v0 export does not carry one.", **_D),
    make("CAI-V1-ZERO-SIZE-UNSPECIFIED", "MAY", "0-1", "consumer", DIFF1,
         "Versions 0 and 1 specify neither the pointer of zero-size arrays nor strides for "
         "C-contiguous arrays; a v0/v1 consumer cannot rely on either."),
    make("CAI-V2-NO-SYNC", "MAY", "0-2", "consumer", DIFF2,
         "Versions before 3 say nothing about synchronization: a v0-v2 export carries no stream "
         "and promises nothing about pending work.", **_D),
    make("CAI-V2-STREAM-UNDEFINED", "SHOULD", "0-2", "producer", V2,
         "The stream entry is defined from version 3 on; a v0-v2 export that carries one is "
         "ignored by consumers of that version.", **_D),
    # --- portability (not violations) ------------------------------------------------------
    make("CAI-PORT-STRIDES-ITEMSIZE", "PORTABILITY", "0-3", "producer", PY,
         "Strides that are not a multiple of the item size are legal but most consumers (CuPy, "
         "PyTorch, Numba) reject or mis-read them.", **_D),
    make("CAI-PORT-BYTEORDER", "PORTABILITY", "0-3", "producer", PY,
         "A non-native byte order is legal but GPU consumers commonly reject it.", **_D),
    make("CAI-PORT-OVERLAP", "PORTABILITY", "0-3", "producer", PY,
         "Overlapping layouts (a zero stride over a dimension of size > 1) are legal but break "
         "consumers that write or assume distinct elements.", **_D),
    make("CAI-PORT-NEGATIVE-STRIDES", "PORTABILITY", "0-3", "producer", PY,
         "Negative strides are legal but several consumers (PyTorch, JAX) reject them.", **_D),
    make("CAI-PORT-EXTENT-OVERFLOW", "PORTABILITY", "0-3", "producer", PY,
         "A byte extent or element count past 2**63 (64-bit signed indexing) overflows consumers' "
         "index arithmetic.", **_D),
    make("CAI-PORT-READONLY", "PORTABILITY", "0-3", "producer", PY,
         "A read-only export is legal but several consumers refuse it or silently make it "
         "writable.", **_D),
    make("CAI-PORT-MASK", "PORTABILITY", "1-3", "producer", PY,
         "A non-None mask is legal but most consumers (Numba included) do not support masked "
         "arrays.", **_D),
    make("CAI-PORT-MASK-SHAPE-EXACT", "PORTABILITY", "1-3", "producer", PY,
         "A mask whose shape is broadcastable but not equal to the array's is legal but consumers "
         "commonly expect equal shapes.", **_D),
    make("CAI-PORT-TYPESTR-KIND", "PORTABILITY", "0-3", "producer", PY,
         "Kinds other than b, i, u, f, c (bit fields, datetimes, objects, strings, void), and "
         "the extended-precision f16 and c32, are legal but few GPU consumers accept them.",
         **_D),
    make("CAI-PORT-TYPESTR-OPAQUE", "PORTABILITY", "0-3", "producer", PY,
         "An element type with no numpy typestr code (bfloat16, float8) can only be exported as "
         "raw bytes of its size (kind V): legal and byte-exact, but the element type is lost and "
         "consumers that want numbers refuse it or must be told the type out of band."),
    make("CAI-PORT-DESCR-FIELDS", "PORTABILITY", "0-3", "consumer", PY,
         "A consumer may read a structured export (typestr V<n> with named fields in descr) as "
         "opaque bytes, dropping descr: legal (descr is optional), but the field names and "
         "types are lost to its users."),
    make("CAI-PORT-OPAQUE-EXPORT", "PORTABILITY", "0-3", "producer", PY,
         "A producer holding an element type with no numpy typestr code can still export it as "
         "raw bytes (<V2, |V1); one that refuses leaves its users no CAI path for that array."),
    make("CAI-PORT-OLDER-VERSION", "PORTABILITY", "0-2", "consumer", DIFF2,
         "Exports of versions 0-2 remain legal (the interface defines them), but some consumers "
         "accept version 3 only and cannot import them."),
    make("CAI-PORT-V2-PENDING", "PORTABILITY", "0-2", "producer", DIFF2,
         "A v0-v2 export cannot name a stream, so consumers read it at once; a producer that "
         "exports one while work on the data is still pending hands out unfinished data (legal, "
         "as those versions made no statement about synchronization, but wrong data)."),
    make("CAI-PORT-ALIGNMENT", "PORTABILITY", "0-3", "producer", PY,
         "A data pointer not aligned to the item size is legal but misaligned loads fault or "
         "are refused in many consumers.", **_D),
    make("CAI-PORT-ENTRY-MAY-COPY", "PORTABILITY", "0-3", "consumer", INTEROP,
         "A consumer entry point documented to copy only when necessary (jax.numpy.asarray: "
         "'Default is None, which will only copy when necessary') may alias the export or copy "
         "it; code relying on either (a later write seen, or not) is not portable."),
    make("CAI-PORT-ENTRY-REFUSED", "PORTABILITY", "0-3", "consumer", INTEROP,
         "A library need not take CAI objects through every public call: a call other than its "
         "CAI import (e.g. assignment into a tensor, jax.device_put) that refuses one leaves its "
         "users to import through the library's CAI import first."),
    make("CAI-PORT-LAYOUT-SUBSET", "PORTABILITY", "0-3", "consumer", PY,
         "A consumer may take only the layouts it can use (one dimension or contiguous: "
         "rmm.DeviceBuffer.copy_from_device, cuda.compute's iterators; compact strides: JAX) "
         "and refuse the rest by name; a multi-dimensional or strided export is legal, but "
         "such a consumer cannot import it."),
    make("CAI-PORT-STRIDES-OMITTED-V01", "PORTABILITY", "0-1", "producer", DIFF1,
         "A v0/v1 export without explicit strides relies on a C-contiguous reading those versions "
         "did not state.", **_D),
)
# fmt: on
