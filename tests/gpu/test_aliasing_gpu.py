"""Every declared consumer entry point of every available library, on a real GPU, against the
copy semantics its documentation states (`caiconform.adapters.entries`), through the aliasing
family's own `execute`: a later write through the reference producer is seen (zero-copy) or
not (copy), and a write through the result reaches the producer's memory (zero-copy) or not.

What counts as keeping its word: `pass`, a `skip` the entry declares (an immutable result, a
kernel argument with no result), or a refusal of a call other than the library's CAI import
(CAI-PORT-ENTRY-REFUSED, a portability note). Anything else fails the test with the family's
own message (rule, what was seen, the documentation quoted)."""

from __future__ import annotations

import numpy as np
import pytest

from caiconform.adapters import registry
from caiconform.adapters.entries import COPY, ENTRIES, ZERO_COPY, entries_of
from caiconform.checks import aliasing
from caiconform.cuda import gpu_available
from caiconform.results.outcome import PASS, REJECTED, SKIP

HAVE_GPU, NO_GPU_REASON = gpu_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason=NO_GPU_REASON)]

CASES = [
    (adapter, entry.name, direction)
    for adapter in ENTRIES
    for entry in ENTRIES[adapter]
    for direction in aliasing.DIRECTIONS
]


def _available(adapter: str) -> None:
    ok, why = registry.get(adapter).available()
    if not ok:
        pytest.skip(why)


@pytest.mark.parametrize(("adapter", "entry", "direction"), CASES)
def test_entry_point_keeps_its_documented_copy_semantics(adapter, entry, direction):
    _available(adapter)
    params = {"entry": entry, "direction": direction, "typestr": "<f4", "shape": [4, 4]}
    result = aliasing.execute(params, None, adapter)
    kept = result.outcome in (PASS, SKIP) or (
        result.outcome == REJECTED and result.rule == aliasing.REFUSED_RULE
    )
    assert kept, f"{adapter} {entry} {direction}: {result.outcome} {result.rule}: {result.message}"


@pytest.mark.parametrize("typestr", aliasing.TYPESTRS)
def test_the_reference_write_lands_where_the_consumer_reads(typestr):
    """The family's own producer-side write and read agree (the trusted half of every example)."""
    values = aliasing.exported_values(typestr, (4, 4))
    new = aliasing.written_values(values)
    obj = aliasing._export(values, typestr)
    np.testing.assert_array_equal(aliasing._read_producer(obj), values)
    aliasing._write_producer(obj, new)
    np.testing.assert_array_equal(aliasing._read_producer(obj), new)


@pytest.mark.parametrize("adapter", [a for a in ("cupy", "torch") if a in ENTRIES])
def test_zero_copy_results_point_at_the_export_and_copies_do_not(adapter):
    """Independent of the family's logic: the zero-copy entry's result exports the producer's
    own pointer, every copying entry's result another one. A call refusing CAI objects has no
    pointer to compare (torch's `dst[...] = obj`), but the zero-copy entry and at least one
    copying entry must have been compared, or the test has shown nothing."""
    _available(adapter)
    from caiconform.checks._entries import take

    values = aliasing.exported_values("<f4", (16,))
    obj = aliasing._export(values, "<f4")
    compared: list[str] = []
    refused: list[str] = []
    for entry in entries_of(adapter):
        try:
            taken = take(adapter, entry.name, obj)
        except Exception as exc:
            refused.append(f"{entry.name}: {type(exc).__name__}: {exc}")
            continue
        pointer = taken.result.__cuda_array_interface__["data"][0]
        if entry.semantics == ZERO_COPY:
            assert pointer == obj.ptr, entry.name
        else:
            assert pointer != obj.ptr, entry.name
        compared.append(entry.semantics)
    assert ZERO_COPY in compared and COPY in compared, (
        f"{adapter}: got pointers compared for {compared or 'no entry'}, expected the zero-copy "
        f"entry and a copying one; refused: {refused}"
    )
