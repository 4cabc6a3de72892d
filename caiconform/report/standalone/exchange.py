"""The parts most reproducers share: the header, the values, the producer's export, the
consumer's read with its warm-up, the verdict, and the child process of a crash.

A script reads top to bottom as the exchange happened: values are made (random bytes from the
example's seed, as the run made them), placed in device memory by the producer (the reference
producer is `upload` + a literal dict; a library producer its own upload or strided view), the
consumer reads once a finished plain array of the same type (`warm`: a first read that compiles
or caches must not decide the example; cuda.compute, for one, checks an array's contiguity only
when it builds, so a strided view it meets after a cached build of the same types is misread),
then the example's object, and the verdict compares what it read with the values.
"""

from __future__ import annotations

import textwrap
from typing import Any

from caiconform.adapters._repro import Array, Snip, c_strides
from caiconform.report.standalone import libraries as libs
from caiconform.report.standalone._text import Script, one_line

__all__ = [
    "CRASH_OUTCOMES",
    "header",
    "add",
    "values",
    "image",
    "reference_export",
    "library_export",
    "reader",
    "judge_read",
    "crash_script",
    "context_of",
    "interface",
]

#: outcomes whose reproducer runs the exchange in a child process
CRASH_OUTCOMES = ("crash", "poisoned", "hang", "timeout")


def header(s: Script, group: dict) -> None:
    """Comments: what the run saw, the rule, the versions it was seen with (the script adds
    what it needs when rendered)."""
    rep = group.get("reproducer") or {}
    cells = ", ".join(group.get("cells") or [rep.get("cell", "?")])
    count = group.get("count", "?")
    s.comment(
        f"What the run saw ({count} example{'' if count == 1 else 's'}, run "
        f"{rep.get('run_id', '?')}, cells {cells}): {group.get('message', '')}"
    )
    given = f", given a dict breaking {group['input_rule']}" if group.get("input_rule") else ""
    s.comment(
        f"Rule: {group.get('rule') or group.get('input_rule')} ({group.get('level', '?')}), "
        f"{group.get('library')} as {group.get('role')}{given}: outcome "
        f"{group.get('outcome')}, severity {group.get('severity')}."
    )
    if group.get("condition"):
        s.comment(f"Condition: {group['condition']}")
    versions = group.get("versions")
    if isinstance(versions, dict) and versions:
        seen = ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))
    else:
        seen = f"{group.get('library')} {group.get('version') or '(version not recorded)'}"
    s.comment(f"Seen with: {seen}.")


def add(s: Script, snip: Snip | None) -> None:
    """Use a snippet's imports and setup in `s` (not its code)."""
    if snip is None:
        return
    s.imp(*snip.imports)
    if snip.setup and snip.setup.strip() not in s.body:
        s.add(snip.setup)


def values(s: Script, array: Array, name: str = "values") -> None:
    """`dtype` and `values`: the example's elements, random bytes from its seed (bools 0/1),
    repeated along broadcast axes."""
    count = 1
    for extent in array.source_shape:
        count *= extent
    mask = " & 1" if array.export_typestr == "|b1" else ""
    s.add(
        f"""
        dtype = np.dtype({array.dtype_src})
        raw = np.random.default_rng({array.seed}).integers(0, 256, {count} * dtype.itemsize, np.uint8){mask}
        {name} = np.broadcast_to(raw.view(dtype).reshape({array.source_shape}), {array.shape}).copy()
        """
    )


def image(s: Script, array: Array) -> None:
    """`image`: the allocation's bytes, the values at the layout's offset and strides."""
    strides = array.strides if array.strides is not None else None
    s.add(
        f"""
        image = np.zeros({array.alloc}, np.uint8)  # the allocation: values at offset {array.offset}, strides {strides}
        if values.size:
            np.ndarray({array.shape}, dtype, buffer=image, offset={array.offset}, strides={strides})[...] = values
        """
    )


def interface(
    array: Array,
    ptr: str,
    *,
    version: int = 3,
    readonly: bool = False,
    stream: str = "None",
    mask: str | None = None,
) -> str:
    """Source of the dict a conforming producer exports for `array` at version `version`:
    exactly that version's keys (mask from 1, stream from 3; explicit strides before 2)."""
    strides = array.strides
    if strides is None and version < 2:
        strides = c_strides(array.shape, array.itemsize)
    data = f"{ptr} if values.size else 0" if version >= 2 else ptr
    items = [
        f'"shape": {array.shape}',
        f'"typestr": {array.export_typestr!r}',
        f'"data": ({data}, {readonly})',
        f'"version": {version}',
        f'"strides": {strides}',
    ]
    if array.descr:
        items.append(f'"descr": {[tuple(f) for f in array.descr]}')
    if version >= 1:
        items.append(f'"mask": {mask or "None"}')
    if version >= 3:
        items.append(f'"stream": {stream}')
    return "{" + ", ".join(items) + "}"


def reference_export(s: Script, array: Array, **kwargs: Any) -> None:
    """`ptr`, `desc`, `obj`: the values uploaded with the driver and exported as a literal
    dict (what caiconform's reference producer exports)."""
    image(s, array)
    s.add(
        f"""
        ptr = upload(image) + {array.offset}
        desc = {interface(array, "ptr", **kwargs)}
        obj = Exported(desc)
        """
    )


def library_export(s: Script, producer: str, array: Array) -> bool:
    """`obj` made by `producer` over `values` (and `image` for a strided layout); False when
    the library cannot express the layout here."""
    snip = libs.produce(producer, array)
    if snip is None:
        return False
    add(s, snip)
    if not array.plain:
        image(s, array)
    s.add(snip.code)
    return True


def reader(s: Script, consumer: str, array: Array | None) -> bool:
    """Define `read(obj)` (the consumer's read) and warm it up on a finished plain array of the
    same element type; False when the consumer has no snippet."""
    snip = libs.consume(consumer, array)
    if snip is None:
        return False
    add(s, snip)
    s.add("def read(obj):\n" + textwrap.indent(snip.code, "    ") + "\n    return result\n")
    if array is not None:
        descr = f', "descr": {[tuple(f) for f in array.descr]}' if array.descr else ""
        s.add(
            f"""
            warm = Exported({{"shape": (4,), "typestr": {array.export_typestr!r}, "version": 3, "strides": None,
                             "data": (upload(np.zeros({4 * array.itemsize}, np.uint8)), False){descr}}})
            try:  # a first read of a finished array of the same type: builds and caches first
                read(warm)
            except Exception as exc:
                print("warm-up read refused:", type(exc).__name__, exc)
            """
        )
    return True


def judge_read(s: Script, group: dict, consumer: str, context: str) -> None:
    """Read `obj` with `read` and print the verdict the group's outcome calls for:
    a misread (`fail`), a refusal of a valid export (`rejected-valid`) or an invalid dict taken
    (`accepted-invalid`, or any outcome with an input rule)."""
    rule = group.get("rule") or group.get("input_rule")
    outcome = group.get("outcome")
    lib = consumer
    s.add('print("exported:", obj.__cuda_array_interface__)')
    if outcome == "accepted-invalid":
        s.add(
            f"""
            try:
                result = read(obj)
            except Exception as exc:
                verdict(False, f"{lib} refused the invalid dict: {{type(exc).__name__}}: {{exc}}")
            verdict(True, f"{lib} took a dict that breaks {rule} ({context}) and read "
                          f"{{np.asarray(result).shape}}; expected a clean refusal [{rule}]")
            """
        )
        return
    refused_bug = outcome == "rejected-valid"
    refused = (
        f'verdict(True, f"{lib} refused a valid export ({context}): {{type(exc).__name__}}: '
        f'{{exc}}; expected the values read back [{rule}]")'
        if refused_bug
        else f'verdict(False, f"{lib} refused the export: {{type(exc).__name__}}: {{exc}}")'
    )
    s.add(
        f"""
        try:
            result = read(obj)
        except Exception as exc:
            {refused}
        wrong = differ(result, values)
        if wrong:
            verdict(True, f"{lib} read {context} wrong: {{wrong}}; expected the values the "
                          f"dict describes [{rule}]")
        verdict(False, f"{lib} read the values the dict describes ({context})")
        """
    )


def crash_script(
    child: Script,
    group: dict,
    consumer: str,
    context: str,
    shown: str = "obj.__cuda_array_interface__",
) -> str:
    """The parent script of a crash group: it runs `child` (which builds `obj`, defines
    `read`) in a fresh interpreter and prints BUG when that dies by a signal, hangs, or leaves
    the CUDA context unusable. `shown`: what the child prints of `obj` before the read."""
    rule = group.get("input_rule") or group.get("rule")
    child.imp("import traceback")
    child.add(f'print("CHILD dict:", {shown}, flush=True)')
    child.add(
        """
        try:
            result = read(obj)
            print("CHILD read", np.asarray(result).shape, flush=True)
        except Exception as exc:
            at = traceback.extract_tb(exc.__traceback__)[-1]
            print("CHILD refused:", type(exc).__name__, " ".join(str(exc).split())[:300],
                  f"(at {at.filename}:{at.lineno})", flush=True)
        print("CHILD context", cu.cuCtxSynchronize()[0].name, flush=True)
        """
    )
    code = child.code()
    quoted = f"r'''{code}'''" if "'''" not in code and not code.endswith("\\") else repr(code)
    parent = Script(child.title)
    parent.comments = child.comments
    parent.imports = ["import signal", "import subprocess"]
    if group.get("input_rule") and group["input_rule"] not in context:
        context = f"{context} (a dict breaking {group['input_rule']})"
    parent.add(f"CHILD = {quoted}")
    parent.add(
        f"""
        try:
            proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                                  timeout=120)
        except subprocess.TimeoutExpired:
            verdict(True, "{consumer} hung for 120 s given {context} [{rule}]")
        print(proc.stdout.strip())
        said = [line for line in proc.stdout.splitlines() if line.startswith("CHILD")]
        if "CHILD dict:" not in proc.stdout:  # the child failed before the exchange: no verdict
            sys.exit(f"the child did not reach the exchange: {{proc.stderr.strip()[-600:]}}")
        if proc.returncode < 0:
            verdict(True, f"{consumer} killed the process with "
                          f"{{signal.Signals(-proc.returncode).name}} given {context}; expected a "
                          f"clean exception or the values read [{rule}]")
        if "CHILD context CUDA_SUCCESS" not in proc.stdout:
            last = said[-1] if said else (proc.stderr.strip().splitlines() or ["no output"])[-1]
            verdict(True, f"{consumer} left the CUDA context unusable given {context} "
                          f"({{last}}); expected a clean exception [{rule}]")
        verdict(False, f"{consumer} did not crash: {{said[-2] if len(said) > 1 else said}}")
        """
    )
    return parent.render(needs=child.needs())


def context_of(array: Array, extra: str = "") -> str:
    strides = "" if array.strides is None else f" strides {array.strides}"
    offset = f" offset {array.offset}" if array.offset else ""
    return one_line(f"{array.typestr} shape {array.shape}{strides}{offset}{extra}")
