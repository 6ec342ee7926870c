"""aemcmc Gibbs samplers on aejax, compared in distribution with Aesara's backend.

`aemcmc.construct_sampler` finds Gibbs steps for a negative-binomial and a
logistic (Bernoulli) regression with horseshoe priors on the coefficients
(Polya-gamma augmentation for the coefficients, the horseshoe's
inverse-gamma mixture for the shrinkage parameters, a CRT ``Scan`` for the
dispersion). One sweep of the sampler is compiled on both backends and run
for a moderate number of sweeps on a small synthetic data set. Draws cannot
match between backends, so the test compares shapes, dtypes, finiteness and
the posterior means and standard deviations within Monte Carlo error.
"""

import aesara.tensor as at
import numpy as np
import pytest
from aemcmc import construct_sampler
from aemcmc.dists import polyagamma
from aesara.tensor.random.utils import RandomStream

from tests.clients.helpers import assert_means_agree, assert_sds_agree, compile_pair

N_OBS = 30
N_SWEEPS = 200
BURN_IN = 40


def design_matrix(rng, n_obs, n_coefs):
    return np.column_stack([np.ones(n_obs), rng.normal(size=(n_obs, n_coefs - 1))])


def horseshoe_coefficients(srng, n_coefs):
    tau_rv = srng.halfcauchy(0, 1, name="tau")
    lmbda_rv = srng.halfcauchy(0, 1, size=n_coefs, name="lambda")
    beta_rv = srng.normal(0, lmbda_rv * tau_rv, size=n_coefs, name="beta")
    return tau_rv, lmbda_rv, beta_rv


def sample(model_inputs, observed, sampled_rvs, srng, data, initial_values):
    """Run both backends' Gibbs sweeps from ``initial_values``; their draws, ``{rv: (reference, candidate)}``."""
    Y_rv, y_vv = observed
    sampler, initial_vars = construct_sampler({Y_rv: y_vv}, srng)
    assert set(sampler.sample_steps) == set(sampled_rvs)

    inputs = [*model_inputs, y_vv, *(initial_vars[rv] for rv in sampled_rvs)]
    outputs = [sampler.sample_steps[rv] for rv in sampled_rvs]
    reference, candidate = compile_pair(inputs, outputs, updates=sampler.updates, on_unused_input="ignore")

    draws = {}
    for name, fn in (("candidate", candidate), ("reference", reference)):
        state = list(initial_values)
        chain = []
        for _ in range(N_SWEEPS):
            state = fn(*data, *state)
            chain.append(state)
        draws[name] = [np.array([sweep[i] for sweep in chain]) for i in range(len(sampled_rvs))]

    for i, rv in enumerate(sampled_rvs):
        ref, cand = draws["reference"][i], draws["candidate"][i]
        assert cand.dtype == ref.dtype, (rv, cand.dtype, ref.dtype)
        assert cand.shape == ref.shape == (N_SWEEPS, *np.shape(initial_values[i])), (rv, cand.shape)
        assert np.all(np.isfinite(cand)), rv
    return {rv: (draws["reference"][i][BURN_IN:], draws["candidate"][i][BURN_IN:]) for i, rv in enumerate(sampled_rvs)}


def test_negative_binomial_regression_gibbs():
    srng = RandomStream(2718)
    X = at.dmatrix("X")
    a = at.dscalar("a")
    b = at.dscalar("b")
    n_coefs = 3
    tau_rv, lmbda_rv, beta_rv = horseshoe_coefficients(srng, n_coefs)
    h_rv = srng.gamma(a, b, name="h")
    Y_rv = srng.nbinom(h_rv, at.sigmoid(-(X @ beta_rv)), name="Y")
    y_vv = Y_rv.clone()
    y_vv.name = "y"

    rng = np.random.default_rng(42)
    X_val = design_matrix(rng, N_OBS, n_coefs)
    beta_true = np.array([1.0, 0.8, 0.0])
    h_true = 5.0
    # numpy's (and Aesara's) ``nbinom(h, p)`` has mean ``h (1 - p) / p = h exp(X beta)``.
    y_val = rng.negative_binomial(h_true, 1 / (1 + np.exp(X_val @ beta_true)))

    sampled = [tau_rv, lmbda_rv, beta_rv, h_rv]
    initial_values = [1.0, np.ones(n_coefs), np.zeros(n_coefs), 10.0]
    draws = sample([X, a, b], (Y_rv, y_vv), sampled, srng, (X_val, 10.0, 1.0, y_val), initial_values)

    ref_beta, cand_beta = draws[beta_rv]
    assert_means_agree(ref_beta, cand_beta)
    assert_sds_agree(ref_beta, cand_beta)
    ref_h, cand_h = draws[h_rv]
    assert_means_agree(ref_h, cand_h)
    assert_sds_agree(ref_h, cand_h)
    # ``h`` and the intercept trade off against each other, but both backends'
    # posterior mean counts ``h exp(X beta)`` fit the data.
    for beta, h in ((ref_beta, ref_h), (cand_beta, cand_h)):
        fitted = np.mean(h[:, None] * np.exp(beta @ X_val.T), axis=0)
        np.testing.assert_allclose(fitted.mean(), y_val.mean(), rtol=0.15)


def test_logistic_regression_gibbs():
    srng = RandomStream(1618)
    X = at.dmatrix("X")
    n_coefs = 3
    tau_rv, lmbda_rv, beta_rv = horseshoe_coefficients(srng, n_coefs)
    Y_rv = srng.bernoulli(at.sigmoid(-(X @ beta_rv)), name="Y")
    y_vv = Y_rv.clone()
    y_vv.name = "y"

    rng = np.random.default_rng(7)
    n_obs = 5 * N_OBS
    X_val = design_matrix(rng, n_obs, n_coefs)
    beta_true = np.array([-0.5, 2.0, 0.0])
    y_val = rng.binomial(1, 1 / (1 + np.exp(-X_val @ beta_true)))

    sampled = [tau_rv, lmbda_rv, beta_rv]
    initial_values = [1.0, np.ones(n_coefs), np.zeros(n_coefs)]
    draws = sample([X], (Y_rv, y_vv), sampled, srng, (X_val, y_val), initial_values)

    ref_beta, cand_beta = draws[beta_rv]
    assert_means_agree(ref_beta, cand_beta)
    assert_sds_agree(ref_beta, cand_beta)
    # Both backends' posteriors cover the true coefficients.
    for beta in (ref_beta, cand_beta):
        assert np.all(np.abs(beta.mean(axis=0) - beta_true) < 4 * beta.std(axis=0)), (beta.mean(0), beta.std(0))


def test_polyagamma_parameter_check_raises_its_own_error():
    """The Polya-gamma sampler runs on the host; its ``ValueError`` for ``h <= 0`` reaches the caller as it is."""
    h = at.dvector("h")
    reference, candidate = compile_pair([h], RandomStream(2).gen(polyagamma, h, 0.0))
    for fn in (reference, candidate):
        with pytest.raises(ValueError, match="Values of `h` must be positive"):
            fn(np.array([1.0, -1.0]))
    assert candidate(np.array([1.0, 2.0])).shape == (2,)
