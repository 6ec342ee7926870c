"""Compile time does not grow with buffer sizes: XLA is given no large constant to fold."""

import time

import aesara
import aesara.tensor as at
import jax
import numpy as np

from aejax.linker import jaxify
from tests.reference import REFERENCE

BATCH, HIDDEN = 8, 32
RNG = np.random.default_rng(3)


def _last_state_rnn_gradient():
    """The gradient of a loss on an RNN's last state: it scatters a constant into a zero buffer as long as the trace."""
    w = at.dmatrix("w")
    xs = at.tensor3("xs")
    hs, _ = aesara.scan(lambda x, h: at.tanh(h @ w + x), sequences=xs, outputs_info=at.zeros((BATCH, HIDDEN)))
    return [w, xs], aesara.grad(hs[-1].sum(), w)


def _compiled(steps):
    """The gradient's program for ``steps`` steps, the seconds XLA took to compile it, and its arguments."""
    inputs, grad = _last_state_rnn_gradient()
    graph = jaxify(inputs, [grad], {})
    args = (RNG.normal(size=(HIDDEN, HIDDEN)) * 0.1, RNG.normal(size=(steps, BATCH, HIDDEN)))
    lowered = jax.jit(graph.fn).lower(graph.state, *args)
    start = time.perf_counter()
    compiled = lowered.compile()
    return compiled, time.perf_counter() - start, (graph.state, *args)


def test_compile_time_does_not_grow_with_the_number_of_steps():
    _, short, _ = _compiled(500)
    compiled, long, args = _compiled(4000)  # 8 times the buffer: XLA folding it took 8 times as long
    assert long < 2 * short + 0.5, (short, long)
    (got,), _ = compiled(*args)
    inputs, grad = _last_state_rnn_gradient()
    np.testing.assert_allclose(got, aesara.function(inputs, grad, mode=REFERENCE)(*args[1:]), rtol=1e-9)
