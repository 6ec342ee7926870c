"""Scalar Ops whose Aesara lowering is missing or wrong: complex parts, rounding, range tests, ``fill``, casts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from aesara.scalar.basic import (
    Cast,
    Complex,
    ComplexFromPolar,
    FloorDivide,
    InRange,
    Real,
    RoundHalfAwayFromZero,
    Second,
)
from aesara.tensor.math import MulWithoutZeros

from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.dispatch.tensor_basic import filled


@jax_funcify.register(Real)
def _real(op: Real, **kwargs: Any) -> Callable[..., Any]:
    return jnp.real


@jax_funcify.register(Complex)
def _complex(op: Complex, **kwargs: Any) -> Callable[..., Any]:
    def complex_(real: Any, imag: Any) -> Any:
        real, imag = jnp.broadcast_arrays(real, imag)
        return jax.lax.complex(real, imag)

    return complex_


@jax_funcify.register(ComplexFromPolar)
def _complex_from_polar(op: ComplexFromPolar, **kwargs: Any) -> Callable[..., Any]:
    def complex_from_polar(radius: Any, angle: Any) -> Any:
        return radius * jnp.exp(1j * angle)

    return complex_from_polar


@jax_funcify.register(RoundHalfAwayFromZero)
def _round_half_away_from_zero(op: RoundHalfAwayFromZero, **kwargs: Any) -> Callable[..., Any]:
    def round_half_away_from_zero(x: Any) -> Any:
        return jnp.where(x > 0, jnp.floor(x + 0.5), jnp.ceil(x - 0.5))

    return round_half_away_from_zero


@jax_funcify.register(InRange)
def _in_range(op: InRange, **kwargs: Any) -> Callable[..., Any]:
    above = jnp.greater if op.openlow else jnp.greater_equal
    below = jnp.less if op.openhi else jnp.less_equal

    def in_range(x: Any, low: Any, high: Any) -> Any:
        return above(x, low) & below(x, high)

    return in_range


@jax_funcify.register(MulWithoutZeros)
def _mul_without_zeros(op: MulWithoutZeros, **kwargs: Any) -> Callable[..., Any]:
    # A zero factor stands for "missing": the product of the others.
    def mul_without_zeros(x: Any, y: Any) -> Any:
        return jnp.where(x == 0, y, jnp.where(y == 0, x, x * y))

    return mul_without_zeros


@jax_funcify.register(FloorDivide)
def _floor_divide(op: FloorDivide, **kwargs: Any) -> Callable[..., Any]:
    """numpy's floor division, by zero too: 0 for integers, ``x / 0`` (an infinity or nan) for floats."""

    def floor_divide(x: Any, y: Any) -> Any:
        quotient = jnp.floor_divide(x, y)
        by_zero = jnp.zeros_like(quotient) if jnp.issubdtype(quotient.dtype, jnp.integer) else jnp.true_divide(x, y)
        return jnp.where(y == 0, by_zero, quotient)

    return floor_divide


@jax_funcify.register(Second)
def _second(op: Second, **kwargs: Any) -> Callable[..., Any]:
    """``fill(x, y)``: ``y`` broadcast against ``x``, as every elementwise Op broadcasts.

    Aesara's lowering broadcasts ``y`` to ``x``'s shape, which fails when
    ``x`` is the one that broadcasts (``fill(x[None], y)``, ``y`` a vector).
    """

    def second(x: Any, y: Any) -> Any:
        return filled(y, jnp.broadcast_shapes(jnp.shape(x), jnp.shape(y)))

    return second


def cast_as_numpy(x: Any, dtype: Any) -> Any:
    """``x`` cast to ``dtype`` as numpy casts it: a float to a narrow integer keeps the low bits (300.7 -> int8 44).

    numpy truncates to a 64-bit integer first; XLA would saturate.
    """
    dtype = jnp.dtype(dtype)
    x = jnp.asarray(x)
    if dtype.kind in "iu" and dtype.itemsize < 8 and jnp.issubdtype(x.dtype, jnp.inexact):
        x = jnp.real(x).astype("int64")
    return x.astype(dtype)


@jax_funcify.register(Cast)
def _cast(op: Cast, **kwargs: Any) -> Callable[..., Any]:
    dtype = jnp.dtype(op.o_type.dtype)

    def cast(x: Any) -> Any:
        return cast_as_numpy(x, dtype)

    return cast
