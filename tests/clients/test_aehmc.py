"""aehmc's HMC on aejax: one deterministic piece compared exactly, NUTS
transitions compared exactly on the same random numbers (`same_draws`), and
chains compared in distribution with chains run on Aesara's backend.

The target is a 2-D Gaussian with correlation 0.5.
"""

import warnings

import aesara
import aesara.tensor as at
import numpy as np
from aehmc import hmc, integrators, metrics, nuts, trajectory
from aeppl import joint_logprob
from aesara.tensor.random.utils import RandomStream

from aejax.linker import CallbackWarning, HostNodeWarning
from tests.clients.helpers import (
    CANDIDATE,
    REFERENCE,
    assert_means_agree,
    assert_same_at_points,
    assert_same_outputs,
    assert_sds_agree,
    compile_pair,
)
from tests.clients.same_draws import random_nodes, same_draws

MEAN = np.array([1.0, -2.0])
COV = np.array([[1.0, 0.5], [0.5, 1.0]])
PRECISION = np.linalg.inv(COV)
STEP_SIZE = 0.25
N_LEAPFROG = 6
N_STEPS = 300
BURN_IN = 50


def logprob_fn(q):
    d = q - MEAN
    return -0.5 * at.dot(d, at.dot(PRECISION, d))


def potential_fn(q):
    return -logprob_fn(q)


def test_potential_energy_and_leapfrog_trajectory_match_exactly():
    """`hmc.new_state` (potential and its gradient) and a static velocity-Verlet trajectory."""
    q = at.dvector("q")
    p = at.dvector("p")
    step_size = at.dscalar("step_size")
    inverse_mass_matrix = at.dvector("inverse_mass_matrix")

    _, energy, energy_grad = hmc.new_state(q, logprob_fn)
    _, kinetic_energy_fn, _ = metrics.gaussian_metric(inverse_mass_matrix)
    integrate = trajectory.static_integration(integrators.velocity_verlet(potential_fn, kinetic_energy_fn), N_LEAPFROG)
    (q_new, p_new, energy_new, energy_grad_new), updates = integrate(q, p, energy, energy_grad, step_size)
    assert not updates

    outputs = [energy, energy_grad, q_new, p_new, energy_new, energy_grad_new, kinetic_energy_fn(p_new)]
    points = [
        (np.array([0.3, -1.2]), np.array([0.5, -0.1]), 0.25, np.array([1.0, 1.0])),
        (np.array([2.0, 0.0]), np.array([-1.5, 0.7]), 0.1, np.array([0.5, 2.0])),
    ]
    assert_same_at_points([q, p, step_size, inverse_mass_matrix], outputs, points, rtol=1e-10)


def transition(kernel, *extra):
    """One transition of an aehmc ``kernel``: ``(q, energy, energy_grad) -> (q', energy', energy_grad', p_accept)``.

    ``extra`` follows the kernel's usual arguments (HMC's number of leapfrog steps).
    """
    q = at.dvector("q")
    energy = at.dscalar("energy")
    energy_grad = at.dvector("energy_grad")
    step_size = at.dscalar("step_size")
    inverse_mass_matrix = at.dvector("inverse_mass_matrix")
    (q_new, energy_new, energy_grad_new, p_accept, *_), updates = kernel(
        q, energy, energy_grad, step_size, inverse_mass_matrix, *extra
    )
    inputs = [q, energy, energy_grad, step_size, inverse_mass_matrix]
    return inputs, [q_new, energy_new, energy_grad_new, p_accept], updates


def run_chain(transition, initial_state, n_steps):
    """Positions and acceptance probabilities of ``n_steps`` transitions."""
    q, energy, energy_grad = initial_state
    positions, accepts = [], []
    for _ in range(n_steps):
        q, energy, energy_grad, p_accept = transition(q, energy, energy_grad, STEP_SIZE, np.ones(2))
        positions.append(q)
        accepts.append(p_accept)
    return np.array(positions), np.array(accepts)


def test_hmc_chains_agree_with_reference():
    inputs, outputs, updates = transition(hmc.new_kernel(RandomStream(1234), logprob_fn), N_LEAPFROG)
    reference, candidate = compile_pair(inputs, outputs, updates=updates)

    q0 = at.dvector("q0")
    initial = aesara.function([q0], list(hmc.new_state(q0, logprob_fn)))(np.array([0.0, 0.0]))

    # One transition: same types and shapes, a valid acceptance probability.
    one_reference = reference(*initial, STEP_SIZE, np.ones(2))
    one_candidate = candidate(*initial, STEP_SIZE, np.ones(2))
    for e, g in zip(one_reference, one_candidate):
        assert (np.asarray(g).dtype, np.shape(g)) == (np.asarray(e).dtype, np.shape(e))
    assert 0.0 <= one_candidate[3] <= 1.0

    # The shared generator advances: two calls from the same state differ.
    again = candidate(*initial, STEP_SIZE, np.ones(2))
    assert not np.array_equal(again[0], one_candidate[0]) or not np.array_equal(again[3], one_candidate[3])

    cand_q, cand_accept = run_chain(candidate, initial, N_STEPS)
    ref_q, ref_accept = run_chain(reference, initial, N_STEPS)
    ref_q, cand_q = ref_q[BURN_IN:], cand_q[BURN_IN:]

    assert np.all(np.isfinite(cand_q)) and np.all(np.isfinite(cand_accept))
    assert np.all((cand_accept >= 0) & (cand_accept <= 1))
    # The two backends' chains agree with each other ...
    assert_means_agree(ref_q, cand_q)
    assert_sds_agree(ref_q, cand_q, ratio=1.35)
    assert abs(np.mean(cand_accept) - np.mean(ref_accept)) < 0.1, (np.mean(ref_accept), np.mean(cand_accept))
    # ... and both target the right distribution.
    for draws in (ref_q, cand_q):
        np.testing.assert_allclose(np.mean(draws, axis=0), MEAN, atol=0.4)
        np.testing.assert_allclose(np.std(draws, axis=0), np.sqrt(np.diag(COV)), rtol=0.3)
        np.testing.assert_allclose(np.corrcoef(draws.T)[0, 1], COV[0, 1], atol=0.15)


def test_nuts_chains_agree_with_reference():
    """aehmc's NUTS (loops whose lengths come from the outer loop) runs in one jit program."""
    inputs, outputs, updates = transition(nuts.new_kernel(RandomStream(7), logprob_fn))
    # aejax first: compiling the reference rewrites the inner graphs of the Scans in place.
    candidate = aesara.function(inputs, outputs, updates=updates, mode=CANDIDATE)
    reference = aesara.function(inputs, outputs, updates=updates, mode=REFERENCE)

    q0 = at.dvector("q0")
    initial = aesara.function([q0], list(hmc.new_state(q0, logprob_fn)))(np.array([0.0, 0.0]))
    cand_q, cand_accept = run_chain(candidate, initial, N_STEPS)
    ref_q, ref_accept = run_chain(reference, initial, N_STEPS // 2)
    ref_q, cand_q = ref_q[BURN_IN // 2 :], cand_q[BURN_IN:]
    assert len(candidate.vm.jit_fn.segments) == 1  # the plan as the calls left it

    assert np.all(np.isfinite(cand_q)) and np.all((cand_accept >= 0) & (cand_accept <= 1))
    assert_means_agree(ref_q, cand_q)
    assert_sds_agree(ref_q, cand_q, ratio=1.35)
    assert abs(np.mean(cand_accept) - np.mean(ref_accept)) < 0.1, (np.mean(ref_accept), np.mean(cand_accept))
    np.testing.assert_allclose(np.mean(cand_q, axis=0), MEAN, atol=0.3)
    np.testing.assert_allclose(np.std(cand_q, axis=0), np.sqrt(np.diag(COV)), rtol=0.25)
    np.testing.assert_allclose(np.corrcoef(cand_q.T)[0, 1], COV[0, 1], atol=0.15)


SAME_DRAWS_STEP_SIZES = (0.1, 0.05, 0.1, 1.0, 3.0, 0.1)
"""Step sizes of the transitions compared on the same draws: small ones build deep trees (the
U-turn checks over stored momenta and their index arithmetic), 3.0 diverges."""


def same_draws_nuts_transitions(*modes):
    """One NUTS transition compiled for each of ``modes``: all seven outputs, draws read from `same_draws`'s tables.

    Each mode gets its own copy from `same_draws` (no Scan's inner graph shared), as compiling
    rewrites the inner graphs of a graph's Scans in place.
    """
    q = at.dvector("q")
    energy = at.dscalar("energy")
    energy_grad = at.dvector("energy_grad")
    step_size = at.dscalar("step_size")
    inverse_mass_matrix = at.dvector("inverse_mass_matrix")
    kernel_outputs, kernel_updates = nuts.new_kernel(RandomStream(5), logprob_fn)(
        q, energy, energy_grad, step_size, inverse_mass_matrix
    )
    inputs = [q, energy, energy_grad, step_size, inverse_mass_matrix]
    functions = []
    for mode in modes:
        outputs, updates = same_draws(list(kernel_outputs), kernel_updates)
        assert not random_nodes(outputs + list(updates.values()))
        functions.append(aesara.function(inputs, outputs, updates=updates, mode=mode))
    return functions


def test_nuts_transitions_match_reference_on_the_same_draws():
    """Given the same random numbers, aejax's NUTS computes the reference's chain, every output of every
    transition: position, energy and gradient, acceptance, tree depth, U-turn and divergence flags."""
    candidate, reference = same_draws_nuts_transitions(CANDIDATE, REFERENCE)
    q0 = at.dvector("q0")
    initial = aesara.function([q0], list(hmc.new_state(q0, logprob_fn)))(np.array([0.3, -1.0]))

    def chain(transition_fn):
        state, results = tuple(initial), []
        for step_size in SAME_DRAWS_STEP_SIZES:
            outputs = transition_fn(*state, step_size, np.array([1.0, 0.5]))
            results.append([np.array(o, copy=True) for o in outputs])
            state = outputs[:3]
        return results

    expected = chain(reference)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CallbackWarning)  # all of it lowered to JAX, nothing run by Aesara
        got = chain(candidate)
    for e, g in zip(expected, got):
        assert_same_outputs(e, g, rtol=1e-9, atol=1e-12)
    depths = [int(e[4]) for e in expected]
    assert max(depths) >= 4 and any(e[5] for e in expected) and any(e[6] for e in expected), depths


MCSE_LOC = np.array([0.0, 3.0])
MCSE_SCALE = np.array([1.0, 2.0])
MCSE_COV = np.array([[1.0, 1.0], [1.0, 4.0]])
"""aehmc 0.0.11's test_nuts_mcse target: scales 1 and 2, correlation 0.5."""

MCSE_TRANSITIONS = 50


def nuts_mcse_program(n_steps):
    """aehmc 0.0.11's ``test_nuts_mcse`` program with ``n_steps`` transitions: ``(y0, trajectory, updates)``.

    One outer Scan of NUTS transitions of aeppl's log-density of a correlated
    2-D Gaussian, all seven outputs kept, the step size and the inverse mass
    matrix given as non-sequences (the test's 1.0 and the scales). Inside the
    outer step run the loop over tree depths and, nested in it, the trajectory
    loop over ``arange(1, 1 + 2 ** depth)``, an ``until`` loop.
    """
    srng = RandomStream(seed=1)
    Y_rv = srng.multivariate_normal(at.as_tensor(MCSE_LOC), at.as_tensor(MCSE_COV))

    def logprob(y):
        return joint_logprob(realized={Y_rv: y})[0]

    y0 = Y_rv.clone()
    initial = nuts.new_state(y0, logprob)
    trajectory, updates = aesara.scan(
        nuts.new_kernel(srng, logprob),
        outputs_info=[{"initial": value} for value in initial] + [None] * 4,
        non_sequences=(at.as_tensor(1.0), at.as_tensor(MCSE_SCALE)),
        n_steps=n_steps,
    )
    return y0, list(trajectory), updates


def test_nuts_mcse_program_runs_in_jax_and_matches_reference_on_the_same_draws():
    """The whole test_nuts_mcse program is one jit program, its outer Scan a `lax.scan` (no host
    callback), and computes the reference's chain on the same draws: every output of every transition."""
    y0, trajectory, updates = nuts_mcse_program(MCSE_TRANSITIONS)
    functions = []
    for mode in (CANDIDATE, REFERENCE):  # a copy each: compiling rewrites its Scans' inner graphs in place
        outputs, new_updates = same_draws(trajectory, updates)
        functions.append(aesara.function([y0], outputs, updates=new_updates, mode=mode))
    candidate, reference = functions
    start = np.random.default_rng(0).standard_normal(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CallbackWarning)  # no Scan run by Aesara on the host
        warnings.simplefilter("error", HostNodeWarning)  # no node run on the host between programs
        got = [candidate(start), candidate(start)]  # the second call draws on from where the first stopped
    assert len(candidate.vm.jit_fn.segments) == 1
    expected = [reference(start), reference(start)]
    for e, g in zip(expected, got):
        assert_same_outputs(e, g, rtol=1e-12, atol=1e-12)
    depths, turning = expected[0][4], expected[0][5]
    assert max(depths) >= 2 and turning.any(), depths
    assert not np.array_equal(expected[0][0], expected[1][0])


def logistic_regression_logprob():
    """aeppl's log-density of a 3-coefficient logistic regression on 60 synthetic points."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (rng.uniform(size=60) < 1 / (1 + np.exp(-X @ np.array([1.0, -0.5, 0.25])))).astype("int64")
    srng = RandomStream(0)
    beta = srng.normal(0, 1, size=3)
    outcome = srng.bernoulli(at.sigmoid(at.dot(at.constant(X), beta)))

    def logprob(q):
        return joint_logprob(realized={beta: q, outcome: at.constant(y)})[0]

    return logprob


def test_nuts_on_an_aeppl_logistic_regression_agrees_with_reference():
    logprob = logistic_regression_logprob()
    inputs, outputs, updates = transition(nuts.new_kernel(RandomStream(3), logprob))
    candidate = aesara.function(inputs, outputs, updates=updates, mode=CANDIDATE)
    reference = aesara.function(inputs, outputs, updates=updates, mode=REFERENCE)
    q0 = at.dvector("q0")
    initial = aesara.function([q0], list(hmc.new_state(q0, logprob)))(np.zeros(3))

    def chain(transition_fn, n_steps):
        state, positions, accepts = tuple(initial), [], []
        for _ in range(n_steps):
            *state, p_accept = transition_fn(*state, 0.3, np.ones(3))
            positions.append(state[0])
            accepts.append(p_accept)
        return np.array(positions[n_steps // 4 :]), np.mean(accepts)

    cand_q, cand_accept = chain(candidate, 400)
    ref_q, ref_accept = chain(reference, 160)
    assert_means_agree(ref_q, cand_q)
    assert_sds_agree(ref_q, cand_q, ratio=1.5)
    assert abs(cand_accept - ref_accept) < 0.15, (ref_accept, cand_accept)


def test_window_adaptation_compiles_when_rewrite_errors_raise():
    """aehmc's warmup nests Scans whose step rewrites made a constant broadcastable, where two of Aesara's Scan
    rewrites raise; under ``on_opt_error=raise`` (as aehmc's own tests run) AEJAX skips them in steps, as Aesara's
    compile of the step never meets them (was a LoweringError)."""
    from aehmc import window_adaptation

    srng = RandomStream(seed=0)
    y_rv = srng.normal(1, 2)
    y = y_rv.clone()
    kernel = nuts.new_kernel(srng, lambda q: joint_logprob(realized={y_rv: q})[0])
    state, (step_size, inverse_mass), updates = window_adaptation.run(
        kernel, nuts.new_state(y, lambda q: joint_logprob(realized={y_rv: q})[0]), num_steps=60
    )
    with aesara.config.change_flags(on_opt_error="raise"):
        warmup = aesara.function([y], [state[0], step_size, inverse_mass], updates=updates, mode="AEJAX")
    position, step, inverse = warmup(3.0)
    assert np.isfinite(position) and step > 0 and inverse > 0 and position != 3.0
