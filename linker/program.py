"""The compiled form of a graph: one jit program, or several in a row.

Normally the whole graph is one `StaticInputProgram`. When a node returns a
value of run-time length (the trace of an ``until`` loop, a selection
``x[nonzero(m)]``; `aejax.linker.ragged`) that other
nodes consume, the graph is split after that node: the value leaves the jit
program, is trimmed on the host, and enters the next program, which JAX
compiles per trimmed length. The split points are found the first time a
program is traced, as static inputs are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence

from aesara.graph.basic import Apply, Constant, Variable

from aejax.linker.errors import LoweringError
from aejax.linker.lowering import LoweredGraph, Step, lookup
from aejax.linker.ragged import RUN_TIME_LENGTH, NeedsSplit, trimmed
from aejax.linker.static_inputs import StaticInputProgram


class Boundary(Protocol):
    """How a graph input or output crosses the jit boundary (see `linker.BoundaryValue`)."""

    def enter(self, value: Any) -> Any:
        """Boundary form -> the value inside the traced function."""

    def leave(self, value: Any) -> Any:
        """The value inside the traced function -> boundary form."""


@dataclass
class Segment:
    """Consecutive nodes compiled as one jit program."""

    inputs: list[Variable]
    outputs: list[Variable]
    program: StaticInputProgram


class GraphProgram:
    """Run a lowered graph with values in their jit-boundary form."""

    def __init__(
        self,
        inputs: Sequence[Variable],
        outputs: Sequence[Variable],
        steps: Sequence[Step],
        entries: Sequence[Boundary],
        exits: Sequence[Boundary],
    ) -> None:
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.steps = list(steps)
        self.input_cells = list(entries)
        self.output_cells = list(exits)
        self._entry_of = dict(zip(self.inputs, entries))
        self.split_after: set[Apply] = set()
        self.segments = self._plan()

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        while True:
            try:
                if len(self.segments) == 1:
                    results = self.segments[0].program(*args)
                    return tuple(map(trimmed, results)) if any(isinstance(r, RUN_TIME_LENGTH) for r in results) else results
                return self._run_segments(args)
            except NeedsSplit as split:
                if split.node in self.split_after:
                    raise LoweringError(f"splitting after node {split.node} did not help", node=split.node) from split
                self.split_after.add(split.node)
                self.segments = self._plan()

    def _run_segments(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        env = {var: self._entry_of[var].enter(arg) for var, arg in zip(self.inputs, args)}
        for segment in self.segments:
            results = segment.program(*[lookup(env, v) for v in segment.inputs])
            env.update((v, trimmed(r)) for v, r in zip(segment.outputs, results))
        return tuple(exit.leave(lookup(env, v)) for exit, v in zip(self.output_cells, self.outputs))

    def _plan(self) -> list[Segment]:
        groups: list[list[Step]] = [[]]
        for step in self.steps:
            groups[-1].append(step)
            if step[0] in self.split_after:
                groups.append([])
        groups = [g for g in groups if g] or [[]]
        if len(groups) == 1:
            return [self._whole_graph(groups[0])]
        return [self._segment(i, groups) for i in range(len(groups))]

    def _whole_graph(self, steps: list[Step]) -> Segment:
        inner = LoweredGraph(self.inputs, self.outputs, steps)
        entries = self.input_cells
        exits = self.output_cells

        def boundary_fn(*values: Any) -> tuple[Any, ...]:
            results = inner(*[e.enter(v) for e, v in zip(entries, values)])
            return tuple(r if isinstance(r, RUN_TIME_LENGTH) else x.leave(r) for x, r in zip(exits, results))

        return Segment(self.inputs, self.outputs, StaticInputProgram(self.inputs, boundary_fn))

    def _segment(self, index: int, groups: list[list[Step]]) -> Segment:
        steps = groups[index]
        made = {out for node, _ in steps for out in node.outputs}
        later = {v for group in groups[index + 1 :] for node, _ in group for v in node.inputs}
        needed = _unique(v for node, _ in steps for v in node.inputs)
        inputs = [v for v in needed if v not in made and not isinstance(v, Constant)]
        outputs = [v for v in _unique(o for node, _ in steps for o in node.outputs) if v in later or v in self.outputs]
        inner = LoweredGraph(inputs, outputs, steps)
        return Segment(inputs, outputs, StaticInputProgram(inputs, inner))


def _unique(values: Any) -> list[Any]:
    return list(dict.fromkeys(values))
