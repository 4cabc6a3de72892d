"""caiconform.dlpack reads a producer's own capsule; the agreement family pins a disagreement on
the producer (its two exports differ) or on cuda.core (it misreads a capsule that agrees)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from caiconform import dlpack
from caiconform.checks import _support as sup
from caiconform.checks import agreement
from caiconform.runner.outcome import FAIL, PASS


@pytest.mark.parametrize(
    "array",
    [
        np.arange(12, dtype="<f4").reshape(3, 4),
        np.arange(12, dtype="<i2").reshape(3, 4).T,
        np.arange(12, dtype="u1")[::2],
        np.arange(6.0)[::-1],
        np.zeros(()),
        np.zeros((0, 3), dtype="?"),
        np.zeros(3, dtype="<c8"),
    ],
)
def test_numpy_capsules_parse_to_the_array_they_export(array):
    capsule, keep = dlpack.export(array)
    assert capsule.name == "dltensor_versioned" and capsule.version[0] >= 1
    assert capsule.pointer == array.ctypes.data and capsule.shape == array.shape
    if array.size:
        assert capsule.byte_strides == array.strides
    assert dlpack.typestr_of(capsule) == (
        array.dtype.str if array.dtype.itemsize > 1 else "|" + array.dtype.str[1:]
    )
    assert capsule.device == (1, 0) and not capsule.readonly


def test_a_read_only_array_sets_the_read_only_flag():
    array = np.arange(4.0)
    array.flags.writeable = False
    assert dlpack.export(array)[0].readonly


class _Capsules:
    """Hand-built DLPack capsules (legacy and versioned) over a numpy buffer."""

    def __init__(self, buffer, shape, strides, code, bits, versioned, flags=0):
        n = len(shape)
        self.shape = (ctypes.c_int64 * n)(*shape)
        self.strides = (ctypes.c_int64 * n)(*strides) if strides is not None else None
        tensor = dlpack._Tensor(
            data=buffer.ctypes.data,
            device=dlpack._Device(2, 0),
            ndim=n,
            dtype=dlpack._DataType(code, bits, 1),
            shape=ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64)),
            strides=ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64))
            if self.strides is not None
            else None,
            byte_offset=8,
        )
        if versioned:
            self.managed = dlpack._ManagedVersioned(
                version=dlpack._Version(1, 1), flags=flags, dl_tensor=tensor
            )
            name = b"dltensor_versioned"
        else:
            self.managed = dlpack._Managed(dl_tensor=tensor)
            name = b"dltensor"
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        self.name = name
        self.capsule = new(ctypes.addressof(self.managed), name, None)
        self.buffer = buffer


@pytest.mark.parametrize("versioned", [True, False])
def test_hand_built_capsules_with_negative_strides_and_bfloat16(versioned):
    buffer = np.zeros(64, dtype=np.uint8)
    made = _Capsules(buffer, (3, 4), (-4, 1), code=4, bits=16, versioned=versioned, flags=1)
    capsule = dlpack.read_capsule(made.capsule)
    assert capsule.strides == (-4, 1) and capsule.byte_strides == (-8, 2)
    assert capsule.pointer == buffer.ctypes.data + 8
    assert dlpack.typestr_of(capsule) == "bfloat16" and capsule.device == (2, 0)
    assert capsule.readonly == versioned and capsule.version == ((1, 1) if versioned else None)


def test_float8_codes_and_missing_strides():
    buffer = np.zeros(16, dtype=np.uint8)
    made = _Capsules(buffer, (2, 3), None, code=12, bits=8, versioned=True)
    capsule = dlpack.read_capsule(made.capsule)
    assert dlpack.typestr_of(capsule) == "float8_e5m2"
    assert capsule.strides is None and capsule.byte_strides == (3, 1)


def test_what_is_no_capsule_is_a_clear_error():
    with pytest.raises(dlpack.DLPackError, match="not a DLPack capsule"):
        dlpack.read_capsule(object())

    class Refuses:
        def __dlpack__(self, **kwargs):
            raise BufferError("no")

    with pytest.raises(dlpack.DLPackError, match="refused"):
        dlpack.export(Refuses())


# -- attribution -----------------------------------------------------------------------------
class _Producer:
    """A producer whose CAI describes `cai_array` and whose DLPack exports `dl_array`."""

    def __init__(self, cai_array, dl_array):
        self.cai_array, self.dl_array = cai_array, dl_array

    @property
    def __cuda_array_interface__(self):
        a = self.cai_array
        return {
            "shape": a.shape,
            "typestr": a.dtype.str,
            "data": (a.ctypes.data, False),
            "version": 3,
            "strides": a.strides,
            "stream": None,
        }

    def __dlpack__(self, **kwargs):
        return self.dl_array.__dlpack__(**kwargs)


def _run(monkeypatch, producer_obj, reference_reads):
    monkeypatch.setattr(sup, "produce", lambda *a: producer_obj)
    monkeypatch.setattr(sup, "consume_with", lambda name, obj: (reference_reads, None))
    monkeypatch.setattr(
        agreement, "_check_cuda_core", lambda obj, cai, ctx, p: sup.passed("cuda.core skipped")
    )
    layout = {"shape": [3, 4], "strides": None, "offset": 0, "kind": "C"}
    return agreement.execute({"typestr": "<f4", "layout": layout, "seed": 0}, "lib", None)


def test_a_producer_whose_capsule_disagrees_with_its_cai_is_the_culprit(monkeypatch):
    base = np.arange(24, dtype="<f4").reshape(6, 4)
    values = sup.make_values("<f4", (3, 4), 0)
    result = _run(monkeypatch, _Producer(base[::2], base[:3]), values)
    assert result.outcome == FAIL and result.rule == "CAI-DLPACK-AGREE"
    assert "lib's own DLPack capsule" in result.message and "strides[0]" in result.message
    assert "the DLPack side is wrong" in result.message and result.culprit is None


def test_agreeing_exports_pass(monkeypatch):
    base = np.arange(12, dtype="<f4").reshape(3, 4)
    result = _run(monkeypatch, _Producer(base, base), None)
    assert result.outcome == PASS


def test_cuda_core_misreading_an_agreeing_capsule_is_cuda_cores(monkeypatch):
    import sys
    import types

    base = np.arange(12, dtype="<f4").reshape(3, 4)[::-1]
    view = types.SimpleNamespace(
        ptr=base.ctypes.data,
        shape=(3, 4),
        strides=(2**62 - 4, 1),
        dtype=np.dtype("<f4"),
        readonly=False,
    )
    fake = types.ModuleType("cuda.core.utils")
    fake.StridedMemoryView = types.SimpleNamespace(from_dlpack=lambda obj, stream_ptr: view)
    monkeypatch.setitem(sys.modules, "cuda.core.utils", fake)
    cai = agreement.describe_cai(_Producer(base, base).__cuda_array_interface__)
    result = agreement._check_cuda_core(object(), cai, "ctx", "cupy")
    assert result.outcome == FAIL and result.rule == "CAI-DLPACK-AGREE"
    assert result.culprit["library"] == "cuda.core" and result.culprit["role"] == "consumer"
    assert result.to_dict()["culprit"] == result.culprit
