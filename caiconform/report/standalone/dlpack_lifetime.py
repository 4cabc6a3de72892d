"""dlpack_lifetime: who releases a DLPack tensor, and when.

caiconform's reference producer counts its deleter's calls; the script rebuilds it with ctypes
(`_dlpack_helpers`: a capsule per `__dlpack__` call over a driver allocation, the deleter a
CFUNCTYPE that counts, each capsule kept to read its name). The consumer imports the object
with its public DLPack call and keeps what it made (torch, CuPy and JAX: the library's own
array; the others: the host values its import read); the script then reads the capsules'
names (each must be "used_..." [DLPACK-CONSUMER-RENAME]), drops the producer and collects
garbage (no deleter call while an import over the memory lives), drops the import and collects
again (the deleter called exactly once per tensor [DLPACK-CONSUMER-CALLS-DELETER,
DLPACK-DELETER-ONCE]). Every finding is listed; the verdict is BUG when one is under the
group's rule. A plain array refused by the consumer is the exchange's script
(`dlpack_roundtrip.consumer_script`).
"""

from __future__ import annotations

import textwrap

from caiconform.report.standalone import dlpack_exchange as dx
from caiconform.report.standalone import dlpack_roundtrip
from caiconform.report.standalone import exchange as ex
from caiconform.report.standalone import libraries as libs
from caiconform.report.standalone._text import Script, array_of

__all__ = ["script", "TRACKED_RULES"]

#: the rules judged on the reference producer's counted deleter
TRACKED_RULES = (
    "DLPACK-CONSUMER-RENAME",
    "DLPACK-CONSUMER-CALLS-DELETER",
    "DLPACK-DELETER-ONCE",
)

_JUDGE = """
import gc

base, size = ptr - {offset}, image.nbytes
try:
{hold}
except Exception as exc:
    verdict(False, f"{consumer} refused the capsule: {{type(exc).__name__}}: {{exc}}; not "
                   f"the defect of this group [{rule}]")
found = []
names = [capsule_name(c) for c in obj.capsules]
for i, (name, (args, kwargs, caller)) in enumerate(zip(names, obj.calls)):
    print(f"capsule {{i + 1}} of {{len(names)}}: asked {{kwargs}} from {{caller}}, now named {{name!r}}")
    if not name.startswith(b"used_"):
        found.append(("DLPACK-CONSUMER-RENAME", f"capsule {{i + 1}} of {{len(names)}} (asked from "
                      f"{{caller}}) still named {{name.decode()!r}} after the import, expected "
                      f"'used_...': the consumer takes ownership of the tensor"))
if not names:
    found.append(("DLPACK-CONSUMER-RENAME", "no capsule asked for"))
obj.capsules.clear()  # an unconsumed capsule is released by its destructor now
tensors = list(obj.tensors)
aliased = isinstance(at, int) and base <= at < base + size
del obj
gc.collect()
gc.collect()
held = [DELETER_CALLS[t] for t in tensors]
print("deleter calls with the producer dropped and the import alive:", held,
      "(the import is a view of the allocation)" if aliased else "(the import is no view of it)")
if aliased and sum(held):
    found.append(("DLPACK-CONSUMER-CALLS-DELETER", "the deleter called while the consumer's "
                  "array over the memory is alive"))
del view
gc.collect()
gc.collect()
after = [DELETER_CALLS[t] for t in tensors]
print("deleter calls with the import dropped too:", after)
if not sum(after):
    found.append(("DLPACK-CONSUMER-CALLS-DELETER", "the deleter never called after the "
                  "consumer's import was dropped and collected, expected it called once"))
if any(n > 1 for n in after):
    found.append(("DLPACK-DELETER-ONCE", f"deleter calls {{after}}, expected exactly once each"))
for r, text in found:
    print(f"finding: {{text}} [{{r}}]")
mine = [text for r, text in found if r == {rule!r}]
if mine:
    verdict(True, f"{consumer} ({context}): {{mine[0]}} [{rule}]")
verdict(False, f"{consumer} ({context}): no {rule} finding{{'; others: ' + str(found) if found else ''}}")
"""


def script(group: dict, params: dict, producer: str | None, consumer: str | None) -> str | None:
    shape = params.get("shape")
    array = array_of({**params, "layout": {"shape": shape or [], "strides": None}})
    if array is None or consumer is None:
        return None
    rule = group.get("rule")
    if rule not in TRACKED_RULES:  # a plain array refused or misread: the exchange itself
        if group.get("outcome") not in ("rejected-valid", "fail", *ex.CRASH_OUTCOMES):
            return None
        return dlpack_roundtrip.consumer_script(group, array, producer, consumer)
    if producer not in (None, "reference"):  # only the reference producer's deleter is counted
        return None
    context = ex.context_of(array, " from the reference producer")
    s = Script(
        f"{consumer} as DLPack consumer: the capsule's name and its deleter's calls around an "
        f"import of {context} [{rule}]."
    )
    ex.header(s, group)
    if not dx.producer(s, None, array, keep=True):
        return None
    held = libs.hold_dlpack(consumer)
    if held is not None:
        ex.add(s, held)
        code = held.code
    elif dx.reader(s, consumer, array):
        code = "view = read(obj)  # host values: the import ends inside the call\nat = None"
    else:
        return None
    s.add(
        _JUDGE.format(
            offset=array.offset,
            hold=textwrap.indent(code, "    "),
            consumer=consumer,
            rule=rule,
            context=context,
        )
    )
    return s.render()
