"""DLPack rules: the Python specification of DLPack and dlpack.h's own comments.

One entry per normative statement of the three DLPack texts kept under docs/spec/dlpack/: the
array API standard's `__dlpack__`, `__dlpack_device__` and `from_dlpack` (2025.12), dmlc/dlpack's
Python specification page, and dlpack.h (DLPack 1.3). Each quotes its sentence; its level is that
sentence's word, or it is `derived` (`caiconform.spec.rules` says how). DLPACK rules carry no CAI
versions: a capsule says its own DLPack version, and a rule that holds from one minor version on
says so (NULL strides: allowed before 1.2 only; an enumeration value: in the capsule's
version). `dict_visible` marks what a capsule alone (or an object's `__dlpack__`/
`__dlpack_device__` answers) can show: the rules `caiconform.dlpack.validate.check_capsule`
judges.
"""

from __future__ import annotations

from caiconform.spec.rules import make

API = "dlpack-api#array-dlpack-and-array-dlpack-device"
FROM = "dlpack-api#from-dlpack"
SEMANTICS = "dlpack-py#semantics"
IMPL = "dlpack-py#implementation"
HEADER = "dlpack-h#dlpack-h"

# One rule per entry, laid out as a table.
# fmt: off
RULES = (
    # -- capsules, names, deleters (Python specification of DLPack; dlpack.h)
    make("DLPACK-CAPSULE-NAME", "MUST", "", "producer", IMPL,
         "__dlpack__ returns a PyCapsule named \"dltensor\" (\"dltensor_versioned\" for a "
         "versioned tensor), never a consumed (\"used_\") one or a capsule of another name.",
         quote='The producer must set the PyCapsule name to "dltensor" so that it can be '
               "inspected by name", dict_visible=True),
    make("DLPACK-CAPSULE-VERSIONED-NAME", "MUST", "", "both", IMPL,
         "A capsule holding a DLManagedTensorVersioned is named \"dltensor_versioned\" (and "
         "\"used_dltensor_versioned\" once consumed).",
         quote="when DLManagedTensorVersioned is in use the capsule names dltensor and "
               "used_dltensor will need a _versioned suffix.", derived=True),
    make("DLPACK-CAPSULE-DESTRUCTOR", "MUST", "", "producer", IMPL,
         "The capsule has a destructor that calls the tensor's deleter while the capsule is "
         "still unconsumed.",
         quote='The producer must set the PyCapsule name to "dltensor" so that it can be '
               "inspected by name, and set PyCapsule_Destructor that calls the deleter of the "
               'DLManagedTensor when the "dltensor"-named capsule is no longer needed.',
         dict_visible=True),
    make("DLPACK-CONSUMER-RENAME", "MUST", "", "consumer", IMPL,
         "A consumer takes ownership of the tensor by renaming the capsule to \"used_dltensor\" "
         "(\"used_dltensor_versioned\"), so the capsule's destructor no longer calls the "
         "deleter.",
         quote="The consumer must transer ownership of the DLManagedTensor from the capsule to "
               "its own object."),
    make("DLPACK-DELETER-ONCE", "MUST", "", "both", IMPL,
         "The tensor's deleter is called exactly once: by the capsule's destructor when the "
         "capsule is never consumed, else by the consumer's owning object.",
         quote="therefore it is consumed exactly once, and it will not be visible to users of "
               "the Python API.", derived=True),
    make("DLPACK-DELETER-NULL", "MAY", "", "producer", HEADER,
         "The deleter may be NULL when the producer has no reasonable destructor to give.",
         quote="It can be NULL if there is no way for the caller to provide a reasonable "
               "destructor.", derived=True, dict_visible=True),
    make("DLPACK-CAPSULE-NAMES-STATIC", "MUST", "", "both", IMPL,
         "The capsule name strings are statically allocated.",
         quote='Note: the capsule names "dltensor" and "used_dltensor" must be statically '
               "allocated."),
    make("DLPACK-DELETER-GIL", "MUST", "", "producer", IMPL,
         "A deleter that uses Python objects or the Python API acquires the GIL itself.",
         quote="The DLManagedTensor deleter must ensure that sharing beyond Python boundaries "
               "is possible, this means that the GIL must be acquired explicitly if it uses "
               "Python objects or API."),
    make("DLPACK-CONSUMER-CALLS-DELETER", "SHOULD", "", "consumer", HEADER,
         "A consumer calls the deleter when it no longer needs the borrowed tensor.",
         quote="When the borrowing framework doesn't need the tensor, it should call the deleter "
               "to notify the host that the resource is no longer needed."),
    make("DLPACK-ZERO-COPY", "MUST", "", "producer", SEMANTICS,
         "from_dlpack gives a view on the producer's memory where it can, a copy only where "
         "it cannot.",
         quote="If possible, this must be zero-copy (i.e. y will be a view on x)."),
    make("DLPACK-CONSUMER-READS-DESCRIBED", "MUST", "", "consumer", FROM,
         "from_dlpack gives an array holding the elements the capsule describes (data + "
         "byte_offset, shape, element strides, dtype), each read as its type.",
         quote="Returns a new array containing the data from another (array) object with a "
               "__dlpack__ method.",
         derived=True),
    make("DLPACK-PRODUCER-DESCRIBES-DATA", "MUST", "", "producer", API,
         "The capsule `__dlpack__` returns describes the array's own elements: read as it "
         "says, they are the values the array holds.",
         quote="Exports the array for consumption by from_dlpack as a DLPack capsule.",
         derived=True),
    # -- versions (max_version, versioned capsules)
    make("DLPACK-VERSIONED-STRUCT", "SHOULD", "", "producer", IMPL,
         "Asked with max_version of major 1 or later, a producer returns a versioned capsule "
         "(DLManagedTensorVersioned), the unversioned struct being deprecated.",
         quote="Starting DLPack 1.0, the DLManagedTensorVersioned struct should be used and the "
               "existing DLManagedTensor struct is considered deprecated, though a library "
               "should try to support both during the transition period if possible.",
         dict_visible=True),
    make("DLPACK-MAX-VERSION-RETURNED", "MAY", "", "producer", API,
         "A producer may return a capsule of version max_version (recommended when it supports "
         "it) or of another version.",
         quote="This method may return a capsule of version max_version (recommended if it does "
               "support that), or of a different version."),
    make("DLPACK-MAX-VERSION-NONE-LEGACY", "SHOULD", "", "producer", API,
         "Asked without max_version (or with None), a producer keeps its legacy export: a "
         "\"dltensor\" capsule, the only kind a consumer predating DLPack 1.0 reads.",
         quote="It is recommended for the producer to use this logic in the implementation of "
               "__dlpack__", derived=True),
    make("DLPACK-CONSUMER-VERIFIES-VERSION", "MUST", "", "consumer", API,
         "A consumer checks the version a versioned capsule carries, max_version passed or not.",
         quote="This means the consumer must verify the version even when max_version is "
               "passed."),
    make("DLPACK-VERSION-MAJOR-MISMATCH", "MUST", "", "consumer", HEADER,
         "A versioned tensor whose major version is not the header's (1) is only released "
         "through its deleter: no other field is read.",
         quote="(i.e. major != DLPACK_MAJOR_VERSION), the consumer must call the deleter (and it "
               "is safe to do so).", dict_visible=True),
    make("DLPACK-VERSION-ENUM-VALUES", "SHOULD", "", "producer", HEADER,
         "A versioned capsule uses only the enumeration values its own minor version defines: "
         "no float8, float6 or float4 type code and no sub-byte padded flag in a 1.0 capsule, "
         "no kDLTrn device before 1.2 (a consumer of that version cannot interpret them).",
         quote="In the case of a minor version mismatch, the tensor can be safely used as long "
               "as the consumer knows how to interpret all fields. Minor version updates "
               "indicate the addition of enumeration values.", derived=True, dict_visible=True),
    # -- stream
    make("DLPACK-STREAM-MIN", "MUST", "", "consumer", API,
         "The stream a consumer passes is an integer of -1 or more.",
         quote="The pointer must be an integer larger than or equal to -1"),
    make("DLPACK-STREAM-NO-SYNC", "MUST", "", "producer", API,
         "stream=-1 tells the producer to perform no synchronization.",
         quote='If stream is -1, the value may be used by the consumer to signal "producer must '
               'not perform any synchronization".'),
    make("DLPACK-STREAM-OWNERSHIP", "MUST", "", "producer", API,
         "The stream passed stays the consumer's: the producer does not destroy or keep it.",
         quote="The ownership of the stream stays with the consumer.", derived=True),
    make("DLPACK-STREAM-CPU-NONE", "MUST", "", "both", API,
         "On CPU and other devices without streams, stream is None; a producer there refuses "
         "any other value.",
         quote="On CPU and other device types without streams, only None is accepted.",
         derived=True),
    make("DLPACK-STREAM-OPTIONAL", "MAY", "", "producer", API,
         "A producer may support no stream value other than None.",
         quote="Support for a stream value other than None is optional and "
               "implementation-dependent."),
    make("DLPACK-STREAM-NONE-LEGACY", "MUST", "", "producer", API,
         "With stream=None on CUDA the producer orders its work before the legacy default "
         "stream.",
         quote="None: producer must assume the legacy default stream (default)."),
    make("DLPACK-STREAM-ONE-LEGACY", "MUST", "", "producer", API,
         "stream=1 on CUDA is the legacy default stream.",
         quote="1: the legacy default stream.", derived=True),
    make("DLPACK-STREAM-TWO-PER-THREAD", "MUST", "", "producer", API,
         "stream=2 on CUDA is the per-thread default stream.",
         quote="2: the per-thread default stream.", derived=True),
    make("DLPACK-STREAM-HANDLE", "MUST", "", "producer", API,
         "A stream value above 2 on CUDA is a stream handle as a Python integer.",
         quote="> 2: stream number represented as a Python integer.", derived=True),
    make("DLPACK-STREAM-ZERO-FORBIDDEN", "MUST", "", "consumer", API,
         "A consumer never passes stream=0 for CUDA.",
         quote="0 is disallowed due to its ambiguity: 0 could mean either None, 1, or 2."),
    make("DLPACK-STREAM-PRODUCER-SYNC", "MUST", "", "both", SEMANTICS,
         "The consumer passes the stream it will use; the producer synchronizes or waits on it "
         "when its pending work could race the consumer's.",
         quote="The consumer must pass the stream it will use to the producer; the producer must "
               "synchronize or wait on the stream when necessary."),
    make("DLPACK-STREAM-DL-DEVICE-CPU", "MUST", "", "producer", API,
         "With dl_device kDLCPU the stream is None and the producer synchronizes before the "
         "capsule is returned.",
         quote="In particular, when kDLCPU is in use, stream must be None and a synchronization "
               "must be performed to ensure data safety."),
    # -- dl_device, copy, refusals
    make("DLPACK-DL-DEVICE-DEFAULT", "SHOULD", "", "producer", API,
         "Without dl_device, the capsule's device is the array's own (__dlpack_device__).",
         quote="Default is None, meaning the exported capsule should be on the same device as "
               "self is.", dict_visible=True),
    make("DLPACK-DL-DEVICE-BUFFERERROR", "MUST", "", "producer", API,
         "A dl_device the producer cannot handle raises BufferError.",
         quote="If the device type cannot be handled by the producer, this function must raise "
               "BufferError."),
    make("DLPACK-DL-DEVICE-CPU", "SHOULD", "", "producer", API,
         "A producer offers a way to export a capsule of host-accessible (kDLCPU) memory.",
         quote="The v2023.12 standard only mandates that a compliant library should offer a way "
               "for __dlpack__ to return a capsule referencing an array whose underlying memory "
               "is accessible to the Python interpreter"),
    make("DLPACK-COPY-FALSE-CPU-BUFFERERROR", "MUST", "", "producer", API,
         "copy=False with a dl_device that needs a copy raises BufferError.",
         quote="If a copy must be made to enable this support but copy is set to False, the "
               "function must raise BufferError."),
    make("DLPACK-COPY-TRUE", "MUST", "", "producer", API,
         "copy=True always copies.",
         quote="If True, the function must always copy"),
    make("DLPACK-COPY-FALSE", "MUST", "", "producer", API,
         "copy=False never copies, raising BufferError where a copy would be needed.",
         quote="If False, the function must never copy, and raise a BufferError in case a copy "
               "is deemed necessary"),
    make("DLPACK-COPY-NONE", "MUST", "", "producer", API,
         "copy=None reuses the memory where possible and copies otherwise.",
         quote="If None, the function must reuse the existing memory buffer if possible and copy "
               "otherwise."),
    make("DLPACK-COPY-FLAG", "MUST", "", "producer", API,
         "A capsule made by copying has DLPACK_FLAG_BITMASK_IS_COPIED set.",
         quote="When a copy happens, the DLPACK_FLAG_BITMASK_IS_COPIED flag must be set."),
    make("DLPACK-COPY-ON-STREAM", "MUST", "", "producer", API,
         "A copy the producer makes is made on the consumer's stream when it understands it.",
         quote="If a copy happens, and if the consumer-provided stream and dl_device can be "
               "understood by the producer, the copy must be performed over stream."),
    make("DLPACK-EXPORT-BUFFERERROR", "SHOULD", "", "producer", API,
         "Data that cannot be exported as DLPack is refused with BufferError.",
         quote="Implementations should raise BufferError when the data cannot be exported as "
               "DLPack (e.g., incompatible dtype or strides).", dict_visible=True),
    make("DLPACK-FROM-DLPACK-SAME-DEVICE", "MUST", "", "consumer", FROM,
         "from_dlpack without a device places the result on the device of its input.",
         quote="If device is None and x supports DLPack, the output array must be on the same "
               "device as x."),
    # the sentence defines the parameter; of the devices a consumer may be asked for, the text
    # mandates only one giving host-accessible memory (the two rules after this one)
    make("DLPACK-FROM-DEVICE", "MUST", "", "consumer", FROM,
         "from_dlpack(x, device=d) places the result on device d.",
         quote="device on which to place the created array.", derived=True, duty=False),
    make("DLPACK-FROM-DEVICE-CPU", "SHOULD", "", "consumer", FROM,
         "from_dlpack offers a device that gives an array of host-accessible memory.",
         quote="The v2023.12 standard only mandates that a compliant library should offer a way "
               "for from_dlpack to return an array whose underlying memory is accessible to the "
               "Python interpreter, when the corresponding device is provided."),
    make("DLPACK-FROM-DEVICE-BUFFERERROR", "MUST", "", "consumer", FROM,
         "A from_dlpack that cannot give host-accessible memory at all raises BufferError when "
         "asked for it.",
         quote="If the array library does not support such cases at all, the function must "
               "raise BufferError."),
    make("DLPACK-FROM-COPY-FALSE-VALUEERROR", "MUST", "", "consumer", FROM,
         "from_dlpack(x, device=d, copy=False) raises ValueError when placing x on d needs a "
         "copy.",
         quote="If a copy must be made to enable this support but copy is set to False, the "
               "function must raise ValueError."),
    make("DLPACK-FROM-COPY-TRUE", "MUST", "", "consumer", FROM,
         "from_dlpack(x, copy=True) always copies: the result shares no memory with x.",
         quote="If True, the function must always copy."),
    make("DLPACK-FROM-COPY-FALSE", "MUST", "", "consumer", FROM,
         "from_dlpack(x, copy=False) never copies: the result is a view of x's memory, or the "
         "import raises BufferError where a copy is deemed necessary.",
         quote="If False, the function must never copy, and raise BufferError in case a copy is "
               "deemed necessary"),
    make("DLPACK-FROM-COPY-NONE", "MUST", "", "consumer", FROM,
         "from_dlpack(x, copy=None) reuses x's memory where it can and copies otherwise.",
         quote="If None, the function must reuse the existing memory buffer if possible and copy "
               "otherwise."),
    make("DLPACK-FROM-DLPACK-PROPAGATES", "MUST", "", "consumer", FROM,
         "from_dlpack propagates the exceptions __dlpack__ and __dlpack_device__ raise.",
         quote="from_dlpack must propagate such exceptions."),
    # -- flags
    make("DLPACK-FLAGS-DEFAULT", "SHOULD", "", "producer", HEADER,
         "A versioned capsule sets no flag bits beyond those dlpack.h defines (read-only, "
         "copied, sub-byte padded).",
         quote="By default the flags should be set to 0.", dict_visible=True),
    make("DLPACK-READONLY-FLAG", "MUST", "", "producer", HEADER,
         "A versioned capsule of read-only memory has DLPACK_FLAG_BITMASK_READ_ONLY set.",
         quote="bit mask to indicate that the tensor is read only.", derived=True, duty=False),
    make("DLPACK-READONLY-CONSUMER", "SHOULD", "", "consumer", API,
         "A consumer that cannot represent read-only arrays ignores the flag rather than "
         "raising.",
         quote="A consumer that does not support read-only arrays should ignore this flag"),
    make("DLPACK-COPIED-OWNED", "MUST", "", "both", HEADER,
         "A capsule flagged as copied is the consumer's alone until the producer's deleter "
         "runs.",
         quote="If set, the tensor is considered solely owned throughout its lifetime by the "
               "consumer, until the producer-provided deleter is invoked.", derived=True),
    # -- the tensor: device, dtype, byte order, layout
    make("DLPACK-DEVICE-TUPLE", "MUST", "", "producer", API,
         "__dlpack_device__ returns a 2-tuple (device_type, device_id) of integers.",
         quote="a tuple (device_type, device_id) in DLPack format.", derived=True,
         dict_visible=True),
    make("DLPACK-DEVICE-TYPE", "MUST", "", "producer", HEADER,
         "The tensor's device type is one of dlpack.h's DLDeviceType values.",
         quote="The device type used in the device.", derived=True, dict_visible=True),
    make("DLPACK-DEVICE-ID-ZERO", "MUST", "", "producer", HEADER,
         "CPU, pinned (CUDA or ROCm host) and CUDA managed memory has device_id 0.",
         quote="For vanilla CPU memory, pinned memory, or managed memory, this is set to 0.",
         derived=True, dict_visible=True),
    make("DLPACK-PORT-DTYPE", "PORTABILITY", "", "consumer", HEADER,
         "A consumer holds the types it has: bfloat16, the float8, float6 and float4 formats "
         "and 128-bit floats are legal codes that a consumer without such a type refuses. No "
         "requirement of the text: a refusal of one names a portability gap, not a defect.",
         quote="The data type the tensor can hold."),
    make("DLPACK-DTYPE-CODE", "SHOULD", "", "producer", HEADER,
         "The dtype code is one of dlpack.h's DLDataTypeCode values.",
         quote="the value should be one of DLDataTypeCode enum values.", dict_visible=True),
    make("DLPACK-DTYPE-BITS", "MUST", "", "producer", HEADER,
         "A dtype has a positive number of bits and lanes.",
         quote="Number of bits, common choices are 8, 16, 32.", derived=True,
         dict_visible=True),
    make("DLPACK-DTYPE-BOOL", "SHOULD", "", "producer", HEADER,
         "A bool dtype is stored in 8 bits, one lane.",
         quote="bool: type_code = 6, bits = 8, lanes = 1 (as per common array library "
               "convention, the underlying storage size of bool is 8 bits)", derived=True,
         dict_visible=True),
    make("DLPACK-DTYPE-SUBBYTE-BITS", "MUST", "", "both", HEADER,
         "The float6 codes (kDLFloat6_e2m3fn, kDLFloat6_e3m2fn) carry bits 6; a consumer stops "
         "importing on any other value.",
         quote="Setting bits != 6 is currently unspecified, and the producer must ensure it is "
               "set while the consumer must stop importing if the value is unexpected.",
         dict_visible=True),
    make("DLPACK-DTYPE-FP4-BITS", "MUST", "", "both", HEADER,
         "The float4 code (kDLFloat4_e2m1fn) carries bits 4; a consumer stops importing on any "
         "other value.",
         quote="Setting bits != 4 is currently unspecified, and the producer must ensure it is "
               "set while the consumer must stop importing if the value is unexpected.",
         dict_visible=True),
    make("DLPACK-SUBBYTE-PACKED", "MUST", "", "both", HEADER,
         "A sub-byte tensor (float6, float4) without DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED "
         "is packed, element i at bit i * bits of the data in little bit-endian order; with the "
         "flag each element is padded.",
         quote="The default for sub-byte types (ex: fp4/fp6) is assumed packed.", derived=True),
    make("DLPACK-SUBBYTE-PADDED-FLAG", "SHOULD", "", "producer", HEADER,
         "DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED is set only on a tensor of sub-byte type "
         "(float6, float4): on any other it says nothing a consumer can act on.",
         quote="This flag can be set by the producer to signal that a tensor of sub-byte type "
               "is padded.", derived=True, dict_visible=True),
    make("DLPACK-BYTE-ORDER", "MUST", "", "producer", HEADER,
         "The data is in native byte order.",
         quote="The data type is assumed to follow the native endian-ness.", derived=True),
    make("DLPACK-BYTE-ORDER-REFUSED", "SHOULD", "", "producer", HEADER,
         "Exporting an array of non-native byte order raises an explicit error.",
         quote="An explicit error message should be raised when attempting to export an array "
               "with non-native endianness"),
    make("DLPACK-SHAPE", "MUST", "", "producer", HEADER,
         "ndim is not negative, and shape points to ndim extents that are not negative (it may "
         "be NULL when ndim is 0).",
         quote="The shape of the tensor", derived=True, dict_visible=True),
    make("DLPACK-DATA-NONNULL", "MUST", "", "producer", HEADER,
         "A tensor with elements has a data pointer that is not NULL.",
         quote="The data pointer points to the allocated data.", derived=True,
         dict_visible=True),
    make("DLPACK-ZERO-SIZE-NULL", "SHOULD", "", "producer", IMPL,
         "A zero-size tensor's data pointer is NULL.",
         quote="If the array is of size zero, the data pointer in DLTensor should be set to "
               "either NULL or 0.", dict_visible=True),
    make("DLPACK-STRIDES-ELEMENTS", "MUST", "", "producer", HEADER,
         "Strides count elements, not bytes; the extent they span fits in 64 bits.",
         quote="strides of the tensor (in number of elements, not bytes),", derived=True,
         dict_visible=True),
    make("DLPACK-STRIDES-NONNULL", "MUST", "", "both", HEADER,
         "A versioned capsule of DLPack 1.2 or later with ndim other than 0 has strides (not "
         "NULL), ndim of them; a consumer relies on them and refuses such a capsule without.",
         quote="can not be NULL if ndim != 0, must points to an array of ndim elements that "
               "specifies the strides, so consumer can always rely on strides[dim] being valid "
               "for 0 <= dim < ndim.", dict_visible=True),
    make("DLPACK-STRIDES-NULL-LEGACY", "MAY", "", "producer", HEADER,
         "A legacy capsule or a versioned one before DLPack 1.2 may have NULL strides, meaning "
         "a compact row-major tensor; so may any tensor of ndim 0.",
         quote="Before DLPack v1.2, strides can be NULL to indicate contiguous data.",
         derived=True),
    make("DLPACK-BYTE-OFFSET", "SHOULD", "", "producer", HEADER,
         "byte_offset locates the first element from the data pointer; data + byte_offset is "
         "an address.",
         quote="The byte_offset field should be used to point to the beginning of the data.",
         dict_visible=True),
)
# fmt: on
