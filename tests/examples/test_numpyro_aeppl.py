"""The aeppl logistic regression exported by jaxify is the hand-written potential, and NumPyro samples both alike."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.examples.test_examples import check_figure, has_timing, last_line, load

Z = 4.0  # Monte Carlo standard errors


@pytest.fixture(scope="module")
def example():
    return load("numpyro_aeppl")


def test_exported_potential_and_gradient_equal_the_hand_written(example):
    X, y = example.logistic_data()
    found = example.potentials(X, y)
    exported, hand = (jax.jit(jax.value_and_grad(found[label])) for label in (example.AEPPL, example.HAND))
    points = np.random.default_rng(5).normal(scale=3.0, size=(8, X.shape[1]))
    for z in [np.zeros(3), example.TRUE_COEFFICIENTS, *points]:
        (value, grad), (expected, expected_grad) = exported(jnp.asarray(z)), hand(jnp.asarray(z))
        np.testing.assert_allclose(value, expected, rtol=1e-12)
        np.testing.assert_allclose(grad, expected_grad, rtol=1e-11, atol=1e-11 * np.abs(expected_grad).max())


def test_short_runs_give_the_same_posterior(example, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    result = example.main(warmup=200, samples=200, repeats=1, figure="numpyro_aeppl.png")
    out = capsys.readouterr().out
    for label in (example.AEPPL, example.HAND):
        assert has_timing(out, "NUTS, 400 transitions", label, "run")
        assert result["draws"][label].shape == (200, 3) and np.isfinite(result["draws"][label]).all()
    assert "largest difference of posterior means: " in out
    assert last_line(out) == (
        "aeppl + jaxify and hand-written JAX posterior means agree within Monte Carlo error (4 s.e.): yes"
    )
    check_figure(tmp_path, "numpyro_aeppl.png", out)
    # Another key for the hand-written potential: a chain independent of the exported one's (the same key may
    # retrace the same path), from the compiled sampler.
    mine = result["draws"][example.AEPPL]
    theirs = np.asarray(result["samplers"][example.HAND](jax.random.key(7))[0])
    error = np.hypot(example.standard_error(mine), example.standard_error(theirs))
    assert np.all(np.abs(mine.mean(0) - theirs.mean(0)) < Z * error), (mine.mean(0), theirs.mean(0), error)
