"""Bessel functions of the first kind of orders 0 and 1 (`J0`, `J1`).

`jax.scipy.special.bessel_jn` returns nan at 0 and loses accuracy for
arguments much larger than its iteration count, so these are computed from
two expansions, each used where it is accurate to double precision:

- ``|x| <= ASYMPTOTIC_FROM``: Bessel's integral ``J_n(x) = 1/pi * integral_0^pi
  cos(n t - x sin t) dt`` by the trapezoidal rule. The integrand is smooth and
  periodic, so the rule's error is the aliased ``J_{n+M}(x)`` of the node count
  ``M``, negligible while ``M`` well exceeds ``|x|``.
- larger ``|x|``: Hankel's asymptotic expansion, whose terms keep decreasing
  far past the number used there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np
from aesara.scalar.math import J0, J1

from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.dispatch.special import as_float

ASYMPTOTIC_FROM = 25.0
TRAPEZOID_NODES = 96
ASYMPTOTIC_TERMS = 24


def _trapezoid(order: int, x: Any) -> Any:
    # The integrand is even about t = pi, so the nodes of [pi, 2 pi) repeat those of (0, pi].
    half = TRAPEZOID_NODES // 2
    t = np.pi * np.arange(half + 1) / half
    weights = np.full(half + 1, 2.0)
    weights[[0, -1]] = 1.0
    values = jnp.cos(order * t - x[..., None] * np.sin(t))
    return jnp.sum(weights * values, axis=-1) / TRAPEZOID_NODES


def _hankel_coefficients(order: int) -> np.ndarray:
    # a_k = prod_{j=1..k} (4 n^2 - (2j - 1)^2) / (k! 8^k)
    k = np.arange(1, ASYMPTOTIC_TERMS)
    steps = (4 * order**2 - (2 * k - 1) ** 2) / (8.0 * k)
    return np.concatenate([[1.0], np.cumprod(steps)])


def _asymptotic(order: int, x: Any) -> Any:
    # J_n(x) ~ sqrt(2 / (pi x)) (P cos w - Q sin w), w = x - (2n + 1) pi / 4,
    # P = sum_k (-1)^k a_2k / x^2k, Q = sum_k (-1)^k a_2k+1 / x^(2k+1).
    a = _hankel_coefficients(order)
    signs = np.where(np.arange(ASYMPTOTIC_TERMS) // 2 % 2 == 0, 1.0, -1.0)
    inverse = 1 / x
    p = jnp.zeros_like(x)
    q = jnp.zeros_like(x)
    for k in range(ASYMPTOTIC_TERMS - 1, -1, -1):
        if k % 2 == 0:
            p = p * inverse**2 + signs[k] * a[k]
        else:
            q = q * inverse**2 + signs[k] * a[k]
    q = q * inverse
    # cos(x - phase) and sin(x - phase) expanded, so the phase is not subtracted from a large x.
    phase = (2 * order + 1) * np.pi / 4
    cos_w = jnp.cos(x) * np.cos(phase) + jnp.sin(x) * np.sin(phase)
    sin_w = jnp.sin(x) * np.cos(phase) - jnp.cos(x) * np.sin(phase)
    return jnp.sqrt(2 / (np.pi * x)) * (p * cos_w - q * sin_w)


def bessel_j(order: int, x: Any) -> Any:
    """The Bessel function of the first kind ``J_order(x)`` for a fixed integer order."""
    x = as_float(x)
    magnitude = jnp.abs(x)
    far = magnitude > ASYMPTOTIC_FROM
    near_value = _trapezoid(order, jnp.where(far, 0.0, magnitude))
    far_value = _asymptotic(order, jnp.where(far, magnitude, ASYMPTOTIC_FROM))
    value = jnp.where(far, far_value, near_value)
    return jnp.where(x < 0, -value, value) if order % 2 else value


def _register(op_class: type, order: int) -> None:
    def lowering(op: Any, **kwargs: Any) -> Callable[..., Any]:
        return lambda x: bessel_j(order, x)

    jax_funcify.register(op_class)(lowering)


_register(J0, 0)
_register(J1, 1)
