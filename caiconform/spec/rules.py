"""The specification as data: every normative statement of the spec texts is a `Rule`.

Findings, test IDs, reports and expectation files all name rules by `Rule.id`; IDs are stable
and never reused. The CAI statements live in `_cai.py`, the EMM statements in `_emm.py`, the
DLPack statements (array API standard, DLPack's Python specification, dlpack.h; docs/spec/dlpack/)
in `_dlpack.py`, those of DLPack's C exchange API (dlpack.h 1.3) in `_dlpack_capi.py`; this
module defines the record, assembles the catalogue, and says how a level is read from the text.

A rule's level is the normative word of the sentence it quotes (`Rule.quote`), read once through
`LEVEL_WORDS`: "must", "required" and "disallowed" make MUST, "should" and "recommended" make
SHOULD, "may" and "optional" make MAY. A rule whose sentence carries no such word for what the
rule says (a description such as "A tuple of int", a statement of Numba's behaviour such as
"Numba will immediately synchronize") is `derived`: caiconform's reading of that sentence. It
keeps a level to be ranked by, and every place that shows the level shows it through
`level_text`, which says so ("MUST, derived: caiconform's reading of '...'"). PORTABILITY rules
are no requirement of the text: they quote the sentence that allows what they are about.
docs/derived-rules.md lists the derived rules with their sentences; tests/test_rules.py keeps
the quotes, the words and that list true to the texts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

__all__ = [
    "Level",
    "Side",
    "Rule",
    "RULES",
    "get",
    "rules_for_version",
    "SPEC_FILES",
    "LEVEL_WORDS",
    "level_text",
    "rendered",
    "rendered_text",
]


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
    "dlpack-api": "dlpack/array_api_dlpack.md",
    "dlpack-py": "dlpack/python_spec.md",
    "dlpack-h": "dlpack/dlpack_h.md",
    "dlpack-capi": "dlpack/dlpack_h_exchange_api.md",
}

#: level -> the words of the texts that state it (whole words, any case); a sentence with none
#: of them states no level, and a rule standing on it is `derived`
LEVEL_WORDS: dict[Level, tuple[str, ...]] = {
    Level.MUST: ("must", "required", "disallowed"),
    Level.SHOULD: ("should", "recommended"),
    Level.MAY: ("may", "optional"),
}


@dataclass(frozen=True, slots=True)
class Rule:
    """One normative statement.

    `section` is "<spec key>#<anchor>", the anchor being the spec's own section title in
    lower-case-with-dashes (or its explicit ``.. _label:``), so a reader can find the sentence.
    `versions` is empty for EMM and DLPACK rules (the EMM interface has its own
    `interface_version`, 1; a DLPack capsule says its own version).
    `dict_visible` marks rules a recorded dict alone can show, which the validator judges; for a
    DLPACK rule, one a capsule alone can show (`caiconform.dlpack.validate` judges those).
    `quote` is the sentence of the spec file the rule stands on, as the text renders it (markup
    stripped, whitespace collapsed: `rendered`). `derived` marks a rule whose sentence carries
    no word of its level for what the rule says: caiconform's reading of the sentence. `duty`
    is False for a derived rule whose sentence states no duty for the rule's side at all (it
    only defines a field, lists adopters or describes what one library does): breaking it is
    listed, never failed by default, whatever was observed (`results.severity`, docs/severity.md).
    """

    id: str
    level: Level
    versions: tuple[int, ...]
    side: Side
    section: str
    text: str
    dict_visible: bool = False
    quote: str = ""
    derived: bool = False
    duty: bool = True

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
            "quote": self.quote,
            "derived": self.derived,
            "duty": self.duty,
            "level_text": level_text(self),
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
    quote: str = "",
    derived: bool = False,
    dict_visible: bool = False,
    duty: bool = True,
) -> Rule:
    if not duty and not derived:
        raise ValueError(
            f"{rule_id}: a sentence the rule quotes as stated has a duty (duty=False needs derived)"
        )
    return Rule(
        rule_id,
        Level(level),
        _versions(versions),
        Side(side),
        section,
        text,
        dict_visible,
        " ".join(quote.split()),
        derived,
        duty,
    )


def _build() -> dict[str, Rule]:
    from caiconform.spec import _cai, _dlpack, _dlpack_capi, _emm

    catalogue: dict[str, Rule] = {}
    for rule in (*_cai.RULES, *_emm.RULES, *_dlpack.RULES, *_dlpack_capi.RULES):
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


def level_text(rule: Rule | str | None, level: str | None = None, *, quote: bool = True) -> str:
    """A level as every report shows it: "MUST" for a level the text states, "MUST, derived:
    caiconform's reading of '<quote>'" for a derived rule ("MUST, derived" with `quote`
    False, for a table cell). `rule` is a Rule or a rule ID; `level` stands in for the rule's
    own level (a group's recorded one) and is all that shows for an unknown rule; "-" when
    there is neither."""
    found = rule if isinstance(rule, Rule) else RULES.get(rule or "")
    shown = level or (found.level.value if found is not None else None)
    if not shown:
        return "-"
    if found is None or not found.derived:
        return shown
    if not quote:
        return f"{shown}, derived"
    return f"{shown}, derived: caiconform's reading of '{found.quote}'"


#: inline rst constructs and what a reader sees of each: a role's text (its target dropped,
#: `~a.b.C` shown as C), a literal, a link's text, bold, emphasis, the default role
_INLINE = re.compile(
    r":[a-z:]+:`(?P<role>[^`]+)`"
    r"|``(?P<literal>.+?)``"
    r"|`(?P<link>[^`]+)`__?"
    r"|\*\*(?P<bold>[^*]+)\*\*"
    r"|\*(?P<emphasis>[^*\s][^*]*?)\*"
    r"|`(?P<default>[^`]+)`"
)


def _inline(match: re.Match[str]) -> str:
    kind = match.lastgroup or ""
    text = match.group(kind)
    if kind in ("role", "link"):
        if "<" in text:
            return text.split("<", 1)[0].strip()
        if text.startswith("~"):
            return text.rsplit(".", 1)[-1]
    return text


def rendered(text: str) -> str:
    """rst text as a reader sees it: inline markup stripped, whitespace collapsed; what a
    rule's quote is compared with."""
    return _INLINE.sub(_inline, " ".join(text.replace("\\ ", "").split()))


def rendered_text(text: str) -> str:
    """A whole spec text as a reader sees it: each paragraph `rendered` on its own (inline
    markup never spans a blank line, so a stray `*` of a code block cannot pair with one in the
    next paragraph), joined by spaces; what the quotes of the catalogue are found in."""
    return " ".join(rendered(p) for p in re.split(r"\n\s*\n", text) if p.strip())
