"""Reproducer scaffolding for the check families: the lines that build a producer's export
(`producer_source`), read it with a consumer (`consumer_source`), print the comparison
(`COMPARE_SOURCE`), and a standalone script of such parts (`repro_script`).
"""

from __future__ import annotations

import textwrap

from caiconform.checks import _exchange
from caiconform.spec.dtypes import numpy_dtype
from caiconform.spec.layout import Layout


def layout_source(layout: Layout) -> str:
    return f"Layout.from_dict({layout.to_dict()!r})"


def producer_source(name: str, layout: Layout, typestr: str, scenario: str = "none") -> str:
    """Lines building `obj` from `values` with producer `name`.

    The adapter's own snippet (library calls only) when the example needs nothing it cannot
    say (a plain C-contiguous array, no pending work); otherwise the caiconform adapter call
    that builds exactly the layout and stream scenario of the example.
    """
    from caiconform.adapters._staging import is_plain_c

    if name == "reference":
        return (
            "from caiconform.reference.producer import ReferenceArray\n"
            "from caiconform.spec.layout import Layout\n"
            f"obj = ReferenceArray(values, {layout_source(layout)}, {typestr!r}, "
            f"stream_scenario={scenario!r})\n"
        )
    snippet = _exchange.adapter(name).repro_produce()
    if snippet and scenario == "none" and is_plain_c(layout, numpy_dtype(typestr).itemsize):
        return snippet
    return (
        "from caiconform.adapters.registry import get\n"
        "from caiconform.spec.layout import Layout\n"
        f"obj = get({name!r}).produce(values, {layout_source(layout)}, {typestr!r}, "
        f"{scenario!r})\n"
    )


def consumer_source(name: str) -> str:
    """Lines reading `obj` with consumer `name` into the host array `result`."""
    snippet = _exchange.adapter(name).repro_consume()
    if snippet:
        return snippet + "result = getattr(result, 'values', result)\n"
    return f"from caiconform.adapters.registry import get\nresult = get({name!r}).consume(obj)\n"


def repro_script(title: str, *parts: str) -> str:
    """A standalone script: a docstring saying what it shows, then `parts` (each dedented)."""
    doc = textwrap.fill(title, width=96)
    body = "\n".join(textwrap.dedent(part).strip() + "\n" for part in parts if part)
    return f'"""{doc}\n\nRun with: python this_file.py\n"""\n\n{body}'


#: A report-friendly line printing what the consumer read next to what was written.
COMPARE_SOURCE = """
print("interface:", obj.__cuda_array_interface__)
import numpy as np
result = np.asarray(result)
print("read:", result)
print("expected:", values)
same = result.shape == values.shape and result.tobytes() == values.tobytes()
print("bitwise equal:", same)
"""
