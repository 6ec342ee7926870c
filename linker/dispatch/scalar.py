"""Scalar Ops whose Aesara lowering is missing or wrong: complex parts, rounding, range tests, ``fill``, casts.

XLA's float32 ``exp2``, ``cosh`` and ``sinh`` are off by up to 2e-6 relative
(``exp2(34)`` is not ``2**34``), beyond Aesara's float32 tolerance of 1e-6
against numpy's ufuncs, and JAX computes them of an int32 in float32: they
are computed in float64 and rounded, at 15% (exp2) to 70% (cosh, sinh) more
time per element on the CPU; ``exp2`` of integers is exact, a power of two.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from aesara.scalar.basic import (
    Cast,
    Complex,
    ComplexFromPolar,
    Cosh,
    Exp2,
    FloorDivide,
    InRange,
    Real,
    RoundHalfAwayFromZero,
    Second,
    Sinh,
)
from aesara.scalar.math import Softplus
from aesara.tensor.math import MulWithoutZeros

from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.dispatch.tensor_basic import filled
from aejax.linker.lengths.ragged import index_dtype


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

    numpy truncates to a 64-bit integer first; XLA would saturate. A 64-bit ``dtype`` is 32 bits in a
    program computed without x64.
    """
    dtype = jax.dtypes.canonicalize_dtype(dtype)
    x = jnp.asarray(x)
    if dtype.kind in "iu" and dtype.itemsize < 8 and jnp.issubdtype(x.dtype, jnp.inexact):
        x = jnp.real(x).astype(index_dtype())
    return x.astype(dtype)


@jax_funcify.register(Cast)
def _cast(op: Cast, **kwargs: Any) -> Callable[..., Any]:
    dtype = jnp.dtype(op.o_type.dtype)

    def cast(x: Any) -> Any:
        return cast_as_numpy(x, dtype)

    return cast


def _in_float64(fn: Callable[[Any], Any], node: Any) -> Callable[[Any], Any]:
    """``fn`` computed in float64 and rounded to its real result's dtype, as accurate as numpy's ufunc.

    An integer input is cast first: JAX would compute ``exp2`` of an int32 in
    float32, where Aesara's result is float64.
    """
    out_dtype = jnp.dtype(node.outputs[0].dtype) if node is not None else None

    def accurate(x: Any) -> Any:
        dtype = out_dtype if out_dtype is not None else fn(x).dtype
        if dtype not in (jnp.float32, jnp.float64):
            return fn(x)
        return fn(jnp.asarray(x).astype(jax.dtypes.canonicalize_dtype(np.float64))).astype(dtype)

    return accurate


def exact_exp2(x: Any) -> Any:
    """``2**x`` exactly for an integer array ``x``, in float64; XLA's ``exp2`` is ``exp(x * ln 2)``, a few ulps off."""
    x = jnp.asarray(x)
    # Beyond +-1100 float64 over- or underflows anyway; the clip keeps the exponent an int32.
    exponent = jnp.clip(x.astype("float64"), -1100, 1100).astype("int32")
    return jnp.ldexp(jnp.ones(x.shape, "float64"), exponent)


@jax_funcify.register(Exp2)
def _exp2(op: Exp2, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    float64_exp2 = _in_float64(jnp.exp2, node)

    def exp2(x: Any) -> Any:
        if jnp.issubdtype(jnp.asarray(x).dtype, jnp.integer):
            out_dtype = node.outputs[0].dtype if node is not None else "float64"
            return exact_exp2(x).astype(out_dtype)
        return float64_exp2(x)

    return exp2


@jax_funcify.register(Cosh)
def _cosh(op: Cosh, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    return _in_float64(jnp.cosh, node)


@jax_funcify.register(Sinh)
def _sinh(op: Sinh, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    return _in_float64(jnp.sinh, node)


SOFTPLUS_LINEAR_FROM = 18.0
"""From here on ``softplus(x)`` is ``x + exp(-x)``: ``log1p(exp(x))`` would overflow ``exp`` further out."""


@jax_funcify.register(Softplus)
def _softplus(op: Softplus, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    """``log(1 + exp(x))``, computed in its output's dtype.

    Aesara's lowering computes ``x + exp(-x)`` on the input as it is: for an
    unsigned integer ``-x`` wraps around (``-uint8(18)`` is 238), which made
    ``softplus(uint8(18))`` infinite.
    """
    out_dtype = node.outputs[0].dtype if node is not None else np.float64

    def softplus(x: Any) -> Any:
        x = jnp.asarray(x).astype(jax.dtypes.canonicalize_dtype(out_dtype))
        return jnp.where(x < SOFTPLUS_LINEAR_FROM, jnp.log1p(jnp.exp(x)), x + jnp.exp(-x))

    return softplus
