"""dlpack_copy: a producer asked `__dlpack__` with `copy` and `dl_device`, its capsule's memory,
device and flags judged.

The producer's plain array is asked once with the example's case (`_KWARGS`: copy True,
False or None; dl_device None, its own, the host, the host without a copy, a device type
dlpack.h does not define; always max_version (1, 1), so the capsule can carry flags). The
script judges what came back as the family does (`caiconform.checks.dlpack_copy.judge`): a
refusal (BufferError where the text asks for it), the capsule's device, whether its memory is
the array's own (the array's CAI pointer), the values it describes, and its IS_COPIED and
READ_ONLY flags. It lists every finding and prints BUG when one is under the group's rule.
The cases that need the producer's work pending or a read-only export are not written
(`NOT_COVERED`).
"""

from __future__ import annotations

from caiconform.report.standalone import exchange as ex
from caiconform.report.standalone._text import Script, array_of

__all__ = ["script", "CASES"]

#: case -> the keywords' source (`own`: the array's own __dlpack_device__)
_KWARGS = {
    "copy-none": '{"max_version": (1, 1), "copy": None}',
    "copy-true": '{"max_version": (1, 1), "copy": True}',
    "copy-false": '{"max_version": (1, 1), "copy": False}',
    "device-none": '{"max_version": (1, 1), "dl_device": None}',
    "device-own": '{"max_version": (1, 1), "dl_device": own}',
    "device-cpu": '{"max_version": (1, 1), "dl_device": (1, 0)}',
    "device-cpu-no-copy": '{"max_version": (1, 1), "dl_device": (1, 0), "copy": False}',
    "device-unknown": '{"max_version": (1, 1), "dl_device": (4242, 0)}',
}
CASES = tuple(_KWARGS)
#: the rule a case is about (`caiconform.checks.dlpack_copy._CASE_RULE`)
_CASE_RULE = {
    "copy-none": "DLPACK-COPY-NONE",
    "copy-true": "DLPACK-COPY-TRUE",
    "copy-false": "DLPACK-COPY-FALSE",
    "device-none": "DLPACK-DL-DEVICE-DEFAULT",
    "device-own": "DLPACK-DL-DEVICE-DEFAULT",
    "device-cpu": "DLPACK-DL-DEVICE-CPU",
    "device-cpu-no-copy": "DLPACK-COPY-FALSE-CPU-BUFFERERROR",
    "device-unknown": "DLPACK-DL-DEVICE-BUFFERERROR",
}

_JUDGE = """
def refusal(case, exc):  # (rule, what is wrong) of a call that raised; None: a right answer
    said = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, TypeError) and any(w in str(exc) for w in ("keyword", "argument", "copy",
                                                                  "dl_device", "max_version")):
        print("the producer predates copy/dl_device/max_version (array API 2023.12):", said)
        return None
    buffer_error = isinstance(exc, BufferError)
    if case in ("device-unknown", "device-cpu-no-copy"):
        return None if buffer_error else (RULE[case], f"{said}, expected BufferError")
    if case == "device-cpu":
        return None if buffer_error else ("DLPACK-DL-DEVICE-BUFFERERROR",
                                          f"{said}, expected a host capsule or BufferError")
    return None if buffer_error else ("DLPACK-EXPORT-BUFFERERROR",
                                      f"{said}, expected a capsule or BufferError")


def judge(case, fields, own_device, own_pointer):  # the findings on a capsule, in order
    found = []
    pointer = fields["data"] + fields["byte_offset"]
    same = None if own_pointer is None or values.size == 0 else pointer == own_pointer
    copied = same is False
    host = case in ("device-cpu", "device-cpu-no-copy")
    wanted = (1, 0) if host else own_device
    if case == "device-unknown":
        return [(RULE[case], f"a capsule on device {fields['device']} for dl_device (4242, 0), "
                             "expected BufferError")]
    if fields["device"] != wanted:
        return [("DLPACK-DL-DEVICE-BUFFERERROR" if host and own_device[0] != 1 else
                 "DLPACK-DL-DEVICE-DEFAULT", f"a capsule on device {fields['device']}, "
                 f"expected device {wanted} or BufferError")]
    if case == "copy-true" and same is True:
        found.append((RULE[case], f"the array's own memory {pointer:#x}, expected a copy"))
    if case in ("copy-false", "device-cpu-no-copy") and copied:
        found.append((RULE[case], f"memory {pointer:#x}, not the array's {own_pointer:#x}"))
    if case in ("copy-none", "device-none", "device-own") and copied:
        found.append((RULE[case], f"a copy at {pointer:#x}, not the array's memory "
                                  f"{own_pointer:#x}, which can be reused"))
    wrong = differ(capsule_values(fields, dtype), values)
    if wrong:
        found.append(("DLPACK-PRODUCER-DESCRIBES-DATA", f"other values: {wrong}"))
    if fields["flags"] is None:
        print("an unversioned capsule for max_version (1, 1): no flags to judge")
        return found
    is_copied, readonly = bool(fields["flags"] & IS_COPIED), bool(fields["flags"] & READ_ONLY)
    copy = copied or (case == "copy-true" and same is None)
    if copy and not is_copied:
        found.append(("DLPACK-COPY-FLAG", "IS_COPIED unset on a copy, expected IS_COPIED set"))
    if is_copied and same is True:
        found.append(("DLPACK-COPIED-OWNED", "IS_COPIED set on the array's own memory, which "
                                             "the consumer would take as its own"))
    if readonly and not copy:
        print("READ_ONLY on a writable array's own memory [DLPACK-FLAGS-DEFAULT, SHOULD]")
    return found
"""


def script(group: dict, params: dict, producer: str | None, consumer: str | None) -> str | None:
    array = array_of(params)
    case = params.get("case")
    if array is None or case not in _KWARGS or producer in (None, "reference"):
        return None
    rule = group.get("rule") or _CASE_RULE[case]
    context = ex.context_of(array, f" from {producer}, case {case}")
    s = Script(f"{producer} as DLPack producer: __dlpack__ asked {case} ({context}) [{rule}].")
    ex.header(s, group)
    ex.values(s, array)
    if not array.plain or not ex.library_export(s, producer, array):
        return None
    s.add(f"RULE = {_CASE_RULE!r}")
    s.add(_JUDGE)
    s.add(
        f"""
        own = obj.__dlpack_device__()
        own = (int(own[0]), int(own[1]))
        try:
            own_pointer = obj.__cuda_array_interface__["data"][0] or None
        except Exception:  # no CAI: whether the memory is the array's cannot be told
            own_pointer = None
        kwargs = {_KWARGS[case]}
        print("array on device", own, "at", own_pointer and hex(own_pointer), "asked", kwargs)
        try:
            capsule = obj.__dlpack__(**kwargs)
        except Exception as exc:
            wrong = refusal({case!r}, exc)
            if wrong is None:
                verdict(False, f"{producer} refused: {{type(exc).__name__}}: {{exc}}, a right answer")
            verdict(wrong[0] == {rule!r}, f"{producer} asked {case}: got {{wrong[1]}} [{{wrong[0]}}]")
        fields = read_capsule(capsule)
        print("capsule:", fields)
        found = judge({case!r}, fields, own, own_pointer)
        for r, text in found:
            print(f"finding: {{text}} [{{r}}]")
        mine = [text for r, text in found if r == {rule!r}]
        if mine:
            verdict(True, f"{producer} asked {case} ({context}): {{mine[0]}} [{rule}]")
        verdict(False, f"{producer} asked {case} ({context}): no {rule} finding"
                       f"{{'; others: ' + str(found) if found else ''}}")
        """
    )
    return s.render()
