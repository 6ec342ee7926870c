"""The linker's subpackages import one way: call -> program -> trace -> lengths, lowerings beside."""

import ast
import re
from pathlib import Path

LINKER = Path(__file__).resolve().parents[1] / "linker"

LEAVES = {"errors", "checks", "graph", "trace_context"}
"""Modules and packages every layer may use; they import nothing of aejax.linker but one another."""

MAY_IMPORT = {
    "errors": set(),
    "checks": {"errors", "trace_context"},
    "trace_context": set(),
    "graph": set(),
    "mesh": set(),
    "loader": set(),
    "lengths": LEAVES,
    "trace": LEAVES | {"lengths"},
    "rewrites": LEAVES,
    "dispatch": LEAVES | {"lengths", "trace"},
    "scan": LEAVES | {"lengths", "trace", "dispatch", "rewrites"},
    "program": LEAVES | {"lengths", "trace"},
    "call": LEAVES | {"lengths", "trace", "dispatch", "scan", "rewrites", "program"},
}
"""What each part of the linker may import besides itself; ``mode``, ``export``, ``exporting``, ``chains`` and the
package may import all."""


def _part(module: str) -> str | None:
    """The part of ``aejax.linker`` a dotted module name belongs to, ``None`` outside it."""
    names = module.split(".")
    if names[:2] != ["aejax", "linker"] or len(names) < 3:
        return None
    return names[2]


def _imported_parts(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        found |= {part for part in map(_part, modules) if part is not None}
    return found


def _own_part(path: Path) -> str:
    relative = path.relative_to(LINKER)
    return relative.parts[0].removesuffix(".py")


def test_every_part_of_the_linker_is_placed():
    parts = {_own_part(path) for path in LINKER.rglob("*.py")}
    assert parts - {"__init__", "mode", "export", "exporting", "chains"} == set(MAY_IMPORT)


def test_imports_flow_one_way():
    backwards = {
        (str(path.relative_to(LINKER)), imported)
        for path in LINKER.rglob("*.py")
        if _own_part(path) in MAY_IMPORT
        for imported in _imported_parts(path) - MAY_IMPORT[_own_part(path)] - {_own_part(path)}
    }
    assert not backwards, f"imports against the layering (module, part imported): {sorted(backwards)}"


def test_one_context_variable_holds_the_trace_context():
    """What a trace may ask of its context is one object (`aejax.linker.trace_context`), not a ContextVar each."""
    sources = [*LINKER.rglob("*.py"), *(LINKER.parent / "adapters").rglob("*.py")]
    holders = [str(path.relative_to(LINKER.parent)) for path in sources if "ContextVar(" in path.read_text()]
    assert holders == ["linker/trace_context.py"]


def test_the_checker_sees_a_backward_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from aejax.linker.call.linker import HostCall\n")
    assert _imported_parts(module) == {"call"}


EXCEPTS_COUNTED = ("trace", "scan", "program")
"""The parts of the linker whose ``except`` clauses are counted: those that plan and lower, and the Scan lowering."""

ALLOWED_EXCEPTS = LINKER.parent / "docs" / "architecture.md"
"""Where the ``except`` clauses of those parts are listed, each module with its count, under `EXCEPTS_HEADING`."""

EXCEPTS_HEADING = "### Exceptions caught in linker/trace/, linker/scan/ and linker/program/"


def _allowed_excepts() -> dict[str, int]:
    """The table of docs/architecture.md under `EXCEPTS_HEADING`: module -> count."""
    text = ALLOWED_EXCEPTS.read_text()
    section = text.split(EXCEPTS_HEADING, 1)[1].split("\n#", 1)[0]
    rows = re.findall(rf"^\| `((?:{'|'.join(EXCEPTS_COUNTED)})/\w+\.py)` \| (\d+) \|", section, flags=re.MULTILINE)
    return {module: int(count) for module, count in rows}


def _except_clauses(path: Path) -> int:
    return sum(isinstance(node, ast.ExceptHandler) for node in ast.walk(ast.parse(path.read_text())))


def test_no_exception_is_caught_to_decide_a_lowering():
    """linker/trace/, linker/scan/ and linker/program/ catch exceptions only where docs/architecture.md lists it, and why.

    A lowering's exception becomes a value in one place (`aejax.linker.trace.outcome.attempt`);
    every decision after it is taken on that value.
    """
    found = {
        str(path.relative_to(LINKER)): count
        for part in EXCEPTS_COUNTED
        for path in sorted((LINKER / part).glob("*.py"))
        if (count := _except_clauses(path))
    }
    assert found == _allowed_excepts()
