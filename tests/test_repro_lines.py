"""Each library is described once, in its adapter (issue 42, item 3): the standalone
reproducers take a library's lines from its adapter's `repro`, the report package names no
adapter in its code, and every adapter writes lines for each role it claims or says why not.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from caiconform.adapters import registry
from caiconform.adapters._repro import ROLES, Repro
from caiconform.report.standalone import libraries, script_for_group
from caiconform.report.standalone._text import array_of

ROOT = Path(__file__).resolve().parent.parent
#: the packages that ask the adapters for a library's lines instead of writing them
CLEANED = (ROOT / "caiconform" / "report" / "standalone",)
#: caiconform's own reference, which the scripts rebuild with the driver: not a library
REFERENCE = "reference"
#: (module, top-level definition, name) -> why that definition may name an adapter: facts
#: about a library, not how it is called
ALLOWED = {
    ("__init__.py", "_HARNESS", "pycuda"): "a triage fact: caiconform's own defect",
    ("__init__.py", "_HARNESS", "jax"): "a triage fact: caiconform's own defect",
    ("_text.py", "Script", "numpy"): "the distribution every script imports (`np`)",
}
#: a plain 1-d byte array: what every library that writes lines for a role can make or read
PLAIN = array_of({"typestr": "|u1", "shape": [4], "seed": 0})


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the docstring constants of a module and of its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _top_name(node: ast.stmt) -> str:
    if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return node.name
    if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    return ""


def named_adapters(path: Path, names: set[str]) -> list[tuple[str, int, str]]:
    """(top-level definition, line, name) of each string literal in `path`'s code (not its
    docstrings) that is an adapter's name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    found = []
    for statement in tree.body:
        for node in ast.walk(statement):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value in names
                and id(node) not in docs
            ):
                found.append((_top_name(statement), node.lineno, node.value))
    return found


def test_the_cleaned_packages_name_no_adapter_in_code() -> None:
    names = set(registry.names()) - {REFERENCE}
    bad = []
    for package in CLEANED:
        for path in sorted(package.glob("*.py")):
            for where, line, name in named_adapters(path, names):
                if (path.name, where, name) not in ALLOWED:
                    bad.append(f"{path.relative_to(ROOT)}:{line} ({where}) names {name!r}")
    assert not bad, "a library's lines belong in its adapter's `repro`:\n" + "\n".join(bad)


def test_the_name_finder_sees_code_and_skips_docstrings(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text('"""cupy"""\n\n\ndef f():\n    """torch"""  # cupy\n    return "torch"\n')
    assert named_adapters(path, {"cupy", "torch"}) == [("f", 6, "torch")]


@pytest.mark.parametrize("name", registry.names())
def test_every_adapter_writes_its_lines_or_says_why_not(name: str) -> None:
    adapter = registry.get(name)
    repro = adapter.repro
    for role, method in ROLES.items():
        lines = getattr(repro, method)(PLAIN)
        why = repro.missing.get(role)
        if role not in adapter.capabilities:
            assert why is None, f"{name} says why it writes no {role} lines, and claims no {role}"
        elif lines is None:
            assert isinstance(why, str) and why.strip(), (
                f"{name} claims {role} and writes no lines for it: its `repro` must write them "
                f"or say why not in `missing`"
            )
        else:
            assert why is None, f"{name} writes {role} lines and says it has none: {why}"


MYLIB = '''
"""A new library's adapter: its calls and, beside them, its reproducer lines."""

from caiconform.adapters._repro import Repro, Snip
from caiconform.adapters.base import Adapter


class _MylibRepro(Repro):
    imports = ("import mylib",)
    distributions = {"mylib": "mylib-cuda"}

    def consume(self, array):
        return Snip("result = mylib.to_host(mylib.asarray(obj))", self.imports)


class MylibAdapter(Adapter):
    name = "mylib"
    module = "mylib"
    capabilities = frozenset({"consume"})
    repro = _MylibRepro()
'''


@pytest.fixture
def mylib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A built-in adapter that is only its file (and the registry's line naming it)."""
    (tmp_path / "fake_mylib_adapter.py").write_text(textwrap.dedent(MYLIB))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry.BUILTIN, "mylib", "fake_mylib_adapter:MylibAdapter")
    registry.clear_cache()
    yield
    registry.clear_cache()


def test_a_new_adapters_file_is_all_a_reproducer_needs_of_it(mylib) -> None:
    group = {
        "library": "mylib",
        "role": "consumer",
        "rule": "CAI-CONSUMER-READS-DESCRIBED",
        "outcome": "fail",
        "severity": "corrupts",
        "reproducer": {
            "cell": "roundtrip/reference/mylib",
            "params": {"seed": 0, "typestr": "<f4", "layout": {"shape": [3], "strides": None}},
        },
    }
    text = script_for_group(group)
    assert text is not None
    assert "import mylib\n" in text
    assert "    result = mylib.to_host(mylib.asarray(obj))\n" in text
    assert "# Needs: numpy, mylib-cuda, cuda-bindings (and nothing of caiconform)." in text


def test_a_name_no_adapter_has_has_no_lines() -> None:
    assert libraries.lines("no-such-library") is libraries.lines("")
    assert type(libraries.lines("no-such-library")) is Repro
    assert libraries.consume("no-such-library", PLAIN) is None
