"""Planted single-point mutants of the DLPack validator (`caiconform.dlpack.validate`) that
the suite let live (issue 41, tests/mutants/validator_check_plugin.toml): dlpack.h's device
types and the ones whose device_id is 0, the float6 bits, a 0.x version, another major's fields,
bool lanes, a 0-d NULL shape, the exact 64-bit bounds of byte_offset and of the strides' span
(lanes and negative strides counted), the `__dlpack_device__` tuple, and a refusal other than
TypeError.

The capsules are `tests.test_dlpack`'s hand-built ones (`_good`, one field changed); no device
is touched: the validator reads only the capsule's fields.
"""

from __future__ import annotations

import pytest

from caiconform.dlpack.validate import check_dlpack
from tests.test_dlpack import _DLPackOnly, _good, _judged, _set_tensor

#: dlpack.h's DLDeviceType values (DLPack 1.3), written out here rather than read from the
#: validator: kDLCPU 1, kDLCUDA 2, kDLCUDAHost 3, kDLOpenCL 4, kDLVulkan 7, kDLMetal 8, kDLVPI 9,
#: kDLROCM 10, kDLROCMHost 11, kDLExtDev 12, kDLCUDAManaged 13, kDLOneAPI 14, kDLWebGPU 15,
#: kDLHexagon 16, kDLMAIA 17, kDLTrn 18
DLPACK_H_DEVICES = (1, 2, 3, 4, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18)
#: kDLCPU, kDLCUDAHost, kDLROCMHost, kDLCUDAManaged: "device_id ... 0" for these
DLPACK_H_ID_ZERO = (1, 3, 11, 13)


@pytest.mark.parametrize("kind", DLPACK_H_DEVICES)
def test_each_device_type_of_dlpack_h_is_known(kind):
    got = _judged(_good(device=(kind, 0)))
    assert got == set(), f"got {got}, expected no finding for device type {kind} of dlpack.h"


@pytest.mark.parametrize("kind", (0, 5, 6, 19))
def test_a_device_type_dlpack_h_does_not_define_is_a_finding(kind):
    assert _judged(_good(device=(kind, 0))) == {"DLPACK-DEVICE-TYPE"}


@pytest.mark.parametrize("kind", DLPACK_H_ID_ZERO)
def test_host_pinned_and_managed_memory_must_say_device_id_0(kind):
    got = _judged(_good(device=(kind, 1)))
    assert got == {"DLPACK-DEVICE-ID-ZERO"}, f"got {got}, expected DLPACK-DEVICE-ID-ZERO"
    assert _judged(_good(device=(kind, 0))) == set()


@pytest.mark.parametrize("kind", (2, 10))
def test_a_device_with_its_own_ids_may_say_device_id_1(kind):
    assert _judged(_good(device=(kind, 1))) == set()


@pytest.mark.parametrize(("code", "bits"), [(15, 6), (16, 6), (17, 4)])
def test_each_sub_byte_float_at_its_own_bits_is_clean_and_at_8_is_a_finding(code, bits):
    """float6 e2m3fn (15) and e3m2fn (16) are 6 bits, float4 e2m1fn (17) 4 (dlpack.h), each
    sentence a rule of its own."""
    got = _judged(_good(code=code, bits=bits))
    assert got == set(), f"got {got}, expected no finding for code {code} at {bits} bits"
    rule = "DLPACK-DTYPE-FP4-BITS" if code == 17 else "DLPACK-DTYPE-SUBBYTE-BITS"
    assert _judged(_good(code=code, bits=8)) == {rule}


def test_a_versioned_struct_of_major_0_is_a_major_mismatch():
    got = _judged(_good(version=(0, 8)))
    assert got == {"DLPACK-VERSION-MAJOR-MISMATCH"}, f"got {got}, expected the major mismatch"


def test_another_major_s_fields_are_never_read():
    """A DLPack 2.0 struct may lay its tensor out otherwise: an absurd ndim there is not read
    (no DLPACK-SHAPE), and its device is not compared with `__dlpack_device__`."""
    made = _set_tensor("ndim", 100_000)(_good(version=(2, 0)))
    got = _judged(made)
    assert got == {"DLPACK-VERSION-MAJOR-MISMATCH"}, f"got {got}, expected only the mismatch"
    findings, why = check_dlpack(_DLPackOnly(_good(version=(2, 0), device=(2, 1))))
    rules = [f.rule for f in findings]
    assert (rules, why) == (["DLPACK-VERSION-MAJOR-MISMATCH"], None), (
        f"got {rules}, expected no DLPACK-DL-DEVICE-DEFAULT from a 2.0 struct's device"
    )


def test_bool_is_one_lane_of_8_bits():
    made = _good(code=6, bits=8)
    assert _judged(made) == set()
    made.managed.dl_tensor.dtype.lanes = 4
    got = _judged(made)
    assert got == {"DLPACK-DTYPE-BOOL"}, f"got {got}, expected DLPACK-DTYPE-BOOL for 4 lanes"


def test_a_0_d_tensor_may_have_a_null_shape():
    """ndim 0 has no extent to read, so a NULL shape pointer is no DLPACK-SHAPE finding."""
    got = _judged(_good(shape=(), strides=None, null_shape=True))
    assert got == set(), f"got {got}, expected no finding for a 0-d tensor's NULL shape"


def test_data_plus_byte_offset_of_exactly_2_64_is_a_finding():
    made = _good()
    data = made.buffer.ctypes.data
    made.managed.dl_tensor.byte_offset = 2**64 - 1 - data
    assert _judged(made) == set(), "the last byte of the address space is within it"
    made.managed.dl_tensor.byte_offset = 2**64 - data
    got = _judged(made)
    assert got == {"DLPACK-BYTE-OFFSET"}, f"got {got}, expected DLPACK-BYTE-OFFSET at 2**64"


def test_a_span_of_exactly_2_63_bytes_is_a_finding():
    """3 float32 elements 2**60 apart span 2 * 2**60 * 4 = 2**63 bytes."""
    assert _judged(_good(strides=(2**60 - 1,))) == set()
    got = _judged(_good(strides=(2**60,)))
    assert got == {"DLPACK-STRIDES-ELEMENTS"}, f"got {got}, expected it at a 2**63-byte span"


def test_the_span_counts_every_lane_of_the_element():
    """4 lanes of float32 are 16 bytes: strides of 2**59 over 3 elements span 2**64 bytes."""
    made = _good(strides=(2**59,))
    assert _judged(made) == set()  # one lane: 2**62 bytes
    made.managed.dl_tensor.dtype.lanes = 4
    got = _judged(made)
    assert got == {"DLPACK-STRIDES-ELEMENTS"}, f"got {got}, expected the 4-lane span counted"


def test_a_huge_negative_stride_spans_as_far_as_a_positive_one():
    got = _judged(_good(strides=(-(2**62),)))
    assert got == {"DLPACK-STRIDES-ELEMENTS"}, f"got {got}, expected |stride| counted"


@pytest.mark.parametrize("answer", [(True, 0), (2, False), (2, 0, 0), (2,)])
def test_dlpack_device_must_be_a_pair_of_ints(answer):
    findings, why = check_dlpack(_DLPackOnly(_good(), device=answer))
    rules = [f.rule for f in findings]
    assert rules == ["DLPACK-DEVICE-TUPLE"], f"got {rules}, expected DLPACK-DEVICE-TUPLE"
    assert why is None


class _RefusesVersioned:
    """A CUDA producer refusing `max_version` with ValueError (not the TypeError of a signature
    without it) and exporting a good capsule to the legacy call."""

    def __init__(self) -> None:
        self.made = _good(versioned=False)
        self.calls: list[dict] = []

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        if "max_version" in kwargs:
            raise ValueError("no versioned capsule")
        return self.made.capsule


def test_a_refusal_other_than_type_error_is_not_followed_by_the_legacy_call():
    """Only a TypeError reads as a signature without `max_version`; a ValueError is the
    producer's refusal, for each stream, and the legacy call is never made."""
    producer = _RefusesVersioned()
    findings, why = check_dlpack(producer)
    assert producer.calls == [{"stream": -1, "max_version": (1, 0)}, {"max_version": (1, 0)}], (
        f"got calls {producer.calls}, expected the versioned call per stream and no legacy call"
    )
    assert [f.rule for f in findings] == ["DLPACK-EXPORT-BUFFERERROR"]
    assert why is not None and "ValueError: no versioned capsule" in why
