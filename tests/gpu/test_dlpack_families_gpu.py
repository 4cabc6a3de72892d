"""The producer-side DLPack families (dlpack_streams, dlpack_copy, dlpack_versions) on a real
GPU: each family's coverage floor for the reference, PyTorch and CuPy producers, through the
family's own `execute`, in this process.

What is expected of both libraries: no `fail` (a producer that orders its pending work before
the stream it is given, honours copy / dl_device and flags its capsules), refusals only where
the standard lets the producer refuse (`rejected`: an optional stream value, a BufferError for a
host copy or a type DLPack cannot carry, a keyword its version predates), and at least one
example per family that ran (`pass`), so a floor that skipped everything is not taken for a
clean one. A failing example is listed with the family's own message (rule, what was seen).
The streams control comes first: on this machine an unsynchronized read of pending work sees
the sentinel, else a stream pass would prove nothing.
"""

from __future__ import annotations

import pytest

from caiconform.adapters import registry
from caiconform.adapters.base import ProducerFailed, SkipExchange
from caiconform.checks import dlpack_copy, dlpack_streams, dlpack_versions, streams
from caiconform.cuda import gpu_available
from caiconform.results.outcome import PASS, REJECTED, SKIP

HAVE_GPU, NO_GPU_REASON = gpu_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason=NO_GPU_REASON)]

#: the reference producer first: its `__dlpack__` follows the text (reference/dlpack_producer),
#: so a finding against it is the family's bug, not a library's
PRODUCERS = ("reference", "torch", "cupy")
#: the libraries' own findings, measured on an H100 (torch 2.11, CuPy 14.2, 2026-11-26), each
#: shown by the run's standalone reproducer: a floor finding outside these is the family's
KNOWN = {
    ("torch", "DLPACK-COPY-FLAG"): "torch's copy=True capsule leaves IS_COPIED unset",
    ("torch", "DLPACK-COPY-FALSE-CPU-BUFFERERROR"): "torch raises ValueError, not BufferError",
    ("cupy", "DLPACK-COPY-FALSE-CPU-BUFFERERROR"): "CuPy raises ValueError, not BufferError",
    ("cupy", "DLPACK-STRIDES-ELEMENTS"): "CuPy divides negative byte strides as unsigned",
}
FAMILIES = (dlpack_streams, dlpack_copy, dlpack_versions)


def _available(name: str) -> None:
    ok, why = registry.get(name).available()
    if not ok:
        pytest.skip(why)


def _run_floor(module, producer: str) -> list[tuple[dict, str, str | None, str]]:
    """(params, outcome, rule, message) of every floor example."""
    out = []
    for example in module.floor(producer, None):
        try:
            result = module.execute(example.params, producer, None)
        except SkipExchange as skip:
            out.append((example.params, SKIP, None, str(skip)))
            continue
        except ProducerFailed as exc:
            out.append((example.params, "producer-failed", None, str(exc)))
            continue
        out.append((example.params, result.outcome, result.rule, result.message))
    return out


def test_the_race_is_visible_here():
    seen = streams.race_visible()
    assert seen["ignore_stream"] > 0, f"got {seen}, expected sentinel reads without a wait"


@pytest.mark.parametrize("producer", PRODUCERS)
@pytest.mark.parametrize("module", FAMILIES, ids=lambda m: m.FAMILY)
def test_floor_has_no_finding(module, producer):
    _available(producer)
    results = _run_floor(module, producer)
    bad = [r for r in results if r[1] not in (PASS, REJECTED, SKIP)]
    bad = [r for r in bad if (producer, r[2]) not in KNOWN]
    assert not bad, "\n".join(f"{p}: {o} [{r}] {m}" for p, o, r, m in bad)
    assert any(r[1] == PASS for r in results), f"no example ran: {results[:3]}"


@pytest.mark.parametrize("producer", PRODUCERS)
def test_streams_values_the_library_supports_are_read_final(producer):
    """Stream None (the default every library must take) on the producer's non-blocking
    stream: the consumer's read on the legacy default stream sees the final values."""
    _available(producer)
    params = {
        "stream": None,
        # the reference producer's own pending work is on non-blocking streams ("pending")
        "scenario": "pending" if producer == "reference" else "nonblocking",
        "typestr": "<f4",
        "shape": [4096],
        "seed": 0,
    }
    result = dlpack_streams.execute(params, producer, None)
    assert result.outcome == PASS, result.message


@pytest.mark.parametrize("producer", PRODUCERS)
def test_copy_true_gives_a_flagged_copy(producer):
    _available(producer)
    params = {"case": "copy-true", "typestr": "<f4", "shape": [4, 3], "seed": 0}
    result = dlpack_copy.execute(params, producer, None)
    if (producer, result.rule) in KNOWN:
        pytest.xfail(KNOWN[producer, result.rule])
    assert result.outcome in (PASS, REJECTED), result.message


def test_reference_orders_its_pending_work_before_every_stream_value():
    """The reference producer's own pending scenario: every stream value it supports reads
    final; stream 0 is refused as invalid input."""
    for value in dlpack_streams.STREAM_VALUES:
        params = {
            "stream": value,
            "scenario": "pending",
            "typestr": "<f4",
            "shape": [4096],
            "seed": 0,
        }
        result = dlpack_streams.execute(params, "reference", None)
        expected = REJECTED if value == 0 else PASS
        assert result.outcome == expected, f"stream {value!r}: {result.message}"
