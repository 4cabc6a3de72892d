"""Layout arithmetic: strides, byte extents, allocation sizes. Pure Python, no numpy.

The reference producer sizes its allocations with `Layout.allocation_bytes`, and the reference
consumer checks `byte_extent` against the driver's allocation range before it reads a byte.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

__all__ = [
    "Layout",
    "LAYOUT_KINDS",
    "c_strides",
    "f_strides",
    "byte_extent",
    "element_count",
    "is_c_contiguous",
]

LAYOUT_KINDS = ("C", "F", "padded", "sliced", "negative", "broadcast", "odd")


def element_count(shape: tuple[int, ...]) -> int:
    return prod(shape)


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Byte strides of the C-contiguous layout of `shape` (what None strides mean)."""
    strides = []
    step = itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def f_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides = []
    step = itemsize
    for extent in shape:
        strides.append(step)
        step *= max(extent, 1)
    return tuple(strides)


def byte_extent(
    shape: tuple[int, ...], strides: tuple[int, ...] | None, itemsize: int
) -> tuple[int, int]:
    """Bytes touched, relative to the data pointer: (lowest offset, one past the highest byte).

    A zero-size array touches nothing: (0, 0). None strides mean C-contiguous. Negative strides
    give a negative low end: the data pointer then points inside the allocation, not at its start.
    """
    if any(extent == 0 for extent in shape):
        return (0, 0)
    if strides is None:
        strides = c_strides(shape, itemsize)
    lo = hi = 0
    for extent, stride in zip(shape, strides, strict=True):
        reach = (extent - 1) * stride
        if reach < 0:
            lo += reach
        else:
            hi += reach
    return (lo, hi + itemsize)


def is_c_contiguous(shape: tuple[int, ...], strides: tuple[int, ...] | None, itemsize: int) -> bool:
    """True when `strides` address `shape` exactly as C order does (dims of size 1 ignored)."""
    if strides is None or element_count(shape) == 0:
        return True
    expected = c_strides(shape, itemsize)
    return all(n == 1 or s == e for n, s, e in zip(shape, strides, expected, strict=True))


@dataclass(frozen=True)
class Layout:
    """Where each element of a logical array lives, in bytes.

    `strides` None means C-contiguous. `offset` is the distance in bytes from the start of the
    allocation to element 0 (the exported data pointer): nonzero for sliced views and needed for
    negative strides. `pad` is slack after the last byte touched. `kind` names the family the
    layout came from (one of LAYOUT_KINDS); `portable` is False for strides that are not a
    multiple of the item size, which the spec allows and most consumers reject.
    """

    shape: tuple[int, ...]
    strides: tuple[int, ...] | None = None
    offset: int = 0
    pad: int = 0
    kind: str = "C"
    portable: bool = field(default=True)

    def effective_strides(self, itemsize: int) -> tuple[int, ...]:
        return c_strides(self.shape, itemsize) if self.strides is None else self.strides

    def extent(self, itemsize: int) -> tuple[int, int]:
        return byte_extent(self.shape, self.strides, itemsize)

    def allocation_bytes(self, itemsize: int) -> int:
        """Bytes an allocation needs so that every element lies inside it (at least 1)."""
        lo, hi = self.extent(itemsize)
        if self.offset + lo < 0:
            raise ValueError(
                f"layout offset {self.offset} is too small for strides {self.strides}: "
                f"lowest byte would be at {self.offset + lo}"
            )
        return max(self.offset + hi + self.pad, 1)

    def to_dict(self) -> dict:
        return {
            "shape": list(self.shape),
            "strides": None if self.strides is None else list(self.strides),
            "offset": self.offset,
            "pad": self.pad,
            "kind": self.kind,
            "portable": self.portable,
        }

    @classmethod
    def from_dict(cls, d: dict) -> Layout:
        strides = d.get("strides")
        return cls(
            shape=tuple(d["shape"]),
            strides=None if strides is None else tuple(strides),
            offset=d.get("offset", 0),
            pad=d.get("pad", 0),
            kind=d.get("kind", "C"),
            portable=d.get("portable", True),
        )
