"""Where a run's libraries come from: the default *adapter source*, backed by the adapter
registry.

An adapter source is a module with `names() -> list[str]` (called in the parent; must be cheap)
and `probe(name) -> dict` (called in a worker, because answering "is it available?" imports the
library), and optionally `preload(name)`: import the library without initialising CUDA, which a
fork server (`forkserver.py`) does once before it forks the workers that run examples, and
`probe_seconds(name) -> float`: about how long its probe takes, so the start probes the
longest first; `selfcheck(name) -> dict | None`: the adapter self-check
(`adapters.selfcheck`), called after a probe that found the library available, in the same
worker (a crash there costs the self-check, not the library); `builds(names) -> [(function, kwargs)]`: what every process
meeting these libraries would otherwise compile for itself, which a run on a GPU has done at its start, each call in a
process of its own (`Startup.begin(builds=...)`). The runner accepts another source module for synthetic adapters in tests or private
adapters; `LibraryInfo` is what a probe answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "LibraryInfo",
    "BUILD_PROCESSES",
    "PROBE_S",
    "builds",
    "names",
    "probe",
    "probe_seconds",
    "preload",
    "selfcheck",
]

#: processes that compile cuda.cccl's builds at a run's start (`builds`): four share the 12
#: dtypes (a few seconds each) so the builds end within the start, beside its probes and fork
#: servers' imports (figures: docs/performance.md)
BUILD_PROCESSES = 4


@dataclass(frozen=True)
class LibraryInfo:
    """What the runner needs to know about one library to plan its cells."""

    name: str
    available: bool
    reason: str = ""
    version: str | None = None
    capabilities: frozenset[str] = field(default_factory=frozenset)
    needs_gpu: bool = True
    #: the adapter's self-check (`adapters.selfcheck.run`), None when it did not run
    selfcheck: dict[str, Any] | None = field(default=None, hash=False, compare=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LibraryInfo:
        return cls(
            name=data["name"],
            available=bool(data.get("available")),
            reason=data.get("reason") or "",
            version=data.get("version"),
            capabilities=frozenset(data.get("capabilities") or ()),
            needs_gpu=bool(data.get("needs_gpu", True)),
            selfcheck=data.get("selfcheck"),
        )


#: The pseudo-library that needs no GPU: the schema family judges hypothesis-drawn valid dicts
#: and single-rule mutants with it, so a run on a machine without a GPU still exercises the
#: validator, the isolated workers, the journal and the report.
SYNTHETIC = "synthetic"


def names() -> list[str]:
    """Every adapter the registry knows (built-ins and entry points), then `synthetic`."""
    from caiconform.adapters import registry

    return [*registry.names(), SYNTHETIC]


#: about how many seconds a library's probe and self-check take at a default run's start on a
#: GPU machine with every adopter (docs/performance.md, "Probes longest first"): `probe_seconds`
PROBE_S = {
    "numba-mlir-kernel": 8.8,
    "numba-mlir": 8.4,
    "numba-mlir-from-cai": 8.4,
    "cupy": 6.0,
    "numba-kernel": 4.3,
    "reference": 4.2,
    "torch": 4.0,
    "numba": 3.5,
    "numba-from-cai": 3.5,
    "jax": 1.6,
    "mpi4py": 1.2,
    "rmm": 1.1,
}


def probe_seconds(name: str) -> float:
    """About how long `name`'s probe takes (`PROBE_S`; 0 for one not listed): the start
    probes the longest first, so the last probe to end is not one begun late behind quick
    ones (`startup.probe_all`)."""
    return PROBE_S.get(name, 0.0)


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


def selfcheck(name: str) -> dict[str, Any] | None:
    """Adapter `name`'s self-check (`adapters.selfcheck.run`; run in a worker after its
    probe found it available): quick, or as `$CAICONFORM_SELFCHECK` says ("full", or "off":
    None); what stops it is recorded in its place."""
    import os

    from caiconform.adapters import registry
    from caiconform.adapters import selfcheck as check

    mode = os.environ.get(check.MODE_ENV, "quick")
    if mode == "off" or name == SYNTHETIC:
        return None
    adapter = registry.get(name)
    try:
        return check.run(adapter, full=mode == "full")
    except Exception as exc:  # noqa: BLE001 - recorded: the run goes on without it
        return {"adapter": adapter.name, "error": f"{type(exc).__name__}: {exc}"[:300]}


def warm(name: str) -> None:
    """Ready adapter `name` in a worker about to run its examples: import its library and see
    the GPU (`available()`), without `probe`'s version lookup, which for CuPy and RMM reads
    every installed distribution's metadata (`_staging.distribution_version`), about a second
    per worker and cell when paid in every prepare (docs/performance.md)."""
    if name == SYNTHETIC:
        return
    from caiconform.adapters import registry

    registry.get(name).available()


#: last module components that create a CUDA context when imported: their package is preloaded
_CONTEXT_ON_IMPORT = ("autoinit", "autoprimaryctx")


def preload(name: str) -> None:
    """Import adapter `name` and its library, without initialising CUDA (so the process can
    still fork usable workers); a library that fails to import is left to `probe` to report."""
    if name == SYNTHETIC:
        return
    import contextlib
    import importlib

    from caiconform.adapters import registry

    module = registry.get(name).module
    package, _, last = module.rpartition(".")
    if last in _CONTEXT_ON_IMPORT:
        module = package
    if module:
        with contextlib.suppress(Exception):  # probe() reports it, from the worker that runs
            importlib.import_module(module)


def builds(names: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """cuda.cccl's builds per element type (`cccl_adapter.warm`), in `BUILD_PROCESSES` parts,
    when `names` holds it: each worker process otherwise compiled what it met, the others
    waiting on the build's lock (`_cccl_builds`)."""
    if "cuda.cccl" not in names:
        return []
    from caiconform.adapters._cccl_builds import WARM_TYPESTRS

    parts = [list(WARM_TYPESTRS[i::BUILD_PROCESSES]) for i in range(BUILD_PROCESSES)]
    return [("caiconform.adapters.cccl_adapter:warm", {"typestrs": part}) for part in parts if part]
