"""Which cells a run has, and which of them it must skip and why.

A cell is one check family applied to one producer/consumer combination (a "pair" family runs
every library against every library, itself included; a "producer" or "consumer" family runs
each library once in that role). Combinations an adapter cannot play (a library that does not
consume in a consumer cell) are not cells at all; cells that cannot run *here* (library not
installed, no GPU) are skipped with the reason, so the report says what was not tested.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType

from caiconform.errors import UsageError
from caiconform.runner.libraries import LibraryInfo
from caiconform.spec.protocols import of_family, parse

__all__ = [
    "BrokenFamily",
    "Cell",
    "Family",
    "load_families",
    "plan_cells",
    "default_checks",
    "select_protocols",
]

ROLES = ("pair", "producer", "consumer")


class BrokenFamily(Exception):
    """A built-in family module that fails to import; its cells are skipped with the reason."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"check family {name} cannot be imported: {reason}")
        self.name = name
        self.reason = str(self)


@dataclass(frozen=True)
class Family:
    """A check family module and what it declares about itself."""

    name: str
    module: ModuleType
    roles: str
    needs_gpu: bool
    min_gpus: int
    #: the family also judges pseudo-producers that only hand out interface dicts (capability
    #: "produce-dicts", e.g. `synthetic`); every other family needs real objects
    dict_producers: bool = False
    #: the names of the protocols the family exchanges over (`caiconform.spec.protocols`; the
    #: catalogue's for a built-in family): one, or several for a family comparing them
    #: (agreement); `run --protocol` keeps the families of the chosen ones
    protocols: frozenset[str] = frozenset({"cai"})
    #: the capability a library needs to play producer / consumer in its cells: the module's
    #: PRODUCER_NEEDS / CONSUMER_NEEDS, else its (first) protocol's
    producer_needs: str = "produce"
    consumer_needs: str = "consume"

    @property
    def execute(self) -> str:
        return f"{self.module.__name__}:execute"


@dataclass(frozen=True)
class Cell:
    """One family x producer x consumer; `producer` or `consumer` is None for one-sided
    families. `gpus` is how many GPUs it needs: 0, 1, or >= 2 (then it sees them all)."""

    family: Family
    producer: str | None
    consumer: str | None
    gpus: int

    @property
    def key(self) -> str:
        return f"{self.family.name}/{self.producer or '-'}/{self.consumer or '-'}"

    @property
    def libraries(self) -> tuple[str, ...]:
        return tuple(name for name in (self.producer, self.consumer) if name)


def default_checks() -> list[str]:
    """Every built-in family, in the order `caiconform.spec.families.FAMILIES` gives."""
    from caiconform.spec.families import FAMILIES

    return list(FAMILIES)


def _import_family(spec: str) -> ModuleType:
    from caiconform.spec.families import FAMILIES

    if spec in FAMILIES:
        try:
            return importlib.import_module(f"caiconform.checks.{spec}")
        except Exception as exc:  # a broken family costs its cells, not the run
            raise BrokenFamily(spec, f"{type(exc).__name__}: {exc}") from None
    if "." not in spec:
        raise UsageError(f"unknown check {spec!r} (known: {', '.join(FAMILIES)})")
    try:
        return importlib.import_module(spec)
    except ImportError as exc:
        raise UsageError(f"check module {spec!r} cannot be imported: {exc}") from None


def load_families(specs: Sequence[str]) -> tuple[list[Family], list[BrokenFamily]]:
    """(families, broken ones) named by `specs`: a built-in family name ("roundtrip") or the
    dotted path of a module keeping to the check-family contract (docs/internals.md)."""
    families = []
    broken = []
    for spec in specs:
        try:
            module = _import_family(spec)
        except BrokenFamily as exc:
            broken.append(exc)
            continue
        missing = [a for a in ("FAMILY", "ROLES", "examples", "execute") if not hasattr(module, a)]
        if missing:
            raise UsageError(f"check module {module.__name__} lacks {', '.join(missing)}")
        if module.ROLES not in ROLES:
            raise UsageError(f"check module {module.__name__}: ROLES must be one of {ROLES}")
        needs_gpu = bool(getattr(module, "NEEDS_GPU", True))
        try:
            protocols = of_family(module.FAMILY, module)
        except ValueError as exc:
            raise UsageError(f"check module {module.__name__}: PROTOCOLS: {exc}") from None
        families.append(
            Family(
                name=module.FAMILY,
                module=module,
                roles=module.ROLES,
                needs_gpu=needs_gpu,
                min_gpus=int(getattr(module, "MIN_GPUS", 1 if needs_gpu else 0)),
                dict_producers=bool(getattr(module, "DICT_PRODUCERS", False)),
                protocols=frozenset(p.name for p in protocols),
                producer_needs=str(getattr(module, "PRODUCER_NEEDS", protocols[0].producer_needs)),
                consumer_needs=str(getattr(module, "CONSUMER_NEEDS", protocols[0].consumer_needs)),
            )
        )
    return families, broken


def _combinations(family: Family, libraries: Iterable[LibraryInfo]):
    libraries = list(libraries)
    produces = {family.producer_needs}
    if family.dict_producers:
        produces.add("produce-dicts")
    producers = [lib for lib in libraries if produces & lib.capabilities]
    consumers = [lib for lib in libraries if family.consumer_needs in lib.capabilities]
    roles = family.roles
    if roles == "pair":
        return [(p, c) for p in producers for c in consumers]
    if roles == "producer":
        return [(p, None) for p in producers]
    return [(None, c) for c in consumers]


def plan_cells(
    families: Sequence[Family],
    libraries: Mapping[str, LibraryInfo],
    gpu_count: int,
    no_gpu_reason: str = "",
) -> tuple[list[Cell], list[tuple[Cell, str]]]:
    """(cells to run, [(cell, reason)] to skip). A cell needs a GPU when its family does and at
    least one of its libraries does; ordered by library pair, then family, so consecutive cells
    tend to reuse a worker's imports."""
    runnable: list[Cell] = []
    skipped: list[tuple[Cell, str]] = []
    for family in families:
        for producer, consumer in _combinations(family, libraries.values()):
            infos = [lib for lib in (producer, consumer) if lib is not None]
            gpus = family.min_gpus if any(lib.needs_gpu for lib in infos) else 0
            if not family.needs_gpu:
                gpus = 0
            cell = Cell(family, producer and producer.name, consumer and consumer.name, gpus)
            missing = [lib for lib in infos if not lib.available]
            if missing:
                skipped.append((cell, f"{missing[0].name} unavailable: {missing[0].reason}"))
            elif gpus > gpu_count:
                need = "a GPU" if gpus == 1 else f"{gpus} GPUs"
                why = f"{gpu_count} visible" if gpu_count else (no_gpu_reason or "none visible")
                skipped.append((cell, f"needs {need} ({why})"))
            else:
                runnable.append(cell)
    runnable.sort(key=lambda c: (c.producer or "", c.consumer or ""))
    return runnable, skipped


def select_protocols(families: Sequence[Family], protocol: str) -> list[Family]:
    """The families that exchange over the protocols `protocol` chooses (`spec.protocols.parse`:
    a name, names joined by commas, or "all"/"both"): a family of several protocols
    (agreement) stays with any of them."""
    try:
        chosen = {p.name for p in parse(protocol)}
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return [family for family in families if chosen & family.protocols]
