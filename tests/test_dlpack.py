"""caiconform.dlpack reads a producer's own capsule; the agreement family pins a disagreement on
the producer (its two exports differ) or on cuda.core (it misreads a capsule that agrees)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from caiconform import dlpack
from caiconform.checks import _exchange, _results, agreement
from caiconform.dlpack import header
from caiconform.dlpack.dtypes import typestr_of
from caiconform.results.outcome import FAIL, PASS
from caiconform.spec.values import make_values


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
    assert typestr_of(capsule) == (
        array.dtype.str if array.dtype.itemsize > 1 else "|" + array.dtype.str[1:]
    )
    assert capsule.device == (1, 0) and not capsule.readonly


def test_a_read_only_array_sets_the_read_only_flag():
    array = np.arange(4.0)
    array.flags.writeable = False
    assert dlpack.export(array)[0].readonly


class _Capsules:
    """A hand-built DLPack capsule (legacy or versioned) over `buffer`; keeps what it points to.

    `strides` count elements (None: no strides array); `byte_offset` is added to the buffer's
    address by a reader; `name` overrides the capsule name (to build foreign or used ones)."""

    def __init__(
        self,
        buffer,
        shape,
        strides,
        code,
        bits,
        versioned,
        flags=0,
        *,
        device=(2, 0),
        byte_offset=8,
        version=(1, 3),
        name=None,
        null_shape=False,
        destructor=None,
        null_deleter=False,
    ):
        n = len(shape)
        self.shape = (ctypes.c_int64 * n)(*shape)
        self.strides = (ctypes.c_int64 * n)(*strides) if strides is not None else None
        int64p = ctypes.POINTER(ctypes.c_int64)
        tensor = header.DLTensor(
            data=buffer.ctypes.data,
            device=header.DLDevice(*device),
            ndim=n,
            dtype=header.DLDataType(code, bits, 1),
            shape=None if null_shape else ctypes.cast(self.shape, int64p),
            strides=ctypes.cast(self.strides, int64p) if self.strides is not None else None,
            byte_offset=byte_offset,
        )
        # a deleter that does nothing (`_NO_OP`): they own nothing to release; a NULL one is a
        # finding of its own, DLPACK-DELETER-NULL
        deleter = None if null_deleter else _NO_OP_ADDRESS
        if versioned:
            self.managed = header.DLManagedTensorVersioned(
                version=header.DLPackVersion(*version),
                flags=flags,
                dl_tensor=tensor,
                deleter=deleter,
            )
            default = b"dltensor_versioned"
        else:
            self.managed = header.DLManagedTensor(dl_tensor=tensor, deleter=deleter)
            default = b"dltensor"
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        self.name = name or default
        self.capsule = new(ctypes.addressof(self.managed), self.name, destructor)
        self.buffer = buffer


def _capsule_of(array, *, strides=None, code=None, versioned=True, flags=0, device=(2, 0)):
    """A hand-built capsule describing numpy `array` as a CUDA array would (element strides
    from the array unless given)."""
    itemsize = array.dtype.itemsize
    if strides is None:
        strides = tuple(s // itemsize for s in array.strides)
    kind = {"f": 2, "i": 0, "u": 1, "b": 6, "c": 5}[array.dtype.kind]
    return _Capsules(
        array,
        array.shape,
        strides,
        kind if code is None else code,
        8 * itemsize,
        versioned,
        flags,
        device=device,
        byte_offset=0,
    )


@pytest.mark.parametrize("versioned", [True, False])
def test_hand_built_capsules_with_negative_strides_and_bfloat16(versioned):
    buffer = np.zeros(64, dtype=np.uint8)
    made = _Capsules(buffer, (3, 4), (-4, 1), code=4, bits=16, versioned=versioned, flags=1)
    capsule = dlpack.read_capsule(made.capsule)
    assert capsule.strides == (-4, 1) and capsule.byte_strides == (-8, 2)
    assert capsule.pointer == buffer.ctypes.data + 8
    assert typestr_of(capsule) == "bfloat16" and capsule.device == (2, 0)
    assert capsule.readonly == versioned and capsule.version == ((1, 3) if versioned else None)
    assert capsule.name == made.name.decode()


def test_strides_are_signed_64_bit():
    buffer = np.zeros(64, dtype=np.uint8)
    made = _Capsules(buffer, (2, 2), (-(2**62), 2**62 - 4), code=2, bits=32, versioned=True)
    capsule = dlpack.read_capsule(made.capsule)
    assert capsule.strides == (-(2**62), 2**62 - 4)
    assert capsule.byte_strides == (-(2**64), 2**64 - 16)


def test_float8_codes_and_missing_strides():
    buffer = np.zeros(16, dtype=np.uint8)
    made = _Capsules(buffer, (2, 3), None, code=12, bits=8, versioned=True)
    capsule = dlpack.read_capsule(made.capsule)
    assert typestr_of(capsule) == "float8_e5m2" == capsule.typestr
    assert capsule.strides is None and capsule.byte_strides == (3, 1)
    made = _Capsules(buffer, (4,), None, 10, 8, versioned=False)
    e4m3 = dlpack.read_capsule(made.capsule)
    assert e4m3.typestr == "float8_e4m3fn" and e4m3.type_name == "float8_e4m3fn8x1"


def test_types_without_a_typestr_are_named_by_dlpack():
    buffer = np.zeros(16, dtype=np.uint8)
    made = _Capsules(buffer, (4,), None, 13, 8, versioned=True)  # kept alive while read
    fnuz = dlpack.read_capsule(made.capsule)
    assert fnuz.typestr == "?" and fnuz.type_name == "float8_e5m2fnuz8x1"
    made = _Capsules(buffer, (4,), None, 99, 8, versioned=True)
    unknown = dlpack.read_capsule(made.capsule)
    assert unknown.typestr == "?" and unknown.type_name == "code 998x1"


def test_the_copied_flag_and_a_0d_capsule():
    buffer = np.zeros(16, dtype=np.uint8)
    made = _Capsules(buffer, (), None, 2, 64, versioned=True, flags=header.IS_COPIED)
    capsule = dlpack.read_capsule(made.capsule)
    assert capsule.copied and not capsule.readonly
    assert capsule.shape == () and capsule.strides == () and capsule.byte_strides == ()


def test_what_is_no_capsule_is_a_clear_error():
    with pytest.raises(dlpack.DLPackError, match="not a DLPack capsule: a object"):
        dlpack.read_capsule(object())
    buffer = np.zeros(16, dtype=np.uint8)
    other = _Capsules(buffer, (2,), None, 2, 32, versioned=True, name=b"something_else")
    with pytest.raises(dlpack.DLPackError, match="named 'something_else'"):
        dlpack.read_capsule(other.capsule)
    used = _Capsules(buffer, (2,), None, 2, 32, versioned=False, name=b"used_dltensor")
    with pytest.raises(dlpack.DLPackError, match="already consumed"):
        dlpack.read_capsule(used.capsule)
    null = _Capsules(buffer, (2,), None, 2, 32, versioned=True, null_shape=True)
    with pytest.raises(dlpack.DLPackError, match="NULL shape"):
        dlpack.read_capsule(null.capsule)
    future = _Capsules(buffer, (2,), None, 2, 32, versioned=True, version=(2, 0))
    with pytest.raises(dlpack.DLPackError, match="version 2.0"):
        dlpack.read_capsule(future.capsule)

    class Refuses:
        def __dlpack__(self, **kwargs):
            raise BufferError("no")

    with pytest.raises(dlpack.DLPackError, match="refused"):
        dlpack.export(Refuses())


def test_reading_does_not_consume_and_the_deleter_runs_once():
    import gc
    import sys

    array = np.arange(8.0)
    before = sys.getrefcount(array)
    capsule, keep = dlpack.export(array)
    assert sys.getrefcount(array) == before + 1  # the capsule's manager holds the array
    assert dlpack.read_capsule(keep) == capsule  # not renamed: readable again
    del keep
    gc.collect()
    assert sys.getrefcount(array) == before  # the capsule's destructor called the deleter


class _Records:
    """A producer recording how `__dlpack__` is called; `refuse` decides which calls raise."""

    def __init__(self, device, refuse=lambda kwargs: None):
        self.device, self.refuse, self.calls = device, refuse, []
        self.made = _capsule_of(np.arange(4, dtype="<f4"))

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        error = self.refuse(kwargs)
        if error is not None:
            raise error
        return self.made.capsule


def test_a_cuda_producer_is_asked_for_no_synchronization_and_a_versioned_capsule():
    producer = _Records((2, 0))
    assert dlpack.export(producer)[0].shape == (4,)
    assert producer.calls == [{"stream": -1, "max_version": (1, 0)}]


def test_a_cpu_producer_is_asked_without_a_stream():
    producer = _Records((1, 0))
    dlpack.export(producer)
    assert producer.calls == [{"max_version": (1, 0)}]


def test_an_older_signature_gets_the_legacy_call_and_a_refused_stream_none():
    older = _Records((2, 0), lambda kw: TypeError("max_version") if "max_version" in kw else None)
    dlpack.export(older)
    assert older.calls == [{"stream": -1, "max_version": (1, 0)}, {"stream": -1}]
    no_minus_one = _Records((2, 0), lambda kw: BufferError("-1") if "stream" in kw else None)
    dlpack.export(no_minus_one)
    assert no_minus_one.calls == [{"stream": -1, "max_version": (1, 0)}, {"max_version": (1, 0)}]


# -- attribution -----------------------------------------------------------------------------
class _Producer:
    """A producer whose CAI describes `cai_array` and whose DLPack exports `dlpack_capsule`
    (a `_Capsules`, over the same memory, as a CUDA array would)."""

    def __init__(self, cai_array, dlpack_capsule):
        self.cai_array, self.dlpack_capsule = cai_array, dlpack_capsule

    @property
    def __cuda_array_interface__(self):
        a = self.cai_array
        return {
            "shape": a.shape,
            "typestr": a.dtype.str,
            "data": (a.ctypes.data, not a.flags.writeable),
            "version": 3,
            "strides": a.strides,
            "stream": None,
        }

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):
        return self.dlpack_capsule.capsule


class _HostReference:
    """Stands in for the reference consumer on host memory: refuses (like the real one) a dict
    reaching outside `allocation`, else reads it with numpy."""

    def __init__(self, allocation):
        self.allocation = allocation

    def __call__(self, name, obj):
        from caiconform.spec.layout import byte_extent, c_strides

        assert name == "reference"
        d = dict(obj.__cuda_array_interface__)
        dtype = np.dtype(d["typestr"])
        strides = d.get("strides") or c_strides(tuple(d["shape"]), dtype.itemsize)
        lo, hi = byte_extent(tuple(d["shape"]), tuple(strides), dtype.itemsize)
        start = self.allocation.ctypes.data
        if d["data"][0] + lo < start or d["data"][0] + hi > start + self.allocation.nbytes:
            return None, ValueError("extent outside the allocation [CAI-DATA-EXTENT-IN-ALLOCATION]")
        d["strides"] = tuple(strides)

        class Host:
            __array_interface__ = d

        return np.array(Host(), copy=True), None


def _run(monkeypatch, producer_obj, allocation):
    monkeypatch.setattr(_exchange, "produce", lambda *a: producer_obj)
    monkeypatch.setattr(_exchange, "consume_with", _HostReference(allocation))
    monkeypatch.setattr(
        agreement,
        "_check_cuda_core",
        lambda obj, cai, ctx, p, **k: _results.passed(f"{ctx}: agree"),
    )
    layout = {"shape": [3, 4], "strides": None, "offset": 0, "kind": "C"}
    return agreement.execute({"typestr": "<f4", "layout": layout, "seed": 0}, "lib", None)


def _memory():
    """An allocation of 6 x 4 float32 with the example's values in its even rows (zeros in the
    odd ones): `base[::2]` holds what was written."""
    base = np.zeros((6, 4), dtype="<f4")
    base[::2] = make_values("<f4", (3, 4), 0)
    return base


def _disagreeing(field):
    """(the CAI's array, the capsule) of a producer whose exports differ in `field`; the CAI is
    the right one except for "strides-cai" (the CAI wrong, the capsule right)."""
    base = _memory()
    right = base[::2]
    if field == "strides":
        return right, _capsule_of(base[:3])
    if field == "strides-cai":
        return base[:3], _capsule_of(right)
    if field == "wrapped":  # -4 elements written as an unsigned byte count / 4: 2**62 - 4
        flipped = base[::-1][1::2]
        return flipped, _capsule_of(flipped, strides=(2**62 - 8, 1))
    if field == "shape":
        return right, _capsule_of(base[:4:2])
    if field == "pointer":
        return right, _capsule_of(base[1::2])
    if field == "dtype":
        return right, _capsule_of(right.view("<i4"))
    if field == "device":
        return right, _capsule_of(right, device=(1, 0))
    if field == "readonly":
        return right, _capsule_of(right, flags=header.READ_ONLY)
    raise AssertionError(field)


@pytest.mark.parametrize(
    ("field", "named", "verdict"),
    [
        ("strides", "strides[0]", "so the DLPack export is wrong"),
        ("strides-cai", "strides[0]", "so the CAI export is wrong"),
        ("wrapped", "strides[0]", "so the DLPack export is wrong"),
        ("shape", "shape", "so the DLPack export is wrong"),
        ("pointer", "pointer", "so the DLPack export is wrong"),
        ("dtype", "dtype", "so the DLPack export is wrong"),
        ("device", "device", "so the capsule's device type is wrong"),
        ("readonly", "readonly", "the memory cannot tell which read-only flag is right"),
    ],
)
def test_a_producer_whose_capsule_disagrees_with_its_cai_is_the_culprit(
    monkeypatch, field, named, verdict
):
    cai_array, capsule = _disagreeing(field)
    if field == "wrapped":  # the CAI's negative stride is right: hand it the reversed rows
        base = np.zeros((6, 4), dtype="<f4")
        base[::-1][1::2] = make_values("<f4", (3, 4), 0)
        cai_array = base[::-1][1::2]
        capsule = _capsule_of(cai_array, strides=(2**62 - 8, 1))
        allocation = base
    else:
        allocation = cai_array.base if cai_array.base is not None else cai_array
    result = _run(monkeypatch, _Producer(cai_array, capsule), allocation)
    assert result.outcome == FAIL and result.rule == "CAI-DLPACK-AGREE", result.message
    assert result.message.startswith("lib <f4 C (3, 4): lib (the producer) is at fault: got ")
    assert f"{named} " in result.message and "in lib's own DLPack capsule" in result.message
    assert verdict in result.message and result.message.endswith("[CAI-DLPACK-AGREE]")
    assert result.culprit is None  # the rule binds the producer: the catalogue names it


def test_the_wrapped_stride_names_both_values(monkeypatch):
    base = np.zeros((6, 4), dtype="<f4")
    base[::-1][1::2] = make_values("<f4", (3, 4), 0)
    cai_array = base[::-1][1::2]
    capsule = _capsule_of(cai_array, strides=(2**62 - 8, 1))
    result = _run(monkeypatch, _Producer(cai_array, capsule), base)
    assert f"({2**64 - 32}, 4)" in result.seen and "(-32, 4) in its CAI" in result.seen
    assert (
        "refused it" in result.seen and result.expected == "the CAI's (-32, 4) in the capsule too"
    )


def test_when_neither_export_reads_the_values_the_finding_says_it_cannot_tell(monkeypatch):
    base = np.zeros((6, 4), dtype="<f4")  # nothing written: neither description reads the values
    result = _run(monkeypatch, _Producer(base[::2], _capsule_of(base[:3])), base)
    assert result.outcome == FAIL and "neither reads the values written" in result.message
    assert "cannot tell which is wrong" in result.message
    assert result.expected == "the same in both exports"


def test_agreeing_exports_pass(monkeypatch):
    base = _memory()
    result = _run(monkeypatch, _Producer(base[::2], _capsule_of(base[::2])), base)
    assert result.outcome == PASS, result.message


def test_a_copy_flagged_as_such_may_live_elsewhere(monkeypatch):
    base = _memory()
    copy = np.ascontiguousarray(base[::2])
    made = _capsule_of(copy, flags=header.IS_COPIED)
    result = _run(monkeypatch, _Producer(base[::2], made), base)
    assert result.outcome == PASS, result.message


@pytest.mark.parametrize(
    ("cai", "dl", "side"),
    [
        ((True, ""), (False, "2 of 12 elements differ"), "DLPack"),
        ((False, "shape (2,)"), (True, ""), "CAI"),
        ((None, "refused"), (True, ""), "CAI"),
        ((True, ""), (True, ""), None),
        ((False, "a"), (None, "b"), None),
    ],
)
def test_which_is_wrong_follows_the_memory(cai, dl, side):
    got, words = agreement.which_is_wrong("strides[0]", cai, dl)
    assert got == side
    assert ("cannot tell" in words) == (side is None)


def test_the_reproducer_parses_the_capsule_with_the_same_code():
    params = {
        "typestr": "<f4",
        "layout": {"shape": [3, 4], "strides": None, "offset": 0, "kind": "C"},
        "seed": 0,
    }
    script = agreement.repro(params, "reference", None)
    compile(script, "repro.py", "exec")
    assert "def read_capsule(" in script and "[CAI-DLPACK-AGREE]" in script
    assert "from caiconform.dlpack" not in script
    namespace = {"__name__": "__main__"}  # compiled as the script is: no __future__ inherited
    exec(compile(agreement._reader_source(), "repro", "exec", dont_inherit=True), namespace)
    capsule, keep = namespace["export"](np.arange(6.0)[::-2])
    assert capsule.byte_strides == (-16,) and capsule.shape == (3,)


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
    cai = agreement.describe_cai(_Producer(base, None).__cuda_array_interface__)
    result = agreement._check_cuda_core(object(), cai, "ctx", "cupy")
    assert result.outcome == FAIL and result.rule == "CAI-DLPACK-AGREE"
    assert result.culprit["library"] == "cuda.core" and result.culprit["role"] == "consumer"
    assert result.to_dict()["culprit"] == result.culprit


def test_cupys_unsigned_division_of_a_negative_stride_is_explained():
    # CuPy 14.2's toDlpack divides a Py_ssize_t byte stride by a size_t itemsize: -8 // 4 became
    # 2**62 - 2 elements in the capsule (seen on the H100, 2026-11-23); our parser
    # reads the capsule's int64 as written, so the byte stride is 2**64 - 8
    buffer = np.zeros(64, dtype=np.uint8)
    made = _Capsules(buffer, (4,), (2**62 - 2,), code=2, bits=32, versioned=True)
    capsule = dlpack.read_capsule(made.capsule)
    assert capsule.byte_strides == (2**64 - 8,)
    hint = agreement.stride_hint(capsule.byte_strides, (-8,), 4)
    assert "2**64 + the CAI's -8" in hint and "unsigned" in hint


def test_a_stride_no_multiple_of_the_itemsize_should_be_refused_not_rounded():
    hint = agreement.stride_hint((20, 4), (21, 5), 4)
    assert "strides[0]: the CAI's 21 bytes is no multiple of the item size 4" in hint
    assert "strides[1]: the CAI's 5 bytes" in hint and "not rounded to 20" in hint
    assert agreement.stride_hint((12, 4), (12, 4), 4) == ""


# -- what each capsule kind can say ----------------------------------------------------------
def _read_only_producer(versioned):
    """A producer whose CAI says read-only (as JAX's does) and whose capsule sets no flag:
    unversioned (no flags field at all) or versioned (flags 0: says writable)."""
    base = _memory()
    cai_array = base[::2]
    capsule = _capsule_of(cai_array, versioned=versioned)
    cai_array = cai_array.view()
    cai_array.flags.writeable = False
    return _Producer(cai_array, capsule), base


def test_an_unversioned_capsule_cannot_disagree_about_read_only(monkeypatch):
    producer, base = _read_only_producer(versioned=False)
    result = _run(monkeypatch, producer, base)
    assert result.outcome == PASS, result.message
    assert "read-only not compared: lib gave an unversioned 'dltensor' capsule" in result.message
    assert "no flags field" in result.message


def test_a_versioned_capsule_still_disagrees_about_read_only(monkeypatch):
    producer, base = _read_only_producer(versioned=True)
    result = _run(monkeypatch, producer, base)
    assert result.outcome == FAIL and result.rule == "CAI-DLPACK-AGREE", result.message
    assert result.seen.startswith(
        "readonly False in lib's own DLPack capsule (a versioned 'dltensor_versioned' capsule "
        "(DLPack 1.3, with flags)) and True in its CAI"
    )


def test_an_unversioned_capsule_is_still_held_to_what_it_says(monkeypatch):
    base = _memory()
    capsule = _capsule_of(base[:4:2], versioned=False)
    result = _run(monkeypatch, _Producer(base[::2], capsule), base)
    assert result.outcome == FAIL and "shape (2, 4) in lib's own DLPack capsule" in result.seen
    assert "(an unversioned 'dltensor' capsule (no flags field" in result.seen


def test_only_a_versioned_capsule_says_read_only_and_copied():
    buffer = np.zeros(16, dtype=np.uint8)
    flags = header.READ_ONLY | header.IS_COPIED
    for versioned in (True, False):
        made = _Capsules(buffer, (2,), None, 2, 32, versioned=versioned, flags=flags)
        described = agreement.describe_capsule(dlpack.read_capsule(made.capsule))
        said = (True, True) if versioned else (None, None)
        assert (described["readonly"], described["copied"]) == said, versioned
    cai = {"pointer": 1, "shape": (2,), "strides": (4,), "dtype": "<f4", "itemsize": 4}
    unsaid = {**cai, "readonly": None, "copied": None}
    assert agreement.compare({**cai, "readonly": True}, unsaid) is None
    said_writable = {**cai, "readonly": False, "copied": False}
    assert agreement.compare({**cai, "readonly": True}, said_writable) == ("readonly", False, True)


def test_cuda_core_is_not_held_to_a_flag_the_capsule_did_not_carry(monkeypatch):
    import sys
    import types

    base = np.arange(12, dtype="<f4").reshape(3, 4)
    view = types.SimpleNamespace(
        ptr=base.ctypes.data, shape=(3, 4), strides=(4, 1), dtype=np.dtype("<f4"), readonly=False
    )
    fake = types.ModuleType("cuda.core.utils")
    fake.StridedMemoryView = types.SimpleNamespace(from_dlpack=lambda obj, stream_ptr: view)
    monkeypatch.setitem(sys.modules, "cuda.core.utils", fake)
    cai = {**agreement.describe_cai(_Producer(base, None).__cuda_array_interface__)}
    cai["readonly"] = True
    assert agreement._check_cuda_core(object(), cai, "ctx", "jax", flags=False).outcome == PASS
    assert agreement._check_cuda_core(object(), cai, "ctx", "jax", flags=True).outcome == FAIL


# --- the capsule validator (caiconform.dlpack.validate) --------------------------------------

#: a capsule destructor (and tensor deleter) that does nothing: the hand-built capsules own no
#: memory to free
_NO_OP = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _capsule: None)
_NO_OP_ADDRESS = ctypes.cast(_NO_OP, ctypes.c_void_p).value


def _judged(made, *, asked_versioned=False) -> set[str]:
    from caiconform.dlpack.validate import check_capsule

    return {f.rule for f in check_capsule(made.capsule, asked_versioned=asked_versioned)}


def _good(**overrides):
    """A valid hand-built versioned capsule of 3 float32 on CUDA device 0, with a destructor;
    `overrides` break one thing."""
    args = {
        "shape": (3,),
        "strides": (1,),
        "code": 2,
        "bits": 32,
        "versioned": True,
        "byte_offset": 0,
        "destructor": _NO_OP_ADDRESS,
    }
    args.update(overrides)
    return _Capsules(np.zeros(4, dtype="<f4"), **args)


@pytest.mark.parametrize(
    "array",
    [
        np.arange(12, dtype="<f4").reshape(3, 4),
        np.arange(12, dtype="<i2").reshape(3, 4).T,
        np.arange(6.0)[::-2],
        np.zeros(()),
        np.zeros(3, dtype="?"),
        np.zeros(3, dtype="<c16"),
    ],
)
def test_numpy_exports_break_no_capsule_rule(array):
    from caiconform.dlpack.validate import check_capsule, check_dlpack

    assert check_dlpack(array) == ([], None)
    assert check_capsule(array.__dlpack__(max_version=(1, 0))) == []
    assert check_capsule(array.__dlpack__()) == []


def test_a_good_hand_built_capsule_passes_both_kinds():
    assert _judged(_good()) == set()
    assert _judged(_good(versioned=False)) == set()
    zero = {"shape": (0, 2), "strides": None}  # NULL strides: allowed before DLPack 1.2 only
    assert _judged(_good(**zero, version=(1, 1))) == {"DLPACK-ZERO-SIZE-NULL"}
    assert _judged(_good(**zero)) == {"DLPACK-ZERO-SIZE-NULL", "DLPACK-STRIDES-NONNULL"}


def _set_tensor(field: str, value):
    def change(made):
        setattr(made.managed.dl_tensor, field, value)
        return made

    return change


@pytest.mark.parametrize(
    ("rule", "overrides", "change"),
    [
        ("DLPACK-CAPSULE-NAME", {"name": b"used_dltensor_versioned"}, None),
        ("DLPACK-CAPSULE-NAME", {"name": b"tensor"}, None),
        ("DLPACK-CAPSULE-DESTRUCTOR", {"destructor": None}, None),
        ("DLPACK-DELETER-NULL", {"null_deleter": True}, None),
        ("DLPACK-VERSION-MAJOR-MISMATCH", {"version": (2, 0)}, None),
        ("DLPACK-FLAGS-DEFAULT", {"flags": 1 << 7}, None),
        ("DLPACK-DEVICE-TYPE", {"device": (99, 0)}, None),
        ("DLPACK-DEVICE-ID-ZERO", {"device": (1, 3)}, None),
        ("DLPACK-DTYPE-CODE", {"code": 42}, None),
        ("DLPACK-DTYPE-BITS", {"bits": 0}, None),
        ("DLPACK-DTYPE-BOOL", {"code": 6, "bits": 16}, None),
        ("DLPACK-DTYPE-SUBBYTE-BITS", {"code": 15, "bits": 8}, None),
        ("DLPACK-DTYPE-FP4-BITS", {"code": 17, "bits": 8}, None),
        ("DLPACK-SUBBYTE-PADDED-FLAG", {"flags": 4}, None),
        ("DLPACK-VERSION-ENUM-VALUES", {"version": (1, 0), "code": 10, "bits": 8}, None),
        ("DLPACK-VERSION-ENUM-VALUES", {"version": (1, 1), "device": (18, 0)}, None),
        ("DLPACK-VERSION-ENUM-VALUES", {"version": (1, 0), "code": 17, "bits": 4}, None),
        ("DLPACK-STRIDES-NONNULL", {"strides": None}, None),
        ("DLPACK-STRIDES-NONNULL", {"strides": None, "version": (1, 2)}, None),
        ("DLPACK-SHAPE", {"null_shape": True}, None),
        ("DLPACK-SHAPE", {"shape": (3, -1), "strides": (1, 1)}, None),
        ("DLPACK-SHAPE", {}, _set_tensor("ndim", 100_000)),
        ("DLPACK-SHAPE", {}, _set_tensor("ndim", -1)),
        ("DLPACK-DATA-NONNULL", {}, _set_tensor("data", None)),
        ("DLPACK-ZERO-SIZE-NULL", {"shape": (0,)}, None),
        ("DLPACK-BYTE-OFFSET", {"byte_offset": 2**64 - 8}, None),
        ("DLPACK-STRIDES-ELEMENTS", {"strides": (2**62,)}, None),
    ],
)
def test_each_bad_capsule_gives_its_rule(rule, overrides, change):
    made = _good(**overrides)
    if change is not None:
        made = change(made)
    assert _judged(made) == {rule}


@pytest.mark.parametrize(
    "overrides",
    [
        {"strides": None, "versioned": False},  # legacy: NULL strides, compact row-major
        {"strides": None, "version": (1, 0)},
        {"strides": None, "version": (1, 1)},  # the newest version allowing them
        {"shape": (), "strides": None},  # ndim 0: NULL strides in any version
        {"code": 10, "bits": 8, "version": (1, 1)},  # float8_e4m3fn, defined from 1.1 on
        {"code": 17, "bits": 4},  # float4_e2m1fn, packed (no flag)
        {"code": 15, "bits": 6, "flags": 4},  # float6_e2m3fn, padded
        {"code": 16, "bits": 6, "flags": 4, "version": (1, 1)},
        {"device": (18, 0), "version": (1, 2)},  # kDLTrn, from 1.2 on
        {"device": (13, 0)},  # kDLCUDAManaged: device_id 0
        {"version": (1, 7)},  # a newer minor version: read as 1.3, nothing new used
    ],
)
def test_capsules_conforming_to_their_own_dlpack_version_break_no_rule(overrides):
    """What DLPack 1.1-1.3 allow, judged by the capsule's own version: NULL strides before 1.2
    [DLPACK-STRIDES-NULL-LEGACY], the sub-byte and float8 codes and the padded flag from 1.1,
    kDLTrn from 1.2, managed memory on device_id 0."""
    assert _judged(_good(**overrides)) == set()


def test_managed_memory_on_another_device_id_is_a_finding():
    """kDLCUDAManaged (13) has device_id 0: dlpack.h sets it so for "vanilla CPU memory,
    pinned memory, or managed memory"."""
    assert _judged(_good(device=(header.kDLCUDAManaged, 1))) == {"DLPACK-DEVICE-ID-ZERO"}


def test_managed_memory_is_asked_as_a_device_with_streams():
    """kDLCUDAManaged takes a stream as CUDA does: the validator asks with -1 (no
    synchronization) first, and the capsule on (13, 0) breaks no rule."""
    from caiconform.dlpack.validate import check_dlpack

    managed = (header.kDLCUDAManaged, 0)
    producer = _DLPackOnly(_good(device=managed), device=managed)
    assert check_dlpack(producer) == ([], None)
    assert producer.calls[0] == {"stream": -1, "max_version": (1, 0)}


def test_a_capsule_using_values_newer_than_its_version_names_each():
    from caiconform.dlpack.validate import check_capsule

    made = _good(code=17, bits=4, flags=4, device=(18, 0), version=(1, 0))
    (only,) = check_capsule(made.capsule)
    assert only.rule == "DLPACK-VERSION-ENUM-VALUES"
    assert only.seen == (
        "DLPack 1.0 with type code 17 (DLPack 1.1), device type 18 (DLPack 1.2), "
        "flag 0x4 (DLPack 1.1)"
    )


def test_what_is_not_a_capsule_and_an_unversioned_answer_to_max_version():
    from caiconform.dlpack.validate import check_capsule

    for thing in (3, None, object(), np.zeros(2)):
        (only,) = check_capsule(thing)
        assert only.rule == "DLPACK-CAPSULE-NAME" and "not a PyCapsule" in only.seen
    assert _judged(_good(versioned=False), asked_versioned=True) == {"DLPACK-VERSIONED-STRUCT"}
    assert _judged(_good(), asked_versioned=True) == set()


class _DLPackOnly:
    """An object exposing DLPack whose answers the test chooses."""

    def __init__(self, capsule=None, device=(2, 0), raises=None, legacy_only=False):
        self.made, self.device, self.raises, self.legacy_only = capsule, device, raises, legacy_only
        self.calls: list[dict] = []

    def __dlpack_device__(self):
        if isinstance(self.device, BaseException):
            raise self.device
        return self.device

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        if self.legacy_only and "max_version" in kwargs:
            raise TypeError("unexpected keyword argument 'max_version'")
        if self.raises is not None:
            raise self.raises
        return self.made.capsule


@pytest.mark.parametrize(
    ("producer", "rules", "refused"),
    [
        (lambda: _DLPackOnly(_good()), set(), False),
        (lambda: _DLPackOnly(_good(versioned=False)), {"DLPACK-VERSIONED-STRUCT"}, False),
        (lambda: _DLPackOnly(_good(versioned=False), legacy_only=True), set(), False),
        (lambda: _DLPackOnly(_good(), device=(2, 1)), {"DLPACK-DL-DEVICE-DEFAULT"}, False),
        (lambda: _DLPackOnly(_good(), device="cuda:0"), {"DLPACK-DEVICE-TUPLE"}, False),
        (lambda: _DLPackOnly(_good(), device=RuntimeError("x")), {"DLPACK-DEVICE-TUPLE"}, False),
        (lambda: _DLPackOnly(raises=ValueError("no")), {"DLPACK-EXPORT-BUFFERERROR"}, True),
        (lambda: _DLPackOnly(raises=BufferError("no")), set(), True),
    ],
)
def test_an_object_is_asked_for_a_versioned_capsule_then_judged(producer, rules, refused):
    from caiconform.dlpack.validate import check_dlpack

    made = producer()
    findings, why = check_dlpack(made)
    assert {f.rule for f in findings} == rules
    assert (why is not None) == refused
    assert made.calls[0] == {"stream": -1, "max_version": (1, 0)} or made.device != (2, 0)


def test_a_cpu_producer_is_asked_without_a_stream_and_non_native_order_is_refused():
    from caiconform.dlpack.validate import check_dlpack

    cpu = _DLPackOnly(_good(device=(1, 0)), device=(1, 0))
    assert check_dlpack(cpu) == ([], None) and cpu.calls == [{"max_version": (1, 0)}]
    findings, why = check_dlpack(np.arange(4, dtype=">f4"))
    assert findings == [] and "BufferError" in why


def test_the_validator_judges_exactly_the_capsule_visible_dlpack_rules():
    """Every rule the tests above break is a DLPACK rule marked dict_visible, and every such
    rule is broken by one of them."""
    import inspect

    from caiconform.spec.rules import RULES

    source = inspect.getsource(inspect.getmodule(_good))
    tested = {r for r in RULES if r.startswith("DLPACK-") and f'"{r}"' in source}
    visible = {r.id for r in RULES.values() if r.id.startswith("DLPACK-") and r.dict_visible}
    assert tested == visible


_DLPACK_TARGETS = """
import numpy as np

matrix = np.arange(6.0).reshape(2, 3)
swapped = np.arange(4, dtype=">f4")
empty = np.zeros((0, 3))
"""


@pytest.fixture
def dlpack_targets(tmp_path, monkeypatch):
    (tmp_path / "cai_dlpack_targets.py").write_text(_DLPACK_TARGETS)
    monkeypatch.syspath_prepend(str(tmp_path))


@pytest.mark.parametrize(
    ("attr", "status", "rules", "skipped"),
    [
        ("matrix", 0, [], "DLPack export"),
        ("empty", 0, ["DLPACK-ZERO-SIZE-NULL"], "DLPack export"),
        ("swapped", 0, [], "BufferError"),
    ],
)
def test_check_judges_a_numpy_object_by_its_dlpack_export(
    dlpack_targets, capsys, attr, status, rules, skipped
):
    import json

    from caiconform.cli import main

    assert main(["check", f"cai_dlpack_targets:{attr}", "--json"]) == status
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert [f["rule"] for f in result["findings"]] == rules
    assert result["target"] == "numpy.ndarray" and skipped in result["live_checks"]["skipped"]
    assert main(["check", f"cai_dlpack_targets:{attr}"]) == status
    assert "judged as DLPack" in capsys.readouterr().out
