"""GPU tests of the runner's after-example health check (`caiconform.runner.health`): after
its first check a worker keeps one anchor allocation per context, so that the check's own
1-byte allocation costs the NVIDIA driver no ioctl (issue 27: the driver serialises ioctls
host-wide), and the check still reports a poisoned context. Each runs in a fresh process, as a
worker does (an anchor must not outlive a test that resets the context). The ioctl count is
read with the ioctl clock preloaded (`benchmarks/ioctl_clock`, `caiconform.runner.ioctls`);
scripts/gpu_marked_tests.sh runs this file so when the built clock is carried. Everything here
skips without a GPU.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from caiconform.cuda import gpu_available
from caiconform.runner import ioctls

HAVE_GPU, NO_GPU_REASON = gpu_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason=NO_GPU_REASON)]

_CHECKS = """
import json
from caiconform.cuda import device
from caiconform.cuda.memory import address_range
from caiconform.runner import health, ioctls

device.ensure_context(0)
first = health.check()
anchors = dict(device._anchors)
before = ioctls.counters()
later = [health.check() for _ in range(20)]
spent = ioctls.spent(before, ioctls.counters())
ptr = next(iter(anchors.values()), 0)
print("RESULT", json.dumps({
    "first": first, "later_ok": all(ok for ok, _ in later), "anchors": len(anchors),
    "kept": device._anchors == anchors, "range": address_range(ptr), "ptr": ptr, "spent": spent,
}))
"""


def _run(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT")]
    assert lines, out.stdout + out.stderr
    return lines


@pytest.fixture(scope="module")
def checks() -> dict:
    return json.loads(_run(_CHECKS)[-1].split(maxsplit=1)[1])


def test_a_worker_keeps_one_live_anchor_per_context(checks):
    assert checks["first"] == [True, ""]
    assert checks["later_ok"]
    assert checks["anchors"] == 1 and checks["kept"]  # made once, by the first check, kept
    start, size = checks["range"]
    assert start == checks["ptr"] and size >= 1  # a live allocation of its own


@pytest.mark.skipif(ioctls.counters() is None, reason="the ioctl clock is not preloaded")
def test_once_anchored_the_check_makes_no_driver_ioctl(checks):
    # without the anchor, in a context holding no other memory: 7 per check (H100)
    assert checks["spent"]["nv_ioctl_n"] == 0, checks["spent"]


#: a read past a VMM array into its unmapped guard: faults every time and poisons the context
#: (tests/gpu/test_memory_kinds_gpu.py), after one anchored check
_POISON = """
import numpy as np
from caiconform.cuda import device, kernels
from caiconform.cuda.memory import DeviceBuffer
from caiconform.cuda.streams import OwnedStream
from caiconform.reference.producer import ReferenceArray
from caiconform.runner import health
from caiconform.spec.layout import Layout

device.ensure_context(0)
print("RESULT before", health.check()[0], len(device._anchors))
ref = ReferenceArray(np.arange(12, dtype="<f4").reshape(3, 4), Layout((3, 4)), "<f4",
                     memory="vmm", guard=1 << 20)
out = DeviceBuffer((12 + 1024) * 4)
stream = OwnedStream(0)
try:
    kernels.gather(out.ptr, ref.ptr, (12 + 1024,), (4,), 4, stream=stream.handle, device=0)
    stream.synchronize()
except Exception:
    pass
print("RESULT after", health.check()[0])
"""


def test_a_poisoned_context_is_still_reported_with_the_anchor():
    assert _run(_POISON) == ["RESULT before True 1", "RESULT after False"]
