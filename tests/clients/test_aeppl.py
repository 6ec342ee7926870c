"""aeppl log-densities (and their gradients) computed on aejax match Aesara's backend.

Each model is built with a `RandomStream`, turned into a joint log-density
graph by `aeppl.joint_logprob`, and that graph together with its gradient
with respect to the model parameters is compiled on both backends and
evaluated at a few points.
"""

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aeppl import joint_logprob
from aeppl.logprob import ParameterValueError
from aesara.tensor.random.utils import RandomStream

from tests.clients.helpers import assert_same_at_points, assert_same_outputs, compile_pair


def logprob_and_grads(logp, params):
    return [logp, *aesara.grad(logp, params)]


def test_scalar_normal_mixture():
    """``stack([X0, X1])[I]`` with a scalar Bernoulli index (aeppl's ``ifelse`` branch)."""
    srng = RandomStream(2023)
    p = at.dscalar("p")
    mu = at.dvector("mu")
    sigma = at.dscalar("sigma")
    I_rv = srng.bernoulli(p, name="I")
    X0_rv = srng.normal(mu[0], 1.0, name="X0")
    X1_rv = srng.normal(mu[1], sigma, name="X1")
    M_rv = at.stack([X0_rv, X1_rv])[I_rv]
    M_rv.name = "M"

    logp, (m_vv, i_vv) = joint_logprob(M_rv, I_rv)
    params = [p, mu, sigma]
    points = [
        (0.3, np.array([-1.0, 2.0]), 0.5, 0.7, 0),
        (0.3, np.array([-1.0, 2.0]), 0.5, 1.9, 1),
        (0.8, np.array([0.5, -0.5]), 2.0, -3.0, 1),
    ]
    assert_same_at_points([*params, m_vv, i_vv], logprob_and_grads(logp, params), points)


def test_vector_normal_mixture():
    """``stack([X0, X1])[I, arange(n)]`` with a vector of Bernoulli indices."""
    srng = RandomStream(2024)
    n = 5
    p = at.dscalar("p")
    mu = at.dvector("mu")
    sigma = at.dscalar("sigma")
    I_rv = srng.bernoulli(p, size=n, name="I")
    X0_rv = srng.normal(mu[0], 1.0, size=n, name="X0")
    X1_rv = srng.normal(mu[1], sigma, size=n, name="X1")
    M_rv = at.stack([X0_rv, X1_rv])[I_rv, at.arange(n)]
    M_rv.name = "M"

    logp, (m_vv, i_vv) = joint_logprob(M_rv, I_rv)
    params = [p, mu, sigma]
    rng = np.random.default_rng(5)
    points = [
        (0.3, np.array([-1.0, 2.0]), 0.5, rng.normal(size=n), np.array([0, 1, 1, 0, 1])),
        (0.6, np.array([0.0, 1.0]), 1.5, rng.normal(size=n), np.array([1, 1, 1, 1, 1])),
    ]
    assert_same_at_points([*params, m_vv, i_vv], logprob_and_grads(logp, params), points)


def test_censored_normal():
    """``clip(Normal(mu, sigma), lower, upper)``: values at, inside and outside the bounds; invalid parameters."""
    srng = RandomStream(7)
    mu = at.dscalar("mu")
    sigma = at.dscalar("sigma")
    lower = at.dscalar("lower")
    upper = at.dscalar("upper")
    Y_rv = at.clip(srng.normal(mu, sigma, size=4, name="X"), lower, upper)

    logp, (y_vv,) = joint_logprob(Y_rv)
    params = [mu, sigma]
    reference, candidate = compile_pair([*params, lower, upper, y_vv], logprob_and_grads(logp, params))
    points = [
        (0.5, 1.2, -1.0, 2.0, np.array([-1.0, 0.3, 1.99, 2.0])),
        (-0.2, 0.7, -0.5, 0.5, np.array([-0.5, -0.5, 0.5, 0.1])),
        (3.0, 2.0, -1.0, 1.0, np.array([1.0, 1.0, 0.9, -1.0])),
    ]
    for args in points:
        assert_same_outputs(reference(*args), candidate(*args))
    # aeppl's parameter checks raise on both backends.
    invalid = [
        ((0.0, -1.0, -1.0, 1.0, np.zeros(4)), "sigma > 0"),
        ((0.0, 1.0, 1.0, -1.0, np.zeros(4)), "lower_bound <= upper_bound"),
    ]
    for args, message in invalid:
        for fn in (reference, candidate):
            with pytest.raises(ParameterValueError, match=message):
                fn(*args)


def test_switching_process():
    """``switch(B, X0, X1)`` with a Bernoulli switch ``B`` (aeppl 0.1.5 needs a scalar switch)."""
    srng = RandomStream(11)
    p = at.dscalar("p")
    mu = at.dscalar("mu")
    lam = at.dscalar("lam")
    B_rv = srng.bernoulli(p, name="B")
    X0_rv = srng.normal(mu, 1.0, name="X0")
    X1_rv = srng.exponential(lam, name="X1")
    S_rv = at.switch(B_rv, X0_rv, X1_rv)
    S_rv.name = "S"

    logp, (s_vv, b_vv) = joint_logprob(S_rv, B_rv)
    params = [p, mu, lam]
    points = [
        (0.4, 1.0, 2.0, 0.8, 1),
        (0.4, 1.0, 2.0, 0.8, 0),
        (0.9, -0.5, 0.5, -1.3, 1),
    ]
    assert_same_at_points([*params, s_vv, b_vv], logprob_and_grads(logp, params), points)


def test_switching_process_of_states_selected_by_value():
    """aeppl.dists.switching_process over a (10, 4) categorical: its log-density selects rows with
    ``nonzero`` and scatters them back (values whose length only the call knows, as in aeppl's own
    ``test_switching_process_logp``)."""
    from aeppl.dists import dirac_delta, switching_process
    from aeppl.joint_logprob import conditional_logprob

    srng = RandomStream(2023532)
    states_rv = srng.categorical([1 / 2, 1 / 2], size=(10, 4), name="states")
    switching = switching_process(
        [dirac_delta(at.as_tensor(0, dtype=np.int64)), dirac_delta(at.as_tensor(1, dtype=np.int64))], states_rv
    )
    observed = at.tile(np.arange(4), (10, 1)).astype(np.int64)
    logps, (states_vv,) = conditional_logprob(states_rv, realized={switching: observed})
    reference, candidate = compile_pair([states_vv], at.add(*logps.values()))
    rng = np.random.default_rng(3)
    for states in [np.zeros((10, 4), np.int64), rng.integers(0, 2, size=(10, 4)), np.ones((10, 4), np.int64)]:
        assert_same_outputs(reference(states), candidate(states))


def test_gaussian_ar1_scan():
    """An AR(1) chain ``X_t ~ N(rho X_{t-1}, sigma)`` built with `aesara.scan`."""
    srng = RandomStream(13)
    rho = at.dscalar("rho")
    sigma = at.dscalar("sigma")
    x0 = at.dscalar("x0")

    def step(x_tm1, rho, sigma):
        return srng.normal(rho * x_tm1, sigma, name="X_t")

    X_rv, _ = aesara.scan(step, outputs_info=[x0], non_sequences=[rho, sigma], n_steps=8)
    X_rv.name = "X"

    logp, (x_vv,) = joint_logprob(X_rv)
    params = [rho, sigma]
    rng = np.random.default_rng(17)
    points = [
        (0.7, 1.3, 0.2, rng.normal(size=8)),
        (-0.4, 0.6, -1.0, rng.normal(size=8)),
    ]
    assert_same_at_points([*params, x0, x_vv], logprob_and_grads(logp, params), points)


def test_categorical_markov_chain_scan():
    """A discrete Markov chain ``S_t ~ Cat(Gamma[S_{t-1}])`` built with `aesara.scan`."""
    srng = RandomStream(19)
    Gamma = at.dmatrix("Gamma")
    s0 = at.lscalar("s0")

    def step(s_tm1, Gamma):
        return srng.categorical(Gamma[s_tm1], name="S_t")

    S_rv, _ = aesara.scan(step, outputs_info=[s0], non_sequences=[Gamma], n_steps=7)
    S_rv.name = "S"

    logp, (s_vv,) = joint_logprob(S_rv)
    params = [Gamma]
    gamma_a = np.array([[0.8, 0.15, 0.05], [0.1, 0.7, 0.2], [0.3, 0.3, 0.4]])
    gamma_b = np.array([[0.5, 0.25, 0.25], [0.2, 0.2, 0.6], [0.05, 0.05, 0.9]])
    points = [
        (gamma_a, 0, np.array([0, 0, 1, 1, 2, 0, 0])),
        (gamma_b, 2, np.array([2, 2, 1, 2, 0, 1, 2])),
    ]
    assert_same_at_points([*params, s0, s_vv], logprob_and_grads(logp, params), points)


@pytest.mark.parametrize("axis", [0, 1])
def test_joined_random_variables(axis):
    """``join(axis, X, Y)`` of a normal and an exponential block, and ``stack`` of scalars."""
    srng = RandomStream(23)
    mu = at.dscalar("mu")
    lam = at.dscalar("lam")
    shape_x, shape_y = ((2, 3), (1, 3)) if axis == 0 else ((2, 2), (2, 3))
    X_rv = srng.normal(mu, 1.0, size=shape_x, name="X")
    Y_rv = srng.exponential(lam, size=shape_y, name="Y")
    J_rv = at.join(axis, X_rv, Y_rv)
    J_rv.name = "J"
    V_rv = at.stack([srng.normal(mu, 2.0), srng.gamma(2.0, lam)])
    V_rv.name = "V"

    logp, (j_vv, v_vv) = joint_logprob(J_rv, V_rv)
    params = [mu, lam]
    shape_j = (3, 3) if axis == 0 else (2, 5)
    rng = np.random.default_rng(29)
    points = [
        (0.3, 1.5, rng.exponential(size=shape_j), np.array([0.1, 2.2])),
        (-1.0, 0.4, rng.exponential(size=shape_j), np.array([-1.5, 0.3])),
    ]
    assert_same_at_points([*params, j_vv, v_vv], logprob_and_grads(logp, params), points)
