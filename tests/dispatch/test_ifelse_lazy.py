"""`ifelse` is lazy, as Aesara's: the branch not taken does not run, at top level and in Scan steps.

Each graph is compared with Aesara's reference backend, with the branch that
would fail (a failing `Assert`, an index out of range) taken and not taken.
"""

import warnings

import aesara
import aesara.tensor as at
import jax
import numpy as np
import pytest
from aesara.graph.basic import Apply
from aesara.graph.op import Op
from aesara.ifelse import ifelse
from aesara.raise_op import Assert
from aesara.scan.utils import until

import aejax.linker
from aejax.linker import CallbackWarning, jaxify
from tests.jaxprs import inner_jaxprs
from tests.reference import assert_matches_reference, assert_raises_like_reference

x = at.dvector("x")
c = at.dscalar("c")
i = at.lscalar("i")
DATA = np.array([1.0, 2.0, 3.0])


def failing_assert(value):
    """``value``, asserted to hold only negative entries (never, for `DATA`)."""
    return Assert("the values are not negative")(value, at.all(value < 0))


CASES = {
    "failing Assert": ([x, c], lambda: ifelse(c > 0, x * 2, failing_assert(x + 1)), ()),
    "constant index out of range": ([x, c], lambda: ifelse(c > 0, x.sum(), x[10]), ()),
    "traced index out of range": ([x, c, i], lambda: ifelse(c > 0, x.sum(), x[i] * 2), (7,)),
}


@pytest.mark.parametrize("name", CASES)
def test_branch_not_taken_does_not_fail(name):
    inputs, graph, rest = CASES[name]
    assert_matches_reference(inputs, graph(), DATA, 1.0, *rest)


@pytest.mark.parametrize(
    ("name", "error", "match"),
    [
        ("failing Assert", AssertionError, "not negative"),
        ("constant index out of range", IndexError, "out of bounds"),
        ("traced index out of range", IndexError, "out of bounds"),
    ],
)
def test_branch_taken_still_fails(name, error, match):
    inputs, graph, rest = CASES[name]
    assert_raises_like_reference(inputs, graph(), [DATA, -1.0, *rest], error, match)


class CountedDouble(Op):
    """``x * 2`` in Python, counting its runs: aejax runs it on the host (a callback), only where it is computed."""

    __props__ = ()
    runs = 0

    def make_node(self, v):
        v = at.as_tensor_variable(v)
        return Apply(self, [v], [v.type()])

    def perform(self, node, inputs, outputs):
        type(self).runs += 1
        outputs[0][0] = inputs[0] * 2

    def infer_shape(self, fgraph, node, shapes):
        return shapes


def test_branch_not_taken_runs_no_node():
    f = aesara.function([x, c], ifelse(c > 0, x + 1, CountedDouble()(x)), mode=aejax.linker.mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CallbackWarning)
        CountedDouble.runs = 0
        np.testing.assert_allclose(f(DATA, 1.0), DATA + 1)
        np.testing.assert_allclose(f(DATA, 2.0), DATA + 1)
        assert CountedDouble.runs == 0
        np.testing.assert_allclose(f(DATA, -1.0), DATA * 2)
        assert CountedDouble.runs == 1


def expensive(m):
    """A chain of matrix products (each one a ``dot_general`` in the program)."""
    for _ in range(4):
        m = at.tanh(m @ m)
    return m.sum()


def cond_branches(jaxpr):
    """The branches' jaxprs of each ``cond`` in ``jaxpr``, nested jaxprs too."""
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "cond":
            found.append([b.jaxpr for b in eqn.params["branches"]])
        for sub in inner_jaxprs(eqn.params):
            found.extend(cond_branches(sub))
    return found


def count(jaxpr, primitive):
    """How many equations of ``primitive`` ``jaxpr`` holds, nested ones too."""
    here = sum(eqn.primitive.name == primitive for eqn in jaxpr.eqns)
    return here + sum(count(sub, primitive) for eqn in jaxpr.eqns for sub in inner_jaxprs(eqn.params))


def test_expensive_branch_runs_inside_its_cond():
    m = at.dmatrix("m")
    out = ifelse(c > 0, m.sum(), expensive(m))
    assert_matches_reference([m, c], out, np.eye(3) * 0.5, 1.0)
    assert_matches_reference([m, c], out, np.eye(3) * 0.5, -1.0)
    graph = jaxify([m, c], out)
    jaxpr = jax.make_jaxpr(lambda *args: graph.fn({}, *args))(np.eye(3), 1.0).jaxpr
    (branches,) = cond_branches(jaxpr)
    assert sorted(count(b, "dot_general") for b in branches) == [0, 4]
    assert count(jaxpr, "dot_general") == 4  # none outside the cond


def test_known_condition_traces_only_its_branch():
    m = at.dmatrix("m")
    graph = jaxify([m, c], ifelse(c > 0, m.sum(), expensive(m)))
    jaxpr = jax.make_jaxpr(lambda v: graph.fn({}, v, 1.0))(np.eye(3)).jaxpr
    assert count(jaxpr, "cond") == 0
    assert count(jaxpr, "dot_general") == 0


def test_shared_subexpression_is_computed_once_outside():
    """A value both branches (and the condition) read is computed before the IfElse, once."""
    m = at.dmatrix("m")
    shared = at.tanh(m @ m)
    out = ifelse(shared.sum() > 0, (shared @ m).sum(), (shared * 2).sum())
    for data in (np.eye(3), -np.eye(3)):
        assert_matches_reference([m], out, data)
    graph = jaxify([m], out)
    jaxpr = jax.make_jaxpr(lambda v: graph.fn({}, v))(np.eye(3)).jaxpr
    (branches,) = cond_branches(jaxpr)
    assert sorted(count(b, "dot_general") for b in branches) == [0, 1]
    assert count(jaxpr, "dot_general") == 2


@pytest.mark.parametrize("c1, c2", [(1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0)])
def test_nested_ifelse(c1, c2):
    a, b = at.dscalars("a", "b")
    inner = ifelse(b > 0, x * 3, failing_assert(x - 1))
    out = ifelse(a > 0, inner.sum(), x[2] + ifelse(b > 0, x.sum(), x[11]))
    inputs, args = [x, a, b], (DATA, c1, c2)
    if c2 > 0:
        assert_matches_reference(inputs, out, *args)
    else:
        error, match = (AssertionError, "not negative") if c1 > 0 else (IndexError, "out of bounds")
        assert_raises_like_reference(inputs, out, args, error, match)


def test_nested_ifelse_of_out_of_range_indices():
    a, b = at.dscalars("a", "b")
    out = ifelse(a > 0, ifelse(b > 0, x[0], x[10]), x[1] + ifelse(b > 0, x[12], x[2]))
    assert_matches_reference([x, a, b], out, DATA, 1.0, 1.0)
    assert_matches_reference([x, a, b], out, DATA, -1.0, -1.0)


def step_with_failing_branches(v, s):
    """Add a positive row to the state; else double it, asserting that the row is positive and reading ``x`` at a
    position out of range for rows of 1 or more (both fail only where this branch is taken)."""
    index = at.maximum(at.cast(v, "int64"), 0) * 10
    return ifelse(v > 0, s + v, Assert("the row is not positive")(s * 2, v > 0) + x[index])


@pytest.mark.parametrize("stops", [False, True], ids=["scan", "until"])
def test_branch_not_taken_in_scan_step(stops):
    seq = at.dvector("seq")

    def step(v, s):
        out = step_with_failing_branches(v, s)
        return (out, until(out > 1e6)) if stops else out

    states, _ = aesara.scan(step, sequences=seq, outputs_info=c)
    assert_matches_reference([seq, x, c], states, np.array([1.0, 2.0, 0.5]), DATA, 0.0)
    assert_raises_like_reference(
        [seq, x, c], states, [np.array([1.0, -2.0, 0.5]), DATA, 0.0], AssertionError, "not positive"
    )


def test_nested_ifelse_in_scan_step():
    seq = at.dvector("seq")

    def step(v, s):
        far = at.cast(v, "int64") + 20  # out of range; read from the row, so it stays in the step
        inner = ifelse(s > 2, s + v, failing_assert(s) + x[far])
        return ifelse(v > 0, ifelse(s > 0, inner, x[far + 10]), x[far + 20] * 0)

    states, _ = aesara.scan(step, sequences=seq, outputs_info=c)
    assert_matches_reference([seq, x, c], states, np.array([1.0, 2.0, 0.5]), DATA, 3.0)


@pytest.mark.parametrize("condition", [1.0, -1.0])
def test_gradient_through_lazy_ifelse(condition):
    m = at.dmatrix("m")
    cost = ifelse(c > 0, (m**2).sum(), expensive(m))
    assert_matches_reference([m, c], at.grad(cost, m), np.eye(3) * 0.5, condition)


def test_vmap_with_batched_condition():
    """Under vmap a batched condition makes a select that runs both branches: the values are still each member's."""
    m = at.dmatrix("m")
    out = ifelse(c > 0, m.sum(), expensive(m))
    reference = aesara.function([m, c], out, mode="FAST_COMPILE")
    graph = jaxify([m, c], out)
    conditions = np.array([1.0, -1.0, 2.0, -3.0])
    data = np.stack([np.eye(3) * k for k in (0.1, 0.2, 0.3, 0.4)])
    got = jax.jit(jax.vmap(lambda v, k: graph.fn({}, v, k)[0]))(data, conditions)
    np.testing.assert_allclose(got, [reference(d, k) for d, k in zip(data, conditions)], rtol=1e-12)
