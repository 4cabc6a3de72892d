"""GPU tests of the memory kinds (`caiconform.cuda.memkinds`): each kind allocates, exports a
valid dict, reads back through the reference consumer exactly what was written (also with
pending work on the producer's stream), shows the pointer attributes the driver documents for
it, and frees without a leak; the VMM kind's guard makes a read past the array fault every
time (in a subprocess: a fault poisons the context); the reference consumer refuses the
adversarial read past an allocation without faulting; the libraries' own kinds (Numba's
managed and mapped arrays, CuPy's managed pool, RMM's async and managed resources) export
memory of that kind. Everything here skips without a GPU.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from caiconform.cuda import gpu_available
from caiconform.cuda.memkinds import HOST_KINDS, MEMORY_KINDS, using_kind
from caiconform.spec.layout import Layout

HAVE_GPU, NO_GPU_REASON = gpu_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason=NO_GPU_REASON)]

#: a C array and a sliced view inside a larger allocation (offset, strides)
LAYOUTS = {
    "C": Layout((3, 4)),
    "sliced": Layout((3, 4), (72, 8), offset=40, kind="sliced"),
}


def _values(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    raw = np.random.default_rng(seed).integers(0, 256, size=int(np.prod(shape)) * 4, dtype="u1")
    return raw.view("<f4").reshape(shape)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("kind", MEMORY_KINDS)
def test_each_kind_exports_a_valid_dict_read_back_exactly(kind, layout):
    from caiconform import validate
    from caiconform.reference.consumer import consume
    from caiconform.reference.producer import ReferenceArray

    values = _values((3, 4))
    ref = ReferenceArray(values, LAYOUTS[layout], "<f4", memory=kind)
    assert ref.memory == kind and ref.allocation.kind == kind
    report = validate(ref.__cuda_array_interface__)
    assert report.ok, report.errors
    result = consume(ref)
    assert _same(result.values, values), (kind, result.values, values)
    base, size = result.allocation
    assert base <= ref.ptr and ref.ptr - LAYOUTS[layout].offset + ref.allocation.size <= base + size


@pytest.mark.parametrize("kind", MEMORY_KINDS)
def test_each_kind_with_pending_work_is_read_after_it(kind):
    from caiconform.reference.consumer import consume
    from caiconform.reference.producer import ReferenceArray

    values = _values((64,), seed=3)
    ref = ReferenceArray(values, Layout((64,)), "<f4", stream_scenario="pending", memory=kind)
    assert _same(consume(ref, sync="enqueue").values, values)


#: what the driver says about each kind (CU_POINTER_ATTRIBUTE_*): memory type, whether a
#: context owns it (CONTEXT is 0 for stream-ordered and VMM memory), managed or not
EXPECTED = {
    "device": ("device", True, False),
    "async": ("device", False, False),
    "async-pool": ("device", False, False),
    "managed": (None, True, True),
    "host-mapped": ("host", True, False),
    "host-registered": ("host", True, False),
    "vmm": ("device", False, False),
}


@pytest.mark.parametrize("kind", MEMORY_KINDS)
def test_pointer_attributes_per_kind(kind):
    from caiconform.cuda.memory import pointer_info
    from caiconform.reference.producer import ReferenceArray

    ref = ReferenceArray(_values((3, 4)), Layout((3, 4)), "<f4", memory=kind)
    info = pointer_info(ref.ptr)
    memory_type, has_context, managed = EXPECTED[kind]
    if memory_type is not None:
        assert info.memory_type == memory_type, info
    assert bool(info.context) is has_context, info
    assert info.is_managed is managed, info
    assert info.device_accessible and info.device == 0, info
    if kind in HOST_KINDS:
        assert info.device_pointer != 0, info


def test_vmm_array_ends_at_its_mapping_the_reservation_beyond_is_no_allocation():
    from caiconform.cuda.memory import address_range
    from caiconform.reference.producer import ReferenceArray

    ref = ReferenceArray(_values((3, 4)), Layout((3, 4)), "<f4", memory="vmm", guard=1 << 20)
    base, size = address_range(ref.ptr)
    end = ref.ptr + 48
    assert 0 <= base + size - end < 256, (hex(base), size, hex(end))
    assert address_range(base + size) is None, "the guard after the mapping is no allocation"


def _pool_in_use(kind: str) -> int:
    """Bytes the stream-ordered pool of `kind` has handed out and not had back: this
    process's own figure (cuMemGetInfo counts every process on the device, and the GPU tests
    run in several at once)."""
    from cuda.bindings import driver

    from caiconform.cuda import memkinds
    from caiconform.cuda.errors import call

    call(driver.cuCtxSynchronize)
    if kind == "async":
        pool = call(driver.cuDeviceGetDefaultMemPool, call(driver.cuDeviceGet, 0))
    else:
        pool = memkinds._pool(0)
    used = driver.CUmemPool_attribute.CU_MEMPOOL_ATTR_USED_MEM_CURRENT
    return int(call(driver.cuMemPoolGetAttribute, pool, used))


def _still_allocated(ptr: int) -> bool:
    """Whether the driver still knows `ptr` as part of a device allocation (cuMemGetAddressRange
    fails once cuMemFree, cuMemUnmap + cuMemAddressFree or the managed free took it back)."""
    from cuda.bindings import driver

    err, _base, _size = driver.cuMemGetAddressRange(driver.CUdeviceptr(ptr))
    return err == driver.CUresult.CUDA_SUCCESS


@pytest.mark.parametrize("kind", MEMORY_KINDS)
def test_each_kind_frees_without_a_leak(kind):
    """Each free gives the memory back where the kind keeps it: host memory is no longer
    known to the driver, a stream-ordered pool has nothing more in use than before, and any
    other device allocation no longer exists."""
    from caiconform.cuda.memory import pointer_info
    from caiconform.reference.producer import ReferenceArray
    from caiconform.reference.tracking import AllocationLog, TrackingMemoryManager

    log = AllocationLog()
    manager = TrackingMemoryManager(log)
    nbytes = 8 << 20
    values = np.zeros(nbytes // 4, dtype="<f4")
    ReferenceArray(values, Layout(values.shape), "<f4", memory=kind, manager=manager).close()
    pooled = kind in ("async", "async-pool")
    before = _pool_in_use(kind) if pooled else 0
    for _ in range(10):
        ref = ReferenceArray(values, Layout(values.shape), "<f4", memory=kind, manager=manager)
        ptr = ref.ptr
        ref.close()
        assert not log.is_live(ptr)
        if kind in HOST_KINDS:
            assert pointer_info(ptr).memory_type == "unregistered", kind
        elif pooled:
            assert _pool_in_use(kind) == before, f"{kind}: the pool kept the array's memory"
        else:
            assert not _still_allocated(ptr), f"{kind}: 0x{ptr:x} still allocated after close"
        del ref
    gc.collect()
    assert log.live_count == 0


_GUARD_READ = """
import numpy as np
from caiconform.cuda import kernels
from caiconform.cuda.errors import CUDAError
from caiconform.cuda.memory import DeviceBuffer
from caiconform.cuda.streams import OwnedStream
from caiconform.reference.producer import ReferenceArray
from caiconform.spec.layout import Layout

ref = ReferenceArray(np.arange(12, dtype="<f4").reshape(3, 4), Layout((3, 4)), "<f4",
                     memory="vmm", guard=1 << 20)
count = 12 + 1024  # 4 KiB past the array's end: inside the guard
out = DeviceBuffer(count * 4)
stream = OwnedStream(0)
try:
    kernels.gather(out.ptr, ref.ptr, (count,), (4,), 4, stream=stream.handle, device=0)
    stream.synchronize()
    print("RESULT no fault")
except CUDAError as exc:
    print("RESULT", exc.name)
"""


def test_a_read_past_a_vmm_array_faults_every_time():
    """Run twice in fresh processes: the read faults both times, with the same error."""
    seen = []
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(_GUARD_READ)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT")]
        assert lines, out.stdout + out.stderr
        seen.append(lines[-1])
    assert seen[0] == seen[1] and seen[0] != "RESULT no fault", seen
    assert seen[0] in ("RESULT CUDA_ERROR_ILLEGAL_ADDRESS", "RESULT CUDA_ERROR_LAUNCH_FAILED")


def test_the_reference_consumer_refuses_the_adversarial_read_past_an_allocation():
    from caiconform.checks import adversarial
    from caiconform.cuda import context_healthy
    from caiconform.reference.consumer import ConsumerRefused, consume

    params = {
        "kind": "live",
        "mutation": "extent-past-allocation",
        "typestr": "<f4",
        "layout": Layout((3, 4)).to_dict(),
        "seed": 0,
        "memory": "vmm",
    }
    obj, _values_, keep = adversarial.build_live(params)
    assert keep.memory == "vmm"
    with pytest.raises(ConsumerRefused) as refused:
        consume(obj)
    assert refused.value.rules == ["CAI-DATA-EXTENT-IN-ALLOCATION"]
    assert context_healthy() == (True, "")


# --- the libraries' own kinds ---------------------------------------------------------------

LIBRARY_KINDS = [
    ("numba", "managed"),
    ("numba", "host-mapped"),
    ("cupy", "managed"),
    ("rmm", "async-pool"),
    ("rmm", "managed"),
]


@pytest.mark.parametrize(("library", "kind"), LIBRARY_KINDS)
def test_a_librarys_own_kind_is_exported_and_read_back(library, kind):
    from caiconform.adapters import registry
    from caiconform.cuda.memory import pointer_info
    from caiconform.reference.consumer import consume

    adapter = registry.get(library)
    ok, why = adapter.available()
    if not ok:
        pytest.skip(why)
    assert kind in adapter.memory_kinds
    typestr, shape = ("|u1", (16,)) if library == "rmm" else ("<f4", (3, 4))
    values = np.arange(int(np.prod(shape)), dtype=typestr).reshape(shape)
    with using_kind(kind):
        obj = adapter.produce(values, Layout(shape), typestr)
    info = pointer_info(obj.__cuda_array_interface__["data"][0])
    if kind == "managed":
        assert info.is_managed, info
    elif kind in HOST_KINDS:
        assert info.memory_type == "host", info
    else:
        assert info.memory_type == "device" and not info.is_managed, info
    assert _same(np.asarray(consume(obj).values), values)
