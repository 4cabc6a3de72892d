"""What the peers' own suites check and the matrix did not (issue 25 item 4), on a real GPU.

Objects that cannot export (PyTorch's test_numba_integration, JAX's CAI tests), CuPy's
CUPY_CUDA_ARRAY_INTERFACE_EXPORT_VERSION, object fields in descr, datetime units, structured
fields kept on import, an extent past 4 GiB, and RMM as a consumer. Each test runs the family's
own `execute` on one example, as a worker would; a library that is missing skips with its reason.
"""

from __future__ import annotations

import numpy as np
import pytest

from caiconform.adapters import registry
from caiconform.checks import adversarial, roundtrip, schema
from caiconform.cuda import gpu_available
from caiconform.spec.layout import Layout

HAVE_GPU, NO_GPU_REASON = gpu_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason=NO_GPU_REASON)]


def _need(name: str) -> None:
    ok, why = registry.get(name).available()
    if not ok:
        pytest.skip(why)


UNEXPORTABLE = [
    (name, kind)
    for name in ("torch", "cupy", "jax")
    for kind in registry.get(name).unexportable_kinds
    if (name, kind) != ("torch", "requires-grad")
]


@pytest.mark.parametrize(("name", "kind"), UNEXPORTABLE)
def test_objects_that_cannot_export_raise_attributeerror(name, kind):
    _need(name)
    result = schema.execute({"unexportable": kind}, name, None)
    assert result.outcome == "pass", result.message


def test_a_torch_tensor_requiring_grad_raises_runtimeerror():
    """torch/_tensor.py raises RuntimeError here ("matching tensor.__array__() behavior"), and
    PyTorch's test_numba_integration asserts it: hasattr() then raises too. A finding of
    CAI-ATTR-RAISES-ATTRIBUTEERROR (SHOULD); when PyTorch changes it, this test says so."""
    _need("torch")
    result = schema.execute({"unexportable": "requires-grad"}, "torch", None)
    assert (result.outcome, result.rule) == ("fail", "CAI-ATTR-RAISES-ATTRIBUTEERROR"), (
        result.message
    )
    assert "RuntimeError" in result.message


def test_cupys_export_version_setting_gives_a_v2_dict_without_stream():
    _need("cupy")
    import cupy
    from cupy import _util

    from caiconform.adapters.cupy_adapter import ExportVersion

    before = _util.CUDA_ARRAY_INTERFACE_EXPORT_VERSION
    with cupy.cuda.Stream(non_blocking=True):
        d = ExportVersion(cupy.zeros(4, dtype=cupy.float32), 2).__cuda_array_interface__
    assert d["version"] == 2 and "stream" not in d, d
    assert before == _util.CUDA_ARRAY_INTERFACE_EXPORT_VERSION
    (example,) = [e for e in schema.floor("cupy", None) if e.params.get("export_setting")]
    result = schema.execute(example.params, "cupy", None)
    assert result.outcome == "pass", result.message


@pytest.mark.parametrize("consumer", ["reference", "cupy", "torch", "numba", "jax"])
def test_object_fields_are_refused_or_read_as_bytes(consumer):
    """The reference consumer refuses (`rejected`, the right answer); a library consumer may
    refuse or read opaque bytes; one that makes objects fails CAI-DESCR-OBJECT-REFUSED."""
    _need(consumer)
    params = {
        "kind": "live",
        "mutation": "object-fields",
        "typestr": "<f4",
        "layout": Layout((3, 4)).to_dict(),
        "seed": 0,
    }
    result = adversarial.execute(params, None, consumer)
    if consumer == "reference":
        assert (result.outcome, result.rule) == ("rejected", adversarial.OBJECT_FIELDS_RULE)
    if result.outcome == "fail":  # a finding against the library (CuPy 14.2 makes objects)
        assert result.rule == adversarial.OBJECT_FIELDS_RULE, result.message
        assert "objects" in result.message, result.message
    else:
        assert result.outcome in ("rejected", "pass"), result.message


@pytest.mark.parametrize("typestr", roundtrip.UNIT_TYPESTRS)
def test_datetime_units_round_trip_through_the_reference(typestr):
    params = {"typestr": typestr, "layout": Layout((3, 4)).to_dict(), "seed": 3}
    result = roundtrip.execute(params, "reference", "reference")
    assert result.outcome == "pass", result.message


def test_a_structured_export_keeps_its_fields_in_the_reference_consumer():
    params = {"typestr": "structured", "layout": Layout((3, 4)).to_dict(), "seed": 3}
    result = roundtrip.execute(params, "reference", "reference")
    assert result.outcome == "pass" and not result.seen, result.message


def test_an_extent_past_4_gib_reads_back_through_the_reference():
    """Two rows 2**32 + 16 bytes apart: a 32-bit byte offset would read the first row twice.
    Skips (the family's own skip) when the device lacks twice the allocation free."""
    (example,) = [
        e
        for e in roundtrip.floor("reference", "reference")
        if e.coverage.get("layout") == "extent > 4 GiB"
    ]
    result = roundtrip.execute(example.params, "reference", "reference")
    if result.outcome == "skip":
        pytest.skip(result.message)
    assert result.outcome == "pass", result.message


def test_rmm_consumes_a_reference_export():
    _need("rmm")
    from caiconform.reference.producer import ReferenceArray
    from caiconform.spec.values import compare_values, make_values

    values = make_values("<f8", (6,), 1)
    ref = ReferenceArray(values, Layout((6,)), "<f8")
    got = registry.get("rmm").consume(ref)
    assert compare_values(np.asarray(got), values) is None
