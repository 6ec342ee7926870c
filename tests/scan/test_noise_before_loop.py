"""A Scan's random draws taken before the loop (`aejax.linker.scan.noise`).

Which draws leave the loop is read from the exported program (no PRNG
primitive inside the loop); that they stay exact is checked against Aesara's
reference backend on large samples (moments, Kolmogorov-Smirnov, chi-square).
"""

from __future__ import annotations

import pickle
from typing import Any

import aesara
import aesara.tensor as at
import jax
import numpy as np
import pytest
from aesara.scan.utils import until
from aesara.tensor.random.utils import RandomStream
from scipy import stats

import aejax.linker
from aejax.linker.scan import noise
from tests.jaxprs import inner_jaxprs
from tests.reference import REFERENCE

DRAWS = {"random_bits", "random_split", "random_fold_in"}
"""The primitives of a draw from a PRNG key."""

pytestmark = pytest.mark.kind("random")


def _inside(loop: str, jaxpr: Any, inside: bool) -> set[str]:
    found = {eqn.primitive.name for eqn in jaxpr.eqns} if inside else set()
    for eqn in jaxpr.eqns:
        for sub in inner_jaxprs(eqn.params):
            found |= _inside(loop, sub, inside or eqn.primitive.name == loop)
    return found


def draws_in_loop(inputs: list[Any], outputs: Any, updates: Any, *args: Any, loop: str = "scan") -> bool:
    """Whether the exported program draws from a key inside a ``loop`` (``"scan"`` or ``"while"``).

    Samplers may loop themselves (rejection): a program that draws before a
    fixed loop may have a ``while`` outside its ``scan``.
    """
    graph = aejax.linker.jaxify(inputs, outputs, updates)
    jaxpr = jax.make_jaxpr(graph.fn)(graph.state, *args).jaxpr
    return bool(_inside(loop, jaxpr, False) & DRAWS)


def walk(seed: int, n_steps: int, stops: bool) -> tuple[list[Any], Any, Any]:
    """A Gaussian random walk from ``x0``; with ``stops``, an ``until`` loop that never stops early."""
    srng = RandomStream(seed=seed)
    x0 = at.dvector("x0")

    def step(x: Any) -> Any:
        new = x + srng.normal(0.0, 1.0, size=x.shape)
        return (new, until(at.all(new > 1e300))) if stops else new

    out, updates = aesara.scan(step, outputs_info=x0, n_steps=n_steps)
    return [x0], out, updates


def compiled(inputs: list[Any], outputs: Any, updates: Any, mode: Any = aejax.linker.mode) -> Any:
    return aesara.function(inputs, outputs, updates=updates, mode=mode)


def increments(paths: np.ndarray) -> np.ndarray:
    return np.diff(np.concatenate([np.zeros((1,) + paths.shape[1:]), paths]), axis=0)


@pytest.mark.parametrize("stops", [False, True], ids=["fixed", "until"])
def test_a_walk_draws_its_noise_before_the_loop(stops):
    inputs, out, updates = walk(1, 20, stops)
    assert not draws_in_loop(inputs, out[-1], updates, np.zeros(3), loop="while" if stops else "scan")


@pytest.mark.parametrize("stops", [False, True], ids=["fixed", "until"])
def test_noise_above_the_limit_is_drawn_in_the_loop(monkeypatch, stops):
    monkeypatch.setattr(noise, "MAX_UNTIL_NOISE" if stops else "MAX_NOISE", 59)
    inputs, out, updates = walk(1, 20, stops)
    assert draws_in_loop(inputs, out[-1], updates, np.zeros(3), loop="while" if stops else "scan")


def test_a_state_split_twice_per_step_is_drawn_in_the_loop():
    rng = aesara.shared(np.random.default_rng(3))

    def step():
        next_rng, first = at.random.normal(rng=rng, size=2).owner.outputs
        last_rng, second = at.random.normal(rng=next_rng, size=2).owner.outputs
        return [first, second], {rng: last_rng}

    (first, second), updates = aesara.scan(step, n_steps=3000)
    assert draws_in_loop([], [first, second], updates)
    a, b = compiled([], [first, second], updates)()
    assert abs(np.corrcoef(a.ravel(), b.ravel())[0, 1]) < 0.05
    assert stats.ks_2samp(a.ravel(), b.ravel()).pvalue > 1e-3


def test_random_walk_matches_theory_and_the_reference():
    inputs, out, updates = walk(5, 40, stops=False)
    ours, reference = compiled(inputs, out, updates), compiled(inputs, out, updates, REFERENCE)
    x0 = np.zeros(5000)
    paths, expected = ours(x0), reference(x0)
    assert paths.shape == expected.shape == (40, 5000) and paths.dtype == expected.dtype
    steps = increments(paths)
    assert abs(steps.mean()) < 0.01 and abs(steps.var() - 1.0) < 0.01
    assert abs(np.corrcoef(steps[1:].ravel(), steps[:-1].ravel())[0, 1]) < 0.01
    assert stats.ks_2samp(steps.ravel(), increments(expected).ravel()).pvalue > 1e-3
    assert stats.ks_2samp(paths[-1], expected[-1]).pvalue > 1e-3


def test_uniform_with_bounds_from_non_sequences_matches_the_reference():
    srng = RandomStream(seed=6)
    low, high = at.dscalar("low"), at.dscalar("high")
    out, updates = aesara.scan(lambda lo, hi: srng.uniform(lo, hi, size=(500,)), non_sequences=[low, high], n_steps=100)
    assert not draws_in_loop([low, high], out, updates, -2.0, 3.0)
    draws, expected = (
        compiled([low, high], out, updates)(-2.0, 3.0),
        compiled([low, high], out, updates, REFERENCE)(-2.0, 3.0),
    )
    assert draws.shape == (100, 500) and np.all((draws >= -2.0) & (draws < 3.0))
    assert stats.ks_2samp(draws.ravel(), expected.ravel()).pvalue > 1e-3
    assert stats.kstest(draws.ravel(), stats.uniform(-2.0, 5.0).cdf).pvalue > 1e-3


def test_gamma_with_parameters_from_non_sequences_is_drawn_before_the_loop():
    srng = RandomStream(seed=7)
    a = at.dscalar("a")
    rate = 1.5
    out, updates = aesara.scan(lambda a: srng.gamma(a * 2, rate, size=(500,)), non_sequences=a, n_steps=100)
    assert not draws_in_loop([a], out, updates, 1.5)
    draws, expected = compiled([a], out, updates)(1.5), compiled([a], out, updates, REFERENCE)(1.5)
    assert draws.shape == expected.shape and draws.dtype == expected.dtype
    assert stats.kstest(draws.ravel(), stats.gamma(3.0, scale=1 / rate).cdf).pvalue > 1e-3
    assert stats.ks_2samp(draws.ravel(), expected.ravel()).pvalue > 1e-3


def counts_agree(ours: np.ndarray, expected: np.ndarray) -> bool:
    """A chi-square test that two samples of small counts come from one distribution."""
    values = np.union1d(ours, expected)
    table = np.array([[np.sum(sample == v) for v in values] for sample in (ours, expected)])
    table = table[:, table.min(axis=0) >= 5]
    return stats.chi2_contingency(table).pvalue > 1e-3


def test_poisson_with_a_constant_rate_is_drawn_before_the_loop():
    srng = RandomStream(seed=8)
    out, updates = aesara.scan(lambda: srng.poisson(3.0, size=(500,)), n_steps=100)
    assert not draws_in_loop([], out, updates)
    draws, expected = compiled([], out, updates)(), compiled([], out, updates, REFERENCE)()
    assert draws.shape == expected.shape and draws.dtype == expected.dtype
    assert abs(draws.mean() - 3.0) < 0.05 and abs(draws.var() - 3.0) < 0.1
    assert counts_agree(draws.ravel(), expected.ravel())


def test_normal_around_the_previous_state_is_finished_in_the_loop():
    srng = RandomStream(seed=9)
    x0 = at.dvector("x0")
    out, updates = aesara.scan(lambda x: srng.normal(0.5 * x, 2.0), outputs_info=x0, n_steps=30)
    assert not draws_in_loop([x0], out, updates, np.zeros(3))
    x0_value = np.full(20000, 10.0)
    paths, expected = compiled([x0], out, updates)(x0_value), compiled([x0], out, updates, REFERENCE)(x0_value)
    assert abs(paths[0].mean() - 5.0) < 0.05
    assert abs(paths[-1].var() - 4.0 / 0.75) < 0.15
    assert abs(np.corrcoef(paths[-1], paths[-2])[0, 1] - 0.5) < 0.02
    assert stats.ks_2samp(paths[-1], expected[-1]).pvalue > 1e-3
    assert stats.ks_2samp(paths[0], expected[0]).pvalue > 1e-3


def test_poisson_of_the_previous_state_is_drawn_in_the_loop_and_exact():
    srng = RandomStream(seed=10)
    x0 = at.lvector("x0")
    out, updates = aesara.scan(lambda x: srng.poisson(0.5 * x + 1.0), outputs_info=x0, n_steps=8)
    assert draws_in_loop([x0], out, updates, np.zeros(3, "int64"))
    start = np.zeros(20000, "int64")
    paths, expected = compiled([x0], out, updates)(start), compiled([x0], out, updates, REFERENCE)(start)
    assert paths.dtype == expected.dtype
    assert abs(paths[-1].mean() - 2 * (1 - 0.5**8)) < 0.05
    assert counts_agree(paths[-1], expected[-1])


@pytest.mark.parametrize("stops", [False, True], ids=["fixed", "until"])
def test_the_same_seed_draws_the_same_and_calls_advance(stops):
    x0 = np.zeros(4)
    first = compiled(*walk(11, 6, stops))
    again = compiled(*walk(11, 6, stops))
    one, two = first(x0), first(x0)
    np.testing.assert_array_equal(again(x0), one)
    assert not np.array_equal(one, two)
    assert len(np.unique(increments(one))) == one.size


@pytest.mark.parametrize("mode", ["FAST_RUN", "FAST_COMPILE"])
def test_reference_backends_continue_the_shared_generator(mode):
    inputs, out, updates = walk(12, 6, stops=False)
    ours, theirs = compiled(inputs, out, updates), compiled(inputs, out, updates, mode)
    (shared_rng,) = updates.keys()
    before = pickle.dumps(shared_rng.get_value())
    ours(np.zeros(3))
    after = shared_rng.get_value()
    assert isinstance(after, np.random.Generator) and pickle.dumps(after) != before
    assert theirs(np.zeros(3)).shape == (6, 3)
    assert pickle.dumps(shared_rng.get_value()) != pickle.dumps(after)
    assert ours(np.zeros(3)).shape == (6, 3)
