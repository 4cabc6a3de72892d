"""Consumer entry points: the public calls through which a library takes a CAI object, and
the copy semantics each library documents for them.

(Not packaging entry points: those are `registry.ENTRY_POINT_GROUP`.) A library takes a CAI
object through several calls whose results differ in one way that matters to users: whether
the result *aliases* the exported memory (a view: later writes through the producer show in
it, writes through it reach the producer) or is a *copy* (independent of it). A "copying" call
that aliases, or a "zero-copy" one that copies, corrupts data without an error. Each entry
states what the library's own documentation says, quoted, with where it says it; the
`aliasing` check family holds each call to it.

This module is data only (no library import): the run's parent reads it to draw entry points
and to name, in every record, the entry point a consumer cell used (`entry_of`). The first
entry of an adapter is the call its `consume` makes, which every other family exercises.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "ZERO_COPY",
    "COPY",
    "MAY_COPY",
    "SEMANTICS",
    "Entry",
    "ENTRIES",
    "entries_of",
    "find",
    "default_entry",
    "entry_of",
]

#: documented to return a view of the exported memory
ZERO_COPY = "zero-copy"
#: documented to return memory of its own
COPY = "copy"
#: documented to copy "only when necessary" / "if possible": either answer is legal
MAY_COPY = "may-copy"
SEMANTICS = (ZERO_COPY, COPY, MAY_COPY)


@dataclass(frozen=True)
class Entry:
    """One public call taking a CAI object.

    name: the call as a user writes it (the name in records and reports);
    semantics: ZERO_COPY, COPY or MAY_COPY, read from `quote`;
    source: where the quote is (a documentation page, or the spec section);
    quote: the documentation's own sentence the semantics are read from;
    holds_result: False when nothing outlives the call that a later write could be seen
        through (a kernel argument exists for its launch only);
    writable: False when the library's result cannot be written through (JAX arrays).
    """

    name: str
    semantics: str
    source: str
    quote: str
    holds_result: bool = True
    writable: bool = True

    def __post_init__(self) -> None:
        if self.semantics not in SEMANTICS:
            raise ValueError(f"semantics must be one of {SEMANTICS}, got {self.semantics!r}")


_CUPY_ASARRAY = "https://docs.cupy.dev/en/latest/reference/generated/cupy.asarray.html"
_CUPY_ARRAY = "https://docs.cupy.dev/en/v8.6.0/reference/generated/cupy.array.html"
_CUPY_UFUNC = "https://docs.cupy.dev/en/latest/reference/generated/cupy.ufunc.html"
_TORCH_AS = "https://docs.pytorch.org/docs/stable/generated/torch.as_tensor.html"
_TORCH_TENSOR = "https://docs.pytorch.org/docs/stable/generated/torch.tensor.html"
_NUMBA_API = "numba-cuda numba/cuda/api.py, as_cuda_array and from_cuda_array_interface docstrings"
_JAX_ASARRAY = "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.asarray.html"
_JAX_PUT = "https://docs.jax.dev/en/latest/_autosummary/jax.device_put.html"
_WARP_ARRAY = "warp-lang warp/types.py, array.__init__ docstring (parameter copy)"
_SMV = "https://nvidia.github.io/cuda-python/cuda-core/latest/generated/cuda.core.utils.StridedMemoryView.html"
_WARP_COPY_QUOTE = (
    "copy (bool): Whether the incoming data will be copied or aliased, this is only possible "
    "when the incoming `data` already lives on the device specified and types match"
)

#: adapter name -> its entry points, the one `consume` uses first
ENTRIES: dict[str, tuple[Entry, ...]] = {
    "cupy": (
        Entry(
            "cupy.asarray",
            ZERO_COPY,
            _CUPY_ASARRAY,
            "Returns: An array on the current device. If a is already on the device, no copy "
            "is performed.",
        ),
        Entry(
            "cupy.array(copy=True)",
            COPY,
            _CUPY_ARRAY,
            "copy (bool) - If False, this function returns obj if possible. Otherwise this "
            "function always returns a new array.",
        ),
        Entry(
            "dst[...] = obj",
            COPY,
            "caiconform: dst is made by cupy.empty before the assignment (memory of its own)",
            "dst owns the memory cupy.empty allocated; the assignment writes the values into it",
        ),
        Entry(
            "ufunc argument",
            COPY,
            _CUPY_UFUNC,
            "out (cupy.ndarray) - Output array. It outputs to new arrays default.",
        ),
    ),
    "torch": (
        Entry(
            "torch.as_tensor",
            ZERO_COPY,
            _TORCH_AS,
            "Converts data into a tensor, sharing data and preserving autograd history if "
            "possible. (Here nothing stops sharing: same device, same dtype.)",
        ),
        Entry(
            "torch.tensor",
            COPY,
            _TORCH_TENSOR,
            "Constructs a tensor with no autograd history (also known as a 'leaf tensor') by "
            "copying data.",
        ),
        Entry(
            "dst[...] = obj",
            COPY,
            "caiconform: dst is made by torch.empty before the assignment (memory of its own)",
            "dst owns the memory torch.empty allocated; the assignment writes the values into it",
        ),
    ),
    "numba": (
        Entry(
            "cuda.as_cuda_array",
            ZERO_COPY,
            _NUMBA_API,
            "A view of the underlying GPU buffer is created. No copying of the data is done.",
        ),
    ),
    "numba-from-cai": (
        Entry(
            "cuda.from_cuda_array_interface",
            ZERO_COPY,
            _NUMBA_API + "; cai-v3#lifetime-management-in-numba",
            "The ``owner`` is the owner of the underlying memory. The resulting DeviceNDArray "
            "will acquire a reference from it.",
        ),
    ),
    "numba-kernel": (
        Entry(
            "kernel argument",
            ZERO_COPY,
            "cai-v3#example-multi-streams",
            "Now we'll define a kernel - this initializes the elements of the array (the "
            "spec's example writes an imported array through a kernel argument)",
            holds_result=False,
        ),
    ),
    "jax": (
        Entry(
            "jnp.asarray",
            MAY_COPY,
            _JAX_ASARRAY,
            "copy (bool | None) - ... Default is None, which will only copy when necessary.",
            writable=False,
        ),
        Entry(
            "jax.device_put",
            COPY,
            _JAX_PUT,
            "Returns: A copy of x that resides on device.",
            writable=False,
        ),
    ),
    "warp": (
        Entry("wp.array(copy=True)", COPY, _WARP_ARRAY, _WARP_COPY_QUOTE),
        Entry("wp.array(copy=False)", ZERO_COPY, _WARP_ARRAY, _WARP_COPY_QUOTE),
    ),
    "cuda.core": (
        Entry(
            "StridedMemoryView",
            ZERO_COPY,
            _SMV,
            "A class holding metadata of a strided dense array/tensor. (A view: its ptr is the "
            "exported pointer.)",
        ),
    ),
}
#: numba-cuda-mlir keeps numba-cuda's api.py, docstrings included
#: (numba_cuda_mlir/numba_cuda/api.py), so its adapters take numba-cuda's entries, read there
_NUMBA_MLIR_API = (
    "numba-cuda-mlir numba_cuda_mlir/numba_cuda/api.py, as_cuda_array and "
    "from_cuda_array_interface docstrings"
)
for _mlir, _numba in (
    ("numba-mlir", "numba"),
    ("numba-mlir-from-cai", "numba-from-cai"),
    ("numba-mlir-kernel", "numba-kernel"),
):
    ENTRIES[_mlir] = tuple(
        replace(e, source=e.source.replace(_NUMBA_API, _NUMBA_MLIR_API)) for e in ENTRIES[_numba]
    )


def entries_of(adapter: str) -> tuple[Entry, ...]:
    """The entry points declared for `adapter` (empty for an adapter with none declared)."""
    return ENTRIES.get(adapter, ())


def find(adapter: str, name: str) -> Entry:
    """The entry point `name` of `adapter`; KeyError names the known ones."""
    for entry in entries_of(adapter):
        if entry.name == name:
            return entry
    known = ", ".join(e.name for e in entries_of(adapter)) or "none"
    raise KeyError(f"{adapter} has no entry point {name!r} (known: {known})")


def default_entry(adapter: str | None) -> str | None:
    """The entry point `adapter`'s `consume` uses, or None (no consumer, or none declared)."""
    entries = entries_of(adapter) if adapter else ()
    return entries[0].name if entries else None


def entry_of(consumer: str | None, params: Mapping[str, Any]) -> str | None:
    """The entry point one example exercised: the one its params name (a family drawing entry
    points), else its consumer's default; None for an example without a consumer."""
    named = params.get("entry")
    if isinstance(named, str):
        return named
    return default_entry(consumer)
