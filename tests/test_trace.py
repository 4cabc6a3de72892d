"""Traceability of the spec texts to the rule catalogue (`caiconform.spec.trace`).

The completeness check reads each rst text into sentences and list items (code blocks,
non-admonition directives and headings left out), picks those carrying a normative word, and
requires each to be covered by a TRACE quote (it has a rule) or an EXEMPT quote (it was judged
not normative). A normative sentence the catalogue forgot is reported by its text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import pytest

from caiconform.spec.rules import RULES, SPEC_FILES, Level, Rule, make, rendered
from caiconform.spec.trace import EXEMPT, TRACE, Exempt, Trace

# Words that make a sentence normative, or may: the brief's list, plus the other modal and
# guarantee words the texts use ("will", "recommended", "preferrable", "responsibility").
NORMATIVE = re.compile(
    r"\b(must|should|may|required|requires|disallowed|is not|never|always|optional|optionally"
    r"|need to|needs to|need not|is expected to|are expected to|is to be|will|recommended"
    r"|preferr?able|responsib\w*|guarantee\w*)\b",
    re.IGNORECASE,
)

# Rules that no sentence of the texts states, and why they are in the catalogue anyway.
UNTRACED = {
    "CAI-ATTR-RAISES-ATTRIBUTEERROR": "Python's attribute protocol (hasattr/getattr with a "
    "default catch only AttributeError), which consumers rely on to probe for the interface",
    "CAI-DLPACK-AGREE": "coherence with DLPack, a second protocol the CAI text does not mention",
    **dict.fromkeys(
        (
            "CAI-ENTRY-ZERO-COPY-SEES-WRITES",
            "CAI-ENTRY-ZERO-COPY-WRITES-THROUGH",
            "CAI-ENTRY-COPY-INDEPENDENT",
        ),
        "the copy semantics each library documents for its own entry points (quoted, with the "
        "page, in caiconform/adapters/entries.py), not a sentence of the CAI text",
    ),
}

_UNDERLINE = re.compile(r'^([=\-~^"`#*+])\1{2,}$')
_DIRECTIVE = re.compile(r"^\s*\.\.\s")
_ADMONITION = re.compile(r"^\s*\.\. note::")
_ITEM = re.compile(r"^\s*(?:[-*]|\d+\.)\s+")
_SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=[A-Z])")
#: rst text as a reader sees it, as the rules' quotes are compared with it
normalise = rendered


def _blocks(text: str) -> Iterable[str]:
    """Paragraphs and list items of an rst text, raw. Headings, code blocks and directives
    (autodoc, labels, code) are left out; a note's body is kept, since notes state rules."""
    lines = text.splitlines()
    current: list[str] = []
    in_item = False
    skip_deeper_than: int | None = None
    for i, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        if skip_deeper_than is not None:
            if not line.strip() or indent > skip_deeper_than:
                continue
            skip_deeper_than = None
        following = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if not line.strip() or _UNDERLINE.match(line.strip()) or _UNDERLINE.match(following):
            if current:
                yield " ".join(current)
            current, in_item = [], False
            continue
        if _ADMONITION.match(line):
            if current:
                yield " ".join(current)
            current, in_item = [line.split("::", 1)[1]], False
            continue
        if _DIRECTIVE.match(line):
            if current:
                yield " ".join(current)
            current, in_item, skip_deeper_than = [], False, indent
            continue
        # A bullet starts an item after a blank line or another item; inside a paragraph
        # ("... with an EMM Plugin\n- an EMM Plugin should ...") it is ordinary text.
        if _ITEM.match(line) and (not current or in_item):
            if current:
                yield " ".join(current)
            current, in_item = [_ITEM.sub("", line, count=1)], True
            continue
        current.append(line.strip())
    if current:
        yield " ".join(current)


def sentences(text: str) -> list[str]:
    """The normalised sentences and list items of an rst text, in order."""
    return [s for block in _blocks(text) for s in _SENTENCE_END.split(normalise(block)) if s]


def uncovered(units: list[str], quotes: Iterable[str]) -> list[str]:
    """The normative units no quote covers (the quote lies in the unit, or the unit in it)."""
    wanted = [normalise(q) for q in quotes]
    return [u for u in units if NORMATIVE.search(u) and not any(q in u or u in q for q in wanted)]


#: the texts traced sentence by sentence: the CAI and EMM texts (the DLPack texts under
#: docs/spec/dlpack/ are quoted by the DLPACK rules, tests/test_rules.py, but not traced)
TRACED_SPECS = ("cai-v3", "cai-v2", "emm")


@pytest.fixture(scope="module")
def texts(spec_dir: Path) -> dict[str, str]:
    return {key: (spec_dir / SPEC_FILES[key]).read_text() for key in TRACED_SPECS}


@pytest.fixture(scope="module")
def units(texts: dict[str, str]) -> dict[str, list[str]]:
    return {key: sentences(text) for key, text in texts.items()}


def _entries() -> list[Trace | Exempt]:
    return [*TRACE, *EXEMPT]


def test_every_quote_occurs_in_its_spec_text(texts: dict[str, str]):
    flat = {key: normalise(text) for key, text in texts.items()}
    missing = [
        f"{e.spec}: {e.quote!r}" for e in _entries() if normalise(e.quote) not in flat[e.spec]
    ]
    assert not missing, "quotes not found in their spec text:\n" + "\n".join(missing)


def test_every_quote_lies_in_exactly_one_sentence(units: dict[str, list[str]]):
    """A quote is one sentence's (or list item's) own words, and picks out only that one."""
    wrong = []
    for e in _entries():
        hits = [u for u in units[e.spec] if normalise(e.quote) in u]
        if len(hits) != 1:
            wrong.append(f"{e.spec}: {e.quote!r} lies in {len(hits)} sentences: {hits}")
    assert not wrong, "\n".join(wrong)


def test_no_sentence_is_both_traced_and_exempt(units: dict[str, list[str]]):
    both = []
    for spec, spec_units in units.items():
        traced = [normalise(t.quote) for t in TRACE if t.spec == spec]
        exempt = [normalise(e.quote) for e in EXEMPT if e.spec == spec]
        both += [
            f"{spec}: {u}"
            for u in spec_units
            if any(q in u for q in traced) and any(q in u for q in exempt)
        ]
    assert not both, "sentences both traced and exempt:\n" + "\n".join(both)


def test_entries_are_well_formed():
    for e in _entries():
        assert e.spec in TRACED_SPECS, f"unknown spec key {e.spec!r} for {e.quote!r}"
        assert e.quote == e.quote.strip() and e.quote, f"{e.spec}: empty or padded quote"
    for e in EXEMPT:
        assert e.why.strip(), f"{e.spec}: {e.quote!r} is exempt without a reason"
    seen = [(e.spec, e.quote) for e in _entries()]
    assert len(seen) == len(set(seen)), "a quote is listed twice for the same spec"


def test_every_traced_rule_exists_and_belongs_to_its_spec_family():
    for t in TRACE:
        assert t.rules, f"{t.spec}: {t.quote!r} names no rule"
        for rule_id in t.rules:
            assert rule_id in RULES, f"{t.spec}: {t.quote!r} names unknown rule {rule_id}"
            family = "EMM-" if t.spec == "emm" else "CAI-"
            assert rule_id.startswith(family), f"{t.spec}: {t.quote!r} cites {rule_id}"
            assert RULES[rule_id].level is not Level.PORTABILITY, (
                f"{rule_id} is a PORTABILITY rule, not a spec sentence, yet traces {t.quote!r}"
            )


def orphans(rules: Iterable[Rule], trace: Iterable[Trace]) -> list[str]:
    """The rules of the traced texts no TRACE entry cites, PORTABILITY and justified ones
    aside."""
    traced = {rule_id for t in trace for rule_id in t.rules}
    return [
        r.id
        for r in rules
        if r.section.partition("#")[0] in TRACED_SPECS
        and r.id not in traced
        and r.id not in UNTRACED
        and r.level is not Level.PORTABILITY
    ]


def test_every_rule_is_traced_or_justified():
    traced = {rule_id for t in TRACE for rule_id in t.rules}
    assert set(UNTRACED) <= set(RULES), set(UNTRACED) - set(RULES)
    assert not traced & set(UNTRACED), f"justified as untraced yet traced: {traced & set(UNTRACED)}"
    missing = orphans(RULES.values(), TRACE)
    assert not missing, f"rules no spec sentence states: {missing}"


def test_orphan_check_reports_a_rule_nobody_traces():
    extra = make("CAI-UNSTATED", "MUST", "3", "producer", "cai-v3#pointer-attributes", "Made up.")
    assert orphans([*RULES.values(), extra], TRACE) == ["CAI-UNSTATED"]
    dropped = [t for t in TRACE if "CAI-STREAM-LEGACY" not in t.rules]
    assert orphans(RULES.values(), dropped) == ["CAI-STREAM-LEGACY"]


@pytest.mark.parametrize("spec", TRACED_SPECS)
def test_every_normative_sentence_is_traced_or_exempt(spec: str, units: dict[str, list[str]]):
    quotes = [e.quote for e in _entries() if e.spec == spec]
    missing = uncovered(units[spec], quotes)
    assert not missing, (
        f"normative sentences of {SPEC_FILES[spec]} with no TRACE or EXEMPT entry:\n"
        + "\n".join(missing)
    )


def test_completeness_check_reports_a_removed_entry(units: dict[str, list[str]]):
    """The check can fail: dropping the entry for the stream-0 sentence exposes that sentence,
    and only it."""
    dropped = next(t for t in TRACE if t.rules == ("CAI-STREAM-ZERO-FORBIDDEN",))
    quotes = [e.quote for e in _entries() if e.spec == "cai-v3"]
    before = uncovered(units["cai-v3"], quotes)
    after = uncovered(units["cai-v3"], [q for q in quotes if q != dropped.quote])
    exposed = [u for u in after if u not in before]
    assert len(exposed) == 1 and normalise(dropped.quote) in exposed[0], exposed


def test_sentence_reader_on_a_small_text():
    text = (
        "Title\n=====\n\n"
        "The ``x`` entry **must** be an *int*. See :ref:`the notes <notes>`.\n\n"
        "- first item, which\n  may wrap\n- second item\n\n"
        ".. code-block:: python\n\n   x.must = 1\n\n"
        ".. note:: Numba will raise an\n          error.\n\n"
        "A paragraph\n- with a dash that is not an item.\n"
    )
    assert sentences(text) == [
        "The x entry must be an int.",
        "See the notes.",
        "first item, which may wrap",
        "second item",
        "Numba will raise an error.",
        "A paragraph - with a dash that is not an item.",
    ]
    assert uncovered(sentences(text), ["entry must be"]) == [
        "first item, which may wrap",
        "Numba will raise an error.",
        "A paragraph - with a dash that is not an item.",
    ]


def test_normalise_renders_roles_and_links_as_sphinx_shows_them():
    raw = ":class:`~numba.cuda.IpcHandle` and :func:`numba.cuda.close`, `CuPy <https://x>`_"
    assert normalise(raw) == "IpcHandle and numba.cuda.close, CuPy"
    assert normalise("``@cuda.jit``\\ -ted `0`") == "@cuda.jit-ted 0"
