"""Give a random graph the same random numbers on every backend.

Aesara's backends cannot agree on random draws: the reference draws with
numpy's generators, aejax with JAX's keys. To check that a backend computes
the same *algorithm* as the reference, `same_draws` rewrites a graph so that
every draw comes from a fixed table of numbers instead, one that both backends
read identically.

How:

* Every random generator (a shared variable of a `RandomType`) becomes a
  one-element ``int64`` shared vector, a *position* in two tables of ``N`` numbers
  drawn once on the host with numpy: standard uniforms and standard normals.
  Its start is a function of the generator's own state, so generators seeded
  alike start alike, and a graph built twice the same way gets the same numbers.
* Every `RandomVariable` node ``(rng, size, dtype, *params) -> (rng', x)``
  becomes a lookup: ``x`` reads as many consecutive table entries as it has
  elements, starting at the position, and ``rng'`` is the position moved past
  them (wrapping around at ``N``). ``x`` is then the table entry mapped through
  the distribution's location and scale (``normal``, ``uniform``) or compared
  with its probability (``bernoulli``): exact float operations, so the two
  backends' draws agree bit for bit.
* Every `Scan` is rebuilt with the same structure and its own copy of its
  inner graph, rewritten the same way, recursively: its generator states
  (shared outputs, or non-sequences) become positions. The copy thus shares
  no inner graph with the input graph, nor with another copy: compiling a
  graph rewrites its Scans' inner graphs in place, and one graph built once
  can be given to `same_draws` once per backend.

Only additions, subtractions, comparisons, ``where`` and an integer gather
are used, not ``%``, ``//`` or bit operations, so the rewrite does not lean on
the integer operations whose lowering one may want to test with it.

The numbers are not a good random number generator (streams of different
generators overlap in the table, and repeat after ``N`` draws); they are meant
for comparing backends, not for sampling.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import aesara
import aesara.tensor as at
import numpy as np
from aesara.compile.sharedvalue import SharedVariable
from aesara.graph.basic import Apply, Constant, Variable, graph_inputs, io_toposort
from aesara.scan.op import Scan
from aesara.tensor.random.basic import BernoulliRV, NormalRV, UniformRV
from aesara.tensor.random.op import RandomVariable
from aesara.tensor.random.type import RandomType

TABLE_SIZE = 8192
"""Entries in each table; a single draw may read at most this many values."""

POSITION_TYPE = at.TensorType("int64", shape=(None,))
"""A generator's replacement: a one-element vector (Aesara's shape inference of a
while-`Scan` fails on 0-d shared outputs, and would warn)."""

Memo = dict[Variable, Variable]


@dataclass(frozen=True)
class DrawTables:
    """The numbers every draw reads: ``uniform`` in [0, 1) and standard ``normal``, as graph constants."""

    uniform: Variable
    normal: Variable
    size: int

    @classmethod
    def from_seed(cls, seed: int, size: int = TABLE_SIZE) -> DrawTables:
        """Tables of ``size`` numbers drawn on the host from ``numpy.random.default_rng(seed)``."""
        rng = np.random.default_rng(seed)
        return cls(at.constant(rng.uniform(size=size)), at.constant(rng.standard_normal(size=size)), size)

    def start(self, generator: np.random.Generator | np.random.RandomState) -> int:
        """Where a generator's stream starts: a function of the generator's state (left untouched)."""
        generator = copy.deepcopy(generator)
        if isinstance(generator, np.random.RandomState):
            return int(generator.randint(self.size))
        return int(generator.integers(self.size))


def same_draws(
    outputs: Sequence[Variable],
    updates: Mapping[SharedVariable, Variable] | Iterable[tuple[SharedVariable, Variable]] | None = None,
    seed: int = 0,
    table_size: int = TABLE_SIZE,
) -> tuple[list[Variable], dict[SharedVariable, Variable]]:
    """``(outputs, updates)`` of a copy of the graph whose draws all read fixed tables.

    ``updates`` are those one would give `aesara.function` (e.g. the ones a
    `Scan` returns); the generators' ``default_update``\\ s are taken too. The
    returned updates advance the new positions (and carry the other updates,
    rewritten); compile the result with them to get fresh numbers at each call.
    ``seed`` picks the tables. The input graph is left as it was.
    """
    tables = DrawTables.from_seed(seed, table_size)
    updates = dict(updates or {})
    for var in graph_inputs(list(outputs) + list(updates.values())):
        if _is_generator(var) and var not in updates and getattr(var, "default_update", None) is not None:
            updates[var] = var.default_update
    memo: Memo = {}
    for var in [*graph_inputs(list(outputs) + list(updates.values())), *updates]:
        if _is_generator(var) and var not in memo:
            memo[var] = _position_of(var, tables)
    targets = list(updates)
    values = _rewrite(list(outputs) + [updates[t] for t in targets], memo, tables)
    new_outputs, new_values = values[: len(outputs)], values[len(outputs) :]
    new_updates: dict[SharedVariable, Variable] = {}
    for target, value in zip(targets, new_values):
        new_target = memo.get(target, target)
        new_updates[new_target] = new_target.type.filter_variable(value)
    return new_outputs, new_updates


def random_nodes(outputs: Sequence[Variable]) -> list[Apply]:
    """The `RandomVariable` nodes of a graph, those in the inner graphs of its `Scan`\\ s included."""
    found = []
    for node in io_toposort(list(graph_inputs(outputs)), list(outputs)):
        if isinstance(node.op, RandomVariable):
            found.append(node)
        elif isinstance(node.op, Scan):
            found.extend(random_nodes(node.op.inner_outputs))
    return found


def _is_generator(var: Variable) -> bool:
    return isinstance(var.type, RandomType)


def _position_of(generator: Variable, tables: DrawTables) -> Variable:
    """The position that replaces a generator: shared if the generator is, else a constant."""
    if isinstance(generator, Constant):
        return at.constant(np.array([tables.start(generator.data)], dtype="int64"))
    if not isinstance(generator, SharedVariable):
        raise TypeError(f"same_draws needs shared or constant generators, got the input {generator}")
    start = tables.start(generator.get_value(borrow=True))
    return aesara.shared(np.array([start], dtype="int64"), name=f"{generator.name or 'rng'}_position")


def _rewrite(outputs: Sequence[Variable], memo: Memo, tables: DrawTables) -> list[Variable]:
    """Copy the graph of ``outputs`` with draws read from ``tables``; ``memo`` maps replaced variables."""
    for node in io_toposort([v for v in graph_inputs(outputs)], list(outputs)):
        inputs = [memo.get(i, i) for i in node.inputs]
        if isinstance(node.op, RandomVariable):
            new_outputs = _table_draw(node, inputs, tables)
        elif isinstance(node.op, Scan):
            new_outputs = _rewrite_scan(node, inputs, tables)
        elif any(_is_generator(i) for i in node.inputs):
            raise NotImplementedError(f"same_draws cannot rewrite {node.op}, which takes a random generator")
        elif all(new is old for new, old in zip(inputs, node.inputs)):
            continue
        else:
            new_outputs = node.clone_with_new_inputs(inputs, strict=True).outputs
        memo.update(zip(node.outputs, new_outputs))
    return [memo.get(o, o) for o in outputs]


def _table_draw(node: Apply, inputs: Sequence[Variable], tables: DrawTables) -> list[Variable]:
    """``[position', draw]`` for a `RandomVariable` node whose inputs are ``(position, size, dtype, *params)``."""
    position, size, _, *params = inputs
    op, out = node.op, node.outputs[1]
    if op.ndim_supp != 0 or not isinstance(op, (NormalRV, UniformRV, BernoulliRV)):
        raise NotImplementedError(f"same_draws has no table draw for {op}")
    # The draw's shape: ``size`` if given, else the parameters' broadcast shape.
    template = at.zeros(size) if at.get_vector_length(size) > 0 else at.zeros_like(sum(params), dtype="float64")
    count = template.size
    indices = _wrap(position + at.arange(count, dtype="int64"), tables.size)
    if isinstance(op, NormalRV):
        loc, scale = params
        draw = loc + scale * tables.normal[indices].reshape(template.shape, ndim=template.ndim)
    else:
        u = tables.uniform[indices].reshape(template.shape, ndim=template.ndim)
        draw = params[0] + (params[1] - params[0]) * u if isinstance(op, UniformRV) else at.lt(u, params[0])
    new_position = _wrap(position + count, tables.size)
    return [new_position, out.type.filter_variable(at.cast(draw, out.dtype))]


def _wrap(index: Variable, size: int) -> Variable:
    """``index`` folded into ``[0, size)``, for ``index`` in ``[0, 2 * size)``."""
    return at.where(at.ge(index, size), index - size, index)


def _rewrite_scan(node: Apply, outer_inputs: Sequence[Variable], tables: DrawTables) -> list[Variable]:
    """A copy of a `Scan` node with its own inner graph, whose generators are positions and draws read ``tables``."""
    op: Scan = node.op
    inner_memo: Memo = {}
    new_inner_inputs = []
    for inner in op.inner_inputs:
        new_inner = POSITION_TYPE() if _is_generator(inner) else inner.type()
        inner_memo[inner] = new_inner
        new_inner_inputs.append(new_inner)
    for inner in graph_inputs(op.inner_outputs):
        if _is_generator(inner) and inner not in inner_memo:
            inner_memo[inner] = _position_of(inner, tables)
    new_inner_outputs = _rewrite(op.inner_outputs, inner_memo, tables)
    new_op = Scan(
        new_inner_inputs,
        new_inner_outputs,
        op.info,
        mode=op.mode,
        truncate_gradient=op.truncate_gradient,
        name=op.name,
        profile=op.profile,
        allow_gc=op.allow_gc,
        strict=op.strict,
    )
    return new_op(*outer_inputs, return_list=True)
