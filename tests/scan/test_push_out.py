"""Aesara's push-out rewrites on Scans whose buffers aejax's `ScanKeepLast` shrank (`aejax.linker.rewrites.scan`)."""

import aesara
import aesara.tensor as at
import numpy as np
import pytest

from tests.reference import assert_matches_reference

RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _rewrites_must_not_fail():
    with aesara.config.change_flags(on_opt_error="raise"):
        yield


def test_sum_of_dots_pushed_out_of_a_scan():
    """Aesara's ``TestPushOutAddScan::test_sum_dot``: ``scan_pushout_add`` reads the state's first row of a
    buffer that `ScanKeepLast` cut to it; ``x0[None][:1][0]`` made ``local_dimshuffle_subtensor`` fail."""
    a, b = at.dmatrices("a", "b")
    total, _ = aesara.scan(
        lambda x1, x2, u: u + at.dot(x1, x2),
        sequences=[a.dimshuffle(0, 1, "x"), b.dimshuffle(0, "x", 1)],
        outputs_info=[at.zeros_like(a)],
    )
    assert_matches_reference([a, b], total[-1], RNG.uniform(size=(5, 5)), RNG.uniform(size=(5, 5)))


def test_dot_over_a_value_the_step_also_returns_pushed_out_of_a_scan():
    """``acc + dot(y, s)`` with ``y`` also a per-step output, of which only the last row (or nothing) is used:
    ``scan_pushout_add`` takes ``y``'s outer output as every step's value, so it keeps its whole trace."""
    seq = at.dtensor3("seq")

    def step(s, acc):
        y = at.tanh(s + acc)
        return y, acc + at.dot(y, s)

    (ys, accs), _ = aesara.scan(step, sequences=seq, outputs_info=[None, at.zeros((3, 3))])
    value = RNG.normal(size=(6, 3, 3))
    assert_matches_reference([seq], [accs[-1], ys[-1]], value)
    assert_matches_reference([seq], accs[-1], value)


def test_gradient_of_an_rnn_with_the_push_out_of_its_weights():
    """Aesara's ``TestPushOutAddScan::test_machine_translation``, smaller: the gradient's Scan returns the
    gradients of the sequences, which its steps also multiply into the weights' gradients."""
    steps, batch, dim = 7, 4, 3
    weights = [aesara.shared(RNG.normal(size=(dim, dim)) * 0.5, name=name) for name in "UVW"]
    u, v, w = weights
    x, ri, zi = at.dtensor3("x"), at.dtensor3("ri"), at.dtensor3("zi")

    def step(x_t, r_t, z_t, h):
        r, z = at.sigmoid(r_t + h.dot(u)), at.sigmoid(z_t + h.dot(v))
        new_h = at.tanh(x_t + (r * h).dot(w))
        return z * new_h + (1 - z) * h

    h, _ = aesara.scan(step, sequences=[x, ri, zi], n_steps=steps, outputs_info=at.zeros((batch, dim)))
    gradients = aesara.grad(h[-1].sum(), weights)
    values = [RNG.normal(size=(steps, batch, dim)) for _ in range(3)]
    assert_matches_reference([x, ri, zi], gradients, *values, rtol=1e-6)
