"""The rules of DLPack's C exchange API: the `__dlpack_c_exchange_api__` table of dlpack.h 1.3.

One entry per statement of the table's comments (docs/spec/dlpack/dlpack_h_exchange_api.md) that
a producer's table can be held to: where the table lives and how long, its header (version, the
`prev_api` chain), which entries may be NULL, what each function returns, that the tensors it
exports describe the object's own elements without waiting for its pending work, and that the
work stream it names is the library's current one. Each quotes its sentence; most are derived
(the header describes functions rather than ordering them), and `caiconform.spec.rules` says
how a derived rule's level is read. The family judging them is `dlpack_capi`; the protocol is
`caiconform.spec.protocols.DLPACK_C`, whose rule prefix they carry.
"""

from __future__ import annotations

from caiconform.spec.rules import make

CAPI = "dlpack-capi#the-exchange-api"

# One rule per entry, laid out as a table.
# fmt: off
RULES = (
    make("DLPACK-CAPI-ON-TYPE", "MUST", "", "producer", CAPI,
         "`__dlpack_c_exchange_api__` is an attribute of the object's type (not of the object "
         "alone) holding a PyCapsule named \"dlpack_exchange_api\".",
         quote="This attribute must be set on the type as a Python PyCapsule with name "
               '"dlpack_exchange_api".'),
    make("DLPACK-CAPI-ALIVE", "MUST", "", "producer", CAPI,
         "The table stays alive for the life of the process: every lookup on the type gives "
         "the same table, after the objects it was read from are gone.",
         quote="The DLPackExchangeAPI* must stay alive throughout the lifetime of the process."),
    make("DLPACK-CAPI-VERSION", "MUST", "", "producer", CAPI,
         "The table's header names its DLPack version, of major 1 (the major a consumer "
         "checks before using the table).",
         quote="The provided DLPack version the consumer must check major version compatibility "
               "before using this struct.", derived=True),
    make("DLPACK-CAPI-PREV-CHAIN", "MUST", "", "producer", CAPI,
         "prev_api is NULL or the header of an older table, each further one older still, "
         "the chain ending in NULL.",
         quote="Optional pointer to an older DLPackExchangeAPI in the chain.", derived=True),
    make("DLPACK-CAPI-ENTRY-NON-NULL", "MUST", "", "producer", CAPI,
         "managed_tensor_allocator, managed_tensor_from_py_object_no_sync, "
         "managed_tensor_to_py_object_no_sync and current_work_stream are not NULL.",
         quote="This function must be not NULL."),
    make("DLPACK-CAPI-DLTENSOR-OPTIONAL", "MAY", "", "producer", CAPI,
         "dltensor_from_py_object_no_sync may be NULL: a producer need not offer the "
         "non-owning export.",
         quote="This function can be NULL when the producer does not support this function.",
         derived=True),
    make("DLPACK-CAPI-RETURN", "MUST", "", "producer", CAPI,
         "A function of the table returns 0 with its output set, or -1 with a Python "
         "exception set.",
         quote="0 on success, -1 on failure with a Python exception set.", derived=True),
    make("DLPACK-CAPI-SAME-TENSOR", "MUST", "", "producer", CAPI,
         "The tensor managed_tensor_from_py_object_no_sync (and dltensor_from_py_object_no_sync) "
         "exports describes the object's own elements, as its `__dlpack__` capsule does: read "
         "as it says, they are the values the object holds.",
         quote="Exports a PyObject* Tensor/NDArray to a DLManagedTensorVersioned.",
         derived=True),
    make("DLPACK-CAPI-NO-SYNC", "MUST", "", "producer", CAPI,
         "managed_tensor_from_py_object_no_sync returns without waiting for the work pending "
         "on the producer's stream.",
         quote="This function does not perform any stream synchronization.", derived=True),
    make("DLPACK-CAPI-WORK-STREAM", "MUST", "", "producer", CAPI,
         "current_work_stream gives the producer library's current stream of the device: the "
         "stream its own work on that device is queued on.",
         quote="Obtain the current work stream of a device from the producer framework.",
         derived=True),
    make("DLPACK-CAPI-TO-PY-OBJECT", "MUST", "", "producer", CAPI,
         "managed_tensor_to_py_object_no_sync turns an owning tensor into an object of the "
         "producer's own type holding the elements the tensor describes.",
         quote="Convert an owning DLManagedTensorVersioned* to the Python tensor of the producer "
               "(implementer) library with the correct type.", derived=True),
    make("DLPACK-CAPI-ALLOCATOR-SETERROR", "MUST", "", "producer", CAPI,
         "The allocator gives a tensor of the prototype's dtype, shape and device, or NULL "
         "after calling SetError, and calls SetError on no other occasion.",
         quote="SetError is called exactly when NULL is returned (the implementer must ensure "
               "this)."),
)
# fmt: on
