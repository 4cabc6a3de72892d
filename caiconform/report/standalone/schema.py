"""schema, and every producer's group about its own dict: the producer makes its array as the
run did, the script prints the dict it exports and says BUG if that dict breaks the rule.

`CHECKS` holds, per rule, an expression over `desc` (the exported dict) that is a description
of the breach, or None when the dict keeps the rule; rules that need the memory as well (the
extent inside its allocation, the values the dict describes) read it with the driver. A rule
with no entry gets no script (see `NOT_COVERED` in the package).
"""

from __future__ import annotations

from caiconform.report.standalone import exchange as ex
from caiconform.report.standalone._text import Script, array_of

__all__ = ["CHECKS", "producer_script", "script"]

_KEYS = {"shape", "typestr", "data", "version", "strides", "descr", "mask", "stream"}
#: rule -> expression over `desc`: a description of the breach, or None
CHECKS: dict[str, str] = {
    "CAI-STREAM-ZERO-FORBIDDEN": '"stream 0" if desc.get("stream") == 0 else None',
    "CAI-STREAM-TYPE": (
        'None if desc.get("stream") is None or type(desc.get("stream")) is int '
        "else f\"stream {desc.get('stream')!r}\""
    ),
    "CAI-SHAPE-REQUIRED": 'None if "shape" in desc else "no shape"',
    "CAI-SHAPE-TUPLE": (
        'None if isinstance(desc.get("shape"), tuple) else f"shape {desc.get(\'shape\')!r}"'
    ),
    "CAI-SHAPE-INT": (
        'None if all(type(n) is int for n in desc["shape"]) else f"shape {desc[\'shape\']!r}"'
    ),
    "CAI-SHAPE-NONNEGATIVE": (
        'None if all(n >= 0 for n in desc["shape"]) else f"shape {desc[\'shape\']!r}"'
    ),
    "CAI-TYPESTR-REQUIRED": 'None if "typestr" in desc else "no typestr"',
    "CAI-TYPESTR-STR": (
        'None if isinstance(desc.get("typestr"), str) else f"typestr {desc.get(\'typestr\')!r}"'
    ),
    "CAI-DATA-REQUIRED": 'None if "data" in desc else "no data"',
    "CAI-DATA-TUPLE": (
        'None if isinstance(desc.get("data"), tuple) and len(desc["data"]) == 2 '
        "else f\"data {desc.get('data')!r}\""
    ),
    "CAI-DATA-POINTER-INT": (
        'None if type(desc["data"][0]) is int else f"data[0] {desc[\'data\'][0]!r}"'
    ),
    "CAI-DATA-READONLY-BOOL": (
        'None if type(desc["data"][1]) is bool else f"data[1] {desc[\'data\'][1]!r}"'
    ),
    "CAI-DATA-ZERO-SIZE-NULL": (
        'f"pointer {desc[\'data\'][0]} for a zero-size array" if 0 in desc["shape"] and '
        'desc["data"][0] != 0 and desc.get("version", 0) >= 2 else None'
    ),
    "CAI-DATA-NONZERO-SIZE-NONNULL": (
        '"pointer 0 for a non-empty array" if 0 not in desc["shape"] and desc["data"][0] == 0 '
        "else None"
    ),
    "CAI-VERSION-REQUIRED": 'None if "version" in desc else "no version"',
    "CAI-VERSION-INT": (
        'None if type(desc.get("version")) is int else f"version {desc.get(\'version\')!r}"'
    ),
    "CAI-VERSION-KNOWN": (
        'None if desc.get("version") in (0, 1, 2, 3) else f"version {desc.get(\'version\')!r}"'
    ),
    "CAI-STRIDES-TYPE": (
        'None if desc.get("strides") is None or isinstance(desc["strides"], tuple) '
        "else f\"strides {desc['strides']!r}\""
    ),
    "CAI-STRIDES-INT": (
        'None if not desc.get("strides") or all(type(s) is int for s in desc["strides"]) '
        "else f\"strides {desc['strides']!r}\""
    ),
    "CAI-STRIDES-NDIM": (
        'None if desc.get("strides") is None or len(desc["strides"]) == len(desc["shape"]) '
        "else f\"strides {desc['strides']!r} for shape {desc['shape']!r}\""
    ),
    "CAI-KEYS-UNKNOWN": (
        f'f"keys {{sorted(set(desc) - {_KEYS!r})}}" if set(desc) - {_KEYS!r} else None'
    ),
    "CAI-V2-STREAM-UNDEFINED": (
        '"a stream entry in a version " + str(desc.get("version")) + " dict" '
        'if desc.get("version", 3) < 3 and "stream" in desc else None'
    ),
    "CAI-V0-NO-MASK": (
        '"a mask entry in a version 0 dict" if desc.get("version") == 0 and "mask" in desc '
        "else None"
    ),
    "CAI-PORT-STRIDES-ITEMSIZE": (
        "f\"strides {desc['strides']} for item size {np.dtype(desc['typestr']).itemsize}\" "
        'if any(s % np.dtype(desc["typestr"]).itemsize for s in desc.get("strides") or ()) '
        "else None"
    ),
    "CAI-PORT-NEGATIVE-STRIDES": (
        'f"strides {desc[\'strides\']}" if any(s < 0 for s in desc.get("strides") or ()) else None'
    ),
    "CAI-PORT-BYTEORDER": (
        'f"typestr {desc[\'typestr\']}" if desc["typestr"].startswith(">") else None'
    ),
    "CAI-PORT-TYPESTR-OPAQUE": (
        'f"typestr {desc[\'typestr\']}" if desc["typestr"][1:2] == "V" else None'
    ),
    "CAI-PORT-STRIDES-OMITTED-V01": (
        '"no strides in a version " + str(desc["version"]) + " dict" '
        'if desc.get("version", 3) < 2 and desc.get("strides") is None else None'
    ),
    "CAI-DATA-EXTENT-IN-ALLOCATION": "extent_outside(desc)",
    "CAI-PRODUCER-DESCRIBES-DATA": "differ(read_back(desc), values)",
}

_EXTENT = '''
def extent_outside(desc):
    """The bytes the dict reaches outside the allocation holding its pointer, or None."""
    shape, itemsize = tuple(desc["shape"]), np.dtype(desc["typestr"]).itemsize
    if 0 in shape:
        return None
    steps = desc.get("strides") or np.empty(shape, desc["typestr"]).strides
    lo = sum((n - 1) * s for n, s in zip(shape, steps) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(shape, steps) if s > 0) + itemsize
    base, size = (int(v) for v in ck(cu.cuMemGetAddressRange(desc["data"][0])))
    first, end = desc["data"][0] + lo, desc["data"][0] + hi
    if first >= base and end <= base + size:
        return None
    return (f"bytes [{first:#x}, {end:#x}) reach outside the allocation "
            f"[{base:#x}, {base + size:#x})")
'''


def _build(s: Script, producer: str, params: dict) -> bool:
    """Make the producer's `obj` as the example did; False when the script cannot."""
    from caiconform.report.standalone import libraries as libs
    from caiconform.report.standalone.pending import pending_producer

    kind, setting = params.get("unexportable"), params.get("export_setting")
    if kind is not None:
        made = libs.unexportable(producer, kind)
        if made is None:
            return False
        s.imp(*made.imports)
        s.add(made.code)
        return True
    if setting is not None:
        line = libs.export_setting(producer, setting)
        if line is None:
            return False
        s.imp("import os", line)
    array = array_of(params)
    if array is None or producer == "reference":
        return False
    ex.values(s, array)
    scenario = params.get("stream_scenario") or "none"
    if scenario != "none":
        return pending_producer(s, producer, scenario, array)
    named = libs.produce_named(producer, array)
    if named is not None:
        s.imp(*named.imports)
        s.add(named.code)
        return True
    return ex.library_export(s, producer, array)


def producer_script(
    group: dict, params: dict, producer: str | None, consumer: str | None
) -> str | None:
    """The producer's export of the example, judged against the group's rule."""
    rule = group.get("rule")
    check = CHECKS.get(rule or "")
    attr = rule == "CAI-ATTR-RAISES-ATTRIBUTEERROR"
    if producer is None or (check is None and not attr):
        return None
    array = array_of(params)
    what = ex.context_of(array) if array is not None else "its array"
    if params.get("unexportable") is not None:
        what = f"a {params['unexportable']} object, which cannot export"
    s = Script(f"{producer} as producer: the dict it exports for {what} [{rule}].")
    ex.header(s, group)
    if not _build(s, producer, params):
        return None
    if attr:
        s.add(
            f"""
            try:
                desc = obj.__cuda_array_interface__
            except AttributeError as exc:
                verdict(False, f"{producer} raised AttributeError: {{exc}}")
            except Exception as exc:
                verdict(True, f"{producer} raised {{type(exc).__name__}}: {{exc}} reading "
                              f"__cuda_array_interface__ of {what}; expected an export, or "
                              f"AttributeError so that hasattr() is False [{rule}]")
            verdict(False, f"{producer} exported {{desc}}")
            """
        )
        return s.render()
    if rule == "CAI-DATA-EXTENT-IN-ALLOCATION":
        s.add(_EXTENT)
    s.add(
        f"""
        desc = obj.__cuda_array_interface__
        print("exported:", desc)
        broken = {check}
        if broken:
            verdict(True, f"{producer} exported a dict that breaks {rule}: {{broken}} ({what})")
        verdict(False, f"{producer}'s dict keeps {rule} ({what})")
        """
    )
    return s.render()


def script(group: dict, params: dict, producer: str | None, consumer: str | None) -> str | None:
    return producer_script(group, params, producer, consumer)
