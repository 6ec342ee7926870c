"""Gradients of scans (mit-mot), checked against the reference and finite differences."""

import aesara
import aesara.tensor as at
import numpy as np
import pytest

import aejax.linker
from tests.reference import assert_matches_reference

RNG = np.random.default_rng(3)
W0 = RNG.normal(size=(3, 3)) * 0.5
H0 = RNG.normal(size=3)
XS = RNG.normal(size=(6, 3))


def rnn_loss(truncate_gradient=-1):
    W, h0, xs = at.dmatrix("W"), at.dvector("h0"), at.dmatrix("xs")
    hs, _ = aesara.scan(
        lambda x, h, W: at.tanh(at.dot(W, h) + x),
        sequences=xs,
        outputs_info=h0,
        non_sequences=W,
        truncate_gradient=truncate_gradient,
    )
    return [W, h0, xs], (hs**2).sum()


@pytest.mark.kind("mit-mot")
@pytest.mark.parametrize("wrt", ["W", "h0", "xs"])
def test_rnn_gradient_matches_reference(wrt):
    inputs, loss = rnn_loss()
    target = {v.name: v for v in inputs}[wrt]
    assert_matches_reference(inputs, aesara.grad(loss, target), W0, H0, XS, rtol=1e-9)


@pytest.mark.kind("mit-mot")
def test_rnn_gradient_matches_finite_differences():
    inputs, loss = rnn_loss()
    f = aesara.function(inputs, loss, mode=aejax.linker.mode)
    g = aesara.function(inputs, aesara.grad(loss, inputs[0]), mode=aejax.linker.mode)
    eps = 1e-6
    numeric = np.zeros_like(W0)
    for idx in np.ndindex(W0.shape):
        step = np.zeros_like(W0)
        step[idx] = eps
        numeric[idx] = (f(W0 + step, H0, XS) - f(W0 - step, H0, XS)) / (2 * eps)
    np.testing.assert_allclose(g(W0, H0, XS), numeric, rtol=1e-5, atol=1e-8)


@pytest.mark.kind("mit-mot")
def test_truncated_gradient_matches_reference():
    inputs, loss = rnn_loss(truncate_gradient=2)
    assert_matches_reference(inputs, aesara.grad(loss, inputs[:2]), W0, H0, XS, rtol=1e-9)


@pytest.mark.kind("mit-mot")
def test_gradient_through_mit_sot_taps():
    init, w = at.dvector("init"), at.dscalar("w")
    out, _ = aesara.scan(
        lambda a, b, w: a * w + at.sin(b), outputs_info=[dict(initial=init, taps=[-1, -3])], non_sequences=w, n_steps=8
    )
    cost = (out**2).sum()
    assert_matches_reference([init, w], aesara.grad(cost, [init, w]), np.array([0.1, 0.2, 0.3]), 0.9, rtol=1e-9)


@pytest.mark.kind("mit-mot")
def test_second_order_gradient():
    x0, w = at.dscalar("x0"), at.dscalar("w")
    out, _ = aesara.scan(lambda s, w: at.sin(s * w) + s, outputs_info=x0, non_sequences=w, n_steps=5)
    cost = out[-1] ** 2
    dw = aesara.grad(cost, w)
    d2w = aesara.grad(dw, w)
    assert_matches_reference([x0, w], [dw, d2w], 0.3, 0.8, rtol=1e-8)
