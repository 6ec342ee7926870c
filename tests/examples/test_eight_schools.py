"""The eight-schools example: its log-density on aejax is the reference backend's and the textbook density, and
its routes' short runs find the model's known posterior means, into an ArviZ ``InferenceData``."""

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from scipy import stats

import aejax.linker
from tests.examples.test_examples import load
from tests.reference import REFERENCE

MU, TAU = 4.4, 3.6
"""Posterior means of ``mu`` and ``tau`` of the non-centered eight schools, from long reference runs (Stan, PyMC)."""
Z = 4.0  # Monte Carlo standard errors
CHAINS, WARMUP, DRAWS = 2, 150, 150


@pytest.fixture(scope="module")
def example():
    return load("eight_schools")


def textbook_log_density(example, q):
    """The model's log-density at ``q = [mu, log_tau, theta_tilde]`` written with scipy, ``log_tau``'s Jacobian added."""
    mu, log_tau, theta_tilde = q[0], q[1], q[2:]
    tau = np.exp(log_tau)
    return (
        stats.norm(0, 5).logpdf(mu)
        + stats.halfcauchy(0, 5).logpdf(tau)
        + log_tau
        + stats.norm(0, 1).logpdf(theta_tilde).sum()
        + stats.norm(mu + tau * theta_tilde, example.SIGMA).logpdf(example.Y).sum()
    )


def test_log_density_on_aejax_is_the_reference_and_the_textbook_density(example):
    q = at.dvector("q")
    with aesara.config.change_flags(cxx=""):  # no C code compiled for the constants folded while building
        logp = example.log_density(q)
        outputs = [logp, aesara.grad(logp, q)]
        ours = aesara.function([q], outputs, mode=aejax.linker.mode)
        reference = aesara.function([q], outputs, mode=REFERENCE)
    for point in np.random.default_rng(3).normal(scale=2.0, size=(5, example.DIMS)):
        (value, gradient), (expected, expected_gradient) = ours(point), reference(point)
        np.testing.assert_allclose(value, expected, rtol=1e-12)
        np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(value, textbook_log_density(example, point), rtol=1e-8)


def check_posterior(example, route):
    """A short run of ``route``: the draws' shapes, ArviZ's groups, and the means of ``mu`` and ``tau`` near the
    reference ones within ``Z`` Monte Carlo standard errors (from the run's bulk ESS)."""
    result = example.main(route, CHAINS, WARMUP, DRAWS, seed=1)
    idata, record = result["idata"], result["record"]
    posterior = idata.posterior
    assert dict(posterior.sizes) == {"chain": CHAINS, "draw": DRAWS, "school": 8}
    assert (posterior["tau"] > 0).all()
    steps = "tree_depth" if route == "aehmc" else "n_steps"
    for name in ("diverging", "step_size", "acceptance_rate", steps):
        assert idata.sample_stats[name].shape == (CHAINS, DRAWS), name
    assert idata.sample_stats["diverging"].dtype == bool
    assert set(record) >= {"seconds", "ess_bulk", "leapfrog_steps_per_transition", "divergences", "posterior_mean"}
    for name, expected in (("mu", MU), ("tau", TAU)):
        draws = posterior[name].values
        error = draws.std() / np.sqrt(record["ess_bulk"][name])
        assert abs(draws.mean() - expected) < Z * error, (route, name, draws.mean(), error)


@pytest.mark.parametrize("route", ["aehmc", "numpyro"])
def test_route_finds_the_reference_posterior(example, route):
    pytest.importorskip(route)
    check_posterior(example, route)


def test_blackjax_route_finds_the_reference_posterior(example):
    pytest.importorskip("blackjax")  # not in CI: installed apart (docs/bayesian_workflow.md)
    check_posterior(example, "blackjax")
