"""The disk cache of cuda.compute builds (`adapters._cccl_builds`), on the CPU: the blob store
and its lock between processes, and the glue against a stand-in for cuda.compute that files its
builds as cuda-cccl 1.2.1 does (`_caching._process_wide_build_results_cache`, keyed by the
build-result type, the ahead-of-time target and the arguments' key). The real library is
exercised on the GPU (tests/gpu/test_cccl_builds_gpu.py)."""

from __future__ import annotations

import sys
import types
from typing import NamedTuple

import pytest

from caiconform.adapters import _cccl_builds
from caiconform.adapters._cccl_builds import DiskBuilds, unary_identity

# -- a stand-in for cuda.compute ------------------------------------------------------------


class _AOTBuildTarget(NamedTuple):
    cc_keys: tuple


class _Fake:
    """What the glue touches of cuda.compute, recording compiles and CAI reads."""

    def __init__(self, file_under_other_key: bool = False) -> None:
        self.cache: dict = {}
        self.compiles = 0
        self.reads = 0
        self.calls: list = []
        self.other_key = file_under_other_key
        self.type = object()

    def key(self, d_in, d_out, op) -> tuple:
        return tuple((type(a).__name__, a.dtype) for a in (d_in, d_out)) + (op,)

    def modules(self) -> dict[str, types.ModuleType]:
        fake = self
        compute = types.ModuleType("cuda.compute")
        compute.OpKind = types.SimpleNamespace(IDENTITY="identity")

        class Transform:
            def __init__(self, key):
                self.key = key

            def serialize(self):
                return b"blob:" + repr(self.key).encode()

            def __call__(self, **kwargs):
                fake.calls.append(kwargs["num_items"])

        def make_unary_transform(*, d_in, d_out, op, compute_capability):
            fake.reads += 1
            if getattr(d_in, "bad", False):
                raise ValueError("Non-contiguous arrays are not supported.")
            user = fake.key(d_in, d_out, op)
            target = ("elsewhere",) if fake.other_key else _AOTBuildTarget((compute_capability,))
            key = (fake.type, target, user)
            if key not in fake.cache:
                fake.compiles += 1
                fake.cache[key] = ("results", user)
            return Transform(user)

        def deserialize(blob):
            if not blob.startswith(b"blob:"):
                raise ValueError("serialization blob: bad magic")
            return types.SimpleNamespace(build_results=("results", blob))

        compute.make_unary_transform = make_unary_transform
        compute.deserialize = deserialize
        caching = types.ModuleType("cuda.compute._caching")
        caching._make_cache_key_from_args = lambda d_in, d_out, op: fake.key(d_in, d_out, op)
        caching._AOTBuildTarget = _AOTBuildTarget
        caching._process_wide_build_results_cache = fake.cache
        bindings = types.ModuleType("cuda.compute._bindings")
        bindings.DeviceUnaryTransform = fake.type
        op = types.ModuleType("cuda.compute.op")
        op.make_op_adapter = lambda op: op
        compute._caching, compute._bindings, compute.op = caching, bindings, op
        return {
            "cuda.compute": compute,
            "cuda.compute._caching": caching,
            "cuda.compute._bindings": bindings,
            "cuda.compute.op": op,
        }

    def new_process(self) -> None:
        """What a fresh worker has: no builds in memory."""
        self.cache.clear()


class _Array:
    def __init__(self, dtype: str, bad: bool = False) -> None:
        self.dtype = dtype
        self.bad = bad


@pytest.fixture
def fake(monkeypatch):
    stand_in = _Fake()
    for name, module in stand_in.modules().items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(_cccl_builds, "_device_cc", lambda: 90)
    monkeypatch.setattr(_cccl_builds, "_disabled", [])
    return stand_in


def test_a_build_is_compiled_once_then_read_from_disk_by_a_fresh_process(fake, tmp_path):
    builds = DiskBuilds(tmp_path)
    assert unary_identity(_Array("<f4"), _Array("<f4"), 8, builds) == "compiled"
    assert unary_identity(_Array("<f4"), _Array("<f4"), 8, builds) == "memory"
    assert fake.compiles == 1
    fake.new_process()
    assert unary_identity(_Array("<f4"), _Array("<f4"), 8, builds) == "disk"
    assert fake.compiles == 1  # no second compile
    assert fake.reads == 3  # the factory read every call's arrays
    assert fake.calls == [8, 8, 8]
    assert unary_identity(_Array("<i2"), _Array("<i2"), 4, builds) == "compiled"
    assert fake.compiles == 2


def test_the_factorys_refusal_still_comes_with_a_build_on_disk(fake, tmp_path):
    builds = DiskBuilds(tmp_path)
    unary_identity(_Array("<f4"), _Array("<f4"), 8, builds)
    fake.new_process()
    with pytest.raises(ValueError, match="Non-contiguous"):
        unary_identity(_Array("<f4", bad=True), _Array("<f4"), 8, builds)
    # the lock was released: the next call is not blocked
    assert unary_identity(_Array("<f4"), _Array("<f4"), 8, builds) == "memory"


def test_an_unreadable_blob_is_compiled_again_and_replaced(fake, tmp_path):
    builds = DiskBuilds(tmp_path)
    unary_identity(_Array("<f4"), _Array("<f4"), 8, builds)
    (name,) = [p.stem for p in tmp_path.glob("*.bin")]
    builds.write(name, b"torn")
    fake.new_process()
    assert unary_identity(_Array("<f4"), _Array("<f4"), 8, builds) == "compiled"
    assert builds.read(name).startswith(b"blob:")


def test_a_key_cuda_compute_does_not_use_stops_the_disk_cache(fake, tmp_path):
    fake.other_key = True
    builds = DiskBuilds(tmp_path)
    assert unary_identity(_Array("<f4"), _Array("<f4"), 8, builds) == "plain"
    assert list(tmp_path.glob("*.bin")) == []
    assert unary_identity(_Array("<i4"), _Array("<i4"), 8, builds) == "plain"
    assert fake.calls == [8, 8]
