"""A capsule's elements on the host: the numpy type they are read as, and the read of kDLCPU
memory, one algorithm for the reference consumer and the checks.

`element_type(capsule)` is the capsule's own type as numpy holds it: its typestr where it has
one (`caiconform.dlpack.dtypes`), else raw bytes of its size (bfloat16, float8); a vector type
(lanes other than 1) or a sub-byte one (float6, float4, packed or padded) has none, and raises
`UnreadableType`, whose `rule`, `seen` and `expected` are a finding's: DLPACK-PORT-DTYPE, since
both are legal types dlpack.h defines that this reader does not hold, not a producer's fault.
`read_host(capsule, dtype)` copies the elements of host memory through a numpy view of exactly
the bytes the layout reaches: host memory has no driver to vouch for the extent, so the fields
are trusted, once a validator has judged them. Memory on a device is read by
`caiconform.reference.dlpack_read`, which needs the driver.
"""

from __future__ import annotations

import ctypes
import math
from typing import TYPE_CHECKING

import numpy as np

from caiconform.dlpack.errors import DLPackError
from caiconform.spec.layout import byte_extent

if TYPE_CHECKING:
    from caiconform.dlpack.capsule import Capsule

__all__ = ["element_type", "read_host", "UnreadableType"]


class UnreadableType(DLPackError):
    """The capsule's element type has no numpy type to read it as; `rule`, `seen` and
    `expected` say so as a finding on `dl_tensor.dtype` does."""

    def __init__(self, rule: str, seen: str, expected: str) -> None:
        super().__init__(f"{seen}: expected {expected} [{rule}]")
        self.rule, self.seen, self.expected = rule, seen, expected


def element_type(capsule: Capsule) -> np.dtype:
    """The numpy dtype to read the elements as: their own, or raw bytes of their size."""
    if capsule.lanes != 1:
        raise UnreadableType(
            "DLPACK-PORT-DTYPE",
            f"{capsule.lanes} lanes",
            "one lane (vector types have no numpy type to read them as)",
        )
    typestr = capsule.typestr
    if typestr[:1] in "<>|" and typestr != "?":
        return np.dtype(typestr)
    if capsule.bits % 8:
        raise UnreadableType(
            "DLPACK-PORT-DTYPE",
            f"{capsule.type_name}",
            "a whole number of bytes per element (sub-byte types are not read)",
        )
    return np.dtype(f"V{capsule.bits // 8}")


def read_host(capsule: Capsule, dtype: np.dtype) -> np.ndarray:
    """A copy of the elements of a host (kDLCPU) capsule as `dtype`, read where its fields say
    they are; an empty array for a zero-size one, whose pointer is not read."""
    shape, strides = capsule.shape, capsule.byte_strides
    if math.prod(shape) == 0:
        return np.empty(shape, dtype)
    lo, hi = byte_extent(shape, strides, dtype.itemsize)
    raw = (ctypes.c_char * (hi - lo)).from_address(capsule.pointer + lo)
    flat = np.frombuffer(raw, np.uint8)
    return np.ndarray(shape, dtype, buffer=flat, offset=-lo, strides=strides).copy()
