"""The rule catalogue: well-formed, unique IDs whose sections point at real places in the spec."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from caiconform.spec import rules as rules_module
from caiconform.spec.rules import (
    LEVEL_WORDS,
    RULES,
    SPEC_FILES,
    Level,
    Rule,
    Side,
    get,
    level_text,
    rendered,
    rendered_text,
    rules_for_version,
)

ID_PATTERN = re.compile(r"^(CAI|EMM|DLPACK)-[A-Z0-9]+(-[A-Z0-9]+)*$")
_UNDERLINE = re.compile(r'^([=\-~^"`#*+])\1{2,}$')
_LABEL = re.compile(r"^\.\. _([^:`]+):\s*$")
_MD_HEADING = re.compile(r"^#+ (.+)$")


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def anchors(text: str) -> set[str]:
    """Every anchor a rule may cite in an rst text: each heading's slug, each heading's slug
    prefixed by its parent's (for repeated titles such as "Data"), and each explicit label; in a
    Markdown text (docs/spec/dlpack/) also each `#` heading's slug."""
    lines = text.splitlines()
    found = {m.group(1) for m in map(_LABEL.match, lines) if m}
    found |= {_slug(m.group(1)) for m in map(_MD_HEADING.match, lines) if m}
    levels: list[str] = []  # underline characters in order of first appearance
    parents: dict[int, str] = {}
    for i in range(1, len(lines)):
        title = lines[i - 1].strip()
        if not _UNDERLINE.match(lines[i]) or not title or _UNDERLINE.match(title):
            continue
        char = lines[i][0]
        if char not in levels:
            levels.append(char)
        depth = levels.index(char)
        slug = _slug(title)
        found.add(slug)
        if depth - 1 in parents:
            found.add(f"{parents[depth - 1]}-{slug}")
        parents[depth] = slug
        for deeper in [d for d in parents if d > depth]:
            del parents[deeper]
    return found


def test_ids_are_well_formed_and_match_their_keys():
    for rule_id, rule in RULES.items():
        assert ID_PATTERN.match(rule_id), (
            f"rule ID {rule_id!r} is not CAI-/EMM-/DLPACK- upper-case words"
        )
        assert rule.id == rule_id


def test_ids_are_unique_across_the_source_modules():
    from caiconform.spec import _cai, _dlpack, _dlpack_capi, _emm

    ids = [r.id for r in (*_cai.RULES, *_emm.RULES, *_dlpack.RULES, *_dlpack_capi.RULES)]
    duplicates = {i for i in ids if ids.count(i) > 1}
    assert not duplicates, f"duplicate rule IDs: {sorted(duplicates)}"
    assert len(ids) == len(RULES)


@pytest.mark.parametrize("rule", list(RULES.values()), ids=list(RULES))
def test_rule_fields_are_valid(rule: Rule):
    assert isinstance(rule.level, Level)
    assert isinstance(rule.side, Side)
    assert rule.text.strip() and rule.text.rstrip().endswith("."), rule.text
    spec, _, anchor = rule.section.partition("#")
    assert spec in SPEC_FILES and anchor, f"{rule.id}: section {rule.section!r}"
    if rule.id.startswith("CAI-"):
        assert rule.versions and set(rule.versions) <= {0, 1, 2, 3}
        assert list(rule.versions) == sorted(rule.versions)
        assert spec in ("cai-v3", "cai-v2")
    elif rule.id.startswith("DLPACK-"):
        assert rule.versions == () and spec.startswith("dlpack-"), rule.section
    else:
        assert rule.versions == () and spec == "emm"
        assert not rule.dict_visible, "EMM rules are not about interface dicts"


def test_portability_rules_are_named_as_such():
    for rule in RULES.values():
        is_port = rule.level is Level.PORTABILITY
        assert is_port == rule.id.startswith(("CAI-PORT-", "DLPACK-PORT-")), rule.id


def test_sections_resolve_to_a_heading_or_label_in_the_spec(spec_dir: Path):
    known = {key: anchors((spec_dir / name).read_text()) for key, name in SPEC_FILES.items()}
    missing = [
        f"{r.id}: {r.section}"
        for r in RULES.values()
        if r.section.partition("#")[2] not in known[r.section.partition("#")[0]]
    ]
    assert not missing, "sections with no heading or label in the spec:\n" + "\n".join(missing)


def test_anchor_extraction_sees_markdown_headings():
    assert anchors("# DLPack in the standard\n\n## array.__dlpack__ and from_dlpack\n") == {
        "dlpack-in-the-standard",
        "array-dlpack-and-from-dlpack",
    }


def test_rendered_text_keeps_markup_inside_its_paragraph():
    text = "void f(int *p);\n\nThe ``stream`` must be *None*; x * y.\n"
    assert rendered_text(text) == "void f(int *p); The stream must be None; x * y."
    assert "``stream``" in rendered(text.replace("\n\n", " "))


@pytest.mark.parametrize(
    ("rule_id", "level", "derived", "spec"),
    [
        ("DLPACK-CAPSULE-NAME", "MUST", False, "dlpack/python_spec.md"),
        ("DLPACK-STREAM-ZERO-FORBIDDEN", "MUST", False, "dlpack/array_api_dlpack.md"),
        ("DLPACK-STREAM-ONE-LEGACY", "MUST", True, "dlpack/array_api_dlpack.md"),
        ("DLPACK-ZERO-SIZE-NULL", "SHOULD", False, "dlpack/python_spec.md"),
        ("DLPACK-DTYPE-CODE", "SHOULD", False, "dlpack/dlpack_h.md"),
        ("DLPACK-MAX-VERSION-RETURNED", "MAY", False, "dlpack/array_api_dlpack.md"),
    ],
)
def test_dlpack_rules_cite_their_text(rule_id: str, level: str, derived: bool, spec: str):
    rule = get(rule_id)
    assert (rule.level.value, rule.derived, rule.spec_file) == (level, derived, spec)
    assert rule.versions == () and rule.to_dict()["spec_file"] == spec


def test_anchor_extraction_sees_nested_and_labelled_sections():
    text = ".. _top-label:\n\nLifetime\n--------\n\nData\n~~~~\n\nOther\n-----\n"
    assert anchors(text) == {"top-label", "lifetime", "data", "lifetime-data", "other"}


def test_get_and_rules_for_version():
    assert get("CAI-STREAM-ZERO-FORBIDDEN").versions == (3,)
    with pytest.raises(KeyError, match="CAI-NO-SUCH-RULE"):
        get("CAI-NO-SUCH-RULE")
    v0 = {r.id for r in rules_for_version(0)}
    assert "CAI-V0-NO-MASK" in v0 and "CAI-STREAM-TYPE" not in v0
    assert all(3 in r.versions for r in rules_for_version(3))


def test_to_dict_carries_the_documented_fields():
    d = get("CAI-DATA-ZERO-SIZE-NULL").to_dict()
    assert d["id"] == "CAI-DATA-ZERO-SIZE-NULL"
    assert d["level"] == "MUST" and d["versions"] == [2, 3] and d["side"] == "producer"
    assert d["spec_file"] == "cuda_array_interface_v3.rst" and d["dict_visible"] is True
    assert d["quote"] == "For zero-size arrays, use 0 here." and d["derived"] is True
    assert (
        d["level_text"]
        == "MUST, derived: caiconform's reading of 'For zero-size arrays, use 0 here.'"
    )


# --- levels honest to the text (docs/derived-rules.md) ------------------------------------------


def _words(level: Level) -> re.Pattern[str]:
    return re.compile(r"\b(" + "|".join(LEVEL_WORDS[level]) + r")\b", re.IGNORECASE)


@pytest.fixture(scope="module")
def spec_texts(spec_dir: Path) -> dict[str, str]:
    return {key: rendered_text((spec_dir / name).read_text()) for key, name in SPEC_FILES.items()}


def test_the_repository_spec_texts_are_the_shared_ones(spec_dir: Path):
    repo = Path(__file__).resolve().parents[1] / "docs" / "spec"
    for name in SPEC_FILES.values():
        assert (repo / name).read_text() == (spec_dir / name).read_text(), name


@pytest.mark.parametrize("rule", list(RULES.values()), ids=list(RULES))
def test_each_quote_is_a_passage_of_its_spec_file(rule: Rule, spec_texts: dict[str, str]):
    spec = rule.section.partition("#")[0]
    assert rule.quote, f"{rule.id}: no quote of the sentence it stands on"
    assert rule.quote in spec_texts[spec], (
        f"{rule.id}: quote not in {rule.spec_file} (markup stripped): {rule.quote!r}"
    )


@pytest.mark.parametrize("rule", list(RULES.values()), ids=list(RULES))
def test_a_level_the_text_states_is_a_word_of_its_quote(rule: Rule):
    """A MUST/SHOULD/MAY rule that is not derived quotes a sentence carrying a word of its own
    level; PORTABILITY is no level of the text, so such a rule is never derived."""
    if rule.level is Level.PORTABILITY:
        assert not rule.derived, f"{rule.id}: a PORTABILITY rule quotes what the text allows"
        return
    if not rule.derived:
        assert _words(rule.level).search(rule.quote), (
            f"{rule.id} is {rule.level} but its sentence has none of "
            f"{', '.join(LEVEL_WORDS[rule.level])}: {rule.quote!r} (mark it derived)"
        )


@pytest.mark.parametrize("rule", [r for r in RULES.values() if r.derived], ids=str)
def test_a_derived_rule_is_ranked_no_stronger_than_a_should_sentence(rule: Rule):
    """A reading of a sentence whose word is "should" (and no "must") is not ranked MUST: the
    ranking would be a level stronger than the text."""
    should_only = _words(Level.SHOULD).search(rule.quote) and not _words(Level.MUST).search(
        rule.quote
    )
    assert not (should_only and rule.level is Level.MUST), (
        f"{rule.id} is ranked MUST on a should-sentence: {rule.quote!r}"
    )


@pytest.mark.parametrize(
    ("rule_id", "level", "derived"),
    [
        # "should be interpreted only as true or not true"
        ("CAI-MASK-TRUTH", "SHOULD", False),
        # the text only defines "the read-only flag"
        ("CAI-DATA-READONLY-HONOURED", "MUST", True),
        # "0: This is disallowed"
        ("CAI-STREAM-ZERO-FORBIDDEN", "MUST", False),
        # "If memory info is not provided, this method should raise a RuntimeError."
        ("EMM-MEMORY-INFO-RAISES", "SHOULD", False),
        # "At present, this should always be 1."
        ("EMM-INTERFACE-VERSION", "SHOULD", False),
        # "it must also call super().reset()"
        ("EMM-HOSTONLY-RESET-SUPER", "MUST", False),
    ],
)
def test_disputed_levels_are_settled_by_the_text(rule_id: str, level: str, derived: bool):
    rule = get(rule_id)
    assert (rule.level.value, rule.derived) == (level, derived)


def test_level_text_marks_derived_rules_everywhere_it_is_used():
    derived, stated = get("CAI-DATA-READONLY-HONOURED"), get("CAI-MASK-TRUTH")
    assert level_text(stated) == "SHOULD" and level_text("CAI-MASK-TRUTH") == "SHOULD"
    assert level_text(derived) == (
        "MUST, derived: caiconform's reading of "
        "'The second element is the read-only flag as a Python bool.'"
    )
    assert level_text(derived, quote=False) == "MUST, derived"
    assert level_text("CAI-NO-SUCH-RULE", "MUST") == "MUST" and level_text(None) == "-"


def _doc_rows(path: Path) -> dict[str, list[str]]:
    rows = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^\| `([A-Z0-9-]+)` \|(.*)\|$", line)
        if match:
            rows[match.group(1)] = [
                c.strip().replace("\\|", "|") for c in match.group(2).split(" | ")
            ]
    return rows


def test_docs_list_every_derived_rule_with_its_sentence():
    """docs/derived-rules.md lists exactly the derived rules, each with the level it is ranked
    at, its spec file and its sentence (regenerate: caiconform rules --derived --markdown)."""
    rows = _doc_rows(Path(__file__).resolve().parents[1] / "docs" / "derived-rules.md")
    derived = {r.id: r for r in RULES.values() if r.derived}
    assert sorted(rows) == sorted(derived), (
        f"listed but not derived: {sorted(set(rows) - set(derived))}; "
        f"derived but not listed: {sorted(set(derived) - set(rows))}"
    )
    for rule_id, cells in rows.items():
        rule = derived[rule_id]
        assert cells[:4] == [rule.level.value, rule.spec_file, rule.quote, rule.text], rule_id


def test_build_refuses_duplicate_ids(monkeypatch):
    from caiconform.spec import _cai

    monkeypatch.setattr(_cai, "RULES", (*_cai.RULES, _cai.RULES[0]))
    with pytest.raises(RuntimeError, match=_cai.RULES[0].id):
        rules_module._build()


def test_rules_command_shows_derived_levels_and_the_sentence(capsys):
    from caiconform.cli import main

    assert main(["rules", "--json", "--derived"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in listed] == [r.id for r in RULES.values() if r.derived]
    readonly = next(r for r in listed if r["id"] == "CAI-DATA-READONLY-HONOURED")
    assert readonly["quote"] == "The second element is the read-only flag as a Python bool."
    assert readonly["level_text"].startswith("MUST, derived: caiconform's reading of 'The second")
    assert main(["rules", "--side", "consumer", "--level", "SHOULD"]) == 0
    table = capsys.readouterr().out
    assert "CAI-MASK-TRUTH" in table and "│ SHOULD " in table
    assert "CAI-DESCR-OBJECT-REFUSED" in table and "SHOULD, derived" in table
    assert main(["rules", "--markdown", "--derived"]) == 0
    assert capsys.readouterr().out.startswith("| ID | Ranked as | Spec | The sentence |")
