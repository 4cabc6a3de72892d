"""The IPC descriptor and its checks, without a GPU."""

from __future__ import annotations

import pickle

import pytest

from caiconform.reference.ipc import HANDLE_BYTES, IpcDescriptor, read_in_child

HANDLE = bytes(range(HANDLE_BYTES))


def test_descriptor_pickles_and_defaults_its_shape_from_the_typestr():
    d = IpcDescriptor(HANDLE, 256, 4096, "ab" * 16, "0000:01:00.0", typestr="<f8")
    assert d.shape == (512,)
    assert pickle.loads(pickle.dumps(d)) == d


def test_descriptor_keeps_an_explicit_shape():
    d = IpcDescriptor(HANDLE, 0, 4096, "ab" * 16, "0000:01:00.0", "<f4", (32, 32))
    assert d.shape == (32, 32)


@pytest.mark.parametrize(
    ("handle", "offset", "size", "match"),
    [(HANDLE[:63], 0, 1, "64 bytes"), (HANDLE, -1, 1, ">= 0"), (HANDLE, 0, -4, ">= 0")],
)
def test_descriptor_refuses_bad_fields(handle, offset, size, match):
    with pytest.raises(ValueError, match=match):
        IpcDescriptor(handle, offset, size, "ab" * 16, "0000:01:00.0")


def test_read_in_child_refuses_an_unknown_path_before_spawning():
    with pytest.raises(ValueError, match="'direct' or 'staged'"):
        read_in_child(object(), path="teleport")  # type: ignore[arg-type]
