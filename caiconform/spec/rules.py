"""The specification as data: every normative statement of the three spec texts is a `Rule`.

Findings, test IDs, reports and expectation files all name rules by `Rule.id`; IDs are stable
and never reused. The CAI statements live in `_cai.py`, the EMM statements in `_emm.py`; this
module only defines the record and assembles the catalogue.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["Level", "Side", "Rule", "RULES", "get", "rules_for_version", "SPEC_FILES"]


class Level(str, Enum):
    """How binding a rule is. PORTABILITY: legal per spec, but real consumers commonly reject it."""

    MUST = "MUST"
    SHOULD = "SHOULD"
    MAY = "MAY"
    PORTABILITY = "PORTABILITY"

    def __str__(self) -> str:
        return self.value


class Side(str, Enum):
    """Who the rule binds: the exporting object, the importing library, both, the user, an EMM
    plugin, or Numba itself (statements the EMM text makes about Numba's own behaviour)."""

    PRODUCER = "producer"
    CONSUMER = "consumer"
    BOTH = "both"
    USER = "user"
    PLUGIN = "plugin"
    NUMBA = "numba"

    def __str__(self) -> str:
        return self.value


SPEC_FILES = {
    "cai-v3": "cuda_array_interface_v3.rst",
    "cai-v2": "cuda_array_interface_v2.rst",
    "emm": "external_memory_management.rst",
}


@dataclass(frozen=True, slots=True)
class Rule:
    """One normative statement.

    `section` is "<spec key>#<anchor>", the anchor being the spec's own section title in
    lower-case-with-dashes (or its explicit ``.. _label:``), so a reader can find the sentence.
    `versions` is empty for EMM rules (the EMM interface has its own `interface_version`, 1).
    `dict_visible` marks rules a recorded dict alone can show, which the validator judges.
    """

    id: str
    level: Level
    versions: tuple[int, ...]
    side: Side
    section: str
    text: str
    dict_visible: bool = False

    @property
    def spec_file(self) -> str:
        return SPEC_FILES[self.section.split("#", 1)[0]]

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "level": self.level.value,
            "versions": list(self.versions),
            "side": self.side.value,
            "section": self.section,
            "spec_file": self.spec_file,
            "text": self.text,
            "dict_visible": self.dict_visible,
        }


def _versions(spec: str) -> tuple[int, ...]:
    """'0-3' -> (0, 1, 2, 3); '3' -> (3,); '' -> ()."""
    if not spec:
        return ()
    lo, _, hi = spec.partition("-")
    return tuple(range(int(lo), int(hi or lo) + 1))


def make(
    rule_id: str,
    level: str,
    versions: str,
    side: str,
    section: str,
    text: str,
    *,
    dict_visible: bool = False,
) -> Rule:
    return Rule(rule_id, Level(level), _versions(versions), Side(side), section, text, dict_visible)


def _build() -> dict[str, Rule]:
    from caiconform.spec import _cai, _emm

    catalogue: dict[str, Rule] = {}
    for rule in (*_cai.RULES, *_emm.RULES):
        if rule.id in catalogue:
            raise RuntimeError(f"duplicate rule ID {rule.id} in the catalogue")
        catalogue[rule.id] = rule
    return catalogue


RULES: dict[str, Rule] = _build()


def get(rule_id: str) -> Rule:
    """The rule with this ID; KeyError names the unknown ID."""
    try:
        return RULES[rule_id]
    except KeyError:
        raise KeyError(f"unknown rule ID {rule_id!r}") from None


def rules_for_version(version: int) -> list[Rule]:
    return [r for r in RULES.values() if version in r.versions]
