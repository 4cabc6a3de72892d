"""CUDA IPC through `caiconform.reference.ipc`, on a real GPU, with spawned importer processes."""

from __future__ import annotations

import numpy as np
import pytest

from caiconform.cuda import gpu_available
from caiconform.cuda.device import device_count

HAVE_GPU, NO_GPU_REASON = gpu_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason=NO_GPU_REASON)]


def _filled(nbytes: int, device: int = 0):
    from caiconform.cuda.memory import DeviceBuffer

    data = (np.arange(nbytes, dtype=np.uint64) * 7 % 251).astype(np.uint8)
    return DeviceBuffer.from_host(data, device), data


def test_export_at_offset_opens_in_spawned_child_with_the_same_bytes():
    from caiconform.reference.ipc import IpcExport, read_in_child

    buf, data = _filled(1 << 16)
    export = IpcExport(buf.ptr + 4096, 3000, owner=buf)
    assert export.descriptor.offset == 4096
    seen = read_in_child(export)
    assert seen.error is None, seen.error
    np.testing.assert_array_equal(seen.data, data[4096 : 4096 + 3000])
    assert seen.cai["shape"] == (3000,) and seen.cai["typestr"] == "|u1"
    assert seen.cai["version"] == 3 and seen.cai["data"][1] is False
    assert export.done.is_set(), "importer finished without acknowledging"
    export.close()
    assert export.owner is None


def test_typed_export_is_seen_with_its_typestr_and_shape():
    from caiconform.reference.ipc import IpcExport, read_in_child

    buf, data = _filled(4096)
    export = IpcExport(buf.ptr, 4096, owner=buf, typestr="<f4", shape=(32, 32))
    seen = read_in_child(export)
    assert seen.error is None, seen.error
    assert seen.data.dtype == np.dtype("<f4") and seen.data.shape == (32, 32)
    np.testing.assert_array_equal(seen.data.view(np.uint8).reshape(-1), data)


def test_open_in_the_exporting_process_is_refused():
    from caiconform.cuda.errors import CUDAError
    from caiconform.reference.ipc import IpcExport, IpcImport

    buf, _ = _filled(4096)
    export = IpcExport(buf.ptr, 4096, owner=buf)
    with pytest.raises(CUDAError):
        IpcImport(export.descriptor)


def test_range_past_the_allocation_is_refused_at_export():
    from caiconform.reference.ipc import IpcExport

    buf, _ = _filled(4096)
    with pytest.raises(ValueError, match="runs past its allocation"):
        IpcExport(buf.ptr + 4000, 200, owner=buf)


def test_cuda_core_ipc_pool_buffer_opens_in_spawned_child():
    from caiconform.reference.ipc import CoreIpcExport, core_ipc_supported, read_core_in_child

    ok, why = core_ipc_supported(0)
    if not ok:
        pytest.skip(f"cuda.core IPC pools unsupported here: {why}")
    export = CoreIpcExport(1 << 20)
    data = (np.arange(1 << 20, dtype=np.uint64) % 253).astype(np.uint8)
    export.fill(data)
    seen = read_core_in_child(export)
    assert seen.error is None, seen.error
    assert seen.cai["mapped"] is True
    np.testing.assert_array_equal(seen.data, data)
    assert export.done.is_set()
    export.close()


@pytest.mark.multigpu
@pytest.mark.skipif(device_count() < 2, reason="needs two GPUs")
@pytest.mark.parametrize("path", ["direct", "staged"])
def test_export_on_device_0_reads_on_device_1(path):
    from caiconform.reference.ipc import IpcExport, read_in_child

    buf, data = _filled(1 << 20, device=0)
    export = IpcExport(buf.ptr + 256, (1 << 20) - 256, owner=buf)
    seen = read_in_child(export, device=1, path=path)
    assert seen.error is None, seen.error
    assert seen.device == 1
    np.testing.assert_array_equal(seen.data, data[256:])


@pytest.mark.multigpu
@pytest.mark.skipif(device_count() < 2, reason="needs two GPUs")
def test_reference_consumer_reads_a_device_1_array_while_device_0_is_current():
    from cuda.bindings import driver as cu

    from caiconform.cuda.device import ensure_context
    from caiconform.cuda.errors import call
    from caiconform.reference.consumer import consume

    buf, data = _filled(1 << 16, device=1)
    cai = {
        "shape": (1 << 16,),
        "typestr": "|u1",
        "data": (buf.ptr, False),
        "version": 3,
        "strides": None,
        "stream": None,
    }
    ensure_context(0)
    # The consumer reads device memory on the device that owns it (its context for the address
    # range, the stream and the gather kernel), so no peer access is needed.
    result = consume(cai)
    np.testing.assert_array_equal(result.values, data)
    assert result.allocation[0] <= buf.ptr < result.allocation[0] + result.allocation[1]
    assert int(call(cu.cuCtxGetDevice)) == 0, "the consumer left another device current"


@pytest.mark.multigpu
@pytest.mark.skipif(device_count() < 2, reason="needs two GPUs")
def test_reference_consumer_reads_device_1_after_another_library_moved_the_context():
    """The devices family's worker runs other libraries first: a runtime-API user switching
    devices behind cuda.core's back must not make the consumer look on the wrong device."""
    torch = pytest.importorskip("torch")
    from cuda.bindings import driver as cu

    from caiconform.cuda.device import ensure_context
    from caiconform.cuda.errors import call
    from caiconform.reference.consumer import consume
    from caiconform.reference.producer import ReferenceArray
    from caiconform.spec.layout import Layout

    values = np.arange(24, dtype=np.float32).reshape(4, 6)
    ref = ReferenceArray(values, Layout((4, 6)), "<f4", device=1)
    ensure_context(0)
    torch.cuda.set_device(1)
    torch.zeros(1, device="cuda:1")
    torch.cuda.set_device(0)
    torch.zeros(1, device="cuda:0")
    ensure_context(0)
    result = consume(ref)
    np.testing.assert_array_equal(np.asarray(result.values), values)
    assert int(call(cu.cuCtxGetDevice)) == 0, "the consumer left another device current"
