"""Numerically delicate expressions, and their gradients, give FAST_RUN's values at top level and in Scan steps.

Aesara makes them safe only by rewriting them (its ``stabilize`` rewrites
and the specializations they depend on): ``logsumexp`` is written
``log(sum(exp(x)))``. FAST_RUN rewrites a Scan's inner graph too, as it
compiles it with the Scan's mode; so do aejax's Scan lowering
(`aejax.linker.rewrites.step_rewrites`) and its mode at top level, where
``log1p(-sigmoid(u))`` was ``-inf`` above ``u = 37`` (issue #52). Each
expression's inputs are extreme: the unrewritten graph gives ``-inf``,
``inf`` or ``nan`` at some of them.
"""

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.tensor.special import softmax

from tests.reference import FAST_RUN_IN_PYTHON, assert_matches_reference, compile_both

WIDE = np.array([-800.0, -40.0, 0.0, 40.0, 800.0])
NEGATIVE = np.array([-800.0, -40.0, -1.0, -1e-5, -1e-20])

EXPRESSIONS = {
    "logsumexp near -2000": (at.logsumexp, np.array([-2000.0, -2001.0, -1999.5])),
    "logsumexp near 1000": (at.logsumexp, np.array([1000.0, 999.0, 1000.5])),
    "log of a sum of exps": (lambda x: at.log(at.exp(x) + at.exp(2 * x)), WIDE),
    "log1p(-sigmoid)": (lambda x: at.log1p(-at.sigmoid(x)), WIDE),
    "log(sigmoid)": (lambda x: at.log(at.sigmoid(x)), WIDE),
    "log(1 - sigmoid)": (lambda x: at.log(1 - at.sigmoid(x)), WIDE),
    "softplus": (at.softplus, WIDE),
    "log(1 + exp)": (lambda x: at.log(1 + at.exp(x)), WIDE),
    "log(1 - exp)": (lambda x: at.log(1 - at.exp(x)), NEGATIVE),
    "log1mexp": (at.log1mexp, NEGATIVE),
    "log(softmax)": (lambda x: at.log(softmax(x)), np.array([0.0, -800.0, -2000.0, 5.0])),
}

NESTED = ["logsumexp near -2000", "log1p(-sigmoid)", "log(1 - exp)"]


def _value_and_gradient(expression, x):
    y = expression(x)
    return [y, aesara.grad(y.sum(), x)]


def _in_scan_step(expression, xs):
    """``expression`` of each row of ``xs`` in a Scan step that also reads a state, so the work stays in the loop."""

    def step(row, state):
        return state * 0.5, expression(row + state)

    (_, ys), _ = aesara.scan(step, sequences=[xs], outputs_info=[at.constant(0.0), None], mode=FAST_RUN_IN_PYTHON)
    return ys


def _in_nested_scan_steps(expression, xs):
    """`_in_scan_step` in the step of a Scan over the rows of ``xs``, each row a matrix of one row."""

    def outer(row, state):
        return state * 0.5, _in_scan_step(expression, row[None, :] + state)[0]

    (_, ys), _ = aesara.scan(outer, sequences=[xs], outputs_info=[at.constant(0.0), None], mode=FAST_RUN_IN_PYTHON)
    return ys


def _assert_as_fast_run(inputs, outputs, *args):
    """aejax gives FAST_RUN's values, and those of the first output are finite."""
    got = assert_matches_reference(inputs, outputs, *args, rtol=1e-10, reference_mode=FAST_RUN_IN_PYTHON)
    assert np.isfinite(got[0]).all(), got[0]


def _assert_in_loops_as_fast_run(expression, build, rows):
    """The loop ``build`` makes gives FAST_RUN's values: those of FAST_RUN's own loop where they are finite.

    Elsewhere it may give FAST_RUN's value of ``expression`` and its
    gradient at top level, row by row: FAST_RUN's loop is not always as
    stable as its top level (the gradient of ``logsumexp`` in a nested step
    is ``nan``, where aejax gives the softmax).
    """
    x, xs = at.dvector("x"), at.dmatrix("xs")
    top_level = aesara.function([x], _value_and_gradient(expression, x), mode=FAST_RUN_IN_PYTHON)
    row_by_row = [np.stack(parts) for parts in zip(*[top_level(row) for row in rows])]
    ys = build(expression, xs)
    reference, ours = compile_both([xs], [ys, aesara.grad(ys.sum(), xs)], reference_mode=FAST_RUN_IN_PYTHON)
    got = ours(rows)
    for value, expected, top in zip(got, reference(rows), row_by_row):
        as_fast_run = np.isclose(value, expected, rtol=1e-10, atol=1e-12, equal_nan=True)
        as_top_level = ~np.isfinite(expected) & np.isclose(value, top, rtol=1e-10, atol=1e-12)
        assert (as_fast_run | as_top_level).all(), (value, expected, top)
    assert np.isfinite(got[0]).all(), got[0]


@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_at_top_level(name):
    expression, values = EXPRESSIONS[name]
    x = at.dvector("x")
    _assert_as_fast_run([x], _value_and_gradient(expression, x), values)


@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_in_a_scan_step(name):
    expression, values = EXPRESSIONS[name]
    _assert_in_loops_as_fast_run(expression, _in_scan_step, np.stack([values, values[::-1]]))


@pytest.mark.parametrize("name", NESTED)
def test_in_a_nested_scan_step(name):
    expression, values = EXPRESSIONS[name]
    _assert_in_loops_as_fast_run(expression, _in_nested_scan_steps, np.stack([values, values[::-1]]))


def test_products_and_quotients_of_zero_as_under_fast_run():
    """Aesara's ``local_mul_specialize`` and ``local_zero_div`` make ``0 * inf`` and ``0 / 0`` zero (`ShapedByInputs`)."""
    x, row = at.dmatrix("x"), at.drow("row")
    outputs = [0 * x, at.mul(0, x, row), 0 / x, row**0 + 0 * x, at.ones((3, 1)) / row]
    special = np.array([[np.inf, 0.0, np.nan], [-np.inf, 2.0, 1e-300], [1.0, -1.0, 5.0]])
    assert_matches_reference([x, row], outputs, special, special[:1], reference_mode=FAST_RUN_IN_PYTHON)


def test_the_forward_algorithm_of_a_hidden_markov_model():
    """Issue #52: ``logsumexp`` over the previous step's log-probabilities, where a sampler starts, was ``-inf``."""
    log_emissions, log_transitions, log_start = (
        at.dmatrix("log_emissions"),
        at.dmatrix("log_transitions"),
        at.dvector("log_start"),
    )

    def forward(log_emission, alpha):
        return at.logsumexp(alpha[:, None] + log_transitions, axis=0) + log_emission

    alphas, _ = aesara.scan(forward, sequences=[log_emissions], outputs_info=[log_start], mode=FAST_RUN_IN_PYTHON)
    log_likelihood = at.logsumexp(alphas[-1])
    inputs = [log_emissions, log_transitions, log_start]
    outputs = [log_likelihood, *aesara.grad(log_likelihood, [log_emissions, log_transitions])]
    rng = np.random.default_rng(0)
    emissions = -1000.0 + rng.normal(size=(4, 3))
    transitions = np.log(rng.dirichlet(np.ones(3), size=3))
    _assert_as_fast_run(inputs, outputs, emissions, transitions, np.log(np.ones(3) / 3))
