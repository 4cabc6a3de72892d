"""The adapter self-check on a GPU: every available adapter against its library's own API.

For each built-in adapter whose library works here, the full self-check
(`caiconform.adapters.selfcheck.run(adapter, full=True)`): every layout kind (0-d and
zero-size included) x dtype class x memory kind it claims, its export and the values its
library reads back against the library's own upload of the same values, and its consume of the
library's own array against the library's own read. No case may differ: a difference is
caiconform's defect, which a run would file under `caiconform`. Cases the library cannot take
part in (skips, its own refusals) are printed, not failed. Also here: the quick set a run does
at its start is a part of the full one, PyCUDA's own 0-d `GPUArray` and the adapter's export
agree, and JAX's DLPack capsule kind is named and its read-only flag compared only where it says one.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from caiconform.adapters import registry, selfcheck
from caiconform.spec.layout import Layout

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module", autouse=True)
def _gpu():
    from caiconform.cuda.device import gpu_available

    ok, why = gpu_available()
    if not ok:
        pytest.skip(f"no GPU: {why}")


def _adapter(name: str):
    adapter = registry.get(name)
    ok, why = adapter.available()
    if not ok:
        pytest.skip(f"{name} unavailable: {why}")
    return adapter


def _checks(result: dict) -> list[selfcheck.Check]:
    return [selfcheck.Check.from_dict(c) for c in result["checks"]]


@pytest.mark.parametrize("name", list(registry.BUILTIN))
def test_the_adapter_agrees_with_its_library(name):
    checks = _checks(selfcheck.run(_adapter(name), full=True))
    counts = Counter((c.role, c.status) for c in checks)
    print(f"{name}: {dict(counts)}")
    for check in checks:
        if check.status in (selfcheck.SKIPPED, selfcheck.REFUSED):
            print(f"  {check.message}")
    differing = [c.message for c in selfcheck.failures(checks)]
    assert not differing, "\n".join(differing)


#: the quick self-check twice in a process of its own, as a run's probe makes it (the first
#: pays the library's context and first-use costs): its result and the full set's size as JSON
_QUICK_IN_A_PROCESS = """
import json, sys
from caiconform.adapters import registry, selfcheck
adapter = registry.get(sys.argv[1])
selfcheck.run(adapter)
result = selfcheck.run(adapter)
full = sum(len(selfcheck.cases(adapter, role, full=True))
           for role, capability in (("producer", "produce"), ("consumer", "consume"))
           if capability in adapter.capabilities)
print(json.dumps({"result": result, "full": full}))
"""


@pytest.mark.parametrize("name", list(registry.BUILTIN))
def test_the_quick_self_check_is_a_part_of_the_full_one(name):
    """The quick set a run does at its start (in the library's probe) checks at most half the
    full set's cases (none for an adapter that claims no role), none of them differing. It runs
    in a process of its own, as the probe's does, not in this xdist worker, whose earlier tests
    leave their libraries' state behind (CuPy's pool of managed memory among it): that state
    is this process's history, not the quick set's. Its time is printed, not bounded: under
    xdist's workers a wall-clock bound measures the load."""
    import json
    import subprocess
    import sys

    _adapter(name)
    done = subprocess.run(
        [sys.executable, "-c", _QUICK_IN_A_PROCESS, name],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (
        f"the quick self-check of {name} ended with status {done.returncode}: "
        f"{done.stderr[-2000:]} [{selfcheck.SELFCHECK_ID}]"
    )
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    result, full = answer["result"], answer["full"]
    checks = [selfcheck.Check.from_dict(c) for c in result["checks"]]
    print(f"{name}: quick self-check {result['seconds'] * 1000:.1f} ms, {len(checks)} of {full}")
    assert len(checks) <= full // 2, (
        f"got {len(checks)} quick checks of {full}, expected at most half "
        f"[{selfcheck.SELFCHECK_ID}, {name} quick set at a run's start]"
    )
    differing = [c.message for c in selfcheck.failures(checks)]
    assert not differing, "\n".join(differing)


def test_pycuda_and_its_adapter_export_a_0d_array_as_0d():
    adapter = _adapter("pycuda")
    from pycuda import gpuarray

    values = np.array(1.5, dtype="<f4")
    own = gpuarray.to_gpu(values).__cuda_array_interface__
    made = adapter.produce(values, Layout(()), "<f4").__cuda_array_interface__
    assert tuple(own["shape"]) == () == tuple(made["shape"]), (own, made)
    assert tuple(own["strides"]) == tuple(made["strides"])


def test_jax_capsule_kind_is_named_and_agrees_with_its_cai():
    from caiconform import dlpack
    from caiconform.checks import agreement

    adapter = _adapter("jax")
    obj = adapter.produce(np.arange(6, dtype="<f4").reshape(2, 3), Layout((2, 3)), "<f4")
    capsule, keep = dlpack.export(obj)
    print(f"jax gave {capsule.kind}")
    cai = agreement.describe_cai(obj.__cuda_array_interface__)
    differs = agreement.compare(cai, agreement.describe_capsule(capsule))
    assert differs is None, (
        f"got {differs[0]} {differs[1]} in jax's {capsule.kind}, expected the CAI's "
        f"{differs[2]} [CAI-DLPACK-AGREE]"
    )
    del keep
