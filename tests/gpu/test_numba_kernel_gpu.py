"""The spec's own example on a real GPU: CAI objects passed straight to a `@cuda.jit` kernel
launch (`add[1, 32](a, b, out)`, cai-v3 Synchronization section), read and written in place,
for C, sliced (non-contiguous) and zero-size arrays made by the reference producer. Runs with
the numba-kernel adapter's numpy shim (`numpy_shim`) where numba-cuda needs it."""

from __future__ import annotations

import numpy as np
import pytest

from caiconform.adapters._staging import cai_only
from caiconform.adapters.numba_adapter import NumbaKernelAdapter, numpy_shim
from caiconform.spec.layout import Layout

pytestmark = pytest.mark.gpu

LAYOUTS = {
    "C": Layout((10,)),
    "sliced": Layout((10,), strides=(8,), offset=4, pad=4, kind="sliced"),
    "zero-size": Layout((0,)),
}


@pytest.fixture(scope="module")
def add():
    ok, why = NumbaKernelAdapter().available()
    if not ok:
        pytest.skip(why)
    numpy_shim()
    from numba import cuda

    @cuda.jit
    def add(x, y, out):
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for i in range(start, x.shape[0], stride):
            out[i] = x[i] + y[i]

    return add


@pytest.mark.parametrize("kind", list(LAYOUTS))
def test_spec_example_reads_and_writes_cai_objects_in_place(add, kind):
    from caiconform.reference.consumer import consume
    from caiconform.reference.producer import ReferenceArray

    layout = LAYOUTS[kind]
    n = layout.shape[0]
    a = ReferenceArray(np.arange(n, dtype="<i4"), layout, "<i4")
    b = ReferenceArray(np.arange(n, dtype="<i4") * 2, layout, "<i4")
    out = ReferenceArray(np.zeros(n, dtype="<i4"), layout, "<i4")
    add[1, 32](cai_only(a), cai_only(b), cai_only(out))
    # the kernel ran on Numba's default stream, not the one `out` exports: wait for it, as the
    # spec's example reads its result only after the launch completes
    from numba import cuda

    cuda.synchronize()
    got = consume(out, sync="host").values
    np.testing.assert_array_equal(got, np.arange(n, dtype="<i4") * 3)


def test_adapter_version_states_the_shim():
    adapter = NumbaKernelAdapter()
    if not adapter.available()[0]:
        pytest.skip(adapter.available()[1])
    shim = numpy_shim()
    assert ("+shim(" in (adapter.version() or "")) == bool(shim)


@pytest.mark.parametrize("readonly", [False, True], ids=["writable", "read-only"])
def test_readonly_family_writes_through_a_kernel_launch(add, readonly):
    """The readonly family's numba-kernel write is a kernel launch over the exporting object
    (not numba's as_cuda_array copy): a writable export is written by it, a read-only one is
    refused by numba's typing, so the family passes numba-kernel [CAI-DATA-READONLY-HONOURED]."""
    from caiconform.checks import _views
    from caiconform.checks import readonly as family
    from caiconform.reference.consumer import consume
    from caiconform.reference.producer import ReferenceArray, sentinel_of

    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    ref = ReferenceArray(values, Layout((3, 4)), "<f4", readonly=readonly)
    write = _views.writer("numba-kernel", _views.hold("numba-kernel", ref), sentinel_of(values))
    if readonly:
        with pytest.raises(Exception):  # noqa: B017 - numba's typing error class varies
            write()
        result = family.execute(
            {"typestr": "<f4", "shape": [3, 4], "seed": 0}, None, "numba-kernel"
        )
        assert result.outcome == "pass", result
    else:
        assert write() == _views.WRITTEN
        written = consume(ref, sync="host").values
        assert written.tobytes() == sentinel_of(values).tobytes()  # bytes: a sentinel may be NaN


_CACHED_COPY = """
import json, sys
import numpy as np
from caiconform.adapters import registry
from caiconform.adapters.numba_adapter import _copy_kernels
from caiconform.reference.producer import ReferenceArray
from caiconform.spec.layout import Layout
adapter = registry.get(sys.argv[1])
values = np.arange(6, dtype="<f8").reshape(2, 3)
got = adapter.consume(ReferenceArray(values, Layout((2, 3)), "<f8"))
stats = _copy_kernels(adapter.implementation)[2].stats
print(json.dumps({"same": bool(np.array_equal(got, values)),
                  "hits": sum(stats.cache_hits.values()),
                  "misses": sum(stats.cache_misses.values())}))
"""


@pytest.mark.parametrize("name", ["numba-kernel", "numba-mlir-kernel"])
def test_a_new_process_reads_the_copy_kernel_the_last_one_compiled(name, tmp_path):
    """The copy kernels are in numba's disk cache (`numba_adapter._kernel_cache`): a second
    process consuming the same signature loads the kernel instead of compiling it, and reads
    the same values (a run's replaced children compile nothing the run has compiled)."""
    import json
    import os
    import subprocess
    import sys

    from caiconform.adapters import registry
    from caiconform.adapters.numba_adapter import CACHE_ENV

    ok, why = registry.get(name).available()
    if not ok:
        pytest.skip(why)
    env = {**os.environ, CACHE_ENV: str(tmp_path)}
    runs = []
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, "-c", _CACHED_COPY, name],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert [r["same"] for r in runs] == [True, True]
    assert (runs[0]["hits"], runs[0]["misses"]) == (0, 1), runs
    assert (runs[1]["hits"], runs[1]["misses"]) == (1, 0), runs
    assert any(tmp_path.rglob("*.nbi")), "numba wrote no cache index"
