"""How a library is written in a standalone reproducer: the lines its adapter declares beside
the calls they mirror, and the types they are made of.

A standalone reproducer (`caiconform.report.standalone`) shows a defect with numpy,
cuda-bindings and the libraries of the exchange alone: where the run called an adapter, the
script makes the same call of the library in the user's own words. Each adapter says what
those words are in its `repro`, an instance of a `Repro` subclass declared in its module, so
a library is described once, in its adapter file; the report package only asks for the lines
by adapter name. Every method returns None where the library has no such path (or the
reproducers do not know it), and the caller then writes no script and says why:

- `consume(array)`: read the object `obj` into a host numpy array `result`;
- `consume_dlpack(array)`: the same through the library's own DLPack import;
- `from_dlpack(copy, own_device)` / `reread()`: `kept`, the library's own
  `from_dlpack(obj, copy=..., device=...)` (the device `dev`, the array's own DLPack device,
  named as the library names it, when `own_device`), and `result` its host values; then
  `again`, `kept` read once more (the adapters' `consume_dlpack_with` and `read_result`);
- `hold()` / `write(ndim)`: the library's own device object `view` over `obj`, and a write of
  the host array `new` through it (the readonly and lifetime families);
- `hold_dlpack()`: `view`, the library's own import of a capsule kept alive, and `at`, the
  address of its element 0 (the DLPack lifetime family);
- `produce(array)`: the library's own array `obj` holding the host array `values` in the
  example's layout (a plain upload, or a strided view of an uploaded `image`);
- `produce_named(array)` / `produce_named_dlpack(array)`: `obj` of an element type numpy has
  no code for (bfloat16, float8), as the producer checks and as the DLPack families make it;
- `pending(scenario, array)`: the library's final write left pending on its stream of a
  stream scenario (a `Pending`, or a `Snip` making `obj` itself);
- `unexportable(kind)` / `export_setting(setting)`: the adapters' `unexportable(kind)` object
  and the line putting one of its `export_settings` in force before the library's import.

A snippet is a `Snip`: import lines, module-level setup and the code (a script carries the
helpers of `report.standalone._text.HELPERS` its code refers to: `ck`, `cu`, `Exported`,
`read_at`, `read_back`, `upload`). `Array` is the example's array as the lines see it. Nothing
here imports a library: an adapter module declaring its lines stays cheap to import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = [
    "ROLES",
    "Array",
    "Snip",
    "Pending",
    "Repro",
    "Missing",
    "RAW_STREAM",
    "c_strides",
]

#: the capabilities whose reproducer lines an adapter provides, or says why it has none
#: (`Repro.missing`) -> the `Repro` method that writes them
ROLES = {"consume": "consume", "consume-dlpack": "consume_dlpack", "produce": "produce"}


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Byte strides of the C-contiguous layout of `shape`."""
    out, step = [], itemsize
    for extent in reversed(shape):
        out.insert(0, step)
        step *= max(extent, 1)
    return tuple(out)


@dataclass(frozen=True)
class Array:
    """One example's array as the script builds it: numpy dtype source, the typestr (and descr)
    exported, the layout in bytes and the seed of its values."""

    typestr: str  # as the run named it (a typestr, or bfloat16 / float8_* / structured)
    dtype_src: str  # numpy dtype expression for the host values
    export_typestr: str
    descr: list | None
    itemsize: int
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None  # as exported (None: C-contiguous)
    offset: int
    alloc: int  # bytes of the allocation holding the image
    seed: int
    source_shape: tuple[int, ...] = field(default=())  # values repeat along stride-0 axes

    @property
    def size(self) -> int:
        count = 1
        for extent in self.shape:
            count *= extent
        return count

    @property
    def plain(self) -> bool:
        """C-contiguous at offset 0: what a library's plain upload makes."""
        if self.offset:
            return False
        if self.strides is None or self.size == 0:
            return True
        expected = c_strides(self.shape, self.itemsize)
        return all(
            n == 1 or s == e for n, s, e in zip(self.shape, self.strides, expected, strict=True)
        )


@dataclass(frozen=True)
class Snip:
    code: str
    imports: tuple[str, ...] = ()
    setup: str = ""
    #: lines run before `code` whose failure is not the library refusing (a write's source)
    prepare: str = ""


@dataclass(frozen=True)
class Pending:
    """A library's stream for a scenario: `stream_src` makes `stream`, `handle_src` is its raw
    handle, `copy_src` enqueues buf[:n] = buf[n:] on it, `under` enters it as current,
    `upload_src` makes `buf` from the host bytes `image2`, `view_src` the `array` over it."""

    stream_src: str
    handle_src: str
    copy_src: str
    under: str | None
    upload_src: str
    view_src: str
    imports: tuple[str, ...]


#: a raw non-blocking stream made with the driver (the `external` scenario's)
RAW_STREAM = "int(ck(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value)))"


class Repro:
    """An adapter's lines in standalone reproducers: none, unless a subclass writes them.

    `imports`: the import lines of the library's snippets; `distributions`: import prefix ->
    the distribution a script's "Needs:" line names for it; `missing`: for each of `ROLES`
    the adapter claims and writes no lines for, why (a test holds every adapter to one or
    the other)."""

    imports: tuple[str, ...] = ()
    distributions: Mapping[str, str] = MappingProxyType({})
    missing: Mapping[str, str] = MappingProxyType({})

    def consume(self, array: Array | None) -> Snip | None:
        return None

    def consume_dlpack(self, array: Array) -> Snip | None:
        return None

    def from_dlpack(self, copy: bool | None, own_device: bool) -> Snip | None:
        return None

    def reread(self) -> Snip | None:
        return None

    def hold(self) -> Snip | None:
        return None

    def write(self, ndim: int) -> Snip | None:
        return None

    def hold_dlpack(self) -> Snip | None:
        return None

    def produce(self, array: Array) -> Snip | None:
        return None

    def produce_named(self, array: Array) -> Snip | None:
        return None

    def produce_named_dlpack(self, array: Array) -> Snip | None:
        return None

    def pending(self, scenario: str, array: Array) -> Pending | Snip | None:
        return None

    def unexportable(self, kind: str) -> Snip | None:
        return None

    def export_setting(self, setting: str) -> str | None:
        return None


class Missing(Repro):
    """The lines of an adapter that has none: `why` maps each of `ROLES` it claims to the
    reason."""

    def __init__(self, why: Mapping[str, str]) -> None:
        self.missing = MappingProxyType(dict(why))
