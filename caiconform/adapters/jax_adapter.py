"""JAX as a CAI producer (single-device GPU arrays) and consumer (`jnp.asarray(obj)`).

What JAX does, read in `jax/_src/array.py` and `jax/_src/numpy/lax_numpy.py`:
- export: `ArrayImpl.__cuda_array_interface__` raises ValueError unless the array has exactly
  one shard ("supported only for unsharded arrays"), then returns the single buffer's CAI,
  built in C++ (jaxlib); we record what that dict holds on the installed version;
- import: `jnp.array` / `jnp.asarray` check `__jax_array__`, then `__cuda_array_interface__`:
  the dict goes to `cuda_array_interface_to_buffer(cai=..., gpu_backend=..., device_id=...)`
  with the device ordinal of `data[0]` looked up by the CUDA plugin. So JAX does import CAI
  objects directly, not only through DLPack.

JAX arrays are immutable, own their buffers and are always laid out C-contiguously, so the
producer covers C layouts at offset 0 only. JAX exposes no streams to its users; its one way to
leave work pending is asynchronous dispatch, which is the `pending` scenario here: the array is
the result of a jitted computation (a chain of matrix products that delays it by milliseconds)
still running when its interface is read, with no `block_until_ready`. Other scenarios cannot be
expressed (SkipExchange with the reason). bfloat16 and the float8 formats are exchanged as
`ml_dtypes` arrays (JAX's own dtypes); what JAX exports for them is recorded, not assumed.

Two settings are made before JAX is first imported in the process, as users of JAX next to
other GPU libraries do: XLA_PYTHON_CLIENT_PREALLOCATE=false (by default JAX takes 75% of the
device memory at start-up, starving the other libraries in the same worker), and
`jax_enable_x64` (otherwise 64-bit values are silently narrowed to 32 bits).
"""

from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np

from caiconform.adapters import _staging
from caiconform.adapters._repro import Array, Pending, Repro, Snip
from caiconform.adapters.base import Adapter, SkipExchange
from caiconform.spec.layout import Layout

__all__ = ["JaxAdapter", "SUPPORTED"]

#: with x64 enabled JAX holds every numeric numpy dtype, float16 included, and the ml_dtypes
#: types (bfloat16, float8).
SUPPORTED = frozenset(_staging.ALL_DTYPE_KEYS) | {"bfloat16", "float8_e4m3fn", "float8_e5m2"}
#: matrix side and product count of the `pending` scenario's delay at the uncalibrated spin
#: (`_staging.SPIN_US`); a run's calibrated spin scales the count (`delay_steps`), as the other
#: producers' pending work is the calibrated spin itself. The products hold the whole GPU, every
#: other process's kernels waiting for their time slice (docs/performance.md, "Figures behind
#: the code")
_DELAY_N, _DELAY_STEPS = 4096, 64


#: where JAX keeps what it compiled (its persistent compilation cache), for every worker of a
#: run; default `<tempdir>/caiconform-jax-<uid>` (`diskcache.cache_dir`)
CACHE_ENV = "CAICONFORM_JAX_CACHE"
#: JAX's settings of that cache: every compile kept, however quick
_CACHE_SETTINGS = (
    ("jax_persistent_cache_min_compile_time_secs", 0.0),
    ("jax_persistent_cache_min_entry_size_bytes", 0),
)


def _import_jax() -> Any:
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax

    jax.config.update("jax_enable_x64", True)
    _share_compiles(jax)
    return jax


def _share_compiles(jax: Any) -> None:
    """JAX's persistent compilation cache in `CACHE_ENV`'s directory: without it a worker
    child replaced after a crash compiles the pending delay's chain and each select again
    (docs/performance.md); with it a run compiles each once. What runs is what JAX compiled;
    a JAX without these settings keeps its own."""
    from caiconform.diskcache import cache_dir

    try:
        if jax.config.jax_compilation_cache_dir:  # the user's own cache is kept
            return
        jax.config.update("jax_compilation_cache_dir", str(cache_dir(CACHE_ENV, "jax")))
        for name, value in _CACHE_SETTINGS:
            jax.config.update(name, value)
    except (AttributeError, KeyError, ValueError):  # a JAX without the persistent cache
        pass


#: steps -> (the chain of products, the select that waits for it), jitted once per process
_delayed_fns: dict[int, tuple[Any, Any]] = {}


def delay_steps() -> int:
    """The matrix products of the `pending` delay: `_DELAY_STEPS` scaled by this process's
    spin over the uncalibrated one, at least one."""
    return max(1, _DELAY_STEPS * _staging.spin_us() // _staging.SPIN_US)


def _delayed(jax: Any) -> Any:
    """An identity whose result is still being computed when the caller gets it back
    (asynchronous dispatch): `x` selected by the sum of a chain of `delay_steps()` matrix
    products. The chain's one argument is the matrix, made once, so it is compiled once per
    process; only the elementwise select is compiled for each new shape and dtype (one jitted
    function of `x` holding the chain would be compiled anew for each), and JAX's persistent
    cache (`_share_compiles`) keeps both for the run's other processes."""
    steps = delay_steps()
    if steps not in _delayed_fns:
        import jax.numpy as jnp

        def chain(m: Any) -> Any:
            return jnp.sum(jax.lax.fori_loop(0, steps, lambda _, a: a @ m, m))

        def select(total: Any, x: Any) -> Any:
            return jnp.where(total == -1.5, jnp.zeros_like(x), x)

        # the matrix an argument, made once: as a constant of the jitted chain XLA folds the
        # products on the host when it compiles (seconds of CPU, and no delay left to run)
        m = jnp.full((_DELAY_N, _DELAY_N), 1e-3, dtype=jnp.float32).block_until_ready()
        _delayed_fns[steps] = (functools.partial(jax.jit(chain), m), jax.jit(select))
    chain_fn, select_fn = _delayed_fns[steps]
    return lambda x: select_fn(chain_fn(), x)


#: a reproducer's JAX arrays: its import sharing the GPU and keeping 64-bit values
_REPRO_IMPORTS = (
    "import os",
    'os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share the GPU',
    "import jax",
    "import jax.numpy as jnp",
    'jax.config.update("jax_enable_x64", True)  # else 64-bit values are narrowed',
)
#: a reproducer's array still being computed when its CAI is read, as this adapter's `_delayed`
#: makes one
_REPRO_PENDING = """
m = jnp.full((4096, 4096), 1e-3, dtype=jnp.float32)


@jax.jit
def delayed(x):  # an identity that finishes only after 1024 matrix products
    chain = jax.lax.fori_loop(0, 1024, lambda _, a: a @ m, m)
    return jnp.where(jnp.sum(chain) == -1.5, jnp.zeros_like(x), x)


x = jax.device_put(values, jax.devices("gpu")[0]).block_until_ready()
delayed(jnp.zeros_like(x)).block_until_ready()  # compiled once, on other values
array = delayed(x)  # dispatched: still being computed when its CAI is read
obj = Exported(array.__cuda_array_interface__, owner=array)
"""


class _JaxRepro(Repro):
    """The adapter's calls as a reproducer writes them: `jax.device_put` (plain arrays only),
    its asynchronous dispatch as pending work, `jnp.asarray(obj)` and `jnp.from_dlpack(obj)`,
    and its array on the CPU, which cannot export."""

    imports = _REPRO_IMPORTS
    distributions = {"jax": "jax"}

    def consume(self, array: Array | None) -> Snip | None:
        return Snip("result = np.asarray(jnp.asarray(obj))", self.imports)

    def consume_dlpack(self, array: Array) -> Snip | None:
        return Snip("result = np.asarray(jnp.from_dlpack(obj))", self.imports)

    def from_dlpack(self, copy: bool | None, own_device: bool) -> Snip | None:
        device = (  # jax names a GPU by its local hardware id
            '[d for d in jax.local_devices(backend="gpu") if d.local_hardware_id == dev[1]][0]'
            if own_device
            else "None"
        )
        return Snip(
            f"kept = jnp.from_dlpack(obj, device={device}, copy={copy})\n"
            "result = np.asarray(jnp.copy(kept))  # a copy made now: np.asarray(kept) caches",
            self.imports,
        )

    def reread(self) -> Snip | None:
        return Snip("again = np.asarray(jnp.copy(kept))", self.imports)

    def hold(self) -> Snip | None:
        return Snip("view = jnp.asarray(obj)", self.imports)

    def hold_dlpack(self) -> Snip | None:
        return Snip("view = jnp.from_dlpack(obj)\nat = view.unsafe_buffer_pointer()", self.imports)

    def produce(self, array: Array) -> Snip | None:
        if not array.plain:
            return None
        return Snip(
            'obj = jax.device_put(values, jax.devices("gpu")[0]).block_until_ready()', self.imports
        )

    def produce_named_dlpack(self, array: Array) -> Snip | None:
        return Snip(
            f'obj = jax.device_put(values.view(jnp.{array.typestr}), jax.devices("gpu")[0])',
            self.imports,
        )

    def pending(self, scenario: str, array: Array) -> Pending | Snip | None:
        return Snip(_REPRO_PENDING, self.imports) if scenario == "pending" else None

    def unexportable(self, kind: str) -> Snip | None:
        if kind != "cpu":
            return None
        return Snip(
            'obj = jax.device_put(np.arange(4, dtype=np.float32), jax.devices("cpu")[0])',
            self.imports,
        )


class JaxAdapter(Adapter):
    """JAX arrays on the first GPU; consumes through `jax.numpy.asarray(obj)`."""

    name = "jax"
    module = "jax"
    consume_is_library_call = True
    capabilities = frozenset({"produce", "consume", "dlpack", "consume-dlpack", "dlpack-copy"})
    repro: Repro = _JaxRepro()

    def available(self) -> tuple[bool, str]:
        try:
            jax = _import_jax()
        except Exception as exc:  # any import failure means unavailable, with the reason
            return False, f"jax not importable: {type(exc).__name__}: {exc}"
        try:
            devices = jax.devices("gpu")
        except RuntimeError as exc:
            return False, f"jax has no GPU backend: {exc}"
        if not devices:
            return False, "jax has no GPU backend: jax.devices('gpu') is empty"
        return True, ""

    def produce(
        self, values: np.ndarray, layout: Layout, typestr: str, stream_scenario: str = "none"
    ) -> Any:
        values, dtype = _staging.check_request(
            "jax", values, layout, typestr, stream_scenario, SUPPORTED
        )
        if stream_scenario not in ("none", "pending"):
            raise SkipExchange(
                f"jax exposes no streams to users; stream scenario {stream_scenario!r} cannot be "
                f"expressed (its pending work is asynchronous dispatch: scenario 'pending')"
            )
        if not _staging.is_plain_c(layout, dtype.itemsize):
            raise SkipExchange(
                f"jax arrays own C-contiguous buffers; layout {layout.kind!r} with strides "
                f"{layout.strides} at offset {layout.offset} cannot be expressed"
            )
        jax = _import_jax()
        name = _staging.dtype_key(dtype)
        if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            import ml_dtypes

            values = _staging.c_ordered(values).view(getattr(ml_dtypes, name))
        array = jax.device_put(values, jax.devices("gpu")[0])
        if stream_scenario == "pending":
            array.block_until_ready()
            return _delayed(jax)(array)  # dispatched, not waited for
        return array.block_until_ready()

    #: an array on the host platform: jaxlib's py_array.cc raises AttributeError ("only
    #: defined for NVidia GPU buffers")
    unexportable_kinds = ("cpu",)

    def unexportable(self, kind: str) -> Any:
        if kind != "cpu":
            return super().unexportable(kind)
        jax = _import_jax()
        try:
            cpu = jax.devices("cpu")[0]
        except RuntimeError as exc:  # no CPU backend in this jax
            raise SkipExchange(f"jax has no CPU device here: {exc}") from exc
        return jax.device_put(np.arange(4, dtype=np.float32), cpu).block_until_ready()

    def consume(self, obj: Any) -> np.ndarray:
        _import_jax()
        import jax.numpy as jnp

        return np.asarray(jnp.asarray(_staging.cai_only(obj)))

    def consume_dlpack(self, obj: Any) -> np.ndarray:
        """`jnp.from_dlpack(obj)`, which is `jax.dlpack.from_dlpack` (jax/_src/dlpack.py:
        `__dlpack__(stream=...)` with the device's stream for external ready events, no
        `max_version`), then `np.asarray`. `jnp.asarray` leaves DLPack out on purpose
        (array_constructors.py: "except dlpack, see data-apis/array-api#301")."""
        _import_jax()
        import jax.numpy as jnp

        return np.asarray(jnp.from_dlpack(_staging.dlpack_only(obj)))

    def consume_dlpack_with(
        self, obj: Any, *, copy: bool | None = None, device: tuple[int, int] | None = None
    ) -> tuple[np.ndarray, Any]:
        """`jnp.from_dlpack(obj, device=..., copy=copy)` (jax/_src/numpy/lax_numpy.py, to
        jax/_src/dlpack.py `from_dlpack(external_array, device=None, copy=None)`: `__dlpack__`
        is asked with `stream` alone, and jax copies itself: `copy=True` by
        `dlpack_managed_tensor_to_buffer`, a device other than the source's by `device_put`,
        refused with ValueError under copy=False). `device` is named as jax names it: the GPU
        device of that local hardware id, or the CPU device. The values are read by
        `read_result`."""
        jax = _import_jax()
        import jax.numpy as jnp

        result = jnp.from_dlpack(
            _staging.dlpack_only(obj), device=_jax_device(jax, device), copy=copy
        )
        return self.read_result(result), result

    def read_result(self, result: Any) -> np.ndarray:
        """`np.asarray(jnp.copy(result))`: a device copy made now, read on the host.
        `np.asarray(result)` itself keeps the host copy it made in the array
        (jax/_src/array.py, `ArrayImpl._value` sets `_npy_value`), so a second read would
        show the first values whether the memory changed or not."""
        _import_jax()
        import jax.numpy as jnp

        return np.asarray(jnp.copy(result))

    def own_array(self, values: np.ndarray) -> Any:
        """`jax.device_put(values, jax.devices("gpu")[0])`, bfloat16 and float8 as their
        `ml_dtypes` types."""
        jax = _import_jax()
        name = _staging.dtype_key(values.dtype)
        if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            import ml_dtypes

            values = values.view(getattr(ml_dtypes, name))
        return jax.device_put(values, jax.devices("gpu")[0]).block_until_ready()

    def own_values(self, obj: Any) -> np.ndarray:
        return np.asarray(obj)

    def repro_produce(self) -> str:
        return "import jax\nobj = jax.device_put(values, jax.devices('gpu')[0])\n"

    def repro_consume(self) -> str:
        return "import numpy as np, jax.numpy as jnp\nresult = np.asarray(jnp.asarray(obj))\n"

    def repro_consume_dlpack(self) -> str:
        return "import numpy as np, jax.numpy as jnp\nresult = np.asarray(jnp.from_dlpack(obj))\n"


def _jax_device(jax: Any, device: tuple[int, int] | None) -> Any:
    """The jax device a DLPack device tuple names (None for None); SkipExchange for a device
    type jax has no backend for here."""
    if device is None:
        return None
    kind, number = int(device[0]), int(device[1])
    backend = {1: "cpu", 2: "gpu"}.get(kind)
    if backend is None:
        raise SkipExchange(f"jax names no device of DLPack type {kind}")
    for candidate in jax.local_devices(backend=backend):
        if backend == "cpu" or candidate.local_hardware_id == number:
            return candidate
    raise SkipExchange(f"jax has no {backend} device {number} here")
