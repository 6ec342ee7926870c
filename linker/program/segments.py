"""The compiled form of a graph: one jit program, or several in a row.

Normally the whole graph is one `StaticInputProgram`. Where its trace meets
a node that it cannot trace but a later program could, the program ends
there: its function returns the values live at that node (`Ended`), and the
next program starts at the node. That happens when

- a value of run-time length (the trace of an ``until`` loop, a selection
  ``x[nonzero(m)]``; `aejax.linker.lengths.ragged`) reaches a node that
  cannot take it: the value leaves the program and enters the next one from
  the host, where its length is known;
- a node needs values concrete that the program computes (a size from a
  computed value): they are inputs of the next program, where the call's
  values make them static (`aejax.linker.trace.call_values`);
- a node's output shape depends on values even so, or is unknown, or it
  meets a Python object: it runs on the host (`HostNode`).

So the first call plans the graph while it traces it, each program once.
What a trace decides is returned, not written: where the program ended and
what its trace found for the plan (`aejax.linker.program.plan.Found`) are
part of that compiled program (`Ended`'s static data), and the runner joins
what each program hands back into a new `Plan` before the next one runs. A
program traced for other static values or shapes may end elsewhere, and the
graph still runs, from wherever each program ended.

So that a long run compiles O(log n) programs rather than one per length,
a value of run-time length enters the next program *bucketed*: its rows
padded to the next power of two, as a `Masked` value whose mask holds on the
first ``length`` rows. Nodes that work row by row
(`aejax.linker.lengths.masked`) take it as it is; where the node the program
ended at takes the value itself, it enters cut to its exact length instead
(one program per length, bounded by the program cache). Values that one
mask selected in a program (``x[nonzero(m)]`` and ``log(x[nonzero(m)])``)
enter the next one sharing one mask again, or all cut to their exact
length (`aejax.linker.program.mask_groups`), so nodes there may still combine them.

Nodes that take or produce Python objects (`Generic` values, which stay on
the host) run on the host between programs from the start. A graph with
such values at its boundary, or with such nodes, runs as segments; one
whose every node runs on the host has no jit program at all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import jax
import numpy as np
from aesara.graph.basic import Apply, Constant, Variable
from aesara.ifelse import IfElse

from aejax.adapters import stays_on_host
from aejax.linker.errors import LoweringError
from aejax.linker.graph.value_bounds import ValuesWithin
from aejax.linker.lengths.consumers import run_time_lengths_taken
from aejax.linker.lengths.ragged import RUN_TIME_LENGTH, NeedsSplit, Ragged, trimmed
from aejax.linker.program.host_node import (
    INNER_OBJECTS,
    UNKNOWN_SHAPES,
    VALUE_SHAPES,
    HostNode,
    host_node_problem,
    runs_on_host,
)
from aejax.linker.program.packing import PackedResults, packed, unpacked
from aejax.linker.program.plan import NOTHING, Found, Plan
from aejax.linker.program.saved_programs import SavedAs
from aejax.linker.program.static_inputs import Shortcut, StaticInputProgram
from aejax.linker.trace.branches import plan_branches
from aejax.linker.trace.host_failures import (
    HostObjectError,
    UnknownShapesError,
    host_object_error,
    host_objects,
    raised_on_host,
)
from aejax.linker.trace.lowering import DeferredLowering, LoweredGraph, Step, lookup


class Boundary(Protocol):
    """How a graph input or output crosses the jit boundary (see `linker.BoundaryValue`)."""

    def enter(self, value: Any) -> Any:
        """Boundary form -> the value inside the traced function."""

    def leave(self, value: Any) -> Any:
        """The value inside the traced function -> boundary form."""

    @property
    def crosses_as_array(self) -> bool:
        """Whether its value is a numpy array outside the program and a JAX array inside it."""


class Ended:
    """What a program that ran part of a graph returns: where it ended, the values it computed that are live there,
    and what its trace found for the plan.

    ``at`` is the node the next program starts at (``None``: the program ran
    all of its steps); ``variables`` name ``values``; ``found`` is what its
    trace found (`Found`). ``at``, ``variables`` and ``found`` are the
    pytree's static data, fixed when the program is traced: every call of
    that program ends there and hands back what its trace found.
    """

    __slots__ = ("at", "variables", "values", "found")

    def __init__(
        self, at: Apply | None, variables: tuple[Variable, ...], values: tuple[Any, ...], found: Found = NOTHING
    ) -> None:
        self.at = at
        self.variables = variables
        self.values = values
        self.found = found


jax.tree_util.register_pytree_node(
    Ended,
    lambda e: (e.values, (e.at, e.variables, e.found)),
    lambda static, values: Ended(static[0], static[1], tuple(values), static[2]),
)


def _leaves_as_is(out: Any) -> bool:
    """Whether a traced program of the whole graph with result ``out`` returns the graph's outputs in boundary form:
    it neither ended early nor has outputs of run-time length (those return as `Ended`)."""
    return type(out) is not Ended


@dataclass
class Segment:
    """A program that computes a graph from a node on, or one node run on the host.

    ``after`` is the node that runs next once ``program`` ran all of its
    steps (``None``: the graph's end).
    """

    inputs: list[Variable]
    program: StaticInputProgram | HostNode
    after: Apply | None


@dataclass(frozen=True)
class Part:
    """Consecutive steps between nodes that run on the host from the start, or one such node (``host``).

    ``outside`` are the nodes run in order outside every branch of an
    IfElse, where a program may end; ``position`` places each node among
    them: its own, or that of the IfElse whose branch runs it.
    """

    steps: list[Step]
    outside: list[Apply]
    position: dict[Apply, int]
    host: bool


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
    """Run a lowered graph with values in their jit-boundary form, from its `Plan`.

    ``donated`` are the positions of inputs whose buffers the program may
    reuse (`StaticInputProgram.donated`), when one program computes the
    whole graph: a program that ends early keeps them, since those after it
    may need the inputs. ``saved`` is where that one program may be
    saved for other processes (`aejax.linker.program.saved_programs`;
    ``None``: never saved). ``x64`` is the precision its programs were
    lowered for and are traced and run in (JAX's ``jax_enable_x64``): its
    callers run it in that precision (`aejax.linker.call.precision`).

    Safe to call from several threads: a call reads the plan it runs by
    (``self._plan``, replaced as a whole, never changed), and what a program
    returns joins the plan under a lock.
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
        self._lowering_of = dict(self.steps)
        self._lock = threading.Lock()
        self._cache_size: int | None = None
        object_nodes = _object_nodes(self.steps)
        self._plan = Plan.first(object_nodes)
        self._parts = self._parted(object_nodes)
        self._place = {node: (p, at) for p, part in enumerate(self._parts) for node, at in part.position.items()}
        # by first node, and whether the plan runs that node on the host: a plan that moves it there adds one
        self._segments: dict[tuple[Apply | None, bool], Segment] = {}
        boundary_on_host = any(
            not isinstance(var, Constant) and stays_on_host(var.type) for var in self.inputs + self.outputs
        )
        self._whole = None if object_nodes or boundary_on_host else self._whole_graph()
        if self._whole is not None:
            self._segments[None, False] = self._whole

    @property
    def plan(self) -> Plan:
        """The plan the next call runs by."""
        return self._plan

    @property
    def cache_size(self) -> int:
        """How many compiled programs each segment keeps (`StaticInputProgram.cache_size` unless set here)."""
        return StaticInputProgram.cache_size if self._cache_size is None else self._cache_size

    @cache_size.setter
    def cache_size(self, size: int) -> None:
        with self._lock:
            self._cache_size = size
            for segment in self._segments.values():
                segment.program.cache_size = size

    @property
    def segments(self) -> list[Segment]:
        """The programs of the plan made so far, in the order they were first run."""
        host = self._plan.host_reasons
        return [segment for (node, on_host), segment in list(self._segments.items()) if on_host == (node in host)]

    def shortcut(self) -> Shortcut | None:
        """The whole graph's program of the last call, if one jit program computes it and its outputs leave as they are."""
        return None if self._whole is None else self._whole.program.shortcut

    def __call__(self, *args: Any) -> Sequence[Any]:
        """The outputs for ``args``, each in boundary form (a packed output as a numpy view: `aejax.linker.program.packing`).

        A program that fails in a host callback raises the exception raised
        there (`aejax.linker.trace.host_failures`), not JAX's.
        """
        whole = self._whole
        try:
            if whole is None:
                return self._run_from(self._first_node(), self._entered(args))
            shortcut = whole.program.shortcut  # called here, not through the program: one layer less per call
            results = shortcut.program(*args) if shortcut is not None and shortcut.fits(args) else whole.program(*args)
            if type(results) is Ended:
                env = self._entered(args)
                self._take(env, results)
                return self._run_from(results.at, env)
        except jax.errors.JaxRuntimeError as error:
            original = raised_on_host(error)
            if original is None:
                raise
            raise original from None
        return unpacked(results)

    def _entered(self, args: Sequence[Any]) -> dict[Variable, Any]:
        return {var: self._entry_of[var].enter(arg) for var, arg in zip(self.inputs, args)}

    def _first_node(self) -> Apply | None:
        return self._parts[0].outside[0] if self._parts else None

    def _run_from(self, node: Apply | None, env: dict[Variable, Any]) -> tuple[Any, ...]:
        """Run the programs from the one that starts at ``node`` on, in order, into ``env``; the outputs, left.

        Each program runs by the plan as the programs before it left it.
        """
        stalled = None
        while node is not None:
            plan = self._plan
            segment = self._segment_at(node, plan)
            values = [_entering(var, lookup(env, var), plan.exact) for var in segment.inputs]
            if isinstance(segment.program, HostNode):
                outputs = segment.program.outputs
                env.update(zip(outputs, segment.program(*[on_host(value) for value in values])))
                node = segment.after
                continue
            ended = segment.program(*values)
            self._take(env, ended)
            if ended.at is node and stalled is segment:
                raise LoweringError(f"no program can compute node {node}; report the graph", node=node)
            stalled = segment if ended.at is node else None
            node = segment.after if ended.at is None else ended.at
        return tuple(exit.leave(on_host(lookup(env, var))) for exit, var in zip(self.output_cells, self.outputs))

    def _take(self, env: dict[Variable, Any], ended: Ended) -> None:
        """Put the values a program returned in ``env``, and what its trace found in the plan."""
        env.update(zip(ended.variables, ended.values))
        if not self._plan.holds(ended.found):
            with self._lock:
                self._plan = self._plan.joined(ended.found)

    def _parted(self, object_nodes: frozenset[Apply]) -> list[Part]:
        """The steps in parts: runs of steps between nodes of Python objects, and each such node alone."""
        runs: list[tuple[list[Step], bool]] = []
        for step in self.steps:
            host = step[0] in object_nodes
            if host or not runs or runs[-1][1]:
                runs.append(([], host))
            runs[-1][0].append(step)
        used_later: set[Variable] = set(self.outputs)
        parts = []
        for steps, host in reversed(runs):
            made = [out for node, _ in steps for out in node.outputs]
            parts.append(_part(steps, [var for var in made if var in used_later], host))
            used_later.update(var for node, _ in steps for var in node.inputs)
        return parts[::-1]

    def _next(self, node: Apply) -> Apply | None:
        """The node that runs after ``node`` outside every IfElse branch (``None``: the graph's end)."""
        part, position = self._place[node]
        outside = self._parts[part].outside
        if position + 1 < len(outside):
            return outside[position + 1]
        return self._parts[part + 1].outside[0] if part + 1 < len(self._parts) else None

    def _remaining(self, node: Apply | None) -> list[Apply]:
        """The nodes that run from ``node`` on, in order (none after the graph's end)."""
        if node is None:
            return []
        place = self._place[node]
        return [step[0] for step in self.steps if self._place[step[0]] >= place]

    def live_at(self, node: Apply | None) -> list[Variable]:
        """The values computed before ``node`` (or graph inputs) that it or a node after it needs, or the graph returns.

        The bounds of a `ValuesWithin` value count too: a Scan over it reads
        them where it runs (`aejax.linker.lengths.bounds`).
        """
        remaining = self._remaining(node)
        made = {out for n in remaining for out in n.outputs}
        needed = _unique([var for n in remaining for var in n.inputs] + self.outputs)
        live = [var for var in needed if var not in made and not isinstance(var, Constant)]
        return _unique(live + _with_bounds(live))

    def _segment_at(self, node: Apply, plan: Plan) -> Segment:
        key = (node, node in plan.host_reasons)
        segment = self._segments.get(key)
        if segment is None:
            with self._lock:
                segment = self._segments.get(key)
                if segment is None:
                    segment = self._segments[key] = self._new_segment(node, plan)
        return segment

    def _new_segment(self, node: Apply, plan: Plan) -> Segment:
        """The program that starts at ``node``: the node on the host, or its part's steps from it on, jitted."""
        part, position = self._place[node]
        if self._parts[part].host or node in plan.host_reasons:
            inputs = _unique(var for var in node.inputs if not isinstance(var, Constant))
            after = self._next(node)
            outputs = [var for var in node.outputs if var in set(self.live_at(after))]
            program = HostNode(node, inputs, outputs, plan.host_reasons.get(node))
        else:
            steps = [step for step in self._parts[part].steps if self._place[step[0]][1] >= position]
            after = self._parts[part + 1].outside[0] if part + 1 < len(self._parts) else None
            used = _with_bounds({var for step_node, _ in steps for var in step_node.inputs})
            inputs = [var for var in self.live_at(node) if var in used]  # values only later nodes need stay out
            program = StaticInputProgram(inputs, self._segment_fn(node, inputs, steps, after))
        if self._cache_size is not None:
            program.cache_size = self._cache_size
        return Segment(inputs, program, after)

    def _segment_fn(
        self, start: Apply, inputs: list[Variable], steps: list[Step], after: Apply | None
    ) -> Callable[..., Ended]:
        """The traced function of the program that runs ``steps`` from ``start`` until they end, or it must end."""
        made = {out for node, _ in steps for out in node.outputs}
        lowered = LoweredGraph(inputs, [var for var in self.live_at(after) if var in made], steps)

        def segment_fn(*values: Any) -> Ended:
            plan = self._plan
            entered = plan.groups.entered(inputs, values)
            at, why, env = lowered.run_until(*entered)
            if at is not None:
                return self._ending(plan, at, why, start, env, inputs, entered)
            results = tuple(env[var] for var in lowered.outputs)
            groups = plan.groups.found(inputs, entered, lowered.outputs, results)
            return Ended(None, tuple(lowered.outputs), results, Found(groups=groups))

        return segment_fn

    def _ending(
        self,
        plan: Plan,
        at: Apply,
        why: Exception,
        start: Apply | None,
        env: Mapping[Variable, Any],
        inputs: list[Variable],
        entered: Sequence[Any],
    ) -> Ended:
        """What a program that starts at ``start`` returns when its trace by ``plan`` failed at ``at``: the values
        live where it ends, and what the trace found."""
        at, found = self._end(plan, at, why, start)
        given = set(inputs)
        live = [var for var in self.live_at(at) if var in env and var not in given]
        results = tuple(env[var] for var in live)
        return Ended(at, tuple(live), results, replace(found, groups=plan.groups.found(inputs, entered, live, results)))

    def _whole_graph(self) -> Segment:
        """The program of the whole graph, taking and returning every value in boundary form, unless it ends early
        or an output is of run-time length: then it returns an `Ended`, and the runner goes on (or cuts them)."""
        inner = LoweredGraph(self.inputs, self.outputs, self.steps)
        entries, exits = self.input_cells, self.output_cells

        def boundary_fn(*values: Any) -> PackedResults | tuple[Any, ...] | Ended:
            plan = self._plan
            entered = [e.enter(v) for e, v in zip(entries, values)]
            at, why, env = inner.run_until(*entered)
            if at is not None:
                return self._ending(plan, at, why, None, env, self.inputs, entered)
            results = tuple(lookup(env, var) for var in self.outputs)
            if any(isinstance(r, RUN_TIME_LENGTH) for r in results):
                return Ended(None, tuple(self.outputs), results)  # cut to their lengths on the host, then leave
            return packed(tuple(x.leave(r) for x, r in zip(exits, results)), [x.crosses_as_array for x in exits])

        program = StaticInputProgram(self.inputs, boundary_fn, self.donated, self.saved, _leaves_as_is)
        return Segment(self.inputs, program, None)

    def _takes_masked(self, node: Apply) -> bool:
        """Whether ``node``'s lowering takes a bucketed value of run-time length (a `Masked` one) as it is."""
        fn = self._lowering_of[node]
        return run_time_lengths_taken(fn.lowering() if isinstance(fn, DeferredLowering) else fn).masked

    def _end(self, plan: Plan, node: Apply, why: Exception, start: Apply | None) -> tuple[Apply | None, Found]:
        """Where a program that starts at ``start`` ends, its trace by ``plan`` having failed at ``node`` with ``why``,
        and what the trace found.

        Programs traced for other static values or shapes may fail there too;
        the first found that joins the plan decides. Raises ``why`` if no later
        program, nor the host, can go on.
        """
        if isinstance(why, NeedsSplit):
            return self._after_run_time_length(plan, node, why.node, start)
        reason = self._host_reason(plan, node, why, start)
        return node, NOTHING if reason is None else Found(host=(node, reason))

    def _after_run_time_length(
        self, plan: Plan, node: Apply, source: Apply, start: Apply | None
    ) -> tuple[Apply | None, Found]:
        """Where a program ends whose ``node`` cannot take the value of run-time length that ``source`` made, and
        the values that enter cut to their length from then on.

        Right after ``source`` if the program made it: the next program takes
        the value bucketed, and its nodes compute what depends on it anew, or
        cut to its length where ``node`` takes it and not bucketed. A value
        the program took bucketed from an earlier one enters cut to its length
        instead: the program ends where it started, to be traced again for
        that. Raises if the value entered cut already.
        """
        group = plan.groups.grouped_with(source.outputs)
        made_here = start is None or self._place[source] >= self._place[start]
        takes_it = bool(set(node.inputs) & group) and not self._takes_masked(node)
        if made_here and self._runs_outside_branches(source):
            return self._next(source), Found(exact=group) if takes_it else NOTHING
        if not made_here and group <= plan.exact:
            raise LoweringError(
                f"node {node} cannot take the value of run-time length that node {source} makes, even cut to its "
                "length; compute what depends on it with another mode, or report the graph",
                node=node,
            )
        return node if made_here else start, Found(exact=group)

    def _runs_outside_branches(self, node: Apply) -> bool:
        part, position = self._place[node]
        return self._parts[part].outside[position] is node

    def _host_reason(self, plan: Plan, node: Apply, why: Exception, start: Apply | None) -> str | None:
        """Why ``node`` runs on the host from now on, where that helps it (when it must, or a program of its own did
        not); ``None`` where a program of its own is to start at it (what it needs is input there: static, or of a
        length known there), or ``plan`` runs it on the host already; raise ``why`` if neither can help."""
        if isinstance(why, UnknownShapesError):
            reason = UNKNOWN_SHAPES
        elif isinstance(why, HostObjectError):
            reason = INNER_OBJECTS
        elif node is not start:
            return None
        else:
            reason = VALUE_SHAPES
        if node in plan.host_reasons:
            return None  # decided by the trace of another program
        if not runs_on_host(node) or isinstance(node.op, IfElse):
            raise why
        return reason


def _entering(var: Variable, value: Any, exact: frozenset[Variable]) -> Any:
    """``value`` as it enters a program: one of run-time length bucketed, or cut if it enters ``exact``.

    Decided where it enters, not where it was made: a program traced meanwhile may have made it exact.
    """
    if not isinstance(value, RUN_TIME_LENGTH):
        return value
    return on_host(value) if var in exact else bucketed(value)


def _part(steps: list[Step], outputs: list[Variable], host: bool) -> Part:
    """The `Part` of ``steps``, whose values ``outputs`` are needed after them."""
    branches = plan_branches(steps, outputs)
    outside = [node for node, _ in branches.outside]
    position: dict[Apply, int] = {}

    def place(node: Apply, at: int) -> None:
        position[node] = at
        for branch in branches.branches.get(node, ()):
            for inner, _ in branch.steps:
                place(inner, at)

    for at, node in enumerate(outside):
        place(node, at)
    return Part(steps, outside, position, host)


def _with_bounds(variables: Any) -> list[Variable]:
    """``variables`` and the bounds of each that is a `ValuesWithin` value, but constants."""
    variables = list(variables)
    bounds = [
        bound
        for var in variables
        if var.owner is not None and isinstance(var.owner.op, ValuesWithin)
        for bound in var.owner.inputs[1:]
    ]
    return [var for var in _unique(variables + bounds) if not isinstance(var, Constant)]


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


def _unique(values: Any) -> list[Any]:
    return list(dict.fromkeys(values))
