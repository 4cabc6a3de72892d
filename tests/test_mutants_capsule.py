"""Planted single-point mutants of `caiconform.dlpack.validate` that the suite let live
(issue 41, item 3): the sub-byte-padded flag, lanes 0, an ndim of exactly `MAX_NDIM`, and a
`__dlpack__` that raises TypeError for every call.

The capsules are hand-built with ctypes over a small NumPy buffer (no device is touched: the
validator reads only the capsule's fields).
"""

from __future__ import annotations

import ctypes

import numpy as np

from caiconform.dlpack import header
from caiconform.dlpack.validate import MAX_NDIM, check_capsule, check_dlpack

#: a deleter and capsule destructor that do nothing: the capsules here own no memory
_NO_OP = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _pointer: None)
_NO_OP_ADDRESS = ctypes.cast(_NO_OP, ctypes.c_void_p).value


class _Capsule:
    """A versioned capsule of float32 on CUDA device 0 over `buffer`; it keeps its ctypes
    structures alive as long as itself."""

    def __init__(self, shape: tuple[int, ...], *, flags: int = 0, lanes: int = 1) -> None:
        self.buffer = np.zeros(4, dtype="<f4")
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        tensor = header.DLTensor(
            data=self.buffer.ctypes.data,
            device=header.DLDevice(2, 0),
            ndim=len(shape),
            dtype=header.DLDataType(2, 32, lanes),
            shape=ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64)),
            strides=None,
            byte_offset=0,
        )
        self.managed = header.DLManagedTensorVersioned(
            version=header.DLPackVersion(1, 1),
            flags=flags,
            dl_tensor=tensor,
            deleter=_NO_OP_ADDRESS,
        )
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        self.capsule = new(ctypes.addressof(self.managed), b"dltensor_versioned", _NO_OP_ADDRESS)


def _rules(made: _Capsule) -> list[str]:
    """The rules `made`'s capsule breaks (`made` holds its structures while it is read)."""
    return [f.rule for f in check_capsule(made.capsule)]


def test_a_good_capsule_breaks_no_rule():
    assert _rules(_Capsule((3,))) == []


def test_each_flag_dlpack_h_defines_is_known_and_the_next_bit_is_not():
    """read-only (bit 0), copied (bit 1) and sub-byte type padded (bit 2) are dlpack.h's; bit
    3 is no flag of DLPack 1.1. The padded bit on this float32 tensor is a finding of its own
    (DLPACK-SUBBYTE-PADDED-FLAG), never DLPACK-FLAGS-DEFAULT."""
    for flags in (0b001, 0b010, 0b100, 0b111):
        got = _rules(_Capsule((3,), flags=flags))
        wanted = ["DLPACK-SUBBYTE-PADDED-FLAG"] if flags & 0b100 else []
        assert got == wanted, f"got {got}, expected {wanted} [DLPACK-FLAGS-DEFAULT, {flags:#x}]"
    assert _rules(_Capsule((3,), flags=0b1000)) == ["DLPACK-FLAGS-DEFAULT"]


def test_lanes_zero_is_a_bits_finding():
    made = _Capsule((3,), lanes=0)
    (only,) = check_capsule(made.capsule)
    assert (only.rule, only.seen) == ("DLPACK-DTYPE-BITS", "code 2, bits 32, lanes 0")


def test_exactly_the_most_dimensions_are_read_and_one_more_is_a_finding():
    """An ndim of `MAX_NDIM` is read (every extent 1, so the data is one float32); one more
    is a DLPACK-SHAPE finding and no shape entry is read."""
    assert MAX_NDIM == 64
    got = _rules(_Capsule((1,) * MAX_NDIM))
    assert got == [], f"got {got}, expected no finding [ndim {MAX_NDIM}]"
    made = _Capsule((1,) * (MAX_NDIM + 1))
    (only,) = check_capsule(made.capsule)
    assert (only.rule, only.seen) == ("DLPACK-SHAPE", str(MAX_NDIM + 1))


class _AlwaysTypeError:
    """A producer on CUDA device 0 whose `__dlpack__` raises TypeError whatever it is asked."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 0)

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        raise TypeError("no")


def test_a_dlpack_that_always_raises_type_error_is_asked_every_way_then_refused():
    """A TypeError reads as a signature that does not take what was passed: the legacy call
    follows the versioned one, for each stream, and no capsule is judged. The refusal is the
    TypeError's (not a BufferError), and it is no DLPACK-EXPORT-BUFFERERROR finding."""
    producer = _AlwaysTypeError()
    findings, why = check_dlpack(producer)
    assert producer.calls == [
        {"stream": -1, "max_version": (1, 0)},
        {"stream": -1},
        {"max_version": (1, 0)},
        {},
    ], f"got calls {producer.calls}, expected each stream, versioned then legacy"
    assert findings == [], f"got {findings}, expected no finding for TypeError refusals"
    assert why is not None and why.startswith("__dlpack__ refused: ")
    assert why.count("TypeError: no") == 4, f"got {why!r}, expected the four refusals"
