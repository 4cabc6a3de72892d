"""dlpack_capi: a producer's `__dlpack_c_exchange_api__` table called as a C consumer would.

Only the examples of scenario "none" are written (the producer's work finished before the
calls); the pending scenarios, which judge the work stream against the library's own stream
state, are not (`NOT_COVERED`). The producer's own array, in the example's layout (of a type
numpy has no code for, bfloat16 or float8: the library's own array of it,
`produce_named_dlpack`), has its type's table read with ctypes (`exchange_api`) and the family's
checks made in its order (`caiconform.checks.dlpack_capi`): the header's major version and
`prev_api` chain, the required entries, `managed_tensor_from_py_object_no_sync` (0 and a tensor
whose elements are the array's, or -1 with an exception), then, for the groups of their rules
only (a script stays as short as its group needs), `managed_tensor_to_py_object_no_sync` (an
object of the producer's type with those elements) and the allocator (a tensor of the prototype,
or NULL after one SetError). The first broken one prints `BUG:` when it is the group's rule,
else `OK:` (not this group's defect).
"""

from __future__ import annotations

from caiconform.report.standalone import exchange as ex
from caiconform.report.standalone import libraries as libs
from caiconform.report.standalone._text import OPAQUE, Script, array_of

__all__ = ["script"]

_BODY = """
RULE = {rule!r}


def broke(rule, said):  # the first check that fails decides: this group's rule or another
    verdict(rule == RULE, f"{{said}} [{{rule}}]" + ("" if rule == RULE else " (not this group's)"))


api = exchange_api(obj)
print("table:", api)
if api["version"][0] != 1:
    broke("DLPACK-CAPI-VERSION", f"header version {{api['version']}}, expected major 1")
newer = api["version"]
for link, version in api["prev"]:
    if tuple(version) >= tuple(newer):
        broke("DLPACK-CAPI-PREV-CHAIN", f"prev_api {{link:#x}} of version {{version}} after {{newer}}")
    newer = version
if api["prev_cut"]:
    broke("DLPACK-CAPI-PREV-CHAIN", "a prev_api chain that does not end in NULL")
null = [n for n in ("managed_tensor_allocator", "managed_tensor_from_py_object_no_sync",
                    "managed_tensor_to_py_object_no_sync", "current_work_stream")
        if not api["entries"][n]]
if null:
    broke("DLPACK-CAPI-ENTRY-NON-NULL", f"NULL {{', '.join(null)}}")
out = ctypes.c_void_p()
try:
    rc = FROM_OBJECT(api["entries"]["managed_tensor_from_py_object_no_sync"])(id(obj), ctypes.byref(out))
except Exception as exc:  # -1 with the exception set: a refusal
    broke("DLPACK-CAPI-SAME-TENSOR", f"{producer} refused: {{type(exc).__name__}}: {{exc}} ({context})")
if rc != 0 or not out.value:
    broke("DLPACK-CAPI-RETURN", f"returned {{rc}} and tensor {{out.value}} with no exception set")
fields = read_managed(out.value)
print("tensor:", fields)
wrong = differ(capsule_values(fields, dtype), values)
if wrong:
    broke("DLPACK-CAPI-SAME-TENSOR", f"the table's tensor holds other values ({context}): {{wrong}}")
"""

#: managed_tensor_to_py_object_no_sync, written for the groups of its rule and the allocator's
_TO_OBJECT = """
back = ctypes.c_void_p()
try:
    rc = TO_OBJECT(api["entries"]["managed_tensor_to_py_object_no_sync"])(out.value, ctypes.byref(back))
except Exception as exc:
    broke("DLPACK-CAPI-TO-PY-OBJECT", f"refused the tensor back: {{type(exc).__name__}}: {{exc}}")
if rc != 0 or not back.value:
    broke("DLPACK-CAPI-TO-PY-OBJECT", f"returned {{rc}} and object {{back.value}}")
made = ctypes.cast(back.value, ctypes.py_object).value
ctypes.pythonapi.Py_DecRef(ctypes.py_object(made))  # the reference the call handed over
if type(made) is not type(obj):
    broke("DLPACK-CAPI-TO-PY-OBJECT", f"a {{type(made)}}, expected the producer's {{type(obj)}}")
wrong = differ(capsule_values(read_capsule(made.__dlpack__(max_version=(1, 3))), dtype), values)
if wrong:
    broke("DLPACK-CAPI-TO-PY-OBJECT", f"its object holds other values: {{wrong}}")
"""

#: the tensor released by its deleter, where no managed_tensor_to_py_object_no_sync took it
_RELEASE = """
managed = DLManagedTensorVersioned.from_address(out.value)
if managed.deleter:
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(managed.deleter)(out.value)
"""

#: the allocator, written for its own groups
_ALLOCATOR = """
errors = []
set_error = SET_ERROR(lambda ctx, kind, message: errors.append((kind, message)))
extents = (ctypes.c_int64 * 1)(4)
prototype = DLTensor(data=None, device_type=obj.__dlpack_device__()[0],
                     device_id=obj.__dlpack_device__()[1], ndim=1, code=2, bits=32, lanes=1,
                     shape=ctypes.cast(extents, ctypes.POINTER(ctypes.c_int64)))
made = ctypes.c_void_p()
try:
    rc = ALLOCATOR(api["entries"]["managed_tensor_allocator"])(ctypes.addressof(prototype),
                                                            ctypes.byref(made), None, set_error)
except Exception as exc:  # an exception set besides SetError: the return code is not seen
    rc = -1
    print("allocator left", type(exc).__name__, exc)
if made.value and errors or not made.value and len(errors) != 1:
    broke("DLPACK-CAPI-ALLOCATOR-SETERROR", f"tensor {{made.value}} with SetError calls {{errors}}")
print("allocator:", made.value and read_managed(made.value), errors)
"""

_OK = """
verdict(False, f"{producer}'s exchange table keeps the header's text ({context})")
"""


def script(group: dict, params: dict, producer: str | None, consumer: str | None) -> str | None:
    array = array_of(params)
    if array is None or params.get("scenario") != "none" or producer in (None, "reference"):
        return None
    rule = group.get("rule") or "DLPACK-CAPI-SAME-TENSOR"
    context = ex.context_of(array, f" from {producer}")
    s = Script(
        f"{producer} as the producer of DLPack's C exchange API: the table of its array's type "
        f"called with ctypes ({context}) [{rule}]."
    )
    ex.header(s, group)
    ex.values(s, array)
    if array.typestr in OPAQUE:  # a type numpy has no code for: the library's own of it
        snip = libs.produce_named_dlpack(producer, array) if array.plain and array.size else None
        if snip is None:
            return None
        ex.add(s, snip)
        s.add(snip.code)
    elif not ex.library_export(s, producer, array):
        return None
    parts = [_BODY]
    if rule in ("DLPACK-CAPI-TO-PY-OBJECT", "DLPACK-CAPI-ALLOCATOR-SETERROR"):
        parts.append(_TO_OBJECT)
    else:
        parts.append(_RELEASE)
    if rule == "DLPACK-CAPI-ALLOCATOR-SETERROR":
        parts.append(_ALLOCATOR)
    parts.append(_OK)
    s.add("".join(parts).format(rule=rule, producer=producer, context=context))
    return s.render()
