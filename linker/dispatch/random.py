"""Random variables as pure functions of a JAX PRNG key.

Inside the traced function a random state is a typed PRNG key (see
``aejax.adapters.jax``). A random variable splits it: one half draws the
sample, the other is returned as the new state (in a Scan's step, one whose
draws can be taken before the loop draws on a counted stream instead,
`counted`). Every distribution that
Aesara 2.9.4's JAX backend lowers is here, parametrised as Aesara's
reference backend parametrises it (e.g. `GammaRV` takes shape and scale).
Samplers registered with Aesara's ``jax_sample_fn`` are used too (see
`draw_for`); a random variable with no sampler draws with its own numpy code
on the host, from a generator seeded by its half of the split key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import aesara.tensor.random.basic as rv
import jax
import jax.numpy as jnp
import numpy as np
from aesara.graph.basic import Apply
from aesara.link.jax.dispatch.random import jax_sample_fn
from aesara.tensor.random.op import RandomVariable

from aejax.adapters.threefry import with_impl_of, with_jax_impl
from aejax.linker.dispatch.basic import from_aesara_convention, jax_funcify, overriding_class
from aejax.linker.dispatch.callback import host_generator, perform_callback, split_for_host
from aejax.linker.dispatch.special import as_float
from aejax.linker.lengths.concrete import static_ints
from aejax.linker.trace.loop_bodies import in_loop_body

Sampler = Callable[..., Any]
"""``sampler(key, batch_shape, dtype, *params) -> sample``."""


class Standardized(NamedTuple):
    """A sampler that transforms a draw of a parameter-free standard distribution.

    ``sampler(key, shape, dtype, *params) == finish(standard(key, shape, dtype), *params)``:
    the draw's randomness does not depend on the parameters, so a Scan can
    take the standard draws of all its steps before the loop
    (`aejax.linker.scan.noise`).
    """

    standard: Callable[[Any, tuple[int, ...], Any], Any]
    """``standard(key, shape, dtype) -> z``."""
    finish: Callable[..., Any]
    """``finish(z, *params) -> sample``."""

    def __call__(self, key: Any, shape: tuple[int, ...], dtype: Any, *params: Any) -> Any:
        return self.finish(self.standard(key, shape, dtype), *params)


def _shifted_scaled(z: Any, loc: Any, scale: Any) -> Any:
    return loc + scale * z


def _folded(z: Any, loc: Any, scale: Any) -> Any:
    return loc + scale * jnp.abs(z)


def _wald(key: Any, shape: tuple[int, ...], dtype: Any, mean: Any, scale: Any) -> Any:
    normal_key, uniform_key = jax.random.split(key)
    y = jax.random.normal(normal_key, shape, dtype) ** 2
    mu_y = mean * y
    x = mean + mean / (2 * scale) * (mu_y - jnp.sqrt(4 * mean * scale * y + mu_y**2))
    accept = jax.random.uniform(uniform_key, shape, dtype) <= mean / (mean + x)
    return jnp.where(accept, x, mean**2 / x)


def _gengamma(key: Any, shape: tuple[int, ...], dtype: Any, alpha: Any, p: Any, lambd: Any) -> Any:
    return lambd * jax.random.gamma(key, alpha / p, shape, dtype) ** (1 / p)


def _integers(key: Any, shape: tuple[int, ...], dtype: Any, low: Any, high: Any) -> Any:
    return jax.random.randint(key, shape, low, high, dtype)


def _choice(key: Any, shape: tuple[int, ...], dtype: Any, a: Any, p: Any, replace: Any) -> Any:
    return jax.random.choice(key, a, shape, bool(replace), p)


def _permutation(key: Any, shape: tuple[int, ...], dtype: Any, x: Any) -> Any:
    return jax.random.permutation(key, x)


def _until_accepted(key: Any, shape: tuple[int, ...], propose: Callable[[Any], tuple[Any, Any]]) -> Any:
    """Rejection sampling: ``propose(key) -> (candidates, accepted)`` is redrawn where not yet accepted."""

    def redraw(state: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
        key, value, done = state
        key, proposal_key = jax.random.split(key)
        candidate, accepted = propose(proposal_key)
        value = jnp.where(done, value, candidate)
        return key, value, done | accepted

    candidate, _ = jax.eval_shape(propose, key)
    start = (key, jnp.zeros(shape, candidate.dtype), jnp.zeros(shape, bool))
    return jax.lax.while_loop(lambda state: ~jnp.all(state[2]), redraw, start)[1]


def _von_mises(key: Any, shape: tuple[int, ...], dtype: Any, mu: Any, kappa: Any) -> Any:
    # Best and Fisher's (1979) wrapped-Cauchy envelope for the angle's cosine w; numpy's
    # limits too: uniform for kappa < 1e-8, a wrapped normal for kappa > 1e6.
    mu, kappa = jnp.broadcast_to(mu, shape), jnp.broadcast_to(kappa, shape)
    safe = jnp.clip(kappa, 1e-8, 1e6)
    r = 1 + jnp.sqrt(1 + 4 * safe**2)
    rho = (r - jnp.sqrt(2 * r)) / (2 * safe)
    s = jnp.where(safe < 1e-5, 1 / safe + safe, (1 + rho**2) / (2 * rho))

    def propose(key: Any) -> tuple[Any, Any]:
        angle_key, accept_key = jax.random.split(key)
        z = jnp.cos(jnp.pi * jax.random.uniform(angle_key, shape, dtype))
        w = (1 + s * z) / (s + z)
        y = safe * (s - w)
        u = jax.random.uniform(accept_key, shape, dtype, minval=jnp.finfo(dtype).tiny)
        return w, (y * (2 - y) >= u) | (jnp.log(y / u) + 1 >= y)

    envelope_key, sign_key, limit_key = jax.random.split(key, 3)
    w = _until_accepted(envelope_key, shape, propose)
    sign = jnp.where(jax.random.bernoulli(sign_key, 0.5, shape), 1, -1)
    uniform = jax.random.uniform(limit_key, shape, dtype, -jnp.pi, jnp.pi)
    normal = jax.random.normal(limit_key, shape, dtype) / jnp.sqrt(safe)
    offset = jnp.where(kappa < 1e-8, uniform, jnp.where(kappa > 1e6, normal, sign * jnp.arccos(w)))
    return jnp.mod(mu + offset + jnp.pi, 2 * jnp.pi) - jnp.pi


def _zipf(key: Any, shape: tuple[int, ...], dtype: Any, a: Any) -> Any:
    # Devroye's rejection sampler (as numpy's): x = floor(u^(-1/(a-1))), accepted with
    # probability proportional to its Zipf mass over the envelope's.
    a = jnp.broadcast_to(as_float(a), shape)
    b = 2.0 ** (a - 1)

    def propose(key: Any) -> tuple[Any, Any]:
        u_key, v_key = jax.random.split(key)
        u = 1 - jax.random.uniform(u_key, shape, a.dtype)
        v = jax.random.uniform(v_key, shape, a.dtype)
        x = jnp.floor(u ** (-1 / (a - 1)))
        t = (1 + 1 / x) ** (a - 1)
        fits = (x >= 1) & (x < 2.0**62)
        return jnp.where(fits, x, 1).astype(dtype), fits & (v * x * (t - 1) / (b - 1) <= t / b)

    return _until_accepted(key, shape, propose)


def _negative_binomial(key: Any, shape: tuple[int, ...], dtype: Any, n: Any, p: Any) -> Any:
    # Failures before the n-th success (scipy's nbinom): Poisson with a Gamma(n, (1 - p) / p) rate.
    gamma_key, poisson_key = jax.random.split(key)
    p = as_float(p)
    rate = jax.random.gamma(gamma_key, as_float(n), shape, p.dtype) * (1 - p) / p
    return jax.random.poisson(poisson_key, rate, shape, dtype)


def _beta_binomial(key: Any, shape: tuple[int, ...], dtype: Any, n: Any, a: Any, b: Any) -> Any:
    beta_key, binomial_key = jax.random.split(key)
    p = jax.random.beta(beta_key, as_float(a), as_float(b), shape)
    return jax.random.binomial(binomial_key, as_float(n), p, shape)


def _multinomial(key: Any, shape: tuple[int, ...], dtype: Any, n: Any, p: Any) -> Any:
    # Category by category: the count of each is binomial among the trials the earlier ones left,
    # with its probability given that they were not chosen. As numpy, the last category takes
    # the remaining trials (its probability is 1 - sum(p[:-1]), whatever p[-1] says).
    p = jnp.broadcast_to(as_float(p), shape + p.shape[-1:])
    n = jnp.broadcast_to(as_float(n), shape)

    def category(carry: tuple[Any, Any], step: tuple[Any, Any]) -> tuple[tuple[Any, Any], Any]:
        trials, mass = carry
        key, p_k = step
        conditional = jnp.clip(jnp.where(mass > 0, p_k / mass, 0), 0, 1)
        count = jax.random.binomial(key, trials, conditional, shape)
        return (trials - count, mass - p_k), count

    keys = jax.random.split(key, p.shape[-1] - 1)
    firsts = jnp.moveaxis(p[..., :-1], -1, 0)
    (rest, _), counts = jax.lax.scan(category, (n, jnp.ones(shape, p.dtype)), (keys, firsts))
    return jnp.concatenate([jnp.moveaxis(counts, 0, -1), rest[..., None]], axis=-1)


def _multivariate_normal(key: Any, shape: tuple[int, ...], dtype: Any, mean: Any, cov: Any) -> Any:
    # cov = U diag(s) V^T with V = U (up to zero singular values) for a symmetric positive
    # semi-definite cov; so z @ (sqrt(s)[:, None] * V^T) has covariance V diag(s) V^T = cov,
    # singular or not (numpy factors it the same way; Cholesky fails on singular ones).
    # Singular values at rounding level are zeroed, so draws stay in the covariance's support.
    _, s, vt = jnp.linalg.svd(cov)
    s = jnp.where(s > s[..., :1] * s.shape[-1] * jnp.finfo(s.dtype).eps, s, 0)
    factor = jnp.sqrt(s)[..., :, None] * vt
    z = jax.random.normal(key, shape + mean.shape[-1:], dtype)
    return mean + jnp.matmul(z[..., None, :], factor)[..., 0, :]


def _truncated_exponential(key: Any, shape: tuple[int, ...], dtype: Any, b: Any, loc: Any, scale: Any) -> Any:
    # scipy's truncexpon: the inverse CDF of exp(-x) / (1 - exp(-b)) on [0, b].
    u = jax.random.uniform(key, shape, dtype)
    return loc - scale * jnp.log1p(u * jnp.expm1(-b))


def _f(key: Any, shape: tuple[int, ...], dtype: Any, dfn: Any, dfd: Any) -> Any:
    numerator_key, denominator_key = jax.random.split(key)
    numerator = jax.random.gamma(numerator_key, dfn / 2, shape, dtype) / dfn
    return numerator / (jax.random.gamma(denominator_key, dfd / 2, shape, dtype) / dfd)


SAMPLERS: dict[type, Sampler] = {
    rv.NormalRV: Standardized(jax.random.normal, _shifted_scaled),
    rv.CauchyRV: Standardized(jax.random.cauchy, _shifted_scaled),
    rv.GumbelRV: Standardized(jax.random.gumbel, _shifted_scaled),
    rv.LaplaceRV: Standardized(jax.random.laplace, _shifted_scaled),
    rv.LogisticRV: Standardized(jax.random.logistic, _shifted_scaled),
    rv.HalfNormalRV: Standardized(jax.random.normal, _folded),
    rv.HalfCauchyRV: Standardized(jax.random.cauchy, _folded),
    rv.LogNormalRV: Standardized(jax.random.normal, lambda z, mean, sigma: jnp.exp(mean + sigma * z)),
    rv.UniformRV: Standardized(jax.random.uniform, lambda u, low, high: low + (high - low) * u),
    rv.ExponentialRV: Standardized(jax.random.exponential, lambda e, scale: scale * e),
    rv.GammaRV: lambda k, s, d, a, scale: scale * jax.random.gamma(k, a, s, d),
    rv.InvGammaRV: lambda k, s, d, a, scale: scale / jax.random.gamma(k, a, s, d),
    rv.ChiSquareRV: lambda k, s, d, df: 2 * jax.random.gamma(k, df / 2, s, d),
    rv.BetaRV: lambda k, s, d, a, b: jax.random.beta(k, a, b, s, d),
    rv.ParetoRV: lambda k, s, d, b, scale: scale * jax.random.pareto(k, b, s, d),
    rv.StudentTRV: lambda k, s, d, df, loc, scale: loc + scale * jax.random.t(k, df, s, d),
    rv.WeibullRV: lambda k, s, d, c: jax.random.weibull_min(k, 1.0, c, s, d),
    rv.TriangularRV: lambda k, s, d, left, mode, right: jax.random.triangular(k, left, mode, right, s, d),
    rv.WaldRV: _wald,
    rv.GenGammaRV: _gengamma,
    rv.PoissonRV: lambda k, s, d, lam: jax.random.poisson(k, lam, s),
    rv.BernoulliRV: lambda k, s, d, p: jax.random.bernoulli(k, p, s),
    rv.BinomialRV: lambda k, s, d, n, p: jax.random.binomial(k, n, p, s),
    rv.GeometricRV: lambda k, s, d, p: jax.random.geometric(k, p, s),
    rv.CategoricalRV: lambda k, s, d, p: jax.random.categorical(k, jnp.log(p), -1, s),
    rv.DirichletRV: lambda k, s, d, alpha: jax.random.dirichlet(k, alpha, s, d),
    rv.MvNormalRV: _multivariate_normal,
    rv.MultinomialRV: _multinomial,
    rv.NegBinomialRV: _negative_binomial,
    rv.BetaBinomialRV: _beta_binomial,
    rv.VonMisesRV: _von_mises,
    rv.ZipfRV: _zipf,
    rv.TruncExponentialRV: _truncated_exponential,
    rv.FRV: _f,
    rv.PowerRV: lambda k, s, d, a: jax.random.uniform(k, s, d) ** (1 / a),
    rv.RayleighRV: Standardized(jax.random.exponential, lambda e, scale: scale * jnp.sqrt(2 * e)),
    rv.RandIntRV: _integers,
    rv.IntegersRV: _integers,
    rv.ChoiceRV: _choice,
    rv.PermutationRV: _permutation,
}


def on_jax_impl(sampler: Sampler) -> Sampler:
    """``sampler`` given its key as a key of JAX's own ``"threefry2x32"``, the same key data (`with_jax_impl`)."""
    return lambda key, *args: sampler(with_jax_impl(key), *args)


ON_JAX_IMPL = (
    rv.GammaRV,
    rv.InvGammaRV,
    rv.ChiSquareRV,
    rv.BetaRV,
    rv.StudentTRV,
    rv.GenGammaRV,
    rv.PoissonRV,
    rv.DirichletRV,
    rv.NegBinomialRV,
    rv.BetaBinomialRV,
    rv.FRV,
)
"""The samplers that draw with ``jax.random.gamma`` or ``poisson``: JAX 0.7.1 implements ``poisson``, and vectorizes
``gamma`` (else one element after another), for its own implementation only; given its key, they draw as before
aejax's default key implementation (`aejax.adapters.threefry`) changed."""
SAMPLERS.update({cls: on_jax_impl(SAMPLERS[cls]) for cls in ON_JAX_IMPL})


def batch_shape(op: RandomVariable, size: Any, params: Sequence[Any]) -> tuple[int, ...]:
    """The batch shape of a draw: ``size`` if given, else the parameters' broadcast batch shape."""
    shape = static_ints(size)
    if shape or isinstance(op, (rv.ChoiceRV, rv.PermutationRV)):
        return shape
    batch = [np.shape(p)[: np.ndim(p) - n] for p, n in zip(params, op.ndims_params)]
    return tuple(np.broadcast_shapes(*batch))


def drawn_dtype(node: Apply) -> np.dtype:
    """The dtype of the draws of random variable ``node`` in the program being traced: its output's, in 32 bits
    in a program without x64, as JAX would narrow it (asked for a 64-bit dtype there, JAX warns)."""
    return jax.dtypes.canonicalize_dtype(node.outputs[1].type.dtype)


def float_params(dtype: np.dtype, params: Sequence[Any]) -> list[Any]:
    """The parameters of a draw of a float ``dtype`` as arrays of that dtype (others as they are)."""
    if dtype.kind != "f":
        return list(params)
    return [None if p is None else jnp.asarray(p, dtype) for p in params]


Draw = Callable[..., tuple[Any, Any]]
"""``draw(key, batch_shape, dtype, *params) -> (new_key, sample)``."""


def split_and_sample(sampler: Sampler) -> Draw:
    """A `Draw` that splits the key and samples with one half, returning the other as the new state."""

    def draw(key: Any, shape: tuple[int, ...], dtype: np.dtype, *params: Any) -> tuple[Any, Any]:
        new_key, draw_key = jax.random.split(key)
        return new_key, sampler(draw_key, shape, dtype, *float_params(dtype, params))

    return draw


STREAM_STEP = (np.uint32(0x9E3779B9), np.uint32(0x7F4A7C15))
"""What one step of a counted stream adds to a key's last two words, as a 64-bit number (high word first).

It is odd, so a stream runs through all ``2**64`` values before it repeats,
and ``2**64`` over the golden ratio: keys whose 64-bit values differ by less
than two million (seeds 0, 1, 2, ...) are more than ``3.9e12`` steps apart on
it, so nearby keys start streams that do not overlap.
"""

_LOW_16 = np.uint32(0xFFFF)


def _high_product(a: Any, b: np.uint32) -> Any:
    """The high 32 bits of the 64-bit product of the ``uint32`` values ``a`` and ``b``, in ``uint32`` arithmetic."""
    sixteen = np.uint32(16)
    a_high, a_low = a >> sixteen, a & _LOW_16
    b_high, b_low = b >> sixteen, b & _LOW_16
    cross_a, cross_b = a_high * b_low, a_low * b_high
    middle = ((a_low * b_low) >> sixteen) + (cross_a & _LOW_16) + (cross_b & _LOW_16)
    return a_high * b_high + (cross_a >> sixteen) + (cross_b >> sixteen) + (middle >> sixteen)


def advanced(key: Any, steps: Any) -> Any:
    """``key`` moved ``steps`` places along its counted stream (`counted`); one key per element of ``steps``.

    A step adds `STREAM_STEP` to the 64-bit number in the key data's last two
    words (modulo ``2**64``), so ``steps`` places cost one multiplication
    however many they are: ``advanced(advanced(k, 3), 3) == advanced(k, 6)``.
    ``steps`` are ``uint32`` (fewer than ``2**32``).
    """
    steps = jnp.asarray(steps, np.uint32)
    data = jax.random.key_data(key)
    high, low = data[..., -2], data[..., -1]
    step_high, step_low = STREAM_STEP
    new_low = low + steps * step_low
    carry = (new_low < low).astype(np.uint32)
    new_high = high + steps * step_high + _high_product(steps, step_low) + carry
    words = jnp.broadcast_to(data, (*steps.shape, *data.shape))
    new = jnp.concatenate([words[..., :-2], new_high[..., None], new_low[..., None]], axis=-1)
    return jax.random.wrap_key_data(new, impl=jax.random.key_impl(key))


def counted(sampler: Sampler) -> Draw:
    """A `Draw` on a counted stream: it samples with the key itself and returns the key `advanced` one place.

    A Scan's random variables that draw their steps before the loop
    (`aejax.linker.scan.noise`) draw so in every step: step ``t`` of a loop
    from ``k`` samples with ``advanced(k, t)``, which a draw before the loop
    computes for all steps at once, and ``n`` steps leave ``advanced(k, n)``
    whatever their number, so two calls of 3 steps draw what one of 6 draws.
    """

    def draw(key: Any, shape: tuple[int, ...], dtype: np.dtype, *params: Any) -> tuple[Any, Any]:
        return advanced(key, 1), sampler(key, shape, dtype, *float_params(dtype, params))

    return draw


def _aesara_sample_fn(sample_fn: Callable[..., tuple[dict[str, Any], Any]]) -> Draw:
    # Aesara's protocol: sample_fn(rng, size, dtype, *params) -> (rng, sample), the key in rng["jax_state"];
    # the sample may be any array-like (a Python number too), taken as an array of the variable's dtype.
    def draw(key: Any, shape: tuple[int, ...], dtype: np.dtype, *params: Any) -> tuple[Any, Any]:
        rng, sample = sample_fn({"jax_state": key}, shape, dtype, *params)
        return rng["jax_state"], jnp.asarray(sample, dtype)

    return draw


def draw_for(op: RandomVariable) -> Draw | None:
    """How to draw from ``op`` with a PRNG key; ``None`` if no sampler is known.

    The sampler on the most specific class of the Op's MRO wins: ours in
    `SAMPLERS`, or one registered with Aesara's ``jax_sample_fn`` from outside
    Aesara (called with a batch shape as ``size`` and a typed key as
    ``rng["jax_state"]``). On the same class, ours wins.
    """
    base = overriding_class(type(op), SAMPLERS, jax_sample_fn.registry)
    if base is None:
        return None
    if base in SAMPLERS:
        return split_and_sample(SAMPLERS[base])
    return _aesara_sample_fn(jax_sample_fn.registry[base](op))


def _host_draw(node: Any) -> Callable[..., tuple[Any, Any]]:
    """Draw with the Op's numpy ``rng_fn`` on the host, from a generator seeded by half of the split key.

    Its warning points at Aesara's ``jax_sample_fn``, the public way to give
    a random variable a JAX sampler (`draw_for` uses it).
    """
    sample = perform_callback(
        node,
        outputs=[1],
        host_inputs={0: host_generator(node.inputs[0].type)},
        why="has no JAX sampler",
        register_with="aesara.link.jax.dispatch.random.jax_sample_fn",
    )

    def draw(key: Any, *args: Any) -> tuple[Any, Any]:
        new_key, words = split_for_host(key)
        (value,) = sample(words, *args)
        return new_key, value

    return draw


@jax_funcify.register(RandomVariable)
def _random_variable(op: RandomVariable, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    draw = draw_for(op)
    if draw is None:
        return _host_draw(node)

    def random_variable(key: Any, size: Any, _dtype: Any, *params: Any) -> tuple[Any, Any]:
        return hashed_where_traced(draw)(key, batch_shape(op, size, params), drawn_dtype(node), *params)

    return random_variable


def hashed_where_traced(draw: Draw) -> Draw:
    """``draw``, hashing with JAX's rolled Threefry unless it is traced in a loop's body (the same bits either way).

    Unrolled, a hash is a few hundred operations, each of which XLA's cost
    model counts: a program of a few draws and no long loop (an HMC
    transition) would pass the size below which XLA:CPU runs a program on the
    calling thread, and every call would pay a hand-over to its thread pool
    (60 µs on a 2-core machine, against 20 µs for the whole call). Rolled, the
    hash is a loop of 5 steps whose body the model counts once; in a loop's
    body the unrolled one is faster per step (`aejax.adapters.threefry`).
    """
    if in_loop_body():
        return draw

    def once_per_call(key: Any, *args: Any) -> tuple[Any, Any]:
        new_key, sample = draw(with_jax_impl(key), *args)
        return with_impl_of(new_key, key), sample

    return once_per_call


@from_aesara_convention.register(RandomVariable)
def _aesara_random_variable(op: RandomVariable, lowering: Callable[..., Any]) -> Callable[..., Any]:
    # Aesara's lowering takes and returns the random state as a dict holding the key in "jax_state".
    def random_variable(key: Any, *args: Any) -> tuple[Any, Any]:
        rng, sample = lowering({"jax_state": key}, *args)
        return rng["jax_state"], sample

    return random_variable
