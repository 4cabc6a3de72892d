"""The check families: one module per kind of conformance question.

The family contract is every name the runner reads from a family module (docs/internals.md,
"Check families"). Required:
- `FAMILY` (its name in records and on the command line), `ROLES` ("pair", "producer" or
  "consumer");
- `examples(producer, consumer)`: a hypothesis strategy of JSON-able params, drawn in the parent;
- `execute(params, producer, consumer) -> Result` (`caiconform.results.outcome`): one example,
  run in an isolated worker.
Optional, with the runner's value when absent:
- `NEEDS_GPU` (True), `MIN_GPUS` (1; 2 or more: its cells see every GPU);
- `DICT_PRODUCERS` (False): also judges pseudo-producers that only hand out dicts (`synthetic`);
- `PROTOCOLS` (("cai",)), for a family of the user's own only: the names of the protocols it
  exchanges over (`caiconform.spec.protocols`); a built-in family's are the family catalogue's
  (`caiconform.spec.families.CATALOGUE`), declared nowhere else;
- `PRODUCER_NEEDS` and `CONSUMER_NEEDS` (its first protocol's `producer_needs` and
  `consumer_needs`): the capability each role needs, where the family asks for another;
- `SINGLE_QUEUE` (False): no example needs two streams' work to overlap, so its forked workers
  make their CUDA contexts with one hardware queue, much cheaper to make beside others
  (`runner.forkserver.queues_for`); the streams family, whose spin exposes a consumer that does
  not wait, must not;
- `SATURATES` (True): the drawn examples of a cell stop after `RunConfig.saturate` in a row
  brought no new class (`saturate_found` once the cell met a failure); False where each draw is
  a different input (a mutant of its own rule);
- `prepare(producer, consumer)`: readies a worker for a cell, instead of the adapter source's
  `warm`/`probe`;
- `taints(params, result) -> bool` (False): the example left its worker untrusted (retired, and
  counted as lost by the crash caps);
- `crash_kind(params) -> str`: the kind the drawn-example crash cap counts by;
- `floor(producer, consumer) -> list[FloorExample]`: fixed examples run before the drawn ones
  (`checks._floor`);
- `floor_data(part, parts)`, `seed_floor(parts)`, `FLOOR_PARTS` (1): a floor built at the run's
  start in worker processes and merged in the parent;
- `shipped_floor() -> list | None`: that floor as the package keeps it, when still current;
- `repro(params, producer, consumer) -> str`: a standalone reproducer script (else a generic one).

Their names, in the order a run goes through them, with the protocol each exchanges over, are
the family catalogue `caiconform.spec.families.CATALOGUE` (kept below, where results and rule
coverage read it too). Modules are imported only when asked
for, so listing the families stays cheap.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from caiconform.spec.families import FAMILIES

__all__ = ["load"]


def load(family: str) -> ModuleType:
    """The module of `family`; ValueError names the known families for an unknown one."""
    if family not in FAMILIES:
        raise ValueError(f"unknown check family {family!r}; expected one of {', '.join(FAMILIES)}")
    return importlib.import_module(f"caiconform.checks.{family}")
