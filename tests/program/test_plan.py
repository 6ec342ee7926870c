"""A graph's plan is a frozen object that tracing makes: a call that needs another plan makes a new one (issue #49).

What a trace finds (a node to run on the host, values that enter cut to
their length, mask groups) rides out of its program with the result, and the
runner joins it into a new `Plan`; nothing of the `GraphProgram` is written
while JAX traces it.
"""

import ast
import dataclasses
import inspect
import textwrap

import aesara
import aesara.tensor as at
import jax.numpy as jnp
import numpy as np
import pytest

import aejax.linker
from aejax.linker import HostNodeWarning
from aejax.linker.program.host_node import VALUE_SHAPES, HostNode
from aejax.linker.program.plan import Found, Plan
from aejax.linker.program.segments import GraphProgram
from tests.reference import compile_both


class Positives(aesara.graph.op.Op):
    """``x[x > 0]``, whose JAX lowering can trace only an empty ``x``: a longer one needs another plan."""

    __props__ = ()

    def make_node(self, x):
        return aesara.graph.basic.Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = inputs[0][inputs[0] > 0]


@aejax.linker.jax_funcify.register(Positives)
def _positives(op, node=None, **kwargs):
    def positives(x):
        return x if x.shape[0] == 0 else x[jnp.nonzero(x > 0)[0]]  # a shape that depends on values

    return positives


def _snapshot(plan: Plan):
    return dict(plan.host_reasons), plan.exact, dict(plan.groups.group_of)


def test_a_call_that_needs_another_plan_makes_a_new_one_and_leaves_the_first_as_it_was():
    x = at.dvector("x")
    node_input = x * 2
    reference, ours = compile_both([x], Positives()(node_input).sum() + 1)
    program = ours.vm.jit_fn
    empty = np.zeros(0)
    np.testing.assert_allclose(ours(empty), reference(empty))
    first = program.plan
    before = _snapshot(first)
    assert not first.host_reasons
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.exact = frozenset([x])
    with pytest.raises(TypeError):
        first.host_reasons[node_input.owner] = VALUE_SHAPES

    values = np.array([1.0, -2.0, 3.0])
    with pytest.warns(HostNodeWarning, match="Positives"):
        np.testing.assert_allclose(ours(values), reference(values))
    second = program.plan
    assert second is not first
    assert _snapshot(first) == before
    assert [type(node.op) for node in second.host_reasons] == [Positives]
    assert any(isinstance(segment.program, HostNode) for segment in program.segments)
    np.testing.assert_allclose(ours(empty), reference(empty))  # its program, traced by the first plan, still serves
    np.testing.assert_allclose(ours(values * -1), reference(values * -1))
    assert program.plan is second  # nothing new found: the same plan


def test_joining_what_a_plan_holds_returns_the_same_plan():
    x = at.dvector("x")
    ours = aesara.function([x], Positives()(x * 2).sum(), mode=aejax.linker.mode)
    with pytest.warns(HostNodeWarning):
        ours(np.array([1.0, -1.0]))
    plan = ours.vm.jit_fn.plan
    ((node, reason),) = plan.host_reasons.items()

    assert plan.joined(Found(host=(node, reason))) is plan
    assert plan.joined(Found(exact=frozenset([x]))) is not plan


WRITTEN_AFTER_INIT = {
    ("cache_size", "_cache_size"),  # the user sets it
    ("_take", "_plan"),  # the one plan swap, by the runner, from what a program returned
    ("_segment_at", "_segments"),  # the segment cache, keyed by the plan's decision on its first node
}


def _self_attribute(target: ast.expr) -> str | None:
    """The attribute of ``self`` that ``target`` writes into (``self.a = ``, ``self.a[k] = ``, ``self.a.b = ``), if any."""
    while isinstance(target, (ast.Subscript, ast.Attribute)):
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            return target.attr
        target = target.value
    return None


MUTATING = {"pop", "update", "setdefault", "clear", "add", "append", "extend", "discard", "remove", "record"}


def test_graph_program_writes_no_attribute_outside_init_but_the_plan_swap_and_the_segment_cache():
    tree = ast.parse(textwrap.dedent(inspect.getsource(GraphProgram)))
    written = set()
    for method in ast.walk(tree):
        if not isinstance(method, ast.FunctionDef) or method.name == "__init__":
            continue
        for node in ast.walk(method):
            targets = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATING:
                targets = [node.func.value]
            written.update((method.name, attr) for attr in map(_self_attribute, targets) if attr is not None)
    assert written == WRITTEN_AFTER_INIT
