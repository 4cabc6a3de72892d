"""cuda.compute's compiled transforms kept on disk, so a run compiles each once, not once per
worker process.

Why: cuda.compute compiles its transform for each element type the first time a process meets
it (NVRTC, seconds per dtype, docs/performance.md), and a run's workers are fresh processes:
every cell, every poisoned context, every crash would begin the compiles again, making the
cuda.cccl cells the largest share of a run's exchange time. A compile cannot be paid before the workers fork:
compiling initialises the CUDA runtime (a child forked after it fails with
`cudaErrorInitializationError`), and it holds the GIL (twelve dtypes in twelve threads took as
long as one after another).

What cuda.compute itself does is kept: the consumer calls cuda.compute's factory on the real arguments,
so it reads each array's CAI (refusing a non-contiguous one, reading the element type) exactly
when cuda.compute does — on the first call per (thread, argument types, dtype) of a process;
the factory's own per-thread cache of wrappers is untouched. Only the compiled *build results*
come from disk: before the call, a build serialized by another process
(`cuda.compute.deserialize`, its documented way to reuse a build without compiling) is placed
in cuda.compute's process-wide build-results cache under the key the factory looks up. That one
step uses cuda.compute's private `_caching` names; if they are missing, or the key computed
here is not the one the factory used (checked after each compile), the process compiles for
itself with the disk cache off. The factory is called with `compute_capability=` (cuda.compute's ahead-of-time
target: the same build, loaded into the current context on its first call), since only builds
under that target can be serialized and read back under the same key.

One file lock per key: a worker that finds another compiling the same build waits for it and
reads its result. A run with cuda.cccl on a GPU also compiles the builds of the element types
cuda.compute can copy (`WARM_TYPESTRS`) at its start, in processes of their own
(`cccl_adapter.warm`, from `runner.libraries.builds`): otherwise the cuda.cccl cells' first examples wait for one
another's compiles, one dtype after another, for minutes of the slots' time
(docs/performance.md). The directory (`CACHE_ENV`, else the temp directory) outlives the run, keyed
by cuda-cccl's version, the compute capability and the arguments' types and dtypes.
"""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path
from typing import Any

from caiconform import diskcache
from caiconform.diskcache import DiskBuilds

__all__ = ["CACHE_ENV", "DiskBuilds", "WARM_TYPESTRS", "unary_identity", "cache_dir"]

#: where the builds are kept; default `<tempdir>/caiconform-cccl-<uid>`
CACHE_ENV = "CAICONFORM_CCCL_CACHE"

#: per process: the keys computed here did not match cuda.compute's (its private names moved)
_disabled: list[str] = []
#: the element types cuda.compute's v1 backend copies without treating them as opaque storage
#: (which it refuses for IDENTITY): the builds a run's start compiles (`cccl_adapter.warm`)
WARM_TYPESTRS = ("|b1", "|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "<f2", "<f4", "<f8")
_device_ccs: dict[int, int] = {}


def cache_dir() -> Path:
    return diskcache.cache_dir(CACHE_ENV, "cccl")


def _device_cc() -> int:
    """The current device's compute capability as cuda.compute packs it (9.0 -> 90)."""
    from caiconform.cuda.device import current_device, device_info

    device = current_device()
    if device not in _device_ccs:
        major, minor = device_info(device)["compute_capability"].split(".")
        _device_ccs[device] = int(major) * 10 + int(minor)
    return _device_ccs[device]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cuda-cccl")
    except PackageNotFoundError:
        return "unknown"


def _slot(d_in: Any, d_out: Any, op: Any, cc: int) -> tuple[dict, tuple, str] | None:
    """cuda.compute's process-wide build-results cache, the key under which its factory files
    an ahead-of-time build of these arguments for `cc`, and a file name for that key; None
    when it cannot be computed (the factory then meets and reports whatever was wrong)."""
    if _disabled:
        return None
    try:
        from cuda.compute import _bindings, _caching
        from cuda.compute.op import make_op_adapter

        user_key = _caching._make_cache_key_from_args(d_in, d_out, make_op_adapter(op))
        key = (_bindings.DeviceUnaryTransform, _caching._AOTBuildTarget((cc,)), user_key)
        cache = _caching._process_wide_build_results_cache
    except Exception:  # noqa: BLE001 -- an invalid CAI, or cuda.compute's names moved
        return None
    digest = hashlib.sha256(repr((_version(), cc, user_key)).encode()).hexdigest()[:32]
    return cache, key, f"unary-{cc}-{digest}"


def _place(cache: dict, key: tuple, blob: bytes) -> bool:
    """Put a serialized build's results into the cache under `key`; False if unreadable."""
    from cuda.compute import deserialize

    try:
        cache.setdefault(key, deserialize(blob).build_results)
    except Exception:  # noqa: BLE001 -- another version's or a torn blob: compile instead
        return False
    return True


def unary_identity(d_in: Any, d_out: Any, num_items: int, builds: DiskBuilds | None = None) -> str:
    """`make_unary_transform(d_in, d_out, OpKind.IDENTITY, compute_capability=<device>)`, then
    the call on the default stream, with the build from disk when one is there. Returns where
    the build came from: "memory" (this process had it), "disk", "compiled" (and written for
    the others) or "plain" (no disk cache: the factory compiled or raised as it would)."""
    from cuda.compute import OpKind, make_unary_transform

    op = OpKind.IDENTITY
    cc = _device_cc()
    builds = builds or DiskBuilds(cache_dir())
    slot = _slot(d_in, d_out, op, cc)

    def make() -> Any:
        return make_unary_transform(d_in=d_in, d_out=d_out, op=op, compute_capability=cc)

    if slot is None:
        source, transform = "plain", make()
    elif slot[1] in slot[0]:
        source, transform = "memory", make()
    else:
        cache, key, name = slot
        with builds.locked(name):
            blob = builds.read(name)
            source = "disk" if blob is not None and _place(cache, key, blob) else "compiled"
            if source == "compiled" and blob is not None:
                builds.discard(name)
            transform = make()  # reads the CAI; compiles unless the build was placed
            if source == "compiled":
                if key in cache:
                    with contextlib.suppress(Exception):
                        builds.write(name, transform.serialize())
                else:  # the factory filed its build elsewhere: stop guessing in this process
                    _disabled.append("cuda.compute build-results key not found after a compile")
                    source = "plain"
    transform(d_in=d_in, d_out=d_out, op=op, num_items=num_items)
    return source
