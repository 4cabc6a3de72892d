"""Address bookkeeping for the reference EMM plugin: allocation ranges and a slab sub-allocator.

Pure Python with the driver calls passed in, so the arithmetic (alignment, first fit,
coalescing, which slab an interior pointer belongs to) is tested on machines without a GPU.
The EMM spec's IPC section is why this exists: a plugin that sub-allocates must report the
*offset* of a pointer from the base of the driver allocation that holds it, and only the
plugin's own bookkeeping knows that base.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["ALIGN", "RangeTable", "Slab", "SlabPool"]

#: Alignment of every sub-allocation, and the size of the reserved head of each slab (so no
#: sub-allocation starts at its slab's base and every IPC offset is nonzero by construction).
ALIGN = 256


def _round_up(n: int, to: int) -> int:
    return -(-n // to) * to


class RangeTable:
    """Non-overlapping half-open ranges [base, base + size), found by any address inside them."""

    def __init__(self) -> None:
        self._bases: list[int] = []
        self._sizes: dict[int, int] = {}

    def add(self, base: int, size: int) -> None:
        if size <= 0:
            raise ValueError(f"range size must be > 0, got {size}")
        i = bisect.bisect_right(self._bases, base)
        if i and self._bases[i - 1] + self._sizes[self._bases[i - 1]] > base:
            raise ValueError(f"range at 0x{base:x} overlaps the one at 0x{self._bases[i - 1]:x}")
        if i < len(self._bases) and base + size > self._bases[i]:
            raise ValueError(f"range at 0x{base:x} overlaps the one at 0x{self._bases[i]:x}")
        self._bases.insert(i, base)
        self._sizes[base] = size

    def remove(self, base: int) -> int:
        """Forget the range starting at `base`; returns its size."""
        size = self._sizes.pop(base)
        del self._bases[bisect.bisect_left(self._bases, base)]
        return size

    def find(self, address: int) -> tuple[int, int] | None:
        """(base, size) of the range holding `address`, or None."""
        i = bisect.bisect_right(self._bases, address)
        if not i:
            return None
        base = self._bases[i - 1]
        size = self._sizes[base]
        return (base, size) if address < base + size else None

    def __len__(self) -> int:
        return len(self._bases)

    def __iter__(self):
        return iter(list(self._bases))


@dataclass
class Slab:
    """One driver allocation carved into blocks. `free` holds (offset, size), sorted, coalesced."""

    base: int
    size: int
    free: list[tuple[int, int]] = field(default_factory=list)
    used: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.free and not self.used:
            self.free = [(ALIGN, self.size - ALIGN)]

    def take(self, nbytes: int) -> int | None:
        """First fit: the offset of a block of `nbytes` (already aligned), or None."""
        for i, (offset, size) in enumerate(self.free):
            if size >= nbytes:
                if size == nbytes:
                    del self.free[i]
                else:
                    self.free[i] = (offset + nbytes, size - nbytes)
                self.used[offset] = nbytes
                return offset
        return None

    def give_back(self, offset: int) -> None:
        """Return the block at `offset`, merging it with free neighbours."""
        size = self.used.pop(offset)
        i = bisect.bisect_left(self.free, (offset, 0))
        if i < len(self.free) and offset + size == self.free[i][0]:
            size += self.free.pop(i)[1]
        if i and self.free[i - 1][0] + self.free[i - 1][1] == offset:
            offset, size = self.free[i - 1][0], self.free[i - 1][1] + size
            del self.free[i - 1]
            i -= 1
        self.free.insert(i, (offset, size))

    @property
    def empty(self) -> bool:
        return not self.used


class SlabPool:
    """Sub-allocates from slabs obtained with `alloc(nbytes) -> address` and freed with `free`.

    Requests are rounded up to `ALIGN`; a request larger than a standard slab gets a slab of
    its own (still with the reserved head). Up to `retain_empty` empty standard slabs stay
    cached for the next request (so an alloc/free loop does not pay for cuMemAlloc and
    cuMemFree each time); further empty slabs go back to the driver at once, unless
    `keep_empty` is set (the plugin sets it while `defer_cleanup` is active) and `trim()` frees
    them later.
    """

    def __init__(
        self,
        alloc: Callable[[int], int],
        free: Callable[[int], None],
        slab_bytes: int = 2 << 20,
        retain_empty: int = 1,
    ) -> None:
        if retain_empty < 0:
            raise ValueError(f"retain_empty must be >= 0, got {retain_empty}")
        if slab_bytes <= ALIGN or slab_bytes % ALIGN:
            raise ValueError(f"slab_bytes must be a multiple of {ALIGN} above it, got {slab_bytes}")
        self._alloc = alloc
        self._free = free
        self.slab_bytes = slab_bytes
        self.retain_empty = retain_empty
        self.keep_empty = False
        self._slabs: dict[int, Slab] = {}
        self._ranges = RangeTable()

    def allocate(self, nbytes: int) -> int:
        """The address of a new block of at least `nbytes` (>= 1 byte is always reserved)."""
        need = _round_up(max(int(nbytes), 1), ALIGN)
        for slab in self._slabs.values():
            offset = slab.take(need)
            if offset is not None:
                return slab.base + offset
        slab_size = max(self.slab_bytes, _round_up(need + ALIGN, self.slab_bytes))
        base = int(self._alloc(slab_size))
        slab = Slab(base, slab_size)
        self._slabs[base] = slab
        self._ranges.add(base, slab_size)
        offset = slab.take(need)
        if offset is None:
            raise AssertionError("a new slab cannot hold the request it was sized for")
        return base + offset

    def release(self, address: int) -> None:
        """Give the block starting at `address` back; free its slab if it is now empty and
        not one of the `retain_empty` kept for reuse."""
        slab = self._slab_of(address)
        slab.give_back(address - slab.base)
        if slab.empty and not self.keep_empty:
            self.trim(self.retain_empty)

    def trim(self, keep: int = 0) -> int:
        """Free empty slabs, keeping `keep` standard-size ones; returns how many were freed.
        Oversized slabs are never kept: they were sized for one request."""
        empty = [s for s in self._slabs.values() if s.empty]
        kept = [s for s in empty if s.size == self.slab_bytes][:keep]
        doomed = [s for s in empty if s not in kept]
        for slab in doomed:
            self._drop(slab)
        return len(doomed)

    def release_all(self) -> None:
        """Free every slab, live blocks included (the plugin's `reset`)."""
        for slab in list(self._slabs.values()):
            self._drop(slab)

    def find(self, address: int) -> tuple[int, int] | None:
        """(slab base, slab size) of the slab holding `address`, or None."""
        return self._ranges.find(address)

    def block_size(self, address: int) -> int:
        """Bytes reserved for the block starting at `address`."""
        slab = self._slab_of(address)
        return slab.used[address - slab.base]

    @property
    def slabs(self) -> list[Slab]:
        return list(self._slabs.values())

    def _slab_of(self, address: int) -> Slab:
        found = self._ranges.find(address)
        if found is None or (address - found[0]) not in self._slabs[found[0]].used:
            raise KeyError(f"0x{address:x} is not a live block of this pool")
        return self._slabs[found[0]]

    def _drop(self, slab: Slab) -> None:
        self._free(slab.base)
        del self._slabs[slab.base]
        self._ranges.remove(slab.base)
