"""Special functions JAX lacks or Aesara's JAX backend does not lower.

`jax.scipy.special` 0.7.1 has no ``erfcx``, ``erfcinv`` or ``owens_t``, and
Aesara's generic scalar lowering looks them up there by name, so it fails for
them (and for ``xlogx``, ``xlogy0``, which name no function at all). Each is built here from functions JAX has, arranged so that it keeps
full precision where the textbook formula would overflow or cancel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np
from aesara.scalar.math import Erfcinv, Erfcx, GammaL, GammaU, Owens_t, TriGamma
from aesara.tensor.xlogx import XlogX, XlogY0
from jax.scipy.special import erfc, gamma, gammainc, gammaincc, ndtr, ndtri, polygamma

from aejax.linker.dispatch.basic import jax_funcify

ERFCX_FRACTION_FROM = 2.0
"""From here on `erfcx` uses its continued fraction instead of ``exp(x**2) * erfc(x)``."""

ERFCX_FRACTION_TERMS = 80

OWENS_T_NODES = 48
OWENS_T_SPAN = 9.0
"""``exp(-OWENS_T_SPAN**2 / 2)`` is below double precision: Owen's T integrand is cut there."""

OWENS_T_H_MAX = 40.0
"""Owen's T underflows to 0 for larger ``|h|`` (keeps ``inf * 0`` out of the integral)."""


def as_float(x: Any) -> Any:
    """``x`` as a JAX array of a floating dtype (the default float for integers)."""
    x = jnp.asarray(x)
    return x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype(jnp.result_type(float))


def exp_square(x: Any) -> Any:
    """``exp(x**2)`` without the rounding error of ``x**2`` (split into exactly squared halves)."""
    split = 2.0 ** ((jnp.finfo(x.dtype).nmant + 2) // 2) + 1
    scaled = x * split
    high = scaled - (scaled - x)
    low = x - high
    return jnp.exp(high * high) * jnp.exp((2 * high + low) * low)


def _erfcx_fraction(x: Any) -> Any:
    # Laplace's continued fraction erfc(x) exp(x^2) sqrt(pi) = 1 / (x + (1/2) / (x + 1 / (x + (3/2) / ...))),
    # evaluated from its tail; it converges quickly for the large x it is used for.
    tail = x
    for k in range(ERFCX_FRACTION_TERMS, 0, -1):
        tail = x + (k / 2) / tail
    return 1 / (jnp.sqrt(jnp.pi) * tail)


def erfcx(x: Any) -> Any:
    """The scaled complementary error function ``exp(x**2) * erfc(x)``."""
    x = as_float(x)
    large = x >= ERFCX_FRACTION_FROM
    # Below -27 the value overflows to inf; clamping there also keeps -inf from making nan.
    small = jnp.where(large, 0, jnp.maximum(x, -27.0))
    direct = exp_square(small) * erfc(small)
    return jnp.where(large, _erfcx_fraction(jnp.where(large, x, ERFCX_FRACTION_FROM)), direct)


def erfcinv(y: Any) -> Any:
    """The inverse of ``erfc``, through the normal quantile (``erfinv(1 - y)`` would round ``1 - y``)."""
    y = as_float(y)
    # erfcinv(y) = -erfcinv(2 - y), and 2 - y is exact for 1 <= y <= 2.
    lower = y <= 1
    magnitude = -ndtri(jnp.where(lower, y, 2 - y) / 2) / np.sqrt(2)
    return jnp.where(lower, magnitude, -magnitude)


def _owens_t_small_a(h: Any, a: Any) -> Any:
    # T(h, a) = exp(-h^2/2) / (2 pi) * integral_0^a exp(-h^2 x^2 / 2) / (1 + x^2) dx for 0 <= a <= 1,
    # integrated by Gauss-Legendre over the part where the Gaussian factor is not negligible.
    nodes, weights = np.polynomial.legendre.leggauss(OWENS_T_NODES)
    h = jnp.minimum(h, OWENS_T_H_MAX)
    upper = jnp.minimum(a, OWENS_T_SPAN / jnp.maximum(h, OWENS_T_SPAN / 2))
    x = upper[..., None] * (nodes + 1) / 2
    integrand = jnp.exp(-0.5 * (h[..., None] * x) ** 2) / (1 + x**2)
    integral = upper / 2 * jnp.sum(weights * integrand, axis=-1)
    return jnp.exp(-0.5 * h**2) / (2 * jnp.pi) * integral


def owens_t(h: Any, a: Any) -> Any:
    """Owen's T function ``T(h, a)``, even in ``h`` and odd in ``a``."""
    h, a = jnp.broadcast_arrays(as_float(h), as_float(a))
    h, sign, a = jnp.abs(h), jnp.sign(a), jnp.abs(a)
    small = a <= 1
    a_small = jnp.where(small, a, 1.0)
    a_inverse = jnp.where(small, 1.0, 1 / a)
    ah = jnp.where(small, 0.0, a * h)
    # Owen's identity T(h, a) + T(ah, 1/a) = (Phi(h) Q(ah) + Phi(ah) Q(h)) / 2 for h >= 0, Q = 1 - Phi:
    reflected = (ndtr(h) * ndtr(-ah) + ndtr(ah) * ndtr(-h)) / 2 - _owens_t_small_a(ah, a_inverse)
    value = jnp.where(small, _owens_t_small_a(h, a_small), reflected)
    # At h = 0, a = inf the identity gives 0 * inf; T(0, a) = arctan(a) / (2 pi) holds for every a.
    value = jnp.where(h == 0, jnp.arctan(a) / (2 * jnp.pi), value)
    return sign * value


def trigamma(x: Any) -> Any:
    """The second derivative of ``log(gamma(x))``."""
    return polygamma(1, as_float(x))


def upper_gamma(k: Any, x: Any) -> Any:
    """The unregularised upper incomplete gamma function (integers in the default float, as scipy computes them)."""
    k, x = as_float(k), as_float(x)
    return gammaincc(k, x) * gamma(k)


def lower_gamma(k: Any, x: Any) -> Any:
    """The unregularised lower incomplete gamma function (integers in the default float, as scipy computes them)."""
    k, x = as_float(k), as_float(x)
    return gammainc(k, x) * gamma(k)


def x_log_x(x: Any) -> Any:
    """``x * log(x)``, 0 at ``x == 0`` (Aesara's ``xlogx``)."""
    x = as_float(x)
    return jnp.where(x == 0, 0, x * jnp.log(x))


def x_log_y0(x: Any, y: Any) -> Any:
    """``x * log(y)``, 0 wherever ``x == 0`` (Aesara's ``xlogy0``)."""
    x = as_float(x)
    return jnp.where(x == 0, 0, x * jnp.log(as_float(y)))


def _register(op_class: type, function: Callable[..., Any]) -> None:
    jax_funcify.register(op_class)(lambda op, **kwargs: function)


for _op_class, _function in (
    (Erfcx, erfcx),
    (Erfcinv, erfcinv),
    (Owens_t, owens_t),
    (TriGamma, trigamma),
    (GammaU, upper_gamma),
    (GammaL, lower_gamma),
    (XlogX, x_log_x),
    (XlogY0, x_log_y0),
):
    _register(_op_class, _function)
