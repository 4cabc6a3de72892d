"""Every module says what it is for in its first docstring line, and `caiconform.runner`'s
docstring lists every module of the runner."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import caiconform.runner

PACKAGE = Path(__file__).resolve().parent.parent / "caiconform"
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_module_opens_with_what_it_is_for(path):
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    assert doc and doc.splitlines()[0].strip(), f"{path.relative_to(PACKAGE)}: no docstring"


def test_the_runner_lists_its_modules():
    doc = caiconform.runner.__doc__ or ""
    for path in sorted((PACKAGE / "runner").glob("*.py")):
        if path.stem != "__init__":
            assert f"`{path.stem}`" in doc, f"caiconform/runner/__init__.py: {path.stem} missing"
