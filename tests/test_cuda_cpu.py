"""CPU tests for caiconform.cuda: what needs no device (errors, availability, kernel source,
argument packing, the host checksum, stream-handle vetting)."""

from __future__ import annotations

import ctypes
import importlib.util
import time

import numpy as np
import pytest

from caiconform.cuda import gpu_available
from caiconform.cuda.errors import CUDAError, call, error_name
from caiconform.cuda.kernels import (
    MAX_NDIM,
    WORD_MIX,
    StridedSpec,
    host_checksum,
    index_bits,
    kernel_names,
    kernel_source,
    word_type,
)
from caiconform.cuda.streams import _host_readable, stream_status

HAVE_GPU, NO_GPU_REASON = gpu_available()


def _nvrtc_available() -> bool:
    if importlib.util.find_spec("cuda.core") is None:
        return False
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        load_nvidia_dynamic_lib("nvrtc")
    except Exception:
        return False
    return True


def test_call_returns_values_and_raises_named_error():
    from cuda.bindings import driver

    ok = driver.CUresult.CUDA_SUCCESS

    def one():
        return (ok, 7)

    def two():
        return (ok, 1, 2)

    def none():
        return (ok,)

    def bad():
        return (driver.CUresult.CUDA_ERROR_INVALID_VALUE,)

    assert call(one) == 7 and call(two) == (1, 2) and call(none) is None
    with pytest.raises(CUDAError) as info:
        call(bad, detail="0x10")
    err = info.value
    assert (err.call, err.name, err.code) == ("bad", "CUDA_ERROR_INVALID_VALUE", 1)
    assert str(err) == "bad failed with CUDA_ERROR_INVALID_VALUE (1): 0x10"
    assert not err.sticky


def test_cuda_error_sticky_and_pickles():
    import pickle

    err = CUDAError("cuCtxSynchronize", 700)
    assert err.sticky and err.name == "CUDA_ERROR_ILLEGAL_ADDRESS"
    again = pickle.loads(pickle.dumps(err))
    assert (again.call, again.code, again.name) == (err.call, err.code, err.name)
    assert error_name(999_999).startswith("CUresult")


@pytest.mark.skipif(HAVE_GPU, reason="this machine has a GPU; the no-driver answer is not testable")
def test_gpu_available_without_driver_never_raises():
    from caiconform.cuda import context_healthy

    ok, why = gpu_available()
    assert ok is False
    assert why.startswith(("no NVIDIA driver:", "CUDA driver unusable:", "no CUDA device"))
    assert "\n" not in why
    healthy, reason = context_healthy()
    assert healthy is False and reason == why


def test_kernel_source_defines_every_kernel():
    src = kernel_source()
    names = kernel_names()
    assert len(names) == len(set(names)) == 3 * 6 * 2 + 2
    for name in names:
        assert f'extern "C" __global__ void {name}(' in src, name
    assert "#include" not in src  # compiles with NVRTC alone, no toolkit headers


@pytest.mark.skipif(not _nvrtc_available(), reason="NVRTC (nvidia-cuda-nvrtc) is not installed")
def test_kernel_source_compiles_with_nvrtc():
    from caiconform.cuda.kernels import compile_kernels

    module = compile_kernels("sm_90")
    cubin = bytes(module.code)
    for name in kernel_names():
        assert name.encode() in cubin, name


def test_word_type_needs_alignment_of_pointer_and_strides():
    assert word_type(4, 0x1000, (16, 4)) == "u32"
    assert word_type(16, 0x1000, (32,)) == "u128"
    assert word_type(4, 0x1002, (4,)) == "bytes"
    assert word_type(4, 0x1000, (6,)) == "bytes"
    assert word_type(4, 0x1000, (-8, 4)) == "u32"
    assert word_type(3, 0x1000, (3,)) == "bytes"
    assert word_type(32, 0x1000, (32,)) == "bytes"


def test_index_bits_switches_at_2_31():
    assert index_bits(2**31 - 1) == 32
    assert index_bits(2**31) == 64
    assert index_bits(2**31 + 7) == 64


def test_strided_spec_drops_unit_dims_and_pads():
    spec = StridedSpec.make((1, 3, 1, 4), (99, 16, 7, -4))
    assert (spec.ndim, spec.shape, spec.strides, spec.count) == (2, (3, 4), (16, -4), 12)
    args = spec.dim_args()
    assert len(args) == 2 * MAX_NDIM and all(a.dtype == np.int64 for a in args)
    assert [int(a) for a in args[:MAX_NDIM]] == [3, 4] + [1] * 6
    assert [int(a) for a in args[MAX_NDIM:]] == [16, -4] + [0] * 6
    scalar = StridedSpec.make((), ())
    assert (scalar.ndim, scalar.shape, scalar.count) == (1, (1,), 1)
    assert StridedSpec.make((0, 5), (20, 4)).count == 0
    with pytest.raises(ValueError, match="at most 8"):
        StridedSpec.make((1,) * 9, (1,) * 9)


def _reference_checksum(values: np.ndarray) -> tuple[int, int]:
    """The checksum definition written out element by element, in plain Python ints."""
    mask = 2**64 - 1
    plain = weighted = 0
    flat = np.ascontiguousarray(values).reshape(-1)
    data, size = flat.tobytes(), flat.dtype.itemsize
    for i in range(flat.size):
        raw = data[i * size : (i + 1) * size]
        raw += b"\0" * (-len(raw) % 8)
        word = 0
        for k in range(len(raw) // 8):
            word += int.from_bytes(raw[8 * k : 8 * k + 8], "little") * pow(WORD_MIX, k, 2**64)
        word &= mask
        plain = (plain + word) & mask
        weighted = (weighted + word * (2 * i + 1)) & mask
    return plain, weighted


@pytest.mark.parametrize(
    "values",
    [
        np.arange(10, dtype=np.int8),
        np.array([1.5, -2.25, np.nan], dtype=">f8"),
        (np.arange(12, dtype=np.complex128) * (1 + 2j)).reshape(3, 4),
        np.frombuffer(bytes(range(3 * 7)), dtype="V7"),
        np.frombuffer(bytes(range(2 * 20)), dtype="V20"),
        np.array([True, False, True]),
        np.array([], dtype=np.float32),
    ],
)
def test_host_checksum_matches_its_definition(values):
    assert host_checksum(values) == _reference_checksum(values)


def test_host_checksum_sees_misplaced_elements():
    a = np.arange(100, dtype=np.uint32)
    b = a.copy()
    b[[3, 70]] = b[[70, 3]]
    assert host_checksum(a)[0] == host_checksum(b)[0]
    assert host_checksum(a)[1] != host_checksum(b)[1]


def test_stream_status_vets_handles_without_the_driver():
    buf = ctypes.create_string_buffer(256)
    addr = (ctypes.addressof(buf) + 7) // 8 * 8
    assert stream_status(1) == (True, "legacy default stream")
    assert stream_status(2)[0]
    for bogus in (0, -1, 2**64, 3, 0x8, 0xDEAD0000):
        ok, why = stream_status(bogus)
        assert not ok and why, bogus
    assert stream_status(addr)[0]
    assert _host_readable(addr, 64) and not _host_readable(16, 8)


# -- hostwait: the streams family's delay as a host-side sleep -----------------------------------


@pytest.fixture
def fake_launch(monkeypatch):
    """cuLaunchHostFunc replaced by a recorder that runs the host function at once, with the
    real usleep address: what the driver would call, called here."""
    from caiconform.cuda import hostwait

    calls = []
    address = ctypes.cast(ctypes.CDLL(None).usleep, ctypes.c_void_p).value

    def launch(stream, fn, data):
        calls.append((stream.value, fn, data.value))
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(fn)(data)
        return 0

    monkeypatch.setattr(hostwait, "_entry_points", lambda: (launch, address))
    return calls, address


def test_host_wait_sleeps_in_the_host_function_with_no_python_callback(fake_launch):
    from caiconform.cuda import hostwait

    calls, address = fake_launch
    started = time.perf_counter()
    hostwait.sleep_on_stream(0x1234, 20_000)
    assert time.perf_counter() - started >= 0.02  # the function pointer is usleep itself
    assert calls == [(0x1234, address, 20_000)]


def test_host_wait_splits_long_sleeps_and_maps_stream_zero_to_null(fake_launch, monkeypatch):
    from caiconform.cuda import hostwait

    calls, _ = fake_launch
    monkeypatch.setattr(hostwait, "MAX_CHUNK_US", 4_000)
    hostwait.sleep_on_stream(0, 10_000)
    assert [(stream, us) for stream, _, us in calls] == [
        (None, 4_000),
        (None, 4_000),
        (None, 2_000),
    ]
    with pytest.raises(ValueError, match="wait must be >= 0 us"):
        hostwait.sleep_on_stream(1, -1)


def test_host_wait_failure_names_the_call(monkeypatch):
    from caiconform.cuda import hostwait
    from caiconform.cuda.errors import CUDAError

    pytest.importorskip("cuda.bindings", reason="naming a CUresult needs cuda.bindings")
    monkeypatch.setattr(hostwait, "_entry_points", lambda: (lambda *a: 400, 1))
    with pytest.raises(CUDAError, match="cuLaunchHostFunc failed with CUDA_ERROR_INVALID_HANDLE"):
        hostwait.sleep_on_stream(7, 10)


def test_copy_from_host_lands_before_it_returns_without_waiting_on_other_work(monkeypatch):
    """The copy goes to a non-blocking stream of the current context, made once per context,
    and that stream (not the device, not the legacy stream) is synchronized before it
    returns; a stream of a destroyed context is replaced once."""
    from cuda.bindings import driver

    from caiconform.cuda import memory

    ok = driver.CUresult.CUDA_SUCCESS
    calls: list[tuple] = []
    made = iter(range(100, 200))
    state = {"stale": False}

    def create(flags):
        calls.append(("create", flags))
        return (ok, next(made))

    def copy(dst, src, nbytes, stream):
        calls.append(("copy", int(dst), nbytes, int(stream)))
        if state["stale"]:
            state["stale"] = False
            return (driver.CUresult.CUDA_ERROR_INVALID_HANDLE,)
        return (ok,)

    def sync(stream):
        calls.append(("sync", int(stream)))
        return (ok,)

    monkeypatch.setattr(memory, "_copy_streams", {})
    monkeypatch.setattr(driver, "cuCtxGetCurrent", lambda: (ok, 7))
    monkeypatch.setattr(driver, "cuStreamCreate", create)
    monkeypatch.setattr(driver, "cuMemcpyHtoDAsync", copy)
    monkeypatch.setattr(driver, "cuStreamSynchronize", sync)
    non_blocking = int(driver.CUstream_flags.CU_STREAM_NON_BLOCKING)
    memory.copy_from_host(0x1000, np.arange(4, dtype=np.int32))
    memory.copy_from_host(0x2000, np.arange(2, dtype=np.int8))
    assert calls == [
        ("create", non_blocking),
        ("copy", 0x1000, 16, 100),
        ("sync", 100),
        ("copy", 0x2000, 2, 100),
        ("sync", 100),
    ]
    calls.clear()
    state["stale"] = True
    memory.copy_from_host(0x3000, np.arange(1, dtype=np.int8))
    assert calls == [
        ("copy", 0x3000, 1, 100),
        ("create", non_blocking),
        ("copy", 0x3000, 1, 101),
        ("sync", 101),
    ]
    calls.clear()
    memory.copy_from_host(0x4000, np.empty(0, dtype=np.int8))
    assert calls == []


def test_memset_without_a_stream_is_done_when_it_returns_without_waiting_on_other_work(
    monkeypatch,
):
    """cuMemsetD8 returns before device memory is set (ordered on the legacy stream only), so
    a memset without a stream runs on the context's copy stream, which is synchronized; with a
    stream it is only enqueued there."""
    from cuda.bindings import driver

    from caiconform.cuda import memory

    ok = driver.CUresult.CUDA_SUCCESS
    calls: list[tuple] = []
    monkeypatch.setattr(memory, "_copy_streams", {})
    monkeypatch.setattr(driver, "cuCtxGetCurrent", lambda: (ok, 7))
    monkeypatch.setattr(driver, "cuStreamCreate", lambda flags: (ok, 300))
    monkeypatch.setattr(driver, "cuMemsetD8", lambda *a: calls.append(("legacy",)) or (ok,))
    monkeypatch.setattr(
        driver,
        "cuMemsetD8Async",
        lambda ptr, byte, n, stream: calls.append(("set", int(ptr), byte, n, int(stream))) or (ok,),
    )
    monkeypatch.setattr(
        driver, "cuStreamSynchronize", lambda stream: calls.append(("sync", int(stream))) or (ok,)
    )
    memory.memset(0x1000, 0, 64)
    assert calls == [("set", 0x1000, 0, 64, 300), ("sync", 300)]
    calls.clear()
    memory.memset(0x2000, 7, 8, stream=55)
    assert calls == [("set", 0x2000, 7, 8, 55)]
    calls.clear()
    memory.memset(0x3000, 0, 0)
    assert calls == []
