"""mask: a dict of version 1-3 carrying a `mask` (an object exporting bools, element 0
invalid), read by the consumer.

The v3 text: mask elements "should be interpreted only as true or not true" for whether the
element is valid. A consumer honours the mask (returns it with the values) or refuses the
export; one that returns the values alone hands invalid elements on as data. Numba documents
NotImplementedError for a mask. Without a mask the example is a plain read (`roundtrip`'s
verdict).
"""

from __future__ import annotations

from caiconform.report.standalone import exchange as ex
from caiconform.report.standalone._text import Script, array_of

__all__ = ["script"]


def script(group: dict, params: dict, producer: str | None, consumer: str | None) -> str | None:
    array = array_of(params)
    if array is None or consumer is None or array.size == 0:
        return None
    kind, version = params.get("mask", "none"), int(params.get("version", 3))
    rule = group.get("rule") or group.get("input_rule")
    context = ex.context_of(array, f", v{version} mask {kind}")
    s = Script(f"mask: {consumer} given a v{version} dict with mask {kind} [{rule}].")
    ex.header(s, group)
    ex.values(s, array)
    mask = None
    if kind != "none":
        mask = "Exported(mask_desc)"
        valid = (
            "np.ones(values.shape, np.bool_)"
            if kind == "all-valid"
            else f"np.random.default_rng({array.seed + 1}).integers(0, 2, values.shape).astype(np.bool_)"
        )
        s.add(
            f"""
            valid = {valid}
            valid.reshape(-1)[0] = {kind == "all-valid"}  # element 0 invalid in a random mask
            mask_desc = {{"shape": {array.shape}, "typestr": "|b1", "version": {version},
                         "data": (upload(valid.view(np.uint8).reshape(-1)), False),
                         "strides": {None if version >= 2 else "valid.strides"}{', "mask": None' if version >= 1 else ""}{', "stream": None' if version >= 3 else ""}}}
            """
        )
    ex.reference_export(s, array, version=version, mask=mask)
    if not ex.reader(s, consumer, array):
        return None
    if group.get("outcome") in ex.CRASH_OUTCOMES:
        return ex.crash_script(s, group, consumer, context)
    if kind == "none":
        ex.judge_read(s, group, consumer, context)
        return s.render()
    if rule == "CAI-MASK-NUMBA-NOTIMPLEMENTED":
        refused = (
            'verdict(not isinstance(exc, NotImplementedError), f"{consumer} raised '
            "{type(exc).__name__}: {exc} for a masked export; expected NotImplementedError, as "
            f'Numba documents [{rule}]")'.replace("{consumer}", consumer)
        )
    else:
        refused = (
            f'verdict(False, f"{consumer} refused the masked export: {{type(exc).__name__}}: '
            '{exc}")'
        )
    s.add(
        f"""
        print("exported:", desc)
        try:
            result = read(obj)
        except Exception as exc:
            {refused}
        got_mask = ~np.ma.getmaskarray(result) if isinstance(result, np.ma.MaskedArray) else None
        invalid = int((~valid).sum())
        if got_mask is None and invalid:
            verdict(True, f"{consumer} dropped the mask: {{invalid}} invalid element(s) of "
                          f"{context} returned as valid data; expected the mask honoured, or "
                          f"the export refused [{rule}]")
        if got_mask is not None and not np.array_equal(got_mask, valid):
            verdict(True, f"{consumer} returned a different mask; expected the exported one [{rule}]")
        verdict(False, f"{consumer} honoured the mask ({context})")
        """
    )
    return s.render()
