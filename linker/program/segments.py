"""The compiled form of a graph: one jit program, or several in a row.

Normally the whole graph is one `StaticInputProgram`. When a node returns a
value of run-time length (the trace of an ``until`` loop, a selection
``x[nonzero(m)]``; `aejax.linker.lengths.ragged`) that other
nodes consume, the graph is split after that node: the value leaves the jit
program and enters the next one. The split points are found the first time a
program is traced, as static inputs are.

So that a long run compiles O(log n) programs rather than one per length,
such a value enters the next program *bucketed*: its rows padded to the next
power of two, as a `Masked` value whose mask holds on the first ``length``
rows. Nodes that work row by row (`aejax.linker.lengths.masked`) take it as it is;
if another node needs it, the value enters cut to its exact length instead
(one program per length, bounded by the program cache). Values that one
mask selected in a program (``x[nonzero(m)]`` and ``log(x[nonzero(m)])``)
enter the next one sharing one mask again, or all cut to their exact
length (`MaskGroups`), so nodes there may still combine them.

Nodes may also run on the host between two programs (`HostNode`): those
that take or produce Python objects (`Generic` values, which stay on the
host) from the start, and, as tracing finds them, those whose output shape
depends on values or is unknown. A graph with such values at its boundary,
or with host nodes, runs as segments; one whose every node runs on the host
has no jit program at all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import jax.numpy as jnp
import numpy as np
from aesara.graph.basic import Apply, Constant, Variable

from aejax.adapters import stays_on_host
from aejax.linker.errors import LoweringError
from aejax.linker.lengths.ragged import RUN_TIME_LENGTH, Masked, NeedsSplit, Ragged, trimmed
from aejax.linker.program.host_node import (
    INNER_OBJECTS,
    UNKNOWN_SHAPES,
    VALUE_SHAPES,
    HostNode,
    host_node_problem,
    runs_on_host,
)
from aejax.linker.program.packing import PackedResults, packed, unpacked
from aejax.linker.program.saved_programs import SavedAs
from aejax.linker.program.static_inputs import Shortcut, StaticInputProgram
from aejax.linker.trace.host_failures import HostObjectError, UnknownShapesError, host_object_error, host_objects
from aejax.linker.trace.lowering import LoweredGraph, Step, lookup


class Boundary(Protocol):
    """How a graph input or output crosses the jit boundary (see `linker.BoundaryValue`)."""

    def enter(self, value: Any) -> Any:
        """Boundary form -> the value inside the traced function."""

    def leave(self, value: Any) -> Any:
        """The value inside the traced function -> boundary form."""

    @property
    def crosses_as_array(self) -> bool:
        """Whether its value is a numpy array outside the program and a JAX array inside it."""


@dataclass
class Segment:
    """Consecutive nodes compiled as one jit program."""

    inputs: list[Variable]
    outputs: list[Variable]
    program: StaticInputProgram | HostNode


@dataclass(frozen=True)
class Plan:
    """Where the graph is split, which values enter cut to their exact length, and the segments.

    ``split_before`` holds nodes whose output shape depends on values a program
    computes: each starts a program of its own, where those values are inputs
    that may be made static; ``host_nodes`` those run on the host between two
    programs (`HostNode`): nodes of Python objects, nodes for which a program
    of their own did not help, and nodes whose output shapes only running
    them tells or whose inner graph holds Python objects, each with its
    reason in ``host_reasons``. ``whole`` says that `segments` is one program
    of the whole graph, taking and returning every value in boundary form.
    """

    split_after: frozenset[Apply] = frozenset()
    exact: frozenset[Variable] = frozenset()
    split_before: frozenset[Apply] = frozenset()
    host_nodes: frozenset[Apply] = frozenset()
    host_reasons: Mapping[Apply, str] = field(default_factory=dict)
    segments: list[Segment] = field(default_factory=list)
    whole: bool = False


def bucket_size(length: int) -> int:
    """The number of rows a value of ``length`` rows is padded to: the next power of two."""
    return 1 if length <= 1 else 1 << (length - 1).bit_length()


def on_host(value: Any) -> Any:
    """A value of run-time length cut to its length as a numpy array; anything else as it is.

    A `Ragged` buffer is cut in numpy: cutting a JAX array would compile one
    slice per length.
    """
    if isinstance(value, Ragged):
        return np.asarray(value.buffer)[: int(value.length)]
    return trimmed(value)


def bucketed(value: Any) -> Ragged:
    """A value of run-time length, cut on the host and padded to `bucket_size` rows."""
    rows = np.asarray(on_host(value))
    padded = np.zeros((bucket_size(len(rows)),) + rows.shape[1:], rows.dtype)
    padded[: len(rows)] = rows
    return Ragged(padded, np.int64(len(rows)))


class GraphProgram:
    """Run a lowered graph with values in their jit-boundary form.

    ``donated`` are the positions of inputs whose buffers the program may
    reuse (`StaticInputProgram.donated`), when one program computes the
    whole graph: of segments run in a row, a later one could fail after an
    earlier one had used them up. ``saved`` is where that one program may be
    saved for other processes (`aejax.linker.program.saved_programs`;
    ``None``: never saved). ``x64`` is the precision its programs were
    lowered for and are traced and run in (JAX's ``jax_enable_x64``): its
    callers run it in that precision (`aejax.linker.call.precision`).

    Safe to call from several threads: the plan is replaced as a whole, and
    a thread whose plan went out of date meanwhile runs again with the new one.
    """

    def __init__(
        self,
        inputs: Sequence[Variable],
        outputs: Sequence[Variable],
        steps: Sequence[Step],
        entries: Sequence[Boundary],
        exits: Sequence[Boundary],
        donated: frozenset[int] = frozenset(),
        saved: SavedAs | None = None,
        x64: bool = True,
    ) -> None:
        self.inputs = list(inputs)
        self.donated = donated
        self.saved = saved
        self.x64 = x64
        self.outputs = list(outputs)
        self.steps = list(steps)
        self.input_cells = list(entries)
        self.output_cells = list(exits)
        self._entry_of = dict(zip(self.inputs, entries))
        self._lock = threading.Lock()
        self._ragged_outputs = False  # set while tracing: some output may be of run-time length
        self._mask_groups = MaskGroups()
        self._cache_size: int | None = None
        self._nodes = frozenset(node for node, _ in self.steps)
        self._object_nodes = _object_nodes(self.steps)
        self._host_programs: dict[tuple[Apply, tuple[Variable, ...], tuple[Variable, ...]], HostNode] = {}
        self._boundary_on_host = any(
            not isinstance(var, Constant) and stays_on_host(var.type) for var in self.inputs + self.outputs
        )
        self.plan = self._planned(Plan(host_nodes=self._object_nodes))

    @property
    def cache_size(self) -> int:
        """How many compiled programs each segment keeps (`StaticInputProgram.cache_size` unless set here)."""
        return StaticInputProgram.cache_size if self._cache_size is None else self._cache_size

    @cache_size.setter
    def cache_size(self, size: int) -> None:
        with self._lock:
            self._cache_size = size
            for segment in self.plan.segments:
                segment.program.cache_size = size

    @property
    def segments(self) -> list[Segment]:
        """The jit programs, in order."""
        return self.plan.segments

    def shortcut(self) -> Shortcut | None:
        """The whole graph's program of the last call, if one jit program computes it and its outputs leave as they are."""
        plan = self.plan
        if not plan.whole or self._ragged_outputs:
            return None
        return plan.segments[0].program.shortcut

    def __call__(self, *args: Any) -> Sequence[Any]:
        """The outputs for ``args``, each in boundary form (a packed output as a numpy view: `aejax.linker.program.packing`)."""
        while True:
            plan = self.plan
            try:
                if plan.whole:
                    results = unpacked(plan.segments[0].program(*args))
                    return tuple(map(on_host, results)) if self._ragged_outputs else results
                return self._run_segments(plan, args)
            except NeedsSplit as split:
                self._replan(plan, self._split, split)
            except LoweringError as error:
                if not self._isolates(error):
                    raise
                self._replan(plan, self._isolate, error)

    def _replan(self, plan: Plan, change: Callable[[Plan, Any], Plan], why: Exception) -> None:
        with self._lock:
            if self.plan is plan:  # else another thread changed the plan meanwhile
                self.plan = self._planned(change(plan, why))

    def _planned(self, plan: Plan) -> Plan:
        groups = self._groups(plan)
        whole = len(groups) <= 1 and not plan.host_nodes and not self._boundary_on_host
        if whole:
            segments = [self._whole_graph(groups[0] if groups else [])]
        else:
            segments = [self._segment(i, groups, plan) for i in range(len(groups))]
        if self._cache_size is not None:
            for segment in segments:
                segment.program.cache_size = self._cache_size
        return replace(plan, segments=segments, whole=whole)

    def _split(self, plan: Plan, split: NeedsSplit) -> Plan:
        node = split.node
        if node not in plan.split_after:
            return replace(plan, split_after=plan.split_after | {node})
        if not set(node.outputs) <= plan.exact:
            return replace(plan, exact=plan.exact | self._mask_groups.grouped_with(node.outputs))
        raise LoweringError(
            f"splitting the program after node {node} did not make its value of run-time length traceable; "
            "compute what depends on it with another mode, or report the graph",
            node=node,
        ) from split

    def _isolates(self, error: LoweringError) -> bool:
        """Whether ``error`` is a node of this graph that a program of its own, or the host, may compute.

        Its output shape needs values a program computes, or is unknown, or
        its inner graph holds Python objects.
        """
        only_on_host = isinstance(error, (UnknownShapesError, HostObjectError))
        return (error.needs_static or only_on_host) and error.node in self._nodes

    def _isolate(self, plan: Plan, error: LoweringError) -> Plan:
        node = error.node
        if isinstance(error, (UnknownShapesError, HostObjectError)):
            if node in plan.host_nodes or not runs_on_host(node):
                raise error
            reason = UNKNOWN_SHAPES if isinstance(error, UnknownShapesError) else INNER_OBJECTS
            return replace(plan, host_nodes=plan.host_nodes | {node}, host_reasons={**plan.host_reasons, node: reason})
        if node not in plan.split_before:
            return replace(plan, split_before=plan.split_before | {node})
        if node not in plan.host_nodes and runs_on_host(node):
            return replace(plan, host_nodes=plan.host_nodes | {node})
        raise error

    def _run_segments(self, plan: Plan, args: tuple[Any, ...]) -> tuple[Any, ...]:
        env = {var: self._entry_of[var].enter(arg) for var, arg in zip(self.inputs, args)}
        for segment in plan.segments:
            values = [lookup(env, v) for v in segment.inputs]
            if isinstance(segment.program, HostNode):
                values = [on_host(value) for value in values]
            results = segment.program(*values)
            env.update(
                (v, (on_host(r) if v in plan.exact else bucketed(r)) if isinstance(r, RUN_TIME_LENGTH) else r)
                for v, r in zip(segment.outputs, results)
            )
        return tuple(exit.leave(on_host(lookup(env, v))) for exit, v in zip(self.output_cells, self.outputs))

    def _groups(self, plan: Plan) -> list[list[Step]]:
        """The steps of each segment, in order; a host node is a segment of its own."""
        groups: list[list[Step]] = [[]]
        for step in self.steps:
            node = step[0]
            if node in plan.split_before or node in plan.host_nodes:
                groups.append([])
            groups[-1].append(step)
            if node in plan.split_after or node in plan.host_nodes:
                groups.append([])
        return [g for g in groups if g]

    def _whole_graph(self, steps: list[Step]) -> Segment:
        inner = LoweredGraph(self.inputs, self.outputs, steps)
        entries = self.input_cells
        exits = self.output_cells

        def boundary_fn(*values: Any) -> tuple[Any, ...] | PackedResults:
            results = inner(*[e.enter(v) for e, v in zip(entries, values)])
            ragged = [isinstance(r, RUN_TIME_LENGTH) for r in results]
            if any(ragged):
                self._ragged_outputs = True
            left = tuple(r if run_time else x.leave(r) for x, r, run_time in zip(exits, results, ragged))
            return packed(left, [x.crosses_as_array and not run_time for x, run_time in zip(exits, ragged)])

        saved_as = None if self.saved is None else self.saved._replace(storable=lambda: not self._ragged_outputs)
        return Segment(self.inputs, self.outputs, StaticInputProgram(self.inputs, boundary_fn, self.donated, saved_as))

    def _segment(self, index: int, groups: list[list[Step]], plan: Plan) -> Segment:
        steps = groups[index]
        made = {out for node, _ in steps for out in node.outputs}
        later = {v for group in groups[index + 1 :] for node, _ in group for v in node.inputs}
        needed = _unique(v for node, _ in steps for v in node.inputs)
        inputs = [v for v in needed if v not in made and not isinstance(v, Constant)]
        outputs = [v for v in _unique(o for node, _ in steps for o in node.outputs) if v in later or v in self.outputs]
        node = steps[0][0]
        if node in plan.host_nodes:
            return Segment(inputs, outputs, self._host_node(node, inputs, outputs, plan))
        inner = LoweredGraph(inputs, outputs, steps)
        groups = self._mask_groups

        def segment_fn(*values: Any) -> tuple[Any, ...]:
            entered = groups.entered(inputs, values)
            results = inner(*entered)
            groups.record(inputs, entered, outputs, results)
            return results

        return Segment(inputs, outputs, StaticInputProgram(inputs, segment_fn))

    def _host_node(self, node: Apply, inputs: list[Variable], outputs: list[Variable], plan: Plan) -> HostNode:
        """The `HostNode` of ``node``, the one of an earlier plan if there was one: it warns once."""
        key = (node, tuple(inputs), tuple(outputs))
        made = self._host_programs.get(key)
        if made is None:
            made = self._host_programs[key] = HostNode(node, inputs, outputs, self._host_reason(node, plan))
        return made

    def _host_reason(self, node: Apply, plan: Plan) -> str | None:
        """Why ``node`` runs on the host, for its `HostNodeWarning`; ``None`` for a node of Python objects."""
        if node in self._object_nodes:
            return None
        return plan.host_reasons.get(node, VALUE_SHAPES)


def _object_nodes(steps: Sequence[Step]) -> frozenset[Apply]:
    """The nodes that take or produce values that stay on the host; `LoweringError` if one cannot run there."""
    found = []
    for node, _ in steps:
        kept = host_objects(node)
        if not kept:
            continue
        problem = host_node_problem(node)
        if problem is not None:
            raise host_object_error(node, kept[0], problem)
        found.append(node)
    return frozenset(found)


class MaskGroups:
    """Which values of run-time length that cross between programs were selected by one mask.

    The values one node makes share a mask, as do values that a program
    returns holding one traced mask (a selection and an elementwise function
    of it). Each such group enters the next program with one mask, built
    from the length of its first value, so row-by-row nodes may combine its
    values. Groups are learnt while a program is traced, before the programs
    after it are; two values are only grouped when they always hold the same
    rows, so a group stays right for every later plan.
    """

    def __init__(self) -> None:
        self._group_of: dict[Variable, Hashable] = {}

    def _group(self, var: Variable) -> Hashable:
        return self._group_of.get(var, var.owner)

    def entered(self, inputs: Sequence[Variable], values: Sequence[Any]) -> list[Any]:
        """``values`` with each bucketed `Ragged` value as a `Masked` one (inside jit), one mask per group."""
        masks: dict[tuple[Hashable, int], Any] = {}
        entered = []
        for var, value in zip(inputs, values):
            if isinstance(value, Ragged):
                rows = value.buffer.shape[0]
                key = (self._group(var), rows)
                if key not in masks:
                    masks[key] = jnp.arange(rows) < value.length
                value = Masked(value.buffer, masks[key])
            entered.append(value)
        return entered

    def grouped_with(self, variables: Sequence[Variable]) -> frozenset[Variable]:
        """``variables`` and the values grouped with any of them: they enter cut to their length together."""
        groups = {self._group(var) for var in variables}
        return frozenset(variables) | {var for var, group in list(self._group_of.items()) if group in groups}

    def record(
        self, inputs: Sequence[Variable], entered: Sequence[Any], outputs: Sequence[Variable], results: Sequence[Any]
    ) -> None:
        """Group the `Masked` ``results`` by their traced masks, joining the groups of ``inputs`` that hold them."""
        group_of_mask = {id(v.mask): self._group(var) for var, v in zip(inputs, entered) if isinstance(v, Masked)}
        for var, result in zip(outputs, results):
            if isinstance(result, Masked):
                self._group_of[var] = group_of_mask.setdefault(id(result.mask), var.owner)


def _unique(values: Any) -> list[Any]:
    return list(dict.fromkeys(values))
