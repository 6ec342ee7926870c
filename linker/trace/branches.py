"""`IfElse` as Aesara runs it: lazily, the branch the condition does not pick never runs.

`plan_branches` finds, for each IfElse of a lowered graph, the nodes whose
values only one of its branches needs: not the condition, not the other
branch, no node outside the IfElse, no output of the graph. The lowering
loop (`aejax.linker.trace.lowering`) runs those nodes inside their branch,
when it meets the IfElse, and every other node before it as usual. A branch
holds the nodes of the IfElses nested in it.

`if_else` picks the branch:

- a condition known while tracing picks it outright; the other branch is
  not traced at all;
- a traced condition picks it with `jax.lax.cond`: both branches are traced
  (each once, replayed from its jaxpr), only the taken one runs. The checks
  of a branch (`aejax.linker.checks`) count only when it is taken; a branch
  whose tracing already fails on the values known then (an index out of
  range, an `Assert` of constants) becomes a run-time check that the
  condition picks the other branch;
- when the branches differ in shape, the result's shape depends on the
  condition's value: `NotStaticError`, on which aejax makes the condition a
  static input (`aejax.linker.program`), as for any shape.

Under `jax.vmap` with a condition that differs between the batch members,
JAX turns `jax.lax.cond` into a select: both branches run for every member,
and the branch not taken costs its full time (its checks still fail only
the members that take it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from aesara.graph.basic import Apply, Variable
from aesara.ifelse import IfElse

from aejax.linker.checks import code_of, fold, passed_if_none, require
from aejax.linker.errors import (
    NodeIndexError,
    NodeTypeError,
    NodeValueError,
    NotStaticError,
    ValueCheckError,
    rebuildable,
)
from aejax.linker.lengths.concrete import is_traced
from aejax.linker.lengths.ragged import RUN_TIME_LENGTH, NeedsSplit
from aejax.linker.trace.replay import traced_once

VALUE_FAILURES: tuple[type[BaseException], ...] = (ValueCheckError, NodeValueError, NodeTypeError, NodeIndexError)
"""The errors that say the graph's values are invalid for a node (Aesara raises on them too when it runs the node)."""


class Branch(NamedTuple):
    """What one branch of an IfElse runs itself."""

    steps: list[tuple[Apply, Any]]
    """The steps (node and lowering) only this branch needs, in order, less those of the IfElses nested in it."""
    raises: tuple[type[BaseException], ...]
    """The exception classes the branch's nodes declare (``exc_type``, as `CheckAndRaise` does), nested ones too."""


class BranchPlan(NamedTuple):
    """Where each step of a lowered graph runs: outside every IfElse, or inside one branch."""

    outside: list[tuple[Apply, Any]]
    """The steps run in order, as every step ran before IfElses were lazy."""
    branches: dict[Apply, tuple[Branch, Branch]]
    """The branches (then, else) of each IfElse that runs some step inside one."""


def branch_inputs(node: Apply, side: int) -> list[Variable]:
    """The inputs of IfElse ``node`` that branch ``side`` (0: then, 1: else) returns."""
    n_outs = node.op.n_outs
    return node.inputs[1 + side * n_outs : 1 + (side + 1) * n_outs]


def plan_branches(steps: Sequence[tuple[Apply, Any]], outputs: Sequence[Variable]) -> BranchPlan:
    """Which of ``steps`` (a graph computing ``outputs``) run inside a branch of an IfElse, and which outside."""
    inside = {
        (node, side): _only_needed_by(steps, outputs, node, side)
        for node, _ in steps
        if isinstance(node.op, IfElse)
        for side in (0, 1)
    }
    # The sets nest (a branch holds the whole branches of an IfElse in it): the smallest set that holds a node is its own.
    owner: dict[Apply, tuple[Apply, int]] = {}
    for key, nodes in sorted(inside.items(), key=lambda item: -len(item[1])):
        owner.update(dict.fromkeys(nodes, key))
    branches = {
        node: tuple(_branch(steps, owner, inside, node, side) for side in (0, 1))
        for node, _ in steps
        if inside.get((node, 0)) or inside.get((node, 1))
    }
    return BranchPlan([step for step in steps if step[0] not in owner], branches)


def _branch(
    steps: Sequence[tuple[Apply, Any]],
    owner: dict[Apply, tuple[Apply, int]],
    inside: dict[tuple[Apply, int], set[Apply]],
    node: Apply,
    side: int,
) -> Branch:
    """Branch ``side`` of IfElse ``node``: the steps whose smallest branch (``owner``) it is."""
    declared = {getattr(n.op, "exc_type", None) for n in inside[(node, side)]}
    return Branch(
        [step for step in steps if owner.get(step[0]) == (node, side)],
        tuple(cls for cls in declared if isinstance(cls, type) and issubclass(cls, BaseException)),
    )


def _only_needed_by(
    steps: Sequence[tuple[Apply, Any]], outputs: Sequence[Variable], node: Apply, side: int
) -> set[Apply]:
    """The nodes of ``steps`` whose values only branch ``side`` of IfElse ``node`` needs.

    Walked from the last step back, each node is met after every node that
    reads it: it belongs to the branch when the branch reads one of its
    outputs and nothing outside the branch reads any.
    """
    elsewhere = {*outputs, node.inputs[0], *branch_inputs(node, 1 - side)}
    needed = set(branch_inputs(node, side))
    found: set[Apply] = set()
    for step_node, _ in reversed(steps):
        if step_node is node:
            continue
        outs = step_node.outputs
        if any(out in needed for out in outs) and not any(out in elsewhere for out in outs):
            found.add(step_node)
            needed.update(step_node.inputs)
        else:
            elsewhere.update(step_node.inputs)
    return found


Values = Callable[[], Sequence[Any]]
"""A branch: computes (or traces) its values when called."""


def if_else(
    node: Apply, condition: Any, then: Values, otherwise: Values, failures: tuple[type[BaseException], ...] = ()
) -> list[Any]:
    """The outputs of IfElse ``node``: the values of the branch ``condition`` picks (see the module docstring).

    ``failures`` are the errors that, raised while a branch is traced, say
    that it fails on the graph's values: that branch becomes a run-time
    check; any other error is raised as it is.
    """
    if not is_traced(condition):
        return list((then if bool(condition) else otherwise)())
    traced = [_traced_branch(branch, failures) for branch in (then, otherwise)]
    failed = [isinstance(t, BaseException) for t in traced]
    if all(failed):
        raise NotStaticError(
            f"both branches of {node} fail on the values known while tracing ({traced[0]}), "
            "so its condition must be known while tracing"
        )
    if any(failed):
        return _other_than_failed(node, condition, traced)
    (then_replay, then_result), (else_replay, else_result) = traced
    _check_branch_values(node, then_result[0], else_result[0])
    if then_result[1] is None and else_result[1] is None:  # neither met a check: no code to pick
        return list(jax.lax.cond(condition, lambda: then_replay()[0], lambda: else_replay()[0]))
    values, code = jax.lax.cond(condition, _coded(then_replay), _coded(else_replay))
    fold(code)
    return list(values)


def _coded(replay: Callable[[], tuple[Any, Any]]) -> Callable[[], tuple[Any, Any]]:
    """A branch's replay returning its values and its failure code (`PASSED` if it met no check)."""

    def coded() -> tuple[Any, Any]:
        values, code = replay()
        return values, passed_if_none(code)

    return coded


def _traced_branch(branch: Values, failures: tuple[type[BaseException], ...]) -> Any:
    """``branch`` traced with its checks' failure code: its replay and result types, or the value failure it raised."""
    try:
        return traced_once(lambda: code_of(lambda: list(branch())))
    except failures as error:
        return error


def _other_than_failed(node: Apply, condition: Any, traced: list[Any]) -> list[Any]:
    """The values of the branch that traced, checked at run time to be the one ``condition`` picks."""
    side = 0 if isinstance(traced[1], BaseException) else 1
    failure = rebuildable(traced[1 - side])
    picks_then = jnp.asarray(condition) != 0
    require(picks_then if side == 0 else ~picks_then, type(failure), str(failure), f"node {node}")
    replay, _ = traced[side]
    values, code = replay()
    fold(code)
    return list(values)


def _check_branch_values(node: Apply, then: Sequence[Any], otherwise: Sequence[Any]) -> None:
    """`NeedsSplit` if a branch returns a value of run-time length; `NotStaticError` if the branches differ in shape."""
    for side, values in enumerate((then, otherwise)):
        for var, value in zip(branch_inputs(node, side), values):
            if isinstance(value, RUN_TIME_LENGTH):
                raise NeedsSplit(var.owner)
    if any(a.shape != b.shape for a, b in zip(then, otherwise)):
        raise NotStaticError(f"the branches of {node} differ in shape, so its condition must be known while tracing")
