"""readonly: a dict exporting `data: (ptr, True)`, imported by the consumer, then a write of
the complement of every byte through the consumer's own object; the memory is read back with
the driver.

A refusal (on import or on the write) or a read-only view honours the flag; a write that reaches
the memory is the finding. A refusal of the import is the refusal of a valid export where the
run saw it as that (`rejected-valid`).
"""

from __future__ import annotations

import textwrap

from caiconform.report.standalone import exchange as ex
from caiconform.report.standalone import libraries as libs
from caiconform.report.standalone._text import Script, array_of

__all__ = ["script"]


def script(group: dict, params: dict, producer: str | None, consumer: str | None) -> str | None:
    array = array_of(params)
    if array is None or consumer is None or array.size == 0:
        return None
    held, written = libs.hold(consumer), libs.write(consumer, len(array.shape))
    if held is None:
        return None
    rule = group.get("rule") or "CAI-DATA-READONLY-HONOURED"
    context = ex.context_of(array, ", exported read-only")
    s = Script(f"readonly: {consumer} given a read-only export, then written through [{rule}].")
    ex.header(s, group)
    ex.values(s, array)
    ex.reference_export(s, array, readonly=True)
    ex.add(s, held)
    ex.add(s, written)
    refused_import = (
        f'verdict(True, f"{consumer} refused a valid read-only export ({context}): '
        f'{{type(exc).__name__}}: {{exc}}; expected a read-only view, or the write refused [{rule}]")'
        if group.get("outcome") == "rejected-valid"
        else f'verdict(False, f"{consumer} refused the read-only export: {{type(exc).__name__}}: {{exc}}")'
    )
    write_code = written.code if written else 'raise PermissionError("no write path")'
    prepare = textwrap.indent(written.prepare + "\n", "    ") if written and written.prepare else ""
    new = (
        "new = np.frombuffer((~np.ascontiguousarray(values).view(np.uint8)).tobytes(), dtype)"
        ".reshape(values.shape)  # every byte complemented"
    )
    s.add(
        'print("exported:", desc)\n'
        f"try:\n{textwrap.indent(held.code, '    ')}\n    {new}\n{prepare}"
        f"except Exception as exc:\n    {refused_import}\n"
        f"try:\n{textwrap.indent(write_code, '    ')}\n"
        "except Exception as exc:\n"
        f'    verdict(False, f"{consumer} refused the write: {{type(exc).__name__}}: {{exc}}")'
    )
    s.add(
        f"""
        ck(cu.cuCtxSynchronize())
        wrong = differ(read_back(desc), values)
        if wrong:
            verdict(True, f"{consumer} wrote through its view of memory exported read-only "
                          f"({context}): {{wrong}}; expected the write refused or the data "
                          f"exposed read-only [{rule}]")
        verdict(False, f"the read-only memory is intact ({context})")
        """
    )
    return s.render()
