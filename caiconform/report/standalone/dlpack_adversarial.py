"""dlpack_adversarial: a bad DLPack capsule handed to the consumer's DLPack import.

The capsule is built with ctypes over four float32 0..3 in a driver allocation
(`_dlpack_helpers`' builder, the stand-in of caiconform's `bad_capsule`), broken as the
example's kind says (`_KINDS`): not a capsule, an already consumed one, an absurd ndim, a
negative extent, strides spanning more than the address space, an unknown dtype code or device
type, a versioned capsule of major version 2, a float6 code with 8 bits, a DLPack 1.3 capsule
with NULL strides, or the one legal oddity, a NULL deleter, which must be read as any
capsule. Each `__dlpack__` call gets a fresh one with a deleter that counts its calls. After the
import returned or raised, and the exception is dropped (its traceback may hold the capsule),
garbage is collected and the deleter calls are judged as the family does
(`caiconform.checks.dlpack_adversarial`). Every finding is listed; the verdict is BUG when one
is under the group's rule. A crash runs in a child process.
"""

from __future__ import annotations

from caiconform.report.standalone import dlpack_exchange as dx
from caiconform.report.standalone import exchange as ex
from caiconform.report.standalone._text import Script, array_of

__all__ = ["script", "KINDS"]

#: kind -> (the rule it breaks, make_capsule's arguments after data: shape, dtype, device, opts)
_KINDS = {
    "not-a-capsule": ("DLPACK-CAPSULE-NAME", ""),
    "used-capsule": (
        "DLPACK-CAPSULE-NAME",
        '(4,), (2, 32, 1), (2, 0), name=b"used_dltensor_versioned"',
    ),
    "null-deleter": ("DLPACK-DELETER-NULL", "(4,), (2, 32, 1), (2, 0), deleter=False"),
    "ndim-huge": ("DLPACK-SHAPE", "(4,), (2, 32, 1), (2, 0), ndim=1 << 20"),
    "ndim-negative": ("DLPACK-SHAPE", "(4,), (2, 32, 1), (2, 0), ndim=-1"),
    "shape-negative": ("DLPACK-SHAPE", "(-4,), (2, 32, 1), (2, 0)"),
    "strides-huge": ("DLPACK-STRIDES-ELEMENTS", "(2, 2), (2, 32, 1), (2, 0), strides=(1 << 61, 1)"),
    "dtype-code-unknown": ("DLPACK-DTYPE-CODE", "(4,), (99, 32, 1), (2, 0)"),
    "device-type-unknown": ("DLPACK-DEVICE-TYPE", "(4,), (2, 32, 1), (99, 0)"),
    "version-major-2": (
        "DLPACK-VERSION-MAJOR-MISMATCH",
        "(4,), (2, 32, 1), (2, 0), version=(2, 0)",
    ),
    "float6-bits": ("DLPACK-DTYPE-SUBBYTE-BITS", "(4,), (15, 8, 1), (2, 0)"),
    "strides-null": ("DLPACK-STRIDES-NONNULL", "(4,), (2, 32, 1), (2, 0), version=(1, 3)"),
}
KINDS = tuple(_KINDS)

_PRODUCER = """
values = np.arange(4, dtype=np.float32)  # what every bad capsule lies over
dtype = values.dtype
ptr = upload(values.view(np.uint8))
"""

_NOT_A_CAPSULE = """
class NotACapsule:  # __dlpack__ returns a tuple, no capsule
    tensors = []

    def __dlpack__(self, *args, **kwargs):
        return (ptr, (2, 0))

    def __dlpack_device__(self):
        return (2, 0)


obj = NotACapsule()
"""

#: the findings on the import of a capsule of each kind (`rule`: the kind's rule)
_NULL_DELETER = """
if refused:
    found.append(({rule!r}, f"refused a capsule with a NULL deleter: {{refused}}, expected it read "
                            "(a NULL deleter is allowed: MAY)"))
elif differ(result, values):
    found.append(({rule!r}, f"read it wrong: {{differ(result, values)}}"))
"""
_IMPORTED = """
if not refused:
    found.append(({rule!r}, f"imported a {kind} capsule as {{np.asarray(result).tolist()!r:.60}}, "
                            "expected a clean exception"))
"""
_USED = """
elif any(calls):
    found.append(("DLPACK-DELETER-ONCE", f"the deleter of a consumed ('used_') capsule called "
                                         f"{{sum(calls)}}x, expected no call"))
"""
_REFUSED = """
else:
    if any(n > 1 for n in calls):
        found.append(("DLPACK-DELETER-ONCE", f"deleter calls {{calls}}, expected exactly once"))
    never = [n for n in calls if not n]
    if never:
        found.append(({never_rule!r}, f"the deleter of a refused capsule never called "
                      f"({{len(never)}} of {{len(calls)}}), expected it called once: the "
                      "tensor released"))
"""


def _findings(kind: str, rule: str) -> str:
    """The lines appending to `found` what the import of a `kind` capsule got wrong."""
    if kind == "null-deleter":
        return _NULL_DELETER.format(rule=rule).strip("\n")
    lines = _IMPORTED.format(rule=rule, kind=kind)
    if kind == "used-capsule":
        lines += _USED
    elif kind != "not-a-capsule":
        never = (
            "DLPACK-VERSION-MAJOR-MISMATCH"
            if kind == "version-major-2"
            else "DLPACK-CONSUMER-CALLS-DELETER"
        )
        lines += _REFUSED.format(never_rule=never)
    return lines.replace("\n\n", "\n").strip("\n")


_JUDGE = """
import gc
import traceback

try:
    result = read(obj)
    refused = None
except Exception as exc:
    at = traceback.extract_tb(exc.__traceback__)[-1]
    refused = f"{{type(exc).__name__}}: {{exc}} (raised at {{at.filename}}:{{at.lineno}})"
    print("refused:", refused)
    print("deleter calls while the exception (and its traceback) is alive:",
          [DELETER_CALLS[t] for t in obj.tensors])
gc.collect()
gc.collect()
calls = [DELETER_CALLS[t] for t in obj.tensors]
print("deleter calls once the exception is dropped and garbage collected:", calls)
found = []
{findings}
for r, text in found:
    print(f"finding: {{text}} [{{r}}]")
mine = [text for r, text in found if r == {rule!r}]
if mine:
    verdict(True, f"{kind} capsule -> {consumer}: {{mine[0]}} [{rule}]")
verdict(False, f"{kind} capsule -> {consumer}: no {rule} finding"
               f"{{'; others: ' + str(found) if found else ''}}; refused: {{refused}}")
"""


def script(group: dict, params: dict, producer: str | None, consumer: str | None) -> str | None:
    kind = params.get("kind")
    if kind not in _KINDS or consumer is None:
        return None
    kind_rule, args = _KINDS[kind]
    rule = group.get("rule") or group.get("input_rule") or kind_rule
    shape = [2, 2] if kind == "strides-huge" else [4]
    array = array_of({"typestr": "<f4", "shape": shape, "seed": 0})
    s = Script(f"{consumer} as DLPack consumer: a {kind} capsule ({kind_rule}) imported [{rule}].")
    ex.header(s, group)
    s.add(_PRODUCER)
    if kind == "not-a-capsule":
        s.add(_NOT_A_CAPSULE)
    else:
        s.add(
            f"""
            def make(kwargs):  # a fresh {kind} capsule per call
                return make_capsule(ptr, {args})


            obj = CapsuleProducer(make, {"(99, 0)" if kind == "device-type-unknown" else "(2, 0)"})
            """
        )
    if array is None or not dx.reader(s, consumer, array):
        return None
    if group.get("outcome") in ex.CRASH_OUTCOMES:
        return ex.crash_script(s, group, consumer, f"a {kind} capsule", shown=repr(kind))
    findings = _findings(kind, kind_rule)
    s.add(_JUDGE.format(kind=kind, rule=rule, consumer=consumer, findings=findings))
    return s.render()
