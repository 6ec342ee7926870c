"""Every aejax name that the README or an error message points users to is importable from a package root."""

import ast
import importlib
import re
from pathlib import Path

import pytest

import aejax.adapters
import aejax.linker

ROOT = Path(__file__).resolve().parents[1]
ROOTS = (aejax.linker, aejax.adapters)
PUBLIC = set(aejax.linker.__all__) | set(aejax.adapters.__all__)
IDENTIFIER = re.compile(r"\b[A-Z][A-Za-z0-9_]*\b")
DOTTED = re.compile(r"\baejax\.(?:linker|adapters)(?:\.\w+)+")


def _sources():
    return sorted([*(ROOT / "linker").rglob("*.py"), *(ROOT / "adapters").rglob("*.py")])


def _aejax_names():
    """The names aejax's own modules define at module level (classes, functions, constants), not starting with ``_``."""
    names = set()
    for path in _sources():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(target.id for target in targets if isinstance(target, ast.Name))
    return {name for name in names if not name.startswith("_")}


def _docstrings(tree):
    owners = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, owners) and node.body and isinstance(node.body[0], ast.Expr)
    }


def _message_texts():
    """Each string written into an exception or warning raised by the linker or the adapters, with where."""
    for path in _sources():
        tree = ast.parse(path.read_text())
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Raise, ast.Call)):
                continue
            for part in ast.walk(node):
                if isinstance(part, ast.Constant) and isinstance(part.value, str) and id(part) not in docstrings:
                    yield f"{path.relative_to(ROOT)}:{part.lineno}", part.value


def _texts():
    yield "README.rst", (ROOT / "README.rst").read_text()
    yield from _message_texts()


def _resolves(dotted):
    """Whether ``dotted`` is a module, or a name exported by the package root it starts from."""
    parts = dotted.split(".")
    try:
        importlib.import_module(dotted)
        return True
    except ImportError:
        return parts[2] in importlib.import_module(".".join(parts[:2])).__all__


def test_names_users_are_pointed_to_are_exported_from_a_package_root():
    aejax_names = _aejax_names()
    pointed = {
        (where, name)
        for where, text in _texts()
        for name in IDENTIFIER.findall(text)
        if name in aejax_names and name not in PUBLIC
    }
    assert not pointed


def test_dotted_aejax_references_resolve():
    unresolved = {
        (where, dotted) for where, text in _texts() for dotted in DOTTED.findall(text) if not _resolves(dotted)
    }
    assert not unresolved


@pytest.mark.parametrize("root", ROOTS, ids=lambda module: module.__name__)
def test_every_exported_name_exists(root):
    assert all(hasattr(root, name) for name in root.__all__)
