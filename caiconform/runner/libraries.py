"""Where a run's libraries come from: the default *adapter source*, backed by the adapter
registry.

An adapter source is a module with `names() -> list[str]` (called in the parent; must be cheap)
and `probe(name) -> dict` (called in a worker, because answering "is it available?" imports the
library), and optionally `preload(name)`: import the library without initialising CUDA, which a
fork server (`forkserver.py`) does once before it forks the workers that run examples. The runner accepts another source module for synthetic adapters in tests or private
adapters; `LibraryInfo` is what a probe answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["LibraryInfo", "names", "probe", "preload"]


@dataclass(frozen=True)
class LibraryInfo:
    """What the runner needs to know about one library to plan its cells."""

    name: str
    available: bool
    reason: str = ""
    version: str | None = None
    capabilities: frozenset[str] = field(default_factory=frozenset)
    needs_gpu: bool = True

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LibraryInfo:
        return cls(
            name=data["name"],
            available=bool(data.get("available")),
            reason=data.get("reason") or "",
            version=data.get("version"),
            capabilities=frozenset(data.get("capabilities") or ()),
            needs_gpu=bool(data.get("needs_gpu", True)),
        )


#: The pseudo-library that needs no GPU: the schema family judges hypothesis-drawn valid dicts
#: and single-rule mutants with it, so a run on a machine without a GPU still exercises the
#: validator, the isolated workers, the journal and the report.
SYNTHETIC = "synthetic"


def names() -> list[str]:
    """Every adapter the registry knows (built-ins and entry points), then `synthetic`."""
    from caiconform.adapters import registry

    return [*registry.names(), SYNTHETIC]


def probe(name: str) -> dict[str, Any]:
    """Availability, version, capabilities and GPU need of one adapter (run in a worker)."""
    if name == SYNTHETIC:
        from caiconform.checks import synthetic_source

        return synthetic_source.probe(name)
    from caiconform.adapters import registry

    adapter = registry.get(name)
    available, reason = adapter.available()
    return {
        "name": name,
        "available": available,
        "reason": reason,
        "version": adapter.version(),
        "capabilities": sorted(adapter.capabilities),
        "needs_gpu": bool(getattr(adapter, "needs_gpu", True)),
    }


#: set to 0 to leave a worker's CUDA context and the examples' own modules to its first
#: example (`warm`, `preload`), as before: to measure what they save
WARM_ENV = "CAICONFORM_WARM_CHILDREN"


def _warming() -> bool:
    import os

    return os.environ.get(WARM_ENV, "1") != "0"


def warm(name: str) -> None:
    """Ready adapter `name` in a worker about to run its examples: import its library, see the
    GPU (`available()`) and make the GPU's primary context current, without `probe`'s version
    lookup, which for CuPy and RMM reads every installed distribution's metadata
    (`_staging.distribution_version`): as a cell's prepare on the H100 that cost about 1 s per
    worker and cell; the default matrix's prepares took 132 s of workers' time with it, 26-37 s
    without (2026-11-25).

    The context: a fork server's spare child is prepared while the current child runs, so what
    its prepare does is off the run's path when it replaces a crashed or poisoned child. Its
    first example made the context, which on the H100 took ~2 s under the run's load (the
    first example of each of ~140 new children per default run, against 0.3 ms for the
    next, and 43 ms for torch's first with the context already made, alone on the machine);
    the libraries (torch, CuPy, numba, cuda.core, JAX, PyCUDA's primary-context mode) use that
    same primary context."""
    if name == SYNTHETIC:
        return
    from caiconform.adapters import registry

    adapter = registry.get(name)
    available, _ = adapter.available()
    if available and getattr(adapter, "needs_gpu", True) and _warming():
        import contextlib

        from caiconform.cuda import device

        with contextlib.suppress(Exception):  # the first example meets it and reports it
            device.ensure_context()


#: last module components that create a CUDA context when imported: their package is preloaded
_CONTEXT_ON_IMPORT = ("autoinit", "autoprimaryctx")


#: what examples import on first use, whatever the library (the reference producer and
#: consumer, the validator, the CUDA helpers): preloaded with any GPU library, so no child
#: imports (and, where the machine writes no bytecode, compiles) them again. Import-only, as
#: preloads must be: none initialises CUDA when imported
EXAMPLE_MODULES = (
    "caiconform.cuda.device",
    "caiconform.cuda.memory",
    "caiconform.cuda.streams",
    "caiconform.cuda.kernels",
    "caiconform.cuda.pending",
    "caiconform.cuda.hostwait",
    "caiconform.reference.producer",
    "caiconform.reference.consumer",
    "caiconform.reference.tracking",
    "caiconform.reference.live",
    "caiconform.reference.suballoc",
    "caiconform.spec.validate",
    "caiconform.spec.typestr",
    "caiconform.spec.trace",
    "caiconform.dlpack",
    "caiconform.expectations",
    "caiconform.diskcache",
    "caiconform.adapters._cccl_builds",
    "caiconform.runner.health",
    "cuda.core",
    "cuda.core.utils",
)


def preload(name: str) -> None:
    """Import adapter `name` and its library, without initialising CUDA (so the process can
    still fork usable workers), and for a GPU library the modules examples import on first use
    (EXAMPLE_MODULES); a library that fails to import is left to `probe` to report."""
    if name == SYNTHETIC:
        return
    import contextlib
    import importlib

    from caiconform.adapters import registry

    if _warming():
        for example_module in EXAMPLE_MODULES:
            with contextlib.suppress(Exception):
                importlib.import_module(example_module)

    module = registry.get(name).module
    package, _, last = module.rpartition(".")
    if last in _CONTEXT_ON_IMPORT:
        module = package
    if module:
        with contextlib.suppress(Exception):  # probe() reports it, from the worker that runs
            importlib.import_module(module)
