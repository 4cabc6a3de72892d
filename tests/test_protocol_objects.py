"""Each protocol is one object (`caiconform.spec.protocols`) and the family catalogue the one
place a family's protocol is decided: the runner's plan, `run --protocol`, the plugin, the filing
of findings, rule coverage and the suites read them, so no code there compares a protocol's
name."""

from __future__ import annotations

import ast
import sys
import types
from pathlib import Path

import pytest

from caiconform.adapters.base import CAPABILITIES
from caiconform.errors import UsageError
from caiconform.spec import protocols
from caiconform.spec.families import CATALOGUE, FAMILIES, entry
from caiconform.spec.protocols import CAI, DLPACK, PROTOCOLS
from caiconform.spec.rules import RULES

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "caiconform"


def test_every_family_of_the_catalogue_belongs_to_known_protocols() -> None:
    assert tuple(e.name for e in CATALOGUE) == FAMILIES and len(set(FAMILIES)) == len(FAMILIES)
    for e in CATALOGUE:
        assert e.protocols and all(protocols.get(name) for name in e.protocols), e
        assert e.judges, f"{e.name}: its suite item says what it judges"
    listed = {name for p in PROTOCOLS for name in p.families}
    assert listed == set(FAMILIES), "every family is some protocol's"
    assert "agreement" in CAI.families and "agreement" in DLPACK.families
    assert "roundtrip" in CAI.families and "roundtrip" not in DLPACK.families


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.name)
def test_a_protocol_names_only_what_exists(protocol) -> None:
    assert {protocol.producer_needs, protocol.consumer_needs} <= CAPABILITIES
    assert all(rule in RULES for rule in protocol.reads), protocol.reads
    assert protocols.of_rule(protocol.reads[1]) is protocol, "its producer's reading rule"
    assert any(protocols.of_rule(rule) is protocol for rule in RULES)
    from caiconform.pytest_plugin.targets import Target

    assert hasattr(Target("x"), protocol.plugin_consumer)
    assert protocol.export.startswith("__") and protocol.export.endswith("__")


def test_a_rule_belongs_to_the_protocol_of_its_longest_prefix() -> None:
    assert protocols.of_rule("DLPACK-CAPI-ON-TYPE") is protocols.DLPACK_C
    assert protocols.of_rule("DLPACK-CAPSULE-NAME") is DLPACK
    assert protocols.of_rule("CAI-SYNC-CONSUMER") is CAI
    assert protocols.of_rule("EMM-POINTER-FINALIZER") is None


def test_parse_chooses_protocols_by_name_or_all() -> None:
    assert protocols.parse("all") == PROTOCOLS and protocols.parse("both") == PROTOCOLS
    assert protocols.parse("dlpack") == (DLPACK,)
    assert protocols.parse("dlpack, cai") == (DLPACK, CAI)
    with pytest.raises(ValueError, match="unknown protocol 'dlpak'"):
        protocols.parse("dlpak")
    with pytest.raises(ValueError, match="no protocol named"):
        protocols.parse(" , ")


def test_a_family_of_the_user_s_own_declares_its_protocols() -> None:
    assert protocols.of_family("dlpack_roundtrip") == (DLPACK,)
    own = types.SimpleNamespace(PROTOCOLS=("dlpack",))
    assert protocols.of_family("mine", own) == (DLPACK,)
    assert protocols.of_family("mine", types.SimpleNamespace()) == (CAI,)
    with pytest.raises(ValueError, match="names no protocol"):
        protocols.of_family("mine", types.SimpleNamespace(PROTOCOLS=()))
    with pytest.raises(ValueError, match="unknown protocol"):
        protocols.of_family("mine", types.SimpleNamespace(PROTOCOLS=("dl",)))


def _module(tmp_path: Path, monkeypatch, name: str, body: str) -> str:
    """A family module of the user's own, `ownfams.<name>`, declaring `body`."""
    package = tmp_path / "ownfams"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").touch()
    (package / f"{name}.py").write_text(
        f'FAMILY = "{name}"\nROLES = "pair"\nNEEDS_GPU = False\n'
        "def examples(p, c):\n    return None\n"
        f"def execute(params, p, c):\n    return None\n{body}"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(f"ownfams.{name}", None)
    return f"ownfams.{name}"


def test_the_plan_reads_needs_from_the_family_s_protocol(tmp_path, monkeypatch) -> None:
    from caiconform.runner.plan import load_families, select_protocols

    (built_in,), _ = load_families(["dlpack_roundtrip"])
    assert built_in.protocols == {"dlpack"}
    assert (built_in.producer_needs, built_in.consumer_needs) == ("dlpack", "consume-dlpack")
    (agreement,), _ = load_families(["agreement"])
    assert agreement.protocols == {"cai", "dlpack"} and agreement.producer_needs == "produce"
    dl = _module(tmp_path, monkeypatch, "dlfam", 'PROTOCOLS = ("dlpack",)\n')
    asks = _module(tmp_path, monkeypatch, "asks", 'CONSUMER_NEEDS = "kernel"\n')
    (own, other), _ = load_families([dl, asks])
    assert own.protocols == {"dlpack"} and own.producer_needs == "dlpack"
    assert other.protocols == {"cai"} and other.consumer_needs == "kernel"
    assert select_protocols([own, other, agreement], "dlpack") == [own, agreement]
    assert select_protocols([own, other], "all") == [own, other]
    with pytest.raises(UsageError, match="unknown protocol"):
        select_protocols([own], "dl")
    bad = _module(tmp_path, monkeypatch, "badfam", 'PROTOCOLS = ("cuda",)\n')
    with pytest.raises(UsageError, match="badfam: PROTOCOLS: unknown protocol 'cuda'"):
        load_families([bad])


def test_filing_reads_the_protocol_s_rules() -> None:
    from caiconform.results.filing import honoured_rule, reading_rule

    assert reading_rule("dlpack_copy", "producer") == DLPACK.reads[1]
    assert reading_rule("roundtrip", "consumer") == CAI.reads[0]
    assert honoured_rule("dlpack_roundtrip", "consumer") == DLPACK.reads[0]
    assert honoured_rule("streams", "consumer") == "CAI-SYNC-CONSUMER"
    assert reading_rule("a.family.of.the.users.own", "consumer") == CAI.reads[0]


#: where a protocol's name must not be compared: they read the protocol objects
_READERS = ("runner", "results", "report")


def _compared_names(path: Path) -> list[str]:
    """Comparisons (==, !=, in, startswith) of a protocol's name or a family-name prefix."""
    names = {p.name for p in PROTOCOLS} | {"dlpack_", "both"}
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "startswith":
            parts = list(node.args)
        else:
            continue
        for part in parts:
            values = part.elts if isinstance(part, (ast.Tuple, ast.Set, ast.List)) else [part]
            for value in values:
                if isinstance(value, ast.Constant) and value.value in names:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {value.value!r}")
    return found


def test_no_protocol_name_is_compared_in_runner_results_or_report() -> None:
    found = [
        hit
        for package in _READERS
        for path in sorted((PKG / package).rglob("*.py"))
        for hit in _compared_names(path)
    ]
    assert not found, "compare protocol objects, not names:\n" + "\n".join(found)


def test_the_suites_have_an_item_for_every_family() -> None:
    """suites/test_families.py parametrizes over the catalogue: every family has cells over the
    adapters (planned from their declared capabilities, runnable here or not) and so items."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "suites_conftest", ROOT / "suites" / "conftest.py"
    )
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    from caiconform.adapters import registry

    empty = [f for f in FAMILIES if not conftest.cells_for(f, registry.names())]
    assert not empty, f"families without suite items: {empty}"
    text = (ROOT / "suites" / "test_families.py").read_text()
    assert "def test_family(suite, family_cell)" in text and entry("schema") is not None
