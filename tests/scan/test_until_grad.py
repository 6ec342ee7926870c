"""Gradients through ``until`` loops, inside one jit program.

The backward loop runs for the forward loop's run-time number of steps over
buffers sized by it; both are bounded by the forward loop's ``n_steps``
(`aejax.linker.lengths.bounds`), so no program is split and no input made static.
"""

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.scan.utils import until

import aejax.linker
from tests.reference import assert_matches_reference


def growth(max_steps=1000):
    """``x <- x * a + 1`` from ``x0`` until it passes ``k``: about ``log(k) / log(a)`` steps."""
    a, k, x0 = at.dscalar("a"), at.dscalar("k"), at.dscalar("x0")
    xs, _ = aesara.scan(
        lambda x, a, k: (x * a + 1, until(x * a + 1 >= k)), outputs_info=x0, non_sequences=[a, k], n_steps=max_steps
    )
    return [a, k, x0], xs


def _one_program(inputs, outputs, *args):
    """The function of ``outputs`` on AEJAX, called with ``args``, and its one jit program (it fails if split)."""
    f = aesara.function(inputs, outputs, mode=aejax.linker.mode)
    f(*args)
    (segment,) = f.vm.jit_fn.segments
    return f, segment


@pytest.mark.kind("until")
@pytest.mark.parametrize("k", [50.0, 1e9], ids=["stops early", "runs all steps"])
def test_gradient_matches_reference_in_one_program(k):
    inputs, xs = growth(max_steps=60)
    a, _, x0 = inputs
    cost = xs[-1] ** 2 / 1e4 + xs.sum()
    grads = aesara.grad(cost, [a, x0])
    assert_matches_reference(inputs, [cost, *grads], 1.05, k, 0.5, rtol=1e-9)
    f, segment = _one_program(inputs, grads, 1.05, k, 0.5)
    assert segment.program.static_positions == ()


@pytest.mark.kind("until")
def test_gradient_agrees_with_finite_differences():
    inputs, xs = growth()
    a = inputs[0]
    cost = (xs**2).mean()
    f = aesara.function(inputs, [cost, aesara.grad(cost, a)], mode=aejax.linker.mode)
    value, grad = f(1.1, 500.0, 0.3)
    h = 1e-6
    numeric = (f(1.1 + h, 500.0, 0.3)[0] - f(1.1 - h, 500.0, 0.3)[0]) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5)


@pytest.mark.kind("until")
def test_second_derivative_matches_reference():
    inputs, xs = growth()
    a = inputs[0]
    first = aesara.grad(xs[-1] + xs.sum(), a)
    second = aesara.grad(first, a)
    assert_matches_reference(inputs, [first, second], 1.1, 200.0, 0.3, rtol=1e-9)
    _one_program(inputs, second, 1.1, 200.0, 0.3)


@pytest.mark.kind("until")
def test_gradient_with_respect_to_a_sequence():
    x = at.dvector("x")
    total, _ = aesara.scan(
        lambda x_t, s: (s + x_t**2, until(s + x_t**2 > 5)), sequences=x, outputs_info=at.constant(np.float64(0.0))
    )
    grad = aesara.grad(total[-1] * total.shape[0], x)
    f, segment = _one_program([x], [total, grad], np.linspace(0.5, 2.0, 10))
    compiled = segment.program.programs.compiled
    stopping_steps = set()
    for scale in (1.0, 2.0, 1.5, 0.8, 3.0):
        values = np.linspace(0.5, 2.0, 10) * scale
        assert_matches_reference([x], [total, grad], values)
        stopping_steps.add(len(f(values)[0]))
    assert len(stopping_steps) == 5
    assert segment.program.static_positions == ()
    assert segment.program.programs.compiled == compiled  # no program per stopping step


@pytest.mark.kind("until")
def test_values_sized_by_the_run_time_length_stay_in_one_program():
    inputs, xs = growth()
    sized = [at.zeros(xs.shape[0]) + xs, at.arange(xs.shape[0]) * xs, at.ones((xs.shape[0], 2)).sum(0)]
    for out in sized:
        assert_matches_reference(inputs, out, 1.1, 50.0, 0.0)
        _one_program(inputs, out, 1.1, 50.0, 0.0)


@pytest.mark.kind("until")
def test_rows_of_a_trace_reduced_and_sliced_in_one_program():
    x0 = at.dvector("x0")
    xs, _ = aesara.scan(lambda x: (x * 1.5, until(x.sum() * 1.5 > 40)), outputs_info=x0, n_steps=50)
    outs = [xs.sum(axis=1), xs.max(axis=0), xs[::-2], xs[1:-1].mean(), xs[-3:]]
    assert_matches_reference([x0], outs, np.array([1.0, 2.0, 0.5]))
    _one_program([x0], outs, np.array([1.0, 2.0, 0.5]))


def _until_inside_a_loop(outer_steps=3):
    """A fixed loop whose step runs an until loop from its state (``v <- v * a + s`` until its sum passes 30)."""
    a, v0, seq = at.dscalar("a"), at.dvector("v0"), at.dvector("seq")

    def step(s, v, a):
        inner, _ = aesara.scan(
            lambda w, a: (w * a + s, until(w.sum() * a > 30)), outputs_info=v, non_sequences=a, n_steps=15
        )
        return inner[-1] / inner.shape[0]

    trace, _ = aesara.scan(step, sequences=seq, outputs_info=v0, non_sequences=a)
    return [a, v0, seq], trace


@pytest.mark.kind("until")
def test_gradient_through_an_until_loop_inside_a_loop_in_one_program():
    """The backward step re-runs the inner until loop and its own backward loop, sized by its run-time length."""
    inputs, trace = _until_inside_a_loop()
    a, v0, seq = inputs
    grads = aesara.grad(trace.sum() + trace[-1, 0] ** 2, [a, v0, seq])
    args = (1.5, np.array([0.5, 1.0]), np.array([0.1, 0.2, 0.3]))
    assert_matches_reference(inputs, grads, *args, rtol=1e-9)
    _one_program(inputs, grads, *args)


@pytest.mark.kind("until")
def test_second_derivative_through_an_until_loop_inside_a_loop_in_one_program():
    """The backward step of the backward step splits a buffer of the inner loop's run-time length."""
    inputs, trace = _until_inside_a_loop()
    a, _, _ = inputs
    second = aesara.grad(aesara.grad(trace[-1, 0], a), a)
    args = (1.5, np.array([0.5, 1.0]), np.array([0.1, 0.2, 0.3]))
    assert_matches_reference(inputs, second, *args, rtol=1e-9)
    _one_program(inputs, second, *args)
