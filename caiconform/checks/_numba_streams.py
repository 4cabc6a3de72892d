"""Numba's own stream rules, observed live in the streams family's Numba cells.

The CAI text ("Synchronization in Numba"): as a consumer, "If stream is an integer, then Numba
will immediately synchronize on the provided stream. A Numba Device Array created from an
array-like object has its default stream set to the provided stream"; as a producer, "If the
exported CUDA Array has a default stream, then it is given as the stream entry. Otherwise,
stream is set to None"; and the user "may override Numba's synchronization behavior by setting
the environment variable NUMBA_CUDA_ARRAY_INTERFACE_SYNC or the config variable
CUDA_ARRAY_INTERFACE_SYNC to 0", or pass `sync=False`. numba-cuda 0.30.4 implements the import
in `numba/cuda/api.py` (`from_cuda_array_interface`: `external_stream(ptr)` as the array's
stream, `stream.synchronize()` when `sync and config.CUDA_ARRAY_INTERFACE_SYNC`, stream 0 -
"no Numba default stream" - for None) and a kernel argument in `cudadrv/devicearray.py`
(`_to_strided_memory_view`: the same synchronize for each CAI argument).

How it is seen: the import is handed pending exports (the reference producer's `pending`
scenario: a spin of `spin_us`, then the final write, on a stream it exports) and, the moment the
import returns, cuStreamQuery on each exported stream says whether the host waited for it. A
spin cannot end sooner than `spin_us` after its launch, so a stream found finished right after
an import that began inside the first half of the spin was waited for by the import; one still
pending was not. numba-cuda's own tests count calls of a patched `Stream.synchronize`
(`test_consume_sync`, `test_launch_sync_two_streams`); a synchronize on the wrong handle, or a
second layer (cuda.core's StridedMemoryView) that waits on its own, passes those and not this.

Everything takes an `Importer` (how the consumer imports) and a `World` (how pending exports
are made and streams queried), so CPU tests run the same judgements against a synthetic
Numba-like consumer that breaks each rule. numba-cuda-mlir's adapters (`numba-mlir`, ...) are
judged the same way: it keeps numba-cuda's api.py and config (`adapters.numba_impls`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from caiconform.checks import _results
from caiconform.results.outcome import Result

__all__ = [
    "ENTRIES",
    "Pending",
    "World",
    "Importer",
    "check_sync",
    "check_none",
    "check_override",
    "check_export",
    "NumbaImporter",
    "LiveWorld",
    "numba_exports",
]

#: consumer adapter -> the Numba entry point it imports through
ENTRIES = {
    "numba": "cuda.as_cuda_array",
    "numba-from-cai": "cuda.from_cuda_array_interface",
    "numba-kernel": "kernel launch",
    "numba-mlir": "cuda.as_cuda_array",
    "numba-mlir-from-cai": "cuda.from_cuda_array_interface",
    "numba-mlir-kernel": "kernel launch",
}


@dataclass
class Pending:
    """An export with work pending on `stream` since `launched` (perf_counter seconds); `obj`
    exports the stream itself as its stream entry, or None."""

    obj: Any
    stream: int
    launched: float


class World(Protocol):
    def make(self, n: int, spins_us: list[int], export_stream: bool) -> list[Pending]:
        """One export of `n` elements per spin, each with that spin pending on its own
        stream; every export is made before the first spin is launched."""
        ...

    def done(self, stream: int) -> bool: ...


class Importer(Protocol):
    entry: str
    #: whether the entry point takes `sync=False` (a kernel launch does not)
    takes_sync: bool

    def warm(self) -> None: ...

    def imports(self, objs: list[Any], sync: bool = True) -> list[Any]: ...

    def default_stream(self, array: Any) -> int | None: ...

    def reexported(self, array: Any) -> Any: ...

    def sync_config(self, enabled: bool) -> AbstractContextManager[None]: ...


#: how many calibrated spins the work lasts where the import must NOT wait: an import slowed by
#: a loaded host (one example of 2 ms in a default run, not reproduced when run again) must not
#: look like a wait, so the work outlasts any import by far
NO_WAIT_SPINS = 8


def _hex(streams: list[int]) -> str:
    return ", ".join(f"0x{s:x}" for s in streams)


def _import_pending(
    importer: Importer,
    world: World,
    n: int,
    spin_us: int,
    count: int,
    export_stream: bool,
    sync: bool = True,
) -> tuple[list[Pending], list[Any], list[int], float] | str:
    """Make `count` pending exports (spins of spin_us, 2 x spin_us, ... on their own streams),
    import them, and return (pendings, arrays, streams finished right after, import ms); or
    the reason the example cannot tell (the work ended before the import began)."""
    importer.warm()
    pendings = world.make(n, [spin_us * (i + 1) for i in range(count)], export_stream)
    began = time.perf_counter()
    late = (began - min(p.launched for p in pendings)) * 1e6
    if late > spin_us / 2 or any(world.done(p.stream) for p in pendings):
        return (
            f"the import began {late / 1e3:.1f} ms into a {spin_us / 1e3:.0f} ms spin: "
            f"whether {importer.entry} waited cannot be told"
        )
    arrays = importer.imports([p.obj for p in pendings], sync=sync)
    finished = [p.stream for p in pendings if world.done(p.stream)]
    return pendings, arrays, finished, (time.perf_counter() - began) * 1e3


def check_sync(importer: Importer, world: World, n: int, spin_us: int) -> Result:
    """Two exports pending on two streams: the import returns after both finished
    [CAI-NUMBA-CONSUMER-SYNC; for a kernel, `test_launch_sync_two_streams`], each imported
    array's default stream is its export's stream [CAI-NUMBA-CONSUMER-SYNC], and it exports
    that stream again [CAI-NUMBA-PRODUCER-STREAM]."""
    rule = "CAI-NUMBA-CONSUMER-SYNC"
    context = f"{importer.entry} of 2 exports pending on 2 streams"
    got = _import_pending(importer, world, n, spin_us, 2, export_stream=True)
    if isinstance(got, str):
        return _results.skipped(got)
    pendings, arrays, finished, took = got
    waiting = [p.stream for p in pendings if p.stream not in finished]
    if waiting:
        return _results.failed(
            rule,
            f"returned after {took:.2f} ms with work still pending on exported stream(s) "
            f"{_hex(waiting)}: Numba did not synchronize on them",
            "every exported stream synchronized before the import returns",
            context,
        )
    for pending, array in zip(pendings, arrays, strict=False):
        default = importer.default_stream(array)
        if default != pending.stream:
            shown = "none" if default is None else f"0x{default:x}"
            return _results.failed(
                rule,
                f"the imported array's default stream is {shown}",
                f"the exported stream 0x{pending.stream:x}",
                context,
            )
        again = importer.reexported(array)
        if again != pending.stream:
            return _results.failed(
                "CAI-NUMBA-PRODUCER-STREAM",
                f"the imported array exports stream {again!r}",
                f"its default stream, the imported {pending.stream} (0x{pending.stream:x})",
                context,
            )
    return _results.passed(f"{context}: both waited for ({took:.1f} ms)")


def check_none(importer: Importer, world: World, n: int, spin_us: int) -> Result:
    """Two exports with work pending but stream None: the import does not wait
    [CAI-SYNC-NONE-NO-SYNC: Numba takes no stream, "No Numba default stream"], and an imported
    array has no default stream, so it exports None [CAI-NUMBA-PRODUCER-STREAM]."""
    context = f"{importer.entry} of 2 exports with stream None (work pending on 2 streams)"
    got = _import_pending(importer, world, n, NO_WAIT_SPINS * spin_us, 2, export_stream=False)
    if isinstance(got, str):
        return _results.skipped(got)
    _, arrays, finished, took = got
    if finished:
        return _results.failed(
            "CAI-SYNC-NONE-NO-SYNC",
            f"waited {took:.1f} ms, for work on stream(s) {_hex(finished)} that no export named",
            "no synchronization when stream is None",
            context,
        )
    for array in arrays:
        default, again = importer.default_stream(array), importer.reexported(array)
        if default is not None or again is not None:
            return _results.failed(
                "CAI-NUMBA-PRODUCER-STREAM",
                f"default stream {default!r}, exported stream {again!r}",
                "no default stream, stream None exported",
                context,
            )
    return _results.passed(f"{context}: returned at once ({took:.2f} ms)")


def check_override(importer: Importer, world: World, n: int, spin_us: int) -> Result:
    """With CUDA_ARRAY_INTERFACE_SYNC=0 (Numba's config, as NUMBA_CUDA_ARRAY_INTERFACE_SYNC=0
    sets it), and with `sync=False` where the entry point takes it, the import of a pending
    export does not wait [CAI-NUMBA-SYNC-OVERRIDE]; the array still takes the export's stream
    as its default stream (the override is about waiting only)."""
    rule = "CAI-NUMBA-SYNC-OVERRIDE"
    routes: list[tuple[str, Callable[[], AbstractContextManager[None]], bool]] = [
        ("CUDA_ARRAY_INTERFACE_SYNC=0", lambda: importer.sync_config(False), True)
    ]
    if importer.takes_sync:
        routes.append(("sync=False", _nothing, False))
    said = []
    for route, setting, sync in routes:
        context = f"{importer.entry} of an export pending on its stream, {route}"
        with setting():
            got = _import_pending(importer, world, n, NO_WAIT_SPINS * spin_us, 1, True, sync=sync)
        if isinstance(got, str):
            return _results.skipped(got)
        pendings, arrays, finished, took = got
        if finished:
            return _results.failed(
                rule,
                f"waited {took:.1f} ms for stream {_hex(finished)}",
                "no synchronization once the user switched it off",
                context,
            )
        for pending, array in zip(pendings, arrays, strict=False):
            if importer.default_stream(array) != pending.stream:
                return _results.failed(
                    "CAI-NUMBA-CONSUMER-SYNC",
                    f"default stream {importer.default_stream(array)!r}",
                    f"the exported stream 0x{pending.stream:x}",
                    context,
                )
        said.append(f"{route}: returned at once ({took:.2f} ms)")
    return _results.passed(f"{importer.entry}: " + "; ".join(said))


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def check_export(exports: list[tuple[str, Any, int | None]]) -> Result:
    """Numba as a producer: each (how the array was made, what it exported as stream or the
    exception reading the dict raised, the stream it should name). A default stream is
    exported as its handle, none as None [CAI-NUMBA-PRODUCER-STREAM]; and whatever it names,
    the entry is never 0, which the CAI forbids as ambiguous between the legacy and the
    per-thread default stream [CAI-STREAM-ZERO-FORBIDDEN]."""
    for made, exported, expected in exports:
        context = f"numba producer: {made}"
        if isinstance(exported, BaseException):
            return _results.failed(
                "CAI-NUMBA-PRODUCER-STREAM",
                f"__cuda_array_interface__ raised {_results.describe_exception(exported)}",
                "a dict naming the array's default stream",
                context,
            )
        if exported == 0:
            return _results.failed(
                "CAI-STREAM-ZERO-FORBIDDEN",
                "stream 0",
                "1 (legacy), 2 (per-thread) or a stream handle, never 0",
                context,
            )
        if exported != expected:
            return _results.failed(
                "CAI-NUMBA-PRODUCER-STREAM",
                f"stream {exported!r}",
                f"{expected!r}, the array's default stream"
                if expected is not None
                else "None: the array has no default stream",
                context,
            )
    return _results.passed(f"numba producer: {len(exports)} arrays export their default stream")


# -- the real thing -----------------------------------------------------------------------


class _Export:
    """The reference producer's (finished) export with its stream entry replaced: the stream
    the work is pending on, or None. Only the CAI is visible, so a kernel launch takes the CAI
    path, not DLPack. Holds the array and the stream object, so both live as long as this."""

    def __init__(self, array: Any, stream: int | None, keep: Any = None) -> None:
        self.array = array
        self.stream = stream
        self.keep = keep

    @property
    def __cuda_array_interface__(self) -> dict:
        return dict(self.array.__cuda_array_interface__, stream=self.stream)


class LiveWorld:
    """Exports of '<f4' from the reference producer with a spin pending on a stream of their
    own; streams asked with cuStreamQuery. The arrays are all made first: making one waits
    for the device (its sentinel fill ends in a context synchronize), which would end a spin
    already launched."""

    def make(self, n: int, spins_us: list[int], export_stream: bool) -> list[Pending]:
        import numpy as np

        from caiconform.cuda import kernels
        from caiconform.cuda.streams import OwnedStream
        from caiconform.reference.producer import ReferenceArray
        from caiconform.spec.layout import Layout

        values = np.arange(n, dtype=np.float32)
        arrays = [ReferenceArray(values, Layout((n,)), "<f4") for _ in spins_us]
        streams = [OwnedStream() for _ in spins_us]
        launched = time.perf_counter()
        for stream, us in zip(streams, spins_us, strict=True):
            kernels.spin(stream.handle, us)
        return [
            Pending(
                _Export(array, stream.handle if export_stream else None, stream),
                stream.handle,
                launched,
            )
            for array, stream in zip(arrays, streams, strict=True)
        ]

    def done(self, stream: int) -> bool:
        from caiconform.cuda.streams import stream_query

        return stream_query(stream)


class NumbaImporter:
    """numba-cuda's (or numba-cuda-mlir's) import through the entry point `consumer` names
    (ENTRIES)."""

    def __init__(self, consumer: str) -> None:
        from caiconform.adapters.numba_impls import impl_of

        self.consumer = consumer
        self.entry = ENTRIES[consumer]
        self.takes_sync = self.entry != "kernel launch"
        self.impl = impl_of(consumer)
        self._warm = False

    def warm(self) -> None:
        """Import (and for a kernel, compile and launch) once on finished arrays, so neither
        numba's first import nor a compile lands inside a pending window."""
        if self._warm:
            return
        import numpy as np

        from caiconform.reference.producer import ReferenceArray
        from caiconform.spec.layout import Layout

        cuda = self.impl.import_cuda()
        done = [ReferenceArray(np.zeros(4, np.float32), Layout((4,)), "<f4") for _ in range(2)]
        self.imports([_Export(a, None) for a in done])
        cuda.synchronize()
        self._warm = True

    def imports(self, objs: list[Any], sync: bool = True) -> list[Any]:
        cuda = self.impl.import_cuda()
        if self.entry == "cuda.as_cuda_array":
            return [cuda.as_cuda_array(obj, sync=sync) for obj in objs]
        if self.entry == "cuda.from_cuda_array_interface":
            return [
                cuda.from_cuda_array_interface(obj.__cuda_array_interface__, owner=obj, sync=sync)
                for obj in objs
            ]
        _touch(self.impl.name)[1, 1](*(list(objs) * 2)[:2])  # one export as both arguments
        return []

    def default_stream(self, array: Any) -> int | None:
        stream = array.stream
        if isinstance(stream, int):
            return None if stream == 0 else stream
        return int(stream.handle)

    def reexported(self, array: Any) -> Any:
        return array.__cuda_array_interface__.get("stream")

    @contextmanager
    def sync_config(self, enabled: bool) -> Iterator[None]:
        """Set `numba.cuda.core.config.CUDA_ARRAY_INTERFACE_SYNC`, the value numba-cuda 0.30.4
        reads at each import (what NUMBA_CUDA_ARRAY_INTERFACE_SYNC sets at start-up);
        numba-cuda-mlir 0.6.0's is `numba_cuda_mlir.numba_cuda.core.config`'s, read the same way
        in its api.py."""
        config = self.impl.submodule("core.config")

        saved = config.CUDA_ARRAY_INTERFACE_SYNC
        config.CUDA_ARRAY_INTERFACE_SYNC = int(enabled)
        try:
            yield
        finally:
            config.CUDA_ARRAY_INTERFACE_SYNC = saved


_kernel: dict[str, Any] = {}


def _touch(impl: str = "numba-cuda") -> Any:
    """A kernel of two array arguments that does nothing: what a launch waits for is the
    arguments' streams, not the kernel's work (compiled once per implementation, for float32
    1-d arrays)."""
    if impl not in _kernel:
        from caiconform.adapters.numba_adapter import numpy_shim
        from caiconform.adapters.numba_impls import IMPLS

        if IMPLS[impl].needs_shim:
            numpy_shim()
        cuda = IMPLS[impl].import_cuda()

        @cuda.jit
        def touch(a, b):
            pass

        _kernel[impl] = touch
    return _kernel[impl]


def numba_exports(n: int, impl: str = "numba-cuda") -> list[tuple[str, Any, int | None]]:
    """Numba device arrays (of implementation `impl`) on each kind of stream and on none, with
    what each exports as its stream entry (or the exception reading the dict raised) and the
    handle it should name."""
    import numpy as np

    from caiconform.adapters.numba_impls import IMPLS

    cuda = IMPLS[impl].import_cuda()

    user = cuda.stream()
    made: list[tuple[str, Any, int | None]] = []
    for label, stream, expected in (
        ("cuda.device_array(n)", None, None),
        ("cuda.device_array(n, stream=cuda.stream())", user, int(user.handle)),
        (
            "cuda.device_array(n, stream=cuda.legacy_default_stream())",
            cuda.legacy_default_stream(),
            1,
        ),
        (
            "cuda.device_array(n, stream=cuda.per_thread_default_stream())",
            cuda.per_thread_default_stream(),
            2,
        ),
        # numba-cuda 0.30.4's default_stream() is the handle CU_STREAM_DEFAULT (0); the text
        # says "the legacy default stream [APIs] are always the ones in use": legacy, 1
        ("cuda.device_array(n, stream=cuda.default_stream())", cuda.default_stream(), 1),
    ):
        array = (
            cuda.device_array(n, np.float32)
            if stream is None
            else cuda.device_array(n, np.float32, stream=stream)
        )
        try:
            exported = array.__cuda_array_interface__.get("stream")
        except Exception as exc:
            exported = exc
        made.append((label, exported, expected))
    user.synchronize()
    return made
