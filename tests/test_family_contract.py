"""The check-family contract is written down whole: every name the runner reads from a family
module is listed in docs/internals.md ("Check families") and in `caiconform.checks`' docstring."""

from __future__ import annotations

import re
from pathlib import Path

import caiconform.checks

ROOT = Path(__file__).resolve().parent.parent
#: where a family module's names are read: the runner, and the memory-kind and floor helpers
#: it reads examples and floors through
READERS = [
    *sorted((ROOT / "caiconform" / "runner").rglob("*.py")),
    ROOT / "caiconform" / "checks" / "_memory.py",
    ROOT / "caiconform" / "checks" / "_floor.py",
]
#: getattr(module, "X") / hasattr(cell.family.module, "X"): a name read off a family module
_ATTRIBUTE = re.compile(r"(?:getattr|hasattr)\([\w.]*(?:module|family)[\w.]*, \"(\w+)\"")
#: f"{module}:floor_data": a function of a family module called by its name in a worker
_BY_NAME = re.compile(r"\{module(?:\.__name__)?\}:(\w+)")
#: names `runner.plan.load_families` requires
_REQUIRED = re.compile(r"for a in \(([^)]*)\)")


def _names_read() -> set[str]:
    names: set[str] = set()
    for path in READERS:
        text = path.read_text(encoding="utf-8")
        names.update(_ATTRIBUTE.findall(text))
        names.update(_BY_NAME.findall(text))
        for group in _REQUIRED.findall(text):
            names.update(re.findall(r"\"(\w+)\"", group))
    return names


def _contract_section() -> str:
    text = (ROOT / "docs" / "internals.md").read_text(encoding="utf-8")
    start = text.index("## Check families")
    return text[start : text.index("\n## ", start + 1)]


def test_the_runner_reads_the_hooks_this_test_knows_of():
    names = _names_read()
    for name in ("FAMILY", "ROLES", "examples", "execute", "taints", "crash_kind", "floor_data"):
        assert name in names, f"got {sorted(names)}, expected {name} among them"


def test_every_hook_the_runner_reads_is_documented():
    section = _contract_section()
    docstring = caiconform.checks.__doc__ or ""
    for name in sorted(_names_read()):
        assert f"`{name}" in section, f"docs/internals.md, Check families: {name} missing"
        assert f"`{name}" in docstring, f"caiconform.checks docstring: {name} missing"
