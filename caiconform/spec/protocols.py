"""The interchange protocols, each one object: its families, the capability each role needs,
what a producer's object exposes, where a consumer's import comes from in the pytest plugin, its
rule prefix, and the rules a record of it is filed under when it names none.

The runner (`runner.plan`: which libraries play which role, `run --protocol`), the pytest plugin
(which families judge a user's factory, whose consumer they call), the report (one row per
protocol), the filing of findings (`results.filing`) and rule coverage read these objects, so
no code there compares a protocol's name: a new protocol is one `Protocol` here, its families
in the catalogue (`spec.families`) and its rules in the rule catalogue.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from caiconform.spec.families import CATALOGUE, entry

__all__ = [
    "Protocol",
    "CAI",
    "DLPACK",
    "DLPACK_C",
    "PROTOCOLS",
    "NAMES",
    "get",
    "of_family",
    "of_rule",
    "parse",
]


@dataclass(frozen=True)
class Protocol:
    """One interchange protocol."""

    #: its name on the command line (`run --protocol`, `--cai-protocol`) and in reports
    name: str
    #: how a sentence names it
    title: str
    #: the prefix of its rules' IDs in the rule catalogue
    rule_prefix: str
    #: the adapter capability a library needs to produce over it (`adapters.base.CAPABILITIES`)
    producer_needs: str
    #: the adapter capability a library needs to consume over it
    consumer_needs: str
    #: what a producer's object exposes when it speaks the protocol
    export: str
    #: the pytest plugin's target field holding the user's consumer over it
    #: (`pytest_plugin.targets.Target`: `--cai-consumer`, `--cai-dlpack-consumer`)
    plugin_consumer: str
    #: (the consumer's rule, the producer's rule) a finding on valid input without a rule of its
    #: own is filed under: reading, or exporting, what the export describes
    reads: tuple[str, str]

    @property
    def families(self) -> tuple[str, ...]:
        """Its families, in catalogue order (a family comparing protocols is in each)."""
        return tuple(e.name for e in CATALOGUE if self.name in e.protocols)


CAI = Protocol(
    name="cai",
    title="the CUDA Array Interface",
    rule_prefix="CAI-",
    producer_needs="produce",
    consumer_needs="consume",
    export="__cuda_array_interface__",
    plugin_consumer="consumer",
    reads=("CAI-CONSUMER-READS-DESCRIBED", "CAI-PRODUCER-DESCRIBES-DATA"),
)
DLPACK = Protocol(
    name="dlpack",
    title="DLPack",
    rule_prefix="DLPACK-",
    producer_needs="dlpack",
    consumer_needs="consume-dlpack",
    export="__dlpack__",
    plugin_consumer="dlpack_consumer",
    reads=("DLPACK-CONSUMER-READS-DESCRIBED", "DLPACK-PRODUCER-DESCRIBES-DATA"),
)
DLPACK_C = Protocol(
    name="dlpack-c",
    title="DLPack's C exchange API",
    rule_prefix="DLPACK-CAPI-",
    producer_needs="dlpack-c",
    consumer_needs="consume-dlpack",
    export="__dlpack_c_exchange_api__",
    plugin_consumer="dlpack_consumer",
    reads=("DLPACK-CONSUMER-READS-DESCRIBED", "DLPACK-CAPI-SAME-TENSOR"),
)
#: every protocol, the CAI first: a family of several is read as its first
PROTOCOLS: tuple[Protocol, ...] = (CAI, DLPACK, DLPACK_C)
NAMES: tuple[str, ...] = tuple(p.name for p in PROTOCOLS)
_BY_NAME = {p.name: p for p in PROTOCOLS}
#: `--protocol` words that choose every protocol ("both" from when there were two)
_EVERY = ("all", "both")


def get(name: str) -> Protocol:
    """The protocol called `name`; ValueError names the known ones."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown protocol {name!r} (known: {', '.join(NAMES)})") from None


def of_family(family: str | None, module: Any = None) -> tuple[Protocol, ...]:
    """The protocols `family` exchanges over: the catalogue's for a built-in family, else the
    `PROTOCOLS` names its module declares (a family of the user's own), else the CAI."""
    found = entry(str(family))
    names: Iterable[str] = found.protocols if found else getattr(module, "PROTOCOLS", (CAI.name,))
    protocols = tuple(get(name) for name in names)
    if not protocols:
        raise ValueError(f"family {family!r} names no protocol (known: {', '.join(NAMES)})")
    return protocols


def of_rule(rule_id: str) -> Protocol | None:
    """The protocol rule `rule_id` belongs to: the one of the longest prefix it carries
    (DLPACK-CAPI- rules are the C exchange API's, not DLPack's), None for an EMM rule."""
    owners = [p for p in PROTOCOLS if rule_id.startswith(p.rule_prefix)]
    return max(owners, key=lambda p: len(p.rule_prefix), default=None)


def parse(choice: str) -> tuple[Protocol, ...]:
    """The protocols a `--protocol` value chooses: "all" (or "both"), one name, or names joined
    by commas; ValueError for an unknown name."""
    if choice in _EVERY:
        return PROTOCOLS
    names = [n.strip() for n in choice.split(",") if n.strip()]
    if not names:
        raise ValueError(f"no protocol named in {choice!r} (known: {', '.join(NAMES)}, all)")
    return tuple(get(name) for name in names)
