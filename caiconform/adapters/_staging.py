"""What every third-party producer does the same way: lay values out in bytes, on the host.

A producer adapter is asked for an object whose logical elements equal `values`, at `layout`'s
byte strides and offset inside one allocation. Libraries differ in how they express a view into
a larger allocation, but not in which bytes must end up where. So each adapter allocates one
byte buffer with its own library, copies a host *image* of the whole allocation into it, and
builds its library's own strided view at `layout.offset`. The image is made here, in numpy,
once, for all libraries.

For stream scenarios with pending work, the buffer holds two images: the first
`allocation_bytes` hold the *sentinel* (every byte the complement of the final one, so an
element read too early differs from the expected value in every byte), the second half the final
image. The producer's last write, enqueued after a spin on the stream under test, copies the
second half over the first with the library's own device-to-device copy.

Also here: the typestr tables (which numpy dtypes a library can hold) and the checks every
producer makes up front, each raising `SkipExchange` with a precise reason.
"""

from __future__ import annotations

import functools

import numpy as np

from caiconform.adapters.base import SkipExchange
from caiconform.spec.layout import Layout, is_c_contiguous
from caiconform.spec.scenarios import STREAM_SCENARIOS

__all__ = [
    "ALL_DTYPE_KEYS",
    "dtype_key",
    "check_request",
    "c_ordered",
    "host_image",
    "pending_image",
    "is_plain_c",
    "spin_us",
    "split_bytes",
    "CAIOnly",
    "cai_only",
    "DLPackOnly",
    "dlpack_only",
    "unwrapped",
    "distribution_version",
    "on_gpu",
]

#: dtype keys (numpy kind + itemsize) a GPU array library can plausibly hold; the adapters'
#: tables are subsets of this.
ALL_DTYPE_KEYS = (
    "b1",
    "i1",
    "i2",
    "i4",
    "i8",
    "u1",
    "u2",
    "u4",
    "u8",
    "f2",
    "f4",
    "f8",
    "c8",
    "c16",
)

#: how long the producer's spin kernel delays its final write in pending scenarios (µs): long
#: enough that a consumer which does not wait reads the sentinel, short enough for many examples.
#: The runner calibrates it per machine (`runner.calibrate`); this is the uncalibrated value.
SPIN_US = 20_000
#: environment variable carrying the calibrated spin (same as `runner.calibrate.SPIN_ENV`), or
#: naming the file that holds it (`runner.calibrate.SPIN_FILE_ENV`)
_SPIN_ENV = "CAICONFORM_SPIN_US"
_SPIN_FILE_ENV = "CAICONFORM_SPIN_FILE"
#: spin files read in this process (written once per run, before any example): path -> text
_spin_files: dict[str, str] = {}


def spin_us() -> int:
    """The spin of this process: the run's calibrated one when the runner set it (in the
    environment, or in the file it names), else SPIN_US."""
    import os

    raw = os.environ.get(_SPIN_ENV)
    path = os.environ.get(_SPIN_FILE_ENV)
    if raw is None and path:
        raw = _spin_files.get(path)
        if raw is None:
            try:
                with open(path) as fh:
                    raw = _spin_files[path] = fh.read().strip()
            except OSError:
                raw = None
    try:
        value = int(raw or "")
    except ValueError:
        return SPIN_US
    return value if value > 0 else SPIN_US


def dtype_key(dtype: np.dtype) -> str:
    """`kind + itemsize`, e.g. "f4", "c16", "b1": the key of the adapters' typestr tables;
    a caiconform dtype name ("bfloat16", "structured", `caiconform.spec.dtypes`) for the
    types numpy has no typestr code for."""
    from caiconform.spec.dtypes import dtype_name

    return dtype_name(dtype) or f"{dtype.kind}{dtype.itemsize}"


def check_request(
    library: str,
    values: np.ndarray,
    layout: Layout,
    typestr: str,
    stream_scenario: str,
    supported: frozenset[str],
) -> tuple[np.ndarray, np.dtype]:
    """Check a produce request against what `library` can hold; return (values, dtype).

    Raises ValueError for a malformed request (the caller's bug: unknown scenario, values whose
    shape differs from the layout's, a typestr numpy cannot parse) and SkipExchange for what the
    library cannot express (a dtype outside `supported`, non-native byte order).
    """
    if stream_scenario not in STREAM_SCENARIOS:
        raise ValueError(
            f"unknown stream scenario {stream_scenario!r}; expected one of {STREAM_SCENARIOS}"
        )
    from caiconform.spec.dtypes import numpy_dtype

    try:
        dtype = numpy_dtype(typestr)
    except TypeError as exc:
        raise ValueError(f"typestr {typestr!r} is not a numpy type string: {exc}") from None
    values = np.asarray(values)
    if values.shape != tuple(layout.shape):
        raise ValueError(
            f"values have shape {values.shape}, the layout has shape {tuple(layout.shape)}"
        )
    if dtype.itemsize > 1 and dtype.byteorder not in ("=", "|") and not dtype.isnative:
        raise SkipExchange(
            f"{library} arrays hold native (little-endian) data only; typestr {typestr!r} is "
            f"byte-swapped"
        )
    key = dtype_key(dtype)
    if key not in supported:
        raise SkipExchange(f"{library} has no dtype for typestr {typestr!r} ({dtype.name})")
    return values.astype(dtype, copy=False), dtype


def c_ordered(values: np.ndarray) -> np.ndarray:
    """`values` as a C-contiguous array of the same shape, a 0-d array included: what an
    adapter hands its library's upload (`np.ascontiguousarray` returns at least one dimension,
    so a 0-d request would become shape (1,) and the library would export that)."""
    return np.asarray(values, order="C")


def host_image(values: np.ndarray, layout: Layout, dtype: np.dtype) -> np.ndarray:
    """The whole allocation as uint8: `values` placed at `layout`'s offset and byte strides.

    Bytes no element touches are zero. Broadcast layouts (stride 0) write the same bytes more
    than once; the values along a broadcast axis are expected to agree, and the last one wins.
    """
    nbytes = layout.allocation_bytes(dtype.itemsize)
    image = np.zeros(nbytes, dtype=np.uint8)
    if values.size:
        view = np.ndarray(
            layout.shape,
            dtype=dtype,
            buffer=image,
            offset=layout.offset,
            strides=layout.effective_strides(dtype.itemsize),
        )
        view[...] = values
    return image


def pending_image(image: np.ndarray) -> np.ndarray:
    """Two allocations' worth of bytes: the sentinel (complement of `image`), then `image`."""
    return np.concatenate([np.invert(image), image])


def split_bytes(nbytes: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Two byte ranges covering [0, nbytes): the halves the multi-stream scenario writes on two
    different streams."""
    half = nbytes // 2
    return (0, half), (half, nbytes)


def is_plain_c(layout: Layout, itemsize: int) -> bool:
    """True when the layout is the one a fresh C-contiguous array of its own has: offset 0 and
    C strides (explicit or None; strides of extent-1 axes do not matter)."""
    return layout.offset == 0 and is_c_contiguous(tuple(layout.shape), layout.strides, itemsize)


class CAIOnly:
    """The consumer's view of a producer's object: only `__cuda_array_interface__`.

    Libraries short-circuit their own array types (`cupy.asarray(cupy_array)` returns it
    unchanged, `torch.as_tensor(tensor)` never reads the CAI) and prefer `__dlpack__` when both
    are present. Consumers therefore receive this wrapper, so the exchange always goes through
    the CAI. The dict is read from the producer at each access, as a consumer reading the
    attribute would; the wrapper holds the producer, so whatever keeps the wrapper alive keeps
    the producer's memory alive too.
    """

    __slots__ = ("producer",)

    def __init__(self, producer: object) -> None:
        self.producer = producer

    @property
    def __cuda_array_interface__(self) -> dict:
        return self.producer.__cuda_array_interface__

    def __repr__(self) -> str:
        return f"CAIOnly({type(self.producer).__name__})"


def cai_only(obj: object) -> CAIOnly:
    """Wrap `obj` (unless it already is wrapped) so a consumer sees only its CAI."""
    return obj if isinstance(obj, CAIOnly) else CAIOnly(obj)


class DLPackOnly:
    """The consumer's view of a producer's object for the DLPack families: only `__dlpack__`
    and `__dlpack_device__`, each handed to the producer with the consumer's own arguments.

    The counterpart of `CAIOnly`: with the CAI hidden, a consumer that prefers the CAI must
    take DLPack, and one that short-circuits its own array type cannot. `calls` keeps the
    keyword arguments of each `__dlpack__` call (stream, max_version, dl_device, copy), so a
    family can say what the consumer asked for, and `refusals` the calls the producer raised
    on (with what it raised), so a consumer's failure that is the producer's refusal of the
    consumer's request is told apart.
    """

    __slots__ = ("producer", "calls", "refusals")
    #: a view caiconform puts between producer and consumer (`unwrapped` looks through it)
    caiconform_view = True

    def __init__(self, producer: object) -> None:
        self.producer = producer
        self.calls: list[dict] = []
        self.refusals: list[tuple[dict, BaseException]] = []

    def __dlpack__(self, *args: object, **kwargs: object) -> object:
        call = {**{f"arg{i}": a for i, a in enumerate(args)}, **kwargs}
        self.calls.append(call)
        try:
            return self.producer.__dlpack__(*args, **kwargs)
        except Exception as exc:
            self.refusals.append((call, exc))
            raise

    def __dlpack_device__(self) -> object:
        return self.producer.__dlpack_device__()

    def __repr__(self) -> str:
        return f"DLPackOnly({type(self.producer).__name__})"


def unwrapped(obj: object) -> object:
    """The producer's own object behind caiconform's views (`DLPackOnly` and any class marking
    itself `caiconform_view`, e.g. dlpack_lifetime's capsule keeper): what an adapter reads
    for its own bookkeeping, so the views record only the library's calls."""
    while getattr(obj, "caiconform_view", False):
        obj = obj.producer
    return obj


def dlpack_only(obj: object) -> DLPackOnly:
    """Wrap `obj` (unless it already is wrapped) so a consumer sees only its DLPack methods."""
    return obj if isinstance(obj, DLPackOnly) else DLPackOnly(obj)


def on_gpu(library_available: tuple[bool, str]) -> tuple[bool, str]:
    """An adapter's availability: its library imports (`library_available`) *and* the CUDA
    driver sees a device — GPU libraries import fine on machines without one."""
    ok, why = library_available
    if not ok:
        return ok, why
    from caiconform.cuda.device import gpu_available

    ok, why = gpu_available()
    return (True, "") if ok else (False, f"no usable GPU: {why}")


def distribution_version(top_level: str) -> str | None:
    """Version of the installed distribution that provides the import package `top_level`
    (e.g. "cupy" comes from "cupy-cuda13x"), read from metadata without importing it."""
    from importlib import metadata

    for dist in _distributions().get(top_level, []):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


@functools.cache
def _distributions() -> dict[str, list[str]]:
    """Import package -> distributions providing it, read once per process: it reads every
    installed distribution's file list (on the GPU machine, with torch, JAX and the CUDA
    wheels, about a second)."""
    from importlib import metadata

    return metadata.packages_distributions()
