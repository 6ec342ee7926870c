"""Every random variable Aesara's JAX backend knows, drawn through PRNG keys.

Draws cannot match numpy's, so each distribution is checked for shape,
dtype, agreement in distribution with a large reference sample (two-sample
Kolmogorov-Smirnov test), reproducibility from a seed and advancing state.
"""

import aesara
import aesara.tensor as at
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from aesara.tensor.random.utils import RandomStream
from scipy import stats

import aejax.linker
from aejax.adapters.threefry import SAME_BITS_AS, THREEFRY_UNROLLED, key_impl
from aejax.linker.dispatch.random import STREAM_STEP, advanced, hashed_where_traced

N = 4000
LEGACY = np.random.RandomState
GENERATOR = np.random.default_rng


def rv(name, draw, ctors=(LEGACY, GENERATOR)):
    return [pytest.param(draw, ctor, id=f"{name}-{ctor.__name__}") for ctor in ctors]


UNIVARIATE = [
    *rv("normal", lambda s, n: s.normal(1.5, 2.0, size=n)),
    *rv("uniform", lambda s, n: s.uniform(-1.0, 3.0, size=n)),
    *rv("halfnormal", lambda s, n: s.halfnormal(0.5, 2.0, size=n)),
    *rv("lognormal", lambda s, n: s.lognormal(0.2, 0.5, size=n)),
    *rv("cauchy", lambda s, n: s.cauchy(1.0, 0.5, size=n)),
    *rv("halfcauchy", lambda s, n: s.halfcauchy(0.0, 1.5, size=n)),
    *rv("gumbel", lambda s, n: s.gumbel(1.0, 2.0, size=n)),
    *rv("laplace", lambda s, n: s.laplace(-1.0, 0.5, size=n)),
    *rv("logistic", lambda s, n: s.logistic(0.5, 1.5, size=n)),
    *rv("exponential", lambda s, n: s.exponential(2.5, size=n)),
    *rv("gamma", lambda s, n: s.gamma(2.5, 0.5, size=n)),
    *rv("invgamma", lambda s, n: s.invgamma(3.0, 2.0, size=n)),
    *rv("chisquare", lambda s, n: s.chisquare(4.0, size=n)),
    *rv("beta", lambda s, n: s.beta(2.0, 5.0, size=n)),
    *rv("pareto", lambda s, n: s.pareto(3.0, 2.0, size=n)),
    *rv("studentt", lambda s, n: s.t(5.0, 1.0, 2.0, size=n)),
    *rv("wald", lambda s, n: s.wald(1.5, 2.0, size=n)),
    *rv("gengamma", lambda s, n: s.gengamma(2.0, 1.5, 3.0, size=n)),
    *rv("triangular", lambda s, n: s.triangular(0.0, 1.0, 3.0, size=n)),
    *rv("weibull", lambda s, n: s.weibull(1.5, size=n)),
    *rv("poisson", lambda s, n: s.poisson(3.5, size=n)),
    *rv("bernoulli", lambda s, n: s.bernoulli(0.3, size=n)),
    *rv("binomial", lambda s, n: s.binomial(10, 0.3, size=n)),
    *rv("geometric", lambda s, n: s.geometric(0.3, size=n)),
    *rv("categorical", lambda s, n: s.categorical(np.array([0.2, 0.5, 0.3]), size=n)),
    *rv("randint", lambda s, n: s.randint(2, 9, size=n), ctors=(LEGACY,)),
    *rv("integers", lambda s, n: s.integers(2, 9, size=n), ctors=(GENERATOR,)),
    *rv("choice", lambda s, n: s.choice(np.arange(5), size=n, p=np.array([0.1, 0.2, 0.3, 0.2, 0.2]))),
]


def compile_draw(draw, ctor, mode, seed=11, n=N):
    srng = RandomStream(seed=seed, rng_ctor=ctor)
    return aesara.function([], draw(srng, n), updates=srng.updates(), mode=mode)


@pytest.mark.parametrize("draw, ctor", UNIVARIATE)
def test_univariate_draws_match_reference_in_distribution(draw, ctor):
    reference = compile_draw(draw, ctor, "FAST_COMPILE")()
    f = compile_draw(draw, ctor, aejax.linker.mode)
    ours = f()
    assert ours.shape == reference.shape == (N,)
    assert ours.dtype == reference.dtype
    assert stats.ks_2samp(ours, reference).pvalue > 1e-4
    assert np.all(np.isfinite(ours))
    np.testing.assert_array_equal(compile_draw(draw, ctor, aejax.linker.mode)(), ours)
    assert not np.array_equal(f(), ours)


@pytest.mark.parametrize("ctor", [LEGACY, GENERATOR])
def test_size_implied_by_parameters(ctor):
    srng = RandomStream(seed=3, rng_ctor=ctor)
    loc = at.dvector("loc")
    f = aesara.function([loc], srng.normal(loc, 1e-6), mode=aejax.linker.mode)
    out = f(np.array([0.0, 10.0, 20.0]))
    assert out.shape == (3,)
    np.testing.assert_allclose(out, [0.0, 10.0, 20.0], atol=1e-4)


@pytest.mark.parametrize("ctor", [LEGACY, GENERATOR])
def test_size_from_runtime_shape(ctor):
    srng = RandomStream(seed=3, rng_ctor=ctor)
    x = at.dmatrix("x")
    f = aesara.function([x], srng.uniform(0, 1, size=x.shape), mode=aejax.linker.mode)
    assert f(np.zeros((2, 5))).shape == (2, 5)


@pytest.mark.parametrize("ctor", [LEGACY, GENERATOR])
def test_multivariate_normal_moments(ctor):
    mean = np.array([1.0, -2.0])
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    f = compile_draw(lambda s, n: s.multivariate_normal(mean, cov, size=n), ctor, aejax.linker.mode, n=20000)
    out = f()
    assert out.shape == (20000, 2) and out.dtype == np.float64
    np.testing.assert_allclose(out.mean(axis=0), mean, atol=0.05)
    np.testing.assert_allclose(np.cov(out.T), cov, atol=0.08)


@pytest.mark.parametrize("ctor", [LEGACY, GENERATOR])
def test_dirichlet_matches_reference_per_component(ctor):
    alpha = np.array([1.0, 2.0, 4.0])
    draw = lambda s, n: s.dirichlet(alpha, size=n)  # noqa: E731
    reference = compile_draw(draw, ctor, "FAST_COMPILE")()
    ours = compile_draw(draw, ctor, aejax.linker.mode)()
    assert ours.shape == reference.shape == (N, 3)
    np.testing.assert_allclose(ours.sum(axis=1), 1.0)
    for k in range(3):
        assert stats.ks_2samp(ours[:, k], reference[:, k]).pvalue > 1e-4


@pytest.mark.parametrize("ctor", [LEGACY, GENERATOR])
def test_permutation_is_a_permutation_and_advances(ctor):
    f = compile_draw(lambda s, n: s.permutation(np.arange(n)), ctor, aejax.linker.mode, n=50)
    first, second = f(), f()
    np.testing.assert_array_equal(np.sort(first), np.arange(50))
    assert not np.array_equal(first, second)


def test_float32_draws_keep_float32():
    srng = RandomStream(seed=1)
    with aesara.config.change_flags(floatX="float32"):
        draw = srng.normal(0, 1, size=(5,))
    f = aesara.function([], draw, mode=aejax.linker.mode)
    assert draw.dtype == "float32" and f().dtype == np.float32


ADDED_UNIVARIATE = [
    *rv("vonmises", lambda s, n: s.vonmises(2.5, 1.5, size=n)),
    *rv("vonmises small kappa", lambda s, n: s.vonmises(-1.0, 1e-6, size=n)),
    *rv("vonmises large kappa", lambda s, n: s.vonmises(0.5, 200.0, size=n)),
    *rv("negative_binomial", lambda s, n: s.negative_binomial(3.5, 0.3, size=n)),
    *rv("betabinom", lambda s, n: s.betabinom(12, 2.0, 0.7, size=n)),
    *rv("zipf", lambda s, n: s.zipf(2.5, size=n)),
    *rv("truncexpon", lambda s, n: s.truncexpon(2.0, 1.0, 0.5, size=n)),
    *rv("f", lambda s, n: s.f(4.0, 7.0, size=n)),
    *rv("power", lambda s, n: s.power(2.5, size=n)),
    *rv("rayleigh", lambda s, n: s.rayleigh(1.5, size=n)),
]


@pytest.mark.parametrize("draw, ctor", ADDED_UNIVARIATE)
def test_added_univariate_draws_match_reference_in_distribution(draw, ctor):
    test_univariate_draws_match_reference_in_distribution(draw, ctor)


@pytest.mark.parametrize("ctor", [LEGACY, GENERATOR])
def test_von_mises_stays_in_the_circle_and_matches_mean_direction(ctor):
    draw = lambda s, n: s.vonmises(3.0, 4.0, size=n)  # noqa: E731
    ours = compile_draw(draw, ctor, aejax.linker.mode, n=20000)()
    assert np.all((ours >= -np.pi) & (ours <= np.pi))
    np.testing.assert_allclose(np.angle(np.mean(np.exp(1j * ours))), 3.0, atol=0.02)


@pytest.mark.parametrize("ctor", [LEGACY, GENERATOR])
def test_negative_binomial_moments_follow_scipy_parametrisation(ctor):
    n, p = 5.0, 0.25
    ours = compile_draw(lambda s, size: s.nbinom(n, p, size=size), ctor, aejax.linker.mode, n=40000)()
    assert ours.dtype == np.int64
    mean, var = stats.nbinom.stats(n, p, moments="mv")
    np.testing.assert_allclose(ours.mean(), mean, rtol=0.03)
    np.testing.assert_allclose(ours.var(), var, rtol=0.06)


@pytest.mark.parametrize("ctor", [LEGACY, GENERATOR])
def test_multinomial_counts_match_reference(ctor):
    p = np.array([0.2, 0.5, 0.3])
    draw = lambda s, n: s.multinomial(np.array([10, 40]), p, size=(n, 2))  # noqa: E731
    reference = compile_draw(draw, ctor, "FAST_COMPILE")()
    f = compile_draw(draw, ctor, aejax.linker.mode)
    ours = f()
    assert ours.shape == reference.shape == (N, 2, 3)
    assert ours.dtype == reference.dtype
    np.testing.assert_array_equal(ours.sum(axis=-1), np.broadcast_to([10, 40], (N, 2)))
    for trials in range(2):
        for k in range(3):
            assert stats.ks_2samp(ours[:, trials, k], reference[:, trials, k]).pvalue > 1e-4
    np.testing.assert_array_equal(compile_draw(draw, ctor, aejax.linker.mode)(), ours)
    assert not np.array_equal(f(), ours)


def test_multinomial_batched_probabilities():
    p = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    out = compile_draw(lambda s, n: s.multinomial(7, p), GENERATOR, aejax.linker.mode)()
    np.testing.assert_array_equal(out, [[7, 0, 0], [0, 0, 7]])


@pytest.mark.parametrize("ctor", [LEGACY, GENERATOR])
def test_multivariate_normal_singular_covariance(ctor):
    mean, cov = 0.5 * np.ones(3), 0.33 * np.ones((3, 3))
    draw = lambda s, n: s.multivariate_normal(mean, cov, size=n)  # noqa: E731
    ours = compile_draw(draw, ctor, aejax.linker.mode, n=20000)()
    reference = compile_draw(draw, ctor, "FAST_COMPILE", n=20000)()
    assert ours.shape == reference.shape == (20000, 3)
    assert np.all(np.isfinite(ours))
    np.testing.assert_allclose(ours.mean(axis=0), mean, atol=0.02)
    np.testing.assert_allclose(np.cov(ours.T), cov, atol=0.02)
    # Rank one: every draw lies on the line mean + t * (1, 1, 1).
    np.testing.assert_allclose(ours - ours[:, :1], 0, atol=1e-10)
    assert stats.ks_2samp(ours[:, 0], reference[:, 0]).pvalue > 1e-4


def test_multivariate_normal_batched_regular_covariances():
    mean = np.array([[0.0, 1.0], [5.0, -5.0]])
    cov = np.array([[[1.0, 0.3], [0.3, 0.5]], [[2.0, -0.9], [-0.9, 1.0]]])
    out = compile_draw(
        lambda s, n: s.multivariate_normal(mean, cov, size=(n, 2)), GENERATOR, aejax.linker.mode, n=20000
    )()
    assert out.shape == (20000, 2, 2)
    for b in range(2):
        np.testing.assert_allclose(out[:, b].mean(axis=0), mean[b], atol=0.05)
        np.testing.assert_allclose(np.cov(out[:, b].T), cov[b], atol=0.08)


def _keys_drawn_from(jaxpr, in_loop=False):
    """``(key dtype, whether in a loop's body)`` of every split and draw of ``jaxpr``, nested ones too."""
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in ("random_bits", "random_split"):
            found.append((eqn.invars[0].aval.dtype, in_loop))
        for param in eqn.params.values():
            inner = getattr(param, "jaxpr", param)
            if hasattr(inner, "eqns"):
                found += _keys_drawn_from(inner, in_loop or eqn.primitive.name in ("scan", "while"))
    return found


def test_draws_hash_with_the_rolled_threefry_outside_loops_and_the_unrolled_one_in_a_scan_step():
    """Once per call, JAX's rolled hash keeps a small program small for XLA:CPU; per step, the unrolled one is faster."""
    inner, outer = RandomStream(seed=1), RandomStream(seed=2)
    h0 = at.dscalar("h0")
    hs, updates = aesara.scan(lambda h: h + inner.bernoulli(at.sigmoid(h)), outputs_info=[h0], n_steps=4)
    graph = aejax.linker.jaxify([h0], [hs, outer.uniform(0, 1, size=(3,))], [*updates.items(), *outer.updates()])
    rolled, unrolled = (jax.random.key(0, impl=impl).dtype for impl in (SAME_BITS_AS, key_impl(THREEFRY_UNROLLED)))
    assert set(_keys_drawn_from(jax.make_jaxpr(graph.fn)(graph.state, 0.5).jaxpr)) == {
        (rolled, False),
        (unrolled, True),
    }


@pytest.mark.parametrize(
    "draw",
    [
        lambda key: jax.random.uniform(key, (7,), jnp.float64),
        lambda key: jax.random.randint(key, (5,), 0, 2**30),
        lambda key: jax.random.bits(key, (3, 2), jnp.uint64),
    ],
    ids=["uniform", "integers", "bits"],
)
def test_a_draw_outside_loops_gives_the_bits_and_key_of_the_unrolled_implementation(draw):
    def split_and_draw(key):
        new_key, sample_key = jax.random.split(key)
        return new_key, draw(sample_key)

    key = jax.random.key(20261202, impl=key_impl(THREEFRY_UNROLLED))
    new_key, sample = jax.jit(split_and_draw)(key)
    once_key, once_sample = jax.jit(hashed_where_traced(split_and_draw))(key)
    assert jax.random.key_impl(once_key) == jax.random.key_impl(key)
    np.testing.assert_array_equal(jax.random.key_data(once_key), jax.random.key_data(new_key))
    np.testing.assert_array_equal(once_sample, sample)


@pytest.mark.parametrize("impl", [THREEFRY_UNROLLED, SAME_BITS_AS, "rbg"])
def test_advancing_a_key_adds_steps_times_the_stream_step_to_its_last_64_bits(impl):
    data = np.zeros(jax.random.key_data(jax.random.key(0, impl=key_impl(impl))).shape, np.uint32)
    data[-2:] = [0x00000001, 0xFFFFFFF0]  # a low word that overflows on the first step
    key = jax.random.wrap_key_data(jnp.asarray(data), impl=key_impl(impl))
    start = (1 << 32) + 0xFFFFFFF0
    step = (int(STREAM_STEP[0]) << 32) + int(STREAM_STEP[1])
    steps = np.array([0, 1, 2, 3, 2**20, 2**32 - 1], np.uint32)
    moved = jax.random.key_data(advanced(key, steps))
    expected = [(start + int(n) * step) % 2**64 for n in steps]
    assert [(int(hi) << 32) + int(lo) for hi, lo in np.asarray(moved)[:, -2:]] == expected
    np.testing.assert_array_equal(np.asarray(moved)[:, :-2], np.broadcast_to(data[:-2], (len(steps), len(data) - 2)))
    assert jax.random.key_impl(advanced(key, 1)) == jax.random.key_impl(key)
    again = jax.random.key_data(advanced(advanced(key, 3), 2**20 - 3))
    np.testing.assert_array_equal(again, moved[4])
