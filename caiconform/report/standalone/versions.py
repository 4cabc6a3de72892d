"""versions: a dict of interface version 0-3 (exactly that version's keys), or a v3 dict with
an unknown version number or an extra key, read by the consumer.

Versions 0-2 are valid: a consumer refusing them refuses valid input. An unknown version is
invalid (a consumer taking it accepts invalid input); an unknown key is legal and must be
ignored.
"""

from __future__ import annotations

from caiconform.report.standalone import exchange as ex
from caiconform.report.standalone._text import Script, array_of

__all__ = ["script"]


def script(group: dict, params: dict, producer: str | None, consumer: str | None) -> str | None:
    array = array_of(params)
    if array is None or consumer is None:
        return None
    version = int(params.get("version", 3))
    unknown, extra = params.get("unknown_version"), params.get("extra_key")
    label = f"version {unknown if unknown is not None else version}"
    label += f" + key {extra!r}" if extra else ""
    context = ex.context_of(array, f", {label}").replace("'", "")
    s = Script(
        f"versions: {consumer} given a {label} dict ({array.typestr} {array.shape}) "
        f"[{group.get('rule') or group.get('input_rule')}]."
    )
    ex.header(s, group)
    ex.values(s, array)
    ex.reference_export(s, array, version=version)
    if unknown is not None:
        s.add(f'desc["version"] = {unknown!r}  # a version the text does not define')
    if extra:
        s.add(f'desc[{extra!r}] = "caiconform"  # a key the text does not define')
    if not ex.reader(s, consumer, array):
        return None
    if group.get("outcome") in ex.CRASH_OUTCOMES:
        return ex.crash_script(s, group, consumer, context)
    ex.judge_read(s, group, consumer, context)
    return s.render()
