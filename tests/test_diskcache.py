"""The blob store behind caiconform's disk caches of compiled code (`caiconform.diskcache`),
and its first user besides cuda.compute's builds: the reference kernels' cubin
(`cuda.kernels.cubin`), with a stand-in compiler (NVRTC itself is exercised on the GPU and
by tests/test_cuda_cpu.py where it is installed)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from caiconform import diskcache
from caiconform.cuda import kernels
from caiconform.diskcache import DiskBuilds


def test_blobs_round_trip_and_leave_no_temporary_files(tmp_path):
    builds = DiskBuilds(tmp_path / "c")
    assert builds.read("a") is None
    builds.write("a", b"one")
    builds.write("a", b"two")
    assert builds.read("a") == b"two"
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["a.bin"]
    builds.discard("a")
    builds.discard("a")
    assert builds.read("a") is None


def test_a_second_process_waits_for_the_lock_holder(tmp_path):
    ready = tmp_path / "ready"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import pathlib, time
                from caiconform.diskcache import DiskBuilds
                with DiskBuilds(pathlib.Path({str(tmp_path / "c")!r})).locked("k"):
                    pathlib.Path({str(ready)!r}).touch()
                    time.sleep(1.0)
                """
            ),
        ]
    )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert time.monotonic() < deadline and holder.poll() is None
            time.sleep(0.01)
        began = time.monotonic()
        with DiskBuilds(tmp_path / "c").locked("k"):
            waited = time.monotonic() - began
        assert waited > 0.5
    finally:
        holder.wait(timeout=30)


@pytest.fixture
def compiles(monkeypatch, tmp_path):
    """kernels.compile_kernels replaced by a stand-in that counts its calls; the cache in
    tmp_path."""
    calls = []

    class _Code:
        def __init__(self, arch):
            self.code = f"cubin for {arch} #{len(calls)}".encode()

    def fake(arch):
        calls.append(arch)
        return _Code(arch)

    monkeypatch.setattr(kernels, "compile_kernels", fake)
    monkeypatch.setenv(kernels.CACHE_ENV, str(tmp_path / "k"))
    return calls


def test_the_kernels_are_compiled_once_per_architecture_then_read(compiles):
    first, source = kernels.cubin("sm_90")
    assert source == "compiled" and compiles == ["sm_90"]
    again, source = kernels.cubin("sm_90")
    assert (again, source) == (first, "disk") and compiles == ["sm_90"]
    other, source = kernels.cubin("sm_80")
    assert source == "compiled" and other != first and compiles == ["sm_90", "sm_80"]


def test_a_fresh_process_reads_the_cubin_another_compiled(compiles, tmp_path):
    blob, _ = kernels.cubin("sm_90")
    code = textwrap.dedent(
        """
        from caiconform.cuda import kernels
        kernels.compile_kernels = lambda arch: (_ for _ in ()).throw(AssertionError("compiled"))
        blob, source = kernels.cubin("sm_90")
        print(source, blob.decode())
        """
    )
    env = {**os.environ, kernels.CACHE_ENV: str(tmp_path / "k")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.split(None, 1) == ["disk", blob.decode() + "\n"]


def test_the_cubins_name_changes_with_the_source(monkeypatch):
    before = kernels._cubin_name("sm_90")
    monkeypatch.setattr(kernels, "kernel_source", lambda: "// another source")
    assert kernels._cubin_name("sm_90") != before
    assert kernels._cubin_name("sm_90").startswith("kernels-sm_90-")


def test_a_cached_cubin_that_does_not_load_is_replaced_by_a_fresh_compile(monkeypatch, tmp_path):
    """The cached module fails to load, a fresh compile loads: the kernel comes from the fresh
    one and the cached cubin is discarded (the next process compiles and writes it again)."""
    monkeypatch.setenv(kernels.CACHE_ENV, str(tmp_path / "k"))
    monkeypatch.setattr(kernels, "_kernels", {})
    monkeypatch.setattr(kernels, "_arch", lambda device: "sm_90")
    store = DiskBuilds(diskcache.cache_dir(kernels.CACHE_ENV, "kernels"))
    store.write(kernels._cubin_name("sm_90"), b"damaged")

    class _Module:
        def __init__(self, fresh):
            self.fresh = fresh

        def get_kernel(self, name):
            if not self.fresh:
                raise RuntimeError("CUDA_ERROR_INVALID_IMAGE")
            return f"kernel {name}"

    monkeypatch.setattr(kernels, "_module", lambda device, fresh=False: _Module(fresh))
    assert kernels._kernel("fill_u32_i32", 0) == "kernel fill_u32_i32"
    assert store.read(kernels._cubin_name("sm_90")) is None


def test_a_kernel_that_fails_fresh_too_keeps_the_cached_cubin(monkeypatch, tmp_path):
    """A GPU error (both loads fail) is raised as before; the cached cubin stays."""
    monkeypatch.setenv(kernels.CACHE_ENV, str(tmp_path / "k"))
    monkeypatch.setattr(kernels, "_kernels", {})
    monkeypatch.setattr(kernels, "_arch", lambda device: "sm_90")
    store = DiskBuilds(diskcache.cache_dir(kernels.CACHE_ENV, "kernels"))
    store.write(kernels._cubin_name("sm_90"), b"good")

    def broken(device, fresh=False):
        raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS")

    monkeypatch.setattr(kernels, "_module", broken)
    with pytest.raises(RuntimeError, match="ILLEGAL_ADDRESS"):
        kernels._kernel("fill_u32_i32", 0)
    assert store.read(kernels._cubin_name("sm_90")) == b"good"
