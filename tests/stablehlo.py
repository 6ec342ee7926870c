"""Reading programs in tests: the StableHLO text of a lowered module, the HLO text of a compiled one."""

import re


def batched_indexing(text: str) -> int:
    """The gathers and scatters of a StableHLO module that index at positions that differ along a batch axis
    (``operand_batching_dims`` of a gather, ``input_batching_dims`` of a scatter)."""
    return len(re.findall(r"operand_batching_dims = \[", text)) + len(re.findall(r"input_batching_dims = \[", text))


COLLECTIVES = ("all-reduce", "all-gather", "collective-permute", "all-to-all", "reduce-scatter")
"""XLA's collective operations: each one waits for every device it spans."""

_COMPUTATION = re.compile(r"^(?:ENTRY )?%?([\w.-]+) [^\n]*\{$")
_LOOP_PARTS = re.compile(r"(?:condition|body)=%?([\w.-]+)")
_CALLED = re.compile(r"(?:condition|body|to_apply|calls|true_computation|false_computation)=%?([\w.-]+)")
_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")


def computations(hlo: str) -> dict[str, list[str]]:
    """The instructions of each computation of a compiled module's HLO text (``Compiled.as_text()``), by name."""
    found: dict[str, list[str]] = {}
    lines: list[str] | None = None
    for line in hlo.splitlines():
        start = _COMPUTATION.match(line)
        if start:
            lines = found.setdefault(start.group(1), [])
        elif line.strip() == "}":
            lines = None
        elif lines is not None:
            lines.append(line)
    return found


def called(instruction: str) -> list[str]:
    """The computations an HLO instruction calls (loop parts, reducers, branches)."""
    branches = [name.strip().lstrip("%") for group in _BRANCHES.findall(instruction) for name in group.split(",")]
    return _CALLED.findall(instruction) + branches


def collectives_in_loops(hlo: str) -> dict[str, int]:
    """How many of each of `COLLECTIVES` a compiled module runs inside a ``while`` loop's condition or body (or a
    computation they call), by name: the collectives that every iteration of a loop waits on."""
    module = computations(hlo)
    inside = {
        name for lines in module.values() for line in lines if " while(" in line for name in _LOOP_PARTS.findall(line)
    }
    todo = list(inside)
    while todo:
        for name in (n for line in module.get(todo.pop(), []) for n in called(line)):
            if name not in inside:
                inside.add(name)
                todo.append(name)
    lines = [line for name in inside for line in module.get(name, [])]
    return {op: sum(f" {op}(" in line or f" {op}-start(" in line for line in lines) for op in COLLECTIVES}
