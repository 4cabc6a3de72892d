"""dlpack_capi and dlpack_consumer on a real GPU, through each family's own `execute`, in this
process.

dlpack_capi: the reference producer's table (`ReferenceArray`) keeps dlpack.h's text on its
whole floor (a failure is the family's bug); torch's and cuda.core's tables are judged on the
floor and each example ends in an outcome naming a DLPACK-CAPI rule or passing (no crash, no
harness error), at least one passing example per library that carries a table.

dlpack_consumer: caiconform's own DLPack consumer passes its floor's stream and release cases
(it passes the stream it reads on and reads before it releases; its copy case skips, its import
taking no `copy`); a stand-in consumer that asks for no
synchronization and reads at once fails the stream case under DLPACK-STREAM-PRODUCER-SYNC, and
one that calls the deleter before it reads fails the release case under
DLPACK-CONSUMER-READS-DESCRIBED: the red the issue asks for, with the rule first.
"""

from __future__ import annotations

import pytest

from caiconform.adapters import registry
from caiconform.adapters.base import SkipExchange
from caiconform.checks import dlpack_capi, dlpack_consumer
from caiconform.cuda import gpu_available
from caiconform.results.outcome import FAIL, PASS, SKIP

HAVE_GPU, NO_GPU_REASON = gpu_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason=NO_GPU_REASON)]


def _available(name: str) -> None:
    ok, why = registry.get(name).available()
    if not ok:
        pytest.skip(why)


def _floor(module, producer, consumer) -> list[tuple[str, str | None, str]]:
    out = []
    for example in module.floor(producer, consumer):
        try:
            result = module.execute(example.params, producer, consumer)
        except SkipExchange as skip:
            out.append((SKIP, None, str(skip)))
            continue
        out.append((result.outcome, result.rule, result.message))
    return out


def test_the_reference_table_keeps_the_header_s_text_on_its_floor() -> None:
    results = _floor(dlpack_capi, "reference", None)
    bad = [r for r in results if r[0] != PASS]
    assert not bad, "\n".join(f"{o} {rule}: {m}" for o, rule, m in bad)


@pytest.mark.parametrize("producer", ["torch", "cuda.core"])
def test_a_library_s_table_is_judged_under_its_rules(producer) -> None:
    _available(producer)
    results = _floor(dlpack_capi, producer, None)
    odd = [r for r in results if r[0] not in (PASS, SKIP) and not (r[1] or "").startswith("DLPACK")]
    assert not odd, "\n".join(f"{o} {rule}: {m}" for o, rule, m in odd)
    assert any(r[0] == PASS for r in results) or all(r[0] == SKIP for r in results), results


def test_the_reference_consumer_passes_its_floor() -> None:
    """Every stream and release example passes; the copy case skips (caiconform's own DLPack
    import takes no `copy`: capability dlpack-copy), saying so."""
    results = _floor(dlpack_consumer, None, "reference")
    bad = [r for r in results if r[0] != PASS and not (r[0] == SKIP and "dlpack-copy" in r[2])]
    assert not bad, "\n".join(f"{o} {rule}: {m}" for o, rule, m in bad)
    judged = [e for e in dlpack_consumer.floor(None, "reference") if e.params["case"] != "copy"]
    assert sum(r[0] == PASS for r in results) == len(judged), results


class _Eager:
    """A DLPack consumer asking for no synchronization, or releasing before it reads."""

    def __init__(self, release_first: bool) -> None:
        self.release_first = release_first

    def consume_dlpack(self, obj):
        import numpy as np

        from caiconform.dlpack.capsule import read_capsule
        from caiconform.dlpack.elements import element_type
        from caiconform.reference import dlpack_export as dx
        from caiconform.reference.dlpack_read import read_elements

        capsule = obj.__dlpack__(stream=-1, max_version=(1, 3))
        tensor = read_capsule(capsule)
        address = dx.consume_name(capsule)
        if self.release_first:
            dx.call_deleter(address, True)
        values = np.array(read_elements(tensor, element_type(tensor), None))
        if not self.release_first:
            dx.call_deleter(address, True)
        return values


@pytest.mark.parametrize(
    ("case", "release_first", "rule"),
    [
        ("stream", False, "DLPACK-STREAM-PRODUCER-SYNC"),
        ("release", True, "DLPACK-CONSUMER-READS-DESCRIBED"),
    ],
)
def test_an_eager_consumer_is_red_with_the_rule_first(monkeypatch, case, release_first, rule):
    from caiconform.checks import _exchange

    monkeypatch.setattr(_exchange, "adapter", lambda name: _Eager(release_first))
    params = {
        "case": case,
        "scenario": dlpack_consumer.CASES[case][0],
        "typestr": "<f4",
        "shape": [1 << 16],
        "seed": 0,
    }
    result = dlpack_consumer.execute(params, None, "eager")
    assert (result.outcome, result.rule) == (FAIL, rule), result.message
