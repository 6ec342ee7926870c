"""Random variables as pure functions of a JAX PRNG key.

Inside the traced function a random state is a typed PRNG key (see
``aejax.adapters.jax``). A random variable splits it: one half draws the
sample, the other is returned as the new state. Every distribution that
Aesara 2.9.4's JAX backend lowers is here, parametrised as Aesara's
reference backend parametrises it (e.g. `GammaRV` takes shape and scale).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import aesara.tensor.random.basic as rv
from aesara.tensor.random.op import RandomVariable

from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.dispatch.tensor_basic import static_ints
from aejax.linker.errors import LoweringError

Sampler = Callable[..., Any]
"""``sampler(key, batch_shape, dtype, *params) -> sample``."""


def _loc_scale(standard: Callable[..., Any], transform: Callable[[Any], Any] = lambda z: z) -> Sampler:
    def sample(key: Any, shape: tuple[int, ...], dtype: Any, loc: Any, scale: Any) -> Any:
        return loc + scale * transform(standard(key, shape, dtype))

    return sample


def _lognormal(key: Any, shape: tuple[int, ...], dtype: Any, mean: Any, sigma: Any) -> Any:
    return jnp.exp(mean + sigma * jax.random.normal(key, shape, dtype))


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


SAMPLERS: dict[type, Sampler] = {
    rv.NormalRV: _loc_scale(jax.random.normal),
    rv.CauchyRV: _loc_scale(jax.random.cauchy),
    rv.GumbelRV: _loc_scale(jax.random.gumbel),
    rv.LaplaceRV: _loc_scale(jax.random.laplace),
    rv.LogisticRV: _loc_scale(jax.random.logistic),
    rv.HalfNormalRV: _loc_scale(jax.random.normal, jnp.abs),
    rv.HalfCauchyRV: _loc_scale(jax.random.cauchy, jnp.abs),
    rv.LogNormalRV: _lognormal,
    rv.UniformRV: lambda k, s, d, low, high: jax.random.uniform(k, s, d, low, high),
    rv.ExponentialRV: lambda k, s, d, scale: scale * jax.random.exponential(k, s, d),
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
    rv.MvNormalRV: lambda k, s, d, mean, cov: jax.random.multivariate_normal(k, mean, cov, s, d),
    rv.RandIntRV: _integers,
    rv.IntegersRV: _integers,
    rv.ChoiceRV: _choice,
    rv.PermutationRV: _permutation,
}


def batch_shape(op: RandomVariable, size: Any, params: Sequence[Any]) -> tuple[int, ...]:
    """The batch shape of a draw: ``size`` if given, else the parameters' broadcast batch shape."""
    shape = static_ints(size)
    if shape or isinstance(op, (rv.ChoiceRV, rv.PermutationRV)):
        return shape
    batch = [np.shape(p)[: np.ndim(p) - n] for p, n in zip(params, op.ndims_params)]
    return tuple(np.broadcast_shapes(*batch))


def _float_params(dtype: np.dtype, params: Sequence[Any]) -> list[Any]:
    if dtype.kind != "f":
        return list(params)
    return [None if p is None else jnp.asarray(p, dtype) for p in params]


@jax_funcify.register(RandomVariable)
def _random_variable(op: RandomVariable, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    sampler = next((SAMPLERS[c] for c in type(op).__mro__ if c in SAMPLERS), None)
    if sampler is None:
        raise LoweringError(
            f"no JAX sampler for random variable {op.name} ({type(op).__name__}) in node "
            f"{node}; add one to aejax.linker.dispatch.random.SAMPLERS",
            node=node,
        )
    dtype = np.dtype(node.outputs[1].type.dtype)

    def draw(key: Any, size: Any, _dtype: Any, *params: Any) -> tuple[Any, Any]:
        shape = batch_shape(op, size, params)
        new_key, draw_key = jax.random.split(key)
        return new_key, sampler(draw_key, shape, dtype, *_float_params(dtype, params))

    return draw
