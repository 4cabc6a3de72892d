"""Adapters and their registry, everything that needs no GPU.

The registry must list adapters without importing any array library, load third-party
adapters from entry points and survive broken ones. The producer machinery shared by the
third-party adapters (host images, stream scenarios) is driven here through an in-memory numpy
backend, so its byte placement and stream choreography are checked without a device.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest

from caiconform.adapters import _scenarios, _staging, registry
from caiconform.adapters.base import CAPABILITIES, Adapter, SkipExchange
from caiconform.spec.layout import Layout, c_strides, f_strides

HEAVY = (
    "torch",
    "cupy",
    "jax",
    "numba",
    "cuda.core",
    "mpi4py",
    "pycuda",
    "warp",
    "rmm",
    "cuda.compute",
    "nvidia.dali",
    "pyarrow",
)


# --- registry -------------------------------------------------------------------------------


def test_listing_and_getting_builtins_imports_no_array_library():
    code = textwrap.dedent(
        f"""
        import sys
        from caiconform.adapters import registry
        names = registry.names()
        for name in registry.BUILTIN:
            registry.get(name)
        loaded = [m for m in {HEAVY!r} if m in sys.modules]
        print(len(names), loaded)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    count, loaded = done.stdout.strip().split(" ", 1)
    assert loaded == "[]", f"got heavy modules {loaded} imported by listing, expected none"
    assert int(count) >= len(registry.BUILTIN)


def test_builtin_adapters_are_named_as_registered_with_known_capabilities():
    for name in registry.BUILTIN:
        adapter = registry.get(name)
        assert isinstance(adapter, Adapter)
        assert adapter.name == name, f"got {adapter.name!r}, expected {name!r}"
        assert adapter.capabilities <= CAPABILITIES, adapter.capabilities - CAPABILITIES
        assert adapter.capabilities & {"produce", "consume", "consume-dlpack"}, (
            f"{name} neither produces nor consumes"
        )


def test_get_returns_one_instance_per_process():
    assert registry.get("cupy") is registry.get("cupy")


def test_unknown_name_is_a_key_error_listing_the_known_ones():
    with pytest.raises(KeyError, match="no adapter named 'nosuch'.*reference"):
        registry.get("nosuch")


FAKE_MODULE = """
from caiconform.adapters.base import Adapter


class FakeAdapter(Adapter):
    name = "fake"
    module = "fake_caiadapter"
    capabilities = frozenset({"consume"})

    def available(self):
        return True, ""

    def consume(self, obj):
        return obj


class Exploding(Adapter):
    def __init__(self):
        raise RuntimeError("constructor exploded")


NOT_AN_ADAPTER = 42
"""

ENTRY_POINTS = """
[caiconform.adapters]
fake = fake_caiadapter:FakeAdapter
renamed = fake_caiadapter:FakeAdapter
broken = nonexistent_caiadapter_module:Adapter
notadapter = fake_caiadapter:NOT_AN_ADAPTER
exploding = fake_caiadapter:Exploding
cupy = fake_caiadapter:FakeAdapter
"""


@pytest.fixture
def fake_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A distribution on sys.path declaring adapters in the caiconform.adapters group; the
    built-ins are narrowed to two so availability checks import nothing heavy."""
    (tmp_path / "fake_caiadapter.py").write_text(FAKE_MODULE)
    info = tmp_path / "fake_caiadapter-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-caiadapter\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "BUILTIN", {k: registry.BUILTIN[k] for k in ("cupy", "pycuda")})
    registry.clear_cache()
    yield
    registry.clear_cache()
    sys.modules.pop("fake_caiadapter", None)


def _installed_elsewhere() -> set[str]:
    """Adapter names other installed distributions declare (a third-party library's adapter
    registered as docs/adapters.md describes), which the registry lists too."""
    from importlib import metadata

    return {
        ep.name
        for ep in metadata.entry_points(group=registry.ENTRY_POINT_GROUP)
        if ep.dist is None or ep.dist.name != "fake-caiadapter"
    } - set(registry.BUILTIN)


def test_entry_point_adapters_are_listed_and_loaded(fake_distribution):
    names = registry.names()
    assert names[:2] == ["cupy", "pycuda"]
    fakes = {"fake", "renamed", "broken", "notadapter", "exploding"}
    assert set(names[2:]) == fakes | _installed_elsewhere()
    assert fakes <= set(names[2:])
    fake = registry.get("fake")
    assert type(fake).__name__ == "FakeAdapter"
    assert fake.available() == (True, "")
    assert registry.get("renamed").name == "renamed"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("broken", "failed to load: ModuleNotFoundError"),
        ("notadapter", "is 42, not an Adapter subclass"),
        ("exploding", "could not be constructed: constructor exploded"),
    ],
)
def test_broken_entry_point_is_unavailable_with_its_reason(fake_distribution, name, reason):
    adapter = registry.get(name)
    ok, why = adapter.available()
    assert not ok
    assert reason in why, f"got {why!r}, expected it to contain {reason!r}"
    with pytest.raises(SkipExchange, match=reason):
        adapter.consume(object())


@pytest.mark.parametrize("pycuda_importable", [False, True], ids=["pycuda-absent", "pycuda-here"])
def test_available_names_skip_broken_and_unavailable_adapters(
    fake_distribution, monkeypatch, pycuda_importable
):
    # whether pycuda (and a GPU) is here or not, the built-in adapter's module is made to import
    # (a stub, on a faked GPU) or to fail (None in sys.modules), so both answers are asked for
    # on every machine
    import caiconform.cuda.device

    module = registry.get("pycuda").module
    monkeypatch.setitem(
        sys.modules, module, types.ModuleType(module) if pycuda_importable else None
    )
    monkeypatch.setattr(caiconform.cuda.device, "gpu_available", lambda: (True, ""))
    available = registry.available_names()
    assert "fake" in available and "renamed" in available
    assert not {"broken", "notadapter", "exploding"} & set(available)
    assert ("pycuda" in available) is pycuda_importable, available
    reasons = registry.unavailable()
    if pycuda_importable:
        assert "pycuda" not in reasons, reasons
    else:
        assert "pycuda" in reasons and "not importable" in reasons["pycuda"], reasons
    assert "shadowed by the built-in" in reasons["cupy (entry point)"]


def test_builtin_wins_over_a_colliding_entry_point(fake_distribution):
    assert registry.names().count("cupy") == 1
    assert type(registry.get("cupy")).__name__ == "CupyAdapter"


# --- host images and produce requests -------------------------------------------------------


def _read_back(image: np.ndarray, layout: Layout, dtype: np.dtype) -> np.ndarray:
    strides = layout.effective_strides(dtype.itemsize)
    return np.ndarray(layout.shape, dtype, buffer=image, offset=layout.offset, strides=strides)


@pytest.mark.parametrize(
    "layout",
    [
        Layout((3, 4)),
        Layout((3, 4), strides=f_strides((3, 4), 4), kind="F"),
        Layout((3, 4), strides=(40, 8), offset=12, pad=8, kind="sliced"),
        Layout((3, 4), strides=(-16, 4), offset=32, kind="negative"),
        Layout((2, 3), strides=(15, 5), kind="odd", portable=False),
        Layout((), kind="C"),
    ],
)
def test_host_image_places_every_value_at_its_byte_offset(layout):
    dtype = np.dtype("<f4")
    values = np.arange(int(np.prod(layout.shape)), dtype=dtype).reshape(layout.shape) + 1
    image = _staging.host_image(values, layout, dtype)
    assert image.dtype == np.uint8
    assert image.size == layout.allocation_bytes(dtype.itemsize)
    np.testing.assert_array_equal(_read_back(image, layout, dtype), values)


def test_host_image_of_a_broadcast_layout_holds_the_shared_row():
    dtype = np.dtype("<i2")
    layout = Layout((4, 3), strides=(0, 2), kind="broadcast")
    values = np.broadcast_to(np.array([7, 8, 9], dtype=dtype), (4, 3))
    image = _staging.host_image(values, layout, dtype)
    assert image.size == 6
    np.testing.assert_array_equal(_read_back(image, layout, dtype), values)


def test_pending_image_is_sentinel_then_final_and_differs_in_every_byte():
    image = np.array([0, 1, 0xFF, 0x5A], dtype=np.uint8)
    pending = _staging.pending_image(image)
    np.testing.assert_array_equal(pending[4:], image)
    assert np.all(pending[:4] != image)


@pytest.mark.parametrize("nbytes", [1, 2, 7, 64])
def test_split_bytes_covers_the_allocation_once(nbytes):
    (a, b), (c, d) = _staging.split_bytes(nbytes)
    assert a == 0 and b == c and d == nbytes, f"got {(a, b)}, {(c, d)} for {nbytes} bytes"


def test_check_request_converts_values_and_returns_the_dtype():
    values, dtype = _staging.check_request(
        "lib", [[1, 2]], Layout((1, 2)), "<i2", "none", frozenset({"i2"})
    )
    assert dtype == np.dtype("<i2") and values.dtype == dtype


@pytest.mark.parametrize(
    ("typestr", "scenario", "shape", "error", "match"),
    [
        ("<f4", "sometimes", (2,), ValueError, "unknown stream scenario 'sometimes'"),
        ("<q9", "none", (2,), ValueError, "not a numpy type string"),
        ("<f4", "none", (3,), ValueError, r"values have shape \(2,\), the layout has shape \(3,\)"),
        (">f4", "none", (2,), SkipExchange, "byte-swapped"),
        ("<c8", "none", (2,), SkipExchange, "no dtype for typestr '<c8'"),
    ],
)
def test_check_request_rejects_with_a_clear_reason(typestr, scenario, shape, error, match):
    with pytest.raises(error, match=match):
        _staging.check_request(
            "lib", np.zeros(2), Layout(shape), typestr, scenario, frozenset({"f4"})
        )


def test_is_plain_c():
    assert _staging.is_plain_c(Layout((2, 3)), 4)
    assert _staging.is_plain_c(Layout((2, 3), strides=c_strides((2, 3), 4)), 4)
    assert _staging.is_plain_c(Layout((1, 3), strides=(999, 4)), 4)
    assert not _staging.is_plain_c(Layout((2, 3), offset=4), 4)
    assert not _staging.is_plain_c(Layout((2, 3), strides=f_strides((2, 3), 4)), 4)


def test_cai_only_exposes_the_cai_alone_and_reads_it_at_each_access():
    class Producer:
        count = 0

        @property
        def __cuda_array_interface__(self):
            Producer.count += 1
            return {"shape": (Producer.count,)}

        def __dlpack__(self):
            raise AssertionError("never called")

    wrapped = _staging.cai_only(Producer())
    assert not hasattr(wrapped, "__dlpack__")
    assert wrapped.__cuda_array_interface__ == {"shape": (1,)}
    assert wrapped.__cuda_array_interface__ == {"shape": (2,)}
    assert _staging.cai_only(wrapped) is wrapped


# --- stream scenarios over an in-memory backend -----------------------------------------------


class HostBackend:
    """A numpy 'device': streams are names, copies happen at once, and every call is logged."""

    library = "host"

    def __init__(self) -> None:
        self.log: list[tuple] = []

    def upload(self, image):
        self.log.append(("upload", image.size))
        return image.copy()

    def synchronize(self):
        self.log.append(("synchronize",))

    def stream(self, kind):
        self.log.append(("stream", kind))
        return f"{kind}-{sum(1 for e in self.log if e[0] == 'stream')}"

    def handle(self, stream):
        return {"legacy": 1, "per-thread": 2}.get(stream.rsplit("-", 1)[0], 1000 + len(stream))

    def copy_range(self, buf, lo, hi, nbytes, stream):
        self.log.append(("copy", lo, hi, stream))
        buf[lo:hi] = buf[nbytes + lo : nbytes + hi]

    def wait(self, waiter, streams):
        self.log.append(("wait", waiter, tuple(streams)))

    def view(self, buf, layout, dtype, stream):
        self.log.append(("view", stream))
        return _read_back(buf, layout, dtype)


@pytest.fixture
def spins(monkeypatch):
    launched: list[int] = []
    monkeypatch.setattr(_scenarios, "launch_spin", launched.append)
    return launched


LAYOUT = Layout((3, 4), strides=(40, 8), offset=12, kind="sliced")
DTYPE = np.dtype("<i2")
VALUES = (np.arange(12, dtype=DTYPE) * 3 - 7).reshape(3, 4)


def _events(log, kind):
    return [e for e in log if e[0] == kind]


def test_scenario_none_uploads_the_final_image_and_synchronizes(spins):
    backend = HostBackend()
    result = _scenarios.produce_staged(backend, VALUES, LAYOUT, DTYPE, "none")
    np.testing.assert_array_equal(result, VALUES)
    assert backend.log[0] == ("upload", LAYOUT.allocation_bytes(2))
    assert ("synchronize",) in backend.log and spins == []
    assert _events(backend.log, "view") == [("view", None)]


@pytest.mark.parametrize(
    ("scenario", "kind", "handle", "exported"),
    [
        ("pending", "side", None, True),
        ("legacy", "legacy", 1, True),
        ("per-thread", "per-thread", 2, True),
        ("unsynced", "unsynced", None, False),
    ],
)
def test_single_stream_scenarios_spin_then_write_on_that_stream(
    spins, scenario, kind, handle, exported
):
    backend = HostBackend()
    result = _scenarios.produce_staged(backend, VALUES, LAYOUT, DTYPE, scenario)
    np.testing.assert_array_equal(result, VALUES)
    nbytes = LAYOUT.allocation_bytes(2)
    stream = f"{kind}-1"
    assert backend.log[1] == ("upload", 2 * nbytes), "sentinel and final image go up together"
    assert spins == [backend.handle(stream)]
    if handle is not None:
        assert spins == [handle]
    assert _events(backend.log, "copy") == [("copy", 0, nbytes, stream)]
    assert _events(backend.log, "view") == [("view", stream if exported else None)]
    order = [e[0] for e in backend.log]
    assert order.index("synchronize") < order.index("copy"), "sentinel must be in place first"


def test_multi_stream_writes_halves_on_two_streams_and_exports_a_waiting_third(spins):
    backend = HostBackend()
    result = _scenarios.produce_staged(backend, VALUES, LAYOUT, DTYPE, "multi-stream")
    np.testing.assert_array_equal(result, VALUES)
    nbytes = LAYOUT.allocation_bytes(2)
    (lo1, hi1), (lo2, hi2) = _staging.split_bytes(nbytes)
    assert _events(backend.log, "copy") == [
        ("copy", lo1, hi1, "side-1"),
        ("copy", lo2, hi2, "side-2"),
    ]
    assert len(spins) == 2
    assert _events(backend.log, "wait") == [("wait", "export-3", ("side-1", "side-2"))]
    assert _events(backend.log, "view") == [("view", "export-3")]


def test_without_the_final_write_the_consumer_would_read_the_sentinel(spins, monkeypatch):
    backend = HostBackend()
    monkeypatch.setattr(backend, "copy_range", lambda *args: None)
    result = _scenarios.produce_staged(backend, VALUES, LAYOUT, DTYPE, "pending")
    assert np.all(result != VALUES), "every element of the sentinel differs from its value"


def test_missing_spin_helper_is_a_skip_not_an_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "caiconform.cuda", types.ModuleType("caiconform.cuda"))
    with pytest.raises(SkipExchange, match=r"caiconform\.cuda\.spin"):
        _scenarios.launch_spin(1234)


# --- dtype tables and library-specific limits -------------------------------------------------


def test_dtype_keys_are_numpy_types_of_that_size():
    for key in _staging.ALL_DTYPE_KEYS:
        dtype = np.dtype(key)
        assert _staging.dtype_key(dtype) == key


def test_torch_table_follows_the_installed_version():
    from caiconform.adapters.torch_adapter import TORCH_DTYPES, supported_keys
    from caiconform.spec.dtypes import OPAQUE

    assert set(TORCH_DTYPES) == set(_staging.ALL_DTYPE_KEYS) | set(OPAQUE)
    old_torch = types.SimpleNamespace(
        **{attr: object() for attr in TORCH_DTYPES.values() if attr not in ("uint16", "uint32")}
    )
    keys = supported_keys(old_torch)
    assert "u2" not in keys and "u4" not in keys and "u8" in keys and "c8" in keys


@pytest.mark.parametrize(
    ("layout", "match"),
    [
        (Layout((3,), strides=(-4,), offset=8, kind="negative"), "negative strides"),
        (Layout((3,), strides=(6,), kind="odd", portable=False), "not multiples"),
        (Layout((3,), offset=2, kind="sliced"), "not multiples"),
    ],
)
def test_torch_refuses_layouts_it_cannot_express(layout, match):
    from caiconform.adapters.torch_adapter import _check_layout

    with pytest.raises(SkipExchange, match=match):
        _check_layout(layout, 4)


def test_warp_has_no_complex_types():
    from caiconform.adapters.warp_adapter import SUPPORTED

    assert "c8" not in SUPPORTED and "c16" not in SUPPORTED and "f2" in SUPPORTED


@pytest.mark.parametrize(
    ("layout", "scenario", "match"),
    [
        (Layout((2, 3), strides=f_strides((2, 3), 4), kind="F"), "none", "C-contiguous"),
        (Layout((2, 3), offset=4, kind="sliced"), "none", "C-contiguous"),
        (Layout((2, 3)), "multi-stream", "no streams"),
    ],
)
def test_jax_skips_what_jax_arrays_cannot_be_before_importing_jax(layout, scenario, match):
    from caiconform.adapters.jax_adapter import JaxAdapter

    with pytest.raises(SkipExchange, match=match):
        JaxAdapter().produce(np.zeros((2, 3)), layout, "<f4", scenario)


@pytest.mark.parametrize(("spin", "steps"), [(None, 64), ("20000", 64), ("2000", 6), ("1", 1)])
def test_jax_pending_delay_follows_the_calibrated_spin(monkeypatch, spin, steps):
    """JAX's pending work is matrix products that hold the whole GPU: a run that calibrated
    a 2 ms spin runs a tenth of them, not the uncalibrated count (issue 43)."""
    from caiconform.adapters import _staging
    from caiconform.adapters.jax_adapter import delay_steps

    monkeypatch.delenv(_staging._SPIN_FILE_ENV, raising=False)
    if spin is None:
        monkeypatch.delenv(_staging._SPIN_ENV, raising=False)
    else:
        monkeypatch.setenv(_staging._SPIN_ENV, spin)
    assert delay_steps() == steps


def test_numba_kernel_launch_covers_the_shape():
    from caiconform.adapters.numba_adapter import launch_shape

    assert launch_shape(()) == ((1,), (1,))
    assert launch_shape((300,)) == ((3,), (128,))
    grid, block = launch_shape((17, 5, 9))
    assert all(g * b >= n for g, b, n in zip(grid, block, (17, 5, 9), strict=True))


@pytest.mark.parametrize(
    ("stdout", "returncode", "ok", "reason"),
    [
        ("Open MPI v5\ncuda-aware\n", 0, True, ""),
        ("Open MPI v5\nnot-cuda-aware\n", 0, False, "Open MPI v5 is not CUDA-aware"),
        ("Open MPI v4\nno-query\n", 0, False, "Open MPI v4 offers no Query_cuda_support"),
        ("", 1, False, "could not initialise MPI"),
    ],
)
def test_mpi4py_availability_needs_confirmed_cuda_awareness(
    monkeypatch, stdout, returncode, ok, reason
):
    from caiconform.adapters import mpi4py_adapter

    done = subprocess.CompletedProcess([], returncode, stdout=stdout, stderr="boom\n")
    monkeypatch.setattr(mpi4py_adapter.subprocess, "run", lambda *a, **k: done)
    got_ok, why = mpi4py_adapter._probe.__wrapped__()
    assert got_ok is ok and reason in why


# --- the reference adapter's own logic --------------------------------------------------------


@pytest.fixture
def fake_reference(monkeypatch):
    """Stand-ins for the reference producer and consumer modules that record their calls."""
    calls: dict = {}
    producer = types.ModuleType("caiconform.reference.producer")
    consumer = types.ModuleType("caiconform.reference.consumer")

    def reference_array(*args, **kwargs):
        calls["produce"] = (args, kwargs)
        return "array"

    def consume(obj, **kwargs):
        calls["consume"] = (obj, kwargs)
        return types.SimpleNamespace(values="values")

    producer.ReferenceArray = reference_array
    consumer.consume = consume
    monkeypatch.setitem(sys.modules, "caiconform.reference.producer", producer)
    monkeypatch.setitem(sys.modules, "caiconform.reference.consumer", consumer)
    return calls


def test_reference_adapter_passes_every_option_through(fake_reference):
    from caiconform.adapters.reference import ReferenceAdapter

    adapter = ReferenceAdapter()
    values, mask = np.ones((2, 2)), np.ones((2, 2), bool)
    obj = adapter.produce(
        values, Layout((2, 2)), "<f8", "pending", version=2, readonly=True, mask=mask
    )
    assert obj == "array"
    args, kwargs = fake_reference["produce"]
    assert args[1:] == (Layout((2, 2)), "<f8")
    assert kwargs == {
        "version": 2,
        "readonly": True,
        "mask": mask,
        "stream_scenario": "pending",
    }
    assert adapter.consume("obj") == "values"
    assert fake_reference["consume"] == ("obj", {"sync": "host"})


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"stream_scenario": "later"}, "unknown stream scenario"),
        ({"version": 4}, "CAI version must be one of"),
        ({"mask": np.ones(3, bool)}, r"mask has shape \(3,\)"),
        ({"layout": Layout((5,))}, r"the layout has shape \(5,\)"),
    ],
)
def test_reference_adapter_rejects_bad_requests_before_touching_cuda(fake_reference, kwargs, match):
    from caiconform.adapters.reference import ReferenceAdapter

    layout = kwargs.pop("layout", Layout((2, 2)))
    with pytest.raises(ValueError, match=match):
        ReferenceAdapter().produce(np.ones((2, 2)), layout, "<f4", **kwargs)
    assert "produce" not in fake_reference


def test_gpu_library_is_available_only_where_the_driver_sees_a_device(monkeypatch):
    from caiconform.cuda import device

    monkeypatch.setattr(device, "gpu_available", lambda: (False, "no NVIDIA driver"))
    assert _staging.on_gpu((True, "")) == (False, "no usable GPU: no NVIDIA driver")
    assert _staging.on_gpu((False, "cupy not importable")) == (False, "cupy not importable")
    monkeypatch.setattr(device, "gpu_available", lambda: (True, ""))
    assert _staging.on_gpu((True, "")) == (True, "")


def test_numpy_shim_restores_only_the_removed_alias(monkeypatch):
    from caiconform.adapters import numba_adapter

    monkeypatch.setattr(numba_adapter, "NUMPY_SHIM", [])
    if hasattr(np, "row_stack"):
        monkeypatch.delattr(np, "row_stack")
    assert numba_adapter.numpy_shim() == "np.row_stack = np.vstack"
    assert np.row_stack is np.vstack
    assert numba_adapter.numpy_shim() == "np.row_stack = np.vstack"  # once per process
    monkeypatch.setattr(numba_adapter, "NUMPY_SHIM", [])
    assert numba_adapter.numpy_shim() == ""  # nothing to do once the alias exists


def test_shim_needed_reports_without_touching_numpy(monkeypatch):
    from caiconform.adapters import numba_adapter

    monkeypatch.setattr(numba_adapter, "NUMPY_SHIM", [])
    if hasattr(np, "row_stack"):
        monkeypatch.delattr(np, "row_stack")
    assert numba_adapter.shim_needed() == "np.row_stack = np.vstack"
    assert not hasattr(np, "row_stack"), "shim_needed restored the alias; only numpy_shim may"
    monkeypatch.setattr(np, "row_stack", np.vstack, raising=False)
    assert numba_adapter.shim_needed() == ""


def test_numba_kernel_version_states_the_shim_only_when_it_acts(monkeypatch):
    from caiconform.adapters import numba_adapter

    adapter = numba_adapter.NumbaKernelAdapter()
    monkeypatch.setattr(numba_adapter.NumbaAdapter, "version", lambda self: "0.30.4")
    monkeypatch.setattr(numba_adapter, "NUMPY_SHIM", ["np.row_stack = np.vstack"])
    assert adapter.version() == "0.30.4+shim(np.row_stack = np.vstack)"
    monkeypatch.setattr(numba_adapter, "NUMPY_SHIM", [""])
    assert adapter.version() == "0.30.4"


def test_importing_the_numba_adapters_leaves_numpy_alone():
    code = textwrap.dedent(
        """
        import numpy as np
        if hasattr(np, "row_stack"):
            del np.row_stack
        from caiconform.adapters import registry
        registry.get("numba-kernel").version()
        print(hasattr(np, "row_stack"))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False", "the numpy shim acted before any kernel was compiled"


ADOPTERS = {
    # name: (capabilities, module imported by available())
    "pycuda": ({"produce", "consume", "kernel"}, "pycuda.autoprimaryctx"),
    "warp": ({"produce", "consume", "dlpack", "consume-dlpack"}, "warp"),
    "rmm": ({"produce", "consume"}, "rmm"),
    "cuda.cccl": ({"consume", "kernel"}, "cuda.compute"),
    "dali": ({"produce", "consume"}, "nvidia.dali"),
    "pyarrow": ({"consume"}, "pyarrow.cuda"),
    "mpi4py": ({"consume", "consume-dlpack"}, "mpi4py"),
    "numba-kernel": ({"consume", "write", "kernel", "consume-dlpack"}, "numba.cuda"),
}


@pytest.mark.parametrize("name", sorted(ADOPTERS))
def test_every_adopter_the_spec_names_is_registered_with_its_roles(name):
    capabilities, module = ADOPTERS[name]
    adapter = registry.get(name)
    assert adapter.capabilities == frozenset(capabilities), (
        f"got {sorted(adapter.capabilities)}, expected {sorted(capabilities)} [{name}]"
    )
    assert adapter.module == module


@pytest.mark.parametrize("name", ["cuda.cccl", "dali", "pyarrow", "pycuda", "warp", "rmm"])
def test_a_missing_adopter_is_unavailable_with_the_import_failure(name, monkeypatch):
    import importlib

    adapter = registry.get(name)
    real = importlib.import_module

    def refuse(module, *args, **kwargs):
        if module == adapter.module:
            raise ModuleNotFoundError(f"No module named {module!r}")
        return real(module, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", refuse)
    ok, why = adapter.available()
    assert not ok
    assert f"{adapter.module} not importable: ModuleNotFoundError" in why, why


def test_pyarrow_without_cuda_says_the_build_lacks_it(monkeypatch):
    from caiconform.adapters import pyarrow_adapter
    from caiconform.adapters.base import Adapter as Base

    adapter = pyarrow_adapter.PyarrowAdapter()
    monkeypatch.setattr(
        Base, "available", lambda self: (False, "pyarrow.cuda not importable: ImportError: x")
    )
    monkeypatch.setattr(pyarrow_adapter.PyarrowAdapter, "version", lambda self: "25.0.1")
    assert adapter.available() == (
        False,
        "pyarrow 25.0.1 is built without CUDA support: pyarrow.cuda not importable: ImportError: x",
    )


def test_pycuda_gather_strides_default_to_c_order():
    from caiconform.adapters.pycuda_adapter import c_strides_of

    assert c_strides_of((3, 4, 5), 2) == (40, 10, 2)
    assert c_strides_of((), 8) == ()
    assert c_strides_of((0, 3), 4) == (12, 4)


def test_cccl_output_buffer_describes_a_flat_array_of_the_input_type():
    from caiconform.adapters.cccl_adapter import _Flat

    desc = {"shape": (2, 3), "typestr": "|V16", "descr": [("", "|V16")], "data": (1, False)}
    flat = _Flat(0x1000, 6, desc).__cuda_array_interface__
    assert flat == {
        "shape": (6,),
        "typestr": "|V16",
        "descr": [("", "|V16")],
        "data": (0x1000, False),
        "strides": None,
        "version": 3,
    }


def test_dali_has_no_complex_types():
    from caiconform.adapters.dali_adapter import SUPPORTED

    assert not {k for k in SUPPORTED if k.startswith("c")}
    assert {"b1", "i4", "u8", "f2", "f8"} <= SUPPORTED


def test_cccl_read_back_order_follows_fortran_strides_only():
    from caiconform.adapters.cccl_adapter import _f_contiguous

    assert _f_contiguous((3, 4), (4, 12), 4)
    assert not _f_contiguous((3, 4), (16, 4), 4)
    assert not _f_contiguous((3, 4), None, 4)
    assert not _f_contiguous((3, 1), (4, 4), 4)  # one axis: C and F at once
    assert not _f_contiguous((3, 4), (72, 8), 4)  # neither (sliced)


# --- a missing driver is a skip; the documented template (issue 26, item 5) ------------------


class _DriverlessConsumer(Adapter):
    """A GPU-free library's adapter on a machine without the NVIDIA driver."""

    name = "driverless"
    capabilities = frozenset({"consume"})
    needs_gpu = False

    def available(self) -> tuple[bool, str]:
        return True, ""

    def produce(self, values, layout, typestr, stream_scenario="none"):
        raise SkipExchange("consumer only")

    def consume(self, obj):
        try:
            raise OSError("libcuda.so.1: cannot open shared object file")
        except OSError as exc:
            raise RuntimeError("cuInit failed: no NVIDIA driver") from exc


def test_a_consumer_missing_the_driver_is_a_skip_not_a_rejection(monkeypatch):
    from caiconform.checks import _exchange
    from caiconform.cuda import device

    monkeypatch.setattr(device, "gpu_available", lambda: (False, "no NVIDIA driver: absent"))
    monkeypatch.setattr(_exchange, "adapter", lambda name: _DriverlessConsumer())
    with pytest.raises(SkipExchange) as skipped:
        _exchange.consume_with("driverless", object())
    assert str(skipped.value) == (
        "consumer driverless cannot run here: no NVIDIA driver: absent "
        "(RuntimeError: cuInit failed: no NVIDIA driver)"
    )
    # where the driver works, the same exception is the library's own answer
    monkeypatch.setattr(device, "gpu_available", lambda: (True, ""))
    values, exc = _exchange.consume_with("driverless", object())
    assert values is None and str(exc) == "cuInit failed: no NVIDIA driver"


def _raises_driver_error(params, producer, consumer):
    raise RuntimeError("producer p could not build the example") from RuntimeError(
        "CUDA driver version is insufficient: cuInit failed"
    )


def test_an_example_ended_by_a_missing_driver_is_a_skip_with_that_reason(monkeypatch):
    from caiconform.cuda import device
    from caiconform.runner import worker

    monkeypatch.setattr(device, "gpu_available", lambda: (False, "no NVIDIA driver: absent"))
    result, _ = worker.run_example(f"{__name__}:_raises_driver_error", {}, "p", None)
    assert (result.outcome, result.message) == (
        "skip",
        "cannot run here: no NVIDIA driver: absent (RuntimeError: CUDA driver version is "
        "insufficient: cuInit failed)",
    )
    monkeypatch.setattr(device, "gpu_available", lambda: (True, ""))
    result, _ = worker.run_example(f"{__name__}:_raises_driver_error", {}, "p", None)
    assert result.outcome == "rejected"


def _documented_adapter() -> type:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "adapters.md").read_text()
    (block,) = [b for b in doc.split("```python\n")[1:] if "class MyLibAdapter" in b]
    namespace: dict = {}
    exec(block.split("```")[0], namespace)
    return namespace["MyLibAdapter"]


@pytest.mark.parametrize("typestr", ["bfloat16", "float8_e4m3fn", "structured", "<c8", "|b1"])
def test_the_documented_template_skips_what_its_library_has_no_arrays_for(typestr, monkeypatch):
    monkeypatch.setitem(sys.modules, "mylib", types.SimpleNamespace(asarray=np.asarray))
    adapter = _documented_adapter()()
    layout = Layout((2,))
    with pytest.raises(SkipExchange, match=f"mylib has no {typestr} arrays"):
        adapter.produce(np.zeros(2, dtype="<f4"), layout, typestr)
    assert adapter.produce(np.arange(2, dtype="<f4"), layout, "<f4").tolist() == [0.0, 1.0]


def test_cccl_skips_element_types_its_identity_operator_refuses(monkeypatch):
    """cuda.compute's OpKind.IDENTITY refuses opaque element types ('Provide a custom operator
    instead'): a refusal of caiconform's choice of operator, not of the export, so the
    exchange is skipped, never filed as cuda.cccl refusing a valid export; what cuda.compute
    raises before it gets there (a KeyError on a missing key) is its own answer and stands
    [CAI-CONSUMER-READS-DESCRIBED]."""
    from caiconform.adapters import _cccl_builds
    from caiconform.adapters.base import SkipExchange
    from caiconform.adapters.cccl_adapter import CcclAdapter
    from caiconform.cuda import memory

    class Exported:
        __cuda_array_interface__ = {
            "shape": (2,),
            "typestr": "<c8",
            "data": (1 << 40, False),
            "version": 3,
        }

    class Buffer:
        def __init__(self, size):
            self.ptr = 1 << 41

    answer: list[BaseException] = []

    def identity(*args, **kwargs):
        raise answer[0]

    monkeypatch.setattr(memory, "DeviceBuffer", Buffer)
    monkeypatch.setattr(_cccl_builds, "unary_identity", identity)
    answer[:] = [
        TypeError(
            "OpKind.IDENTITY is not supported for struct or other opaque types (complex64). "
            "Provide a custom operator instead."
        )
    ]
    with pytest.raises(SkipExchange, match="OpKind.IDENTITY takes no opaque element type"):
        CcclAdapter().consume(Exported())
    answer[:] = [KeyError("strides")]
    with pytest.raises(KeyError):
        CcclAdapter().consume(Exported())


def test_jax_pending_chain_is_compiled_once_whatever_the_shape(monkeypatch):
    """The pending delay's chain of products is compiled once, its matrix an argument (not a
    constant XLA folds while compiling): new shapes and dtypes compile only the select (issue
    43). Runs wherever jax is installed (its CPU backend will do)."""
    jax = pytest.importorskip("jax", reason="jax is not installed")
    from caiconform.adapters import _staging, jax_adapter

    monkeypatch.setenv(_staging._SPIN_ENV, "1")  # one product: quick on a CPU
    monkeypatch.setattr(jax_adapter, "_DELAY_N", 64)
    monkeypatch.setattr(jax_adapter, "_delayed_fns", {})
    for shape, dtype in [((3,), np.float32), ((2, 5), np.int16), ((4, 1, 2), np.bool_)]:
        values = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
        out = jax_adapter._delayed(jax)(jax.numpy.asarray(values))
        np.testing.assert_array_equal(np.asarray(out), values)
    ((chain, select),) = jax_adapter._delayed_fns.values()
    assert chain.func._cache_size() == 1
    assert select._cache_size() == 3


def test_jax_compiles_go_to_a_cache_the_runs_processes_share(tmp_path, monkeypatch):
    """JAX's persistent compilation cache in CAICONFORM_JAX_CACHE's directory, every compile
    kept: a worker child replaced after a crash reads what an earlier one compiled."""
    pytest.importorskip("jax", reason="jax is not installed")
    from caiconform.adapters import jax_adapter

    monkeypatch.setenv(jax_adapter.CACHE_ENV, str(tmp_path / "jax"))
    jax = jax_adapter._import_jax()
    try:
        assert jax.config.jax_compilation_cache_dir == str(tmp_path / "jax")
        assert jax.config.jax_persistent_cache_min_compile_time_secs == 0.0
        monkeypatch.setenv(jax_adapter.CACHE_ENV, str(tmp_path / "other"))
        jax_adapter._import_jax()  # a cache already set (the user's) is kept
        assert jax.config.jax_compilation_cache_dir == str(tmp_path / "jax")
    finally:
        jax.config.update("jax_compilation_cache_dir", None)
