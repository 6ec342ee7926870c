"""Reductions whose Aesara lowerings do not trace under jit, or do not exist.

A reduction accumulates as Aesara's ``perform`` does, in the Op's
accumulator dtype, but for an accumulator wider than both its input and its
output (a float32 sum's float64, Aesara's default): that one is used on the
CPU only, where Aesara's C backend uses it too; a program lowered for an
accelerator accumulates in the output dtype, and so holds no float64
operation for a float32 graph (`jax.lax.platform_dependent`, resolved when
the program is lowered for its platform).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import aesara.scalar.basic as aes
import jax
import jax.numpy as jnp
import numpy as np
from aesara.tensor.elemwise import CAReduce
from aesara.tensor.math import Argmax, MaxAndArgmax, Mean, MulWithoutZeros

from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.dispatch.scalar import cast_as_numpy

Reduction = Callable[..., Any]
"""``reduction(x, axis=axes)``: ``x`` reduced over the tuple of axes ``axes``."""


def flattened_over(x: Any, axis: Any) -> tuple[tuple[int, ...], Any]:
    """The reduced axes (all for ``None``), and ``x`` with them moved last as one axis, in numpy's flat order."""
    axes = tuple(range(x.ndim)) if axis is None else tuple(int(a) for a in axis)
    kept = [i for i in range(x.ndim) if i not in axes]
    moved = jnp.transpose(x, kept + list(axes))
    reduced = math.prod(x.shape[a] for a in axes)  # not -1: a kept axis of length 0 leaves it undecided
    return axes, moved.reshape(moved.shape[: len(kept)] + (reduced,))


def argmax_over(x: Any, axis: Any) -> tuple[tuple[int, ...], Any]:
    """The reduced axes and the argmax of ``x`` over them (numpy's flat order)."""
    axes, flat = flattened_over(x, axis)
    return axes, jnp.argmax(flat, axis=-1)


def _product_without_zeros(x: Any, axis: tuple[int, ...]) -> Any:
    """The product of the nonzero entries, 0 where all are zero (or none): zeros stand for missing factors."""
    nonzero = x != 0
    product = jnp.prod(jnp.where(nonzero, x, 1), axis=axis)
    return jnp.where(jnp.any(nonzero, axis=axis), product, 0)


def _nan_first(extremum: Reduction) -> Reduction:
    """``extremum`` (``jnp.max``, ``jnp.min``), where a complex nan wins as in numpy: XLA's complex order skips it."""

    def nan_first(x: Any, axis: tuple[int, ...]) -> Any:
        result = extremum(x, axis=axis)
        if not jnp.issubdtype(x.dtype, jnp.complexfloating):
            return result
        _, flat = flattened_over(x, axis)
        nan = jnp.isnan(flat)
        first_nan = jnp.take_along_axis(flat, jnp.argmax(nan, axis=-1)[..., None], axis=-1)[..., 0]
        return jnp.where(jnp.any(nan, axis=-1), first_nan, result)

    return nan_first


REDUCTIONS: dict[type, Reduction] = {
    aes.Add: jnp.sum,
    aes.Mul: jnp.prod,
    aes.ScalarMaximum: _nan_first(jnp.max),
    aes.ScalarMinimum: _nan_first(jnp.min),
    aes.AND: jnp.bitwise_and.reduce,
    aes.OR: jnp.bitwise_or.reduce,
    aes.XOR: jnp.bitwise_xor.reduce,
    aes.Mean: jnp.mean,
    MulWithoutZeros: _product_without_zeros,
}
"""The reduction of each scalar Op JAX has one for (numpy's ufunc reductions, nan propagating as there)."""


def reduction_of(scalar_op: Any, node: Any) -> Reduction:
    """How ``node`` reduces with ``scalar_op``: a JAX reduction from `REDUCTIONS`, else the Op's own lowering
    applied along one axis after the other (a `CAReduce`'s Op is associative and commutative)."""
    for cls in type(scalar_op).__mro__:
        if cls in REDUCTIONS:
            return REDUCTIONS[cls]
    ufunc = jnp.frompyfunc(jax_funcify(scalar_op, node=node), 2, 1, identity=getattr(scalar_op, "identity", None))

    def along_each_axis(x: Any, axis: tuple[int, ...]) -> Any:
        for one in sorted(axis, reverse=True):
            x = ufunc.reduce(x, axis=one)
        return x

    return along_each_axis


@jax_funcify.register(CAReduce)
def _careduce(op: CAReduce, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    """``node``'s reduction computed in its accumulator dtype, then cast to its output dtype, as Aesara's ``perform``.

    The accumulator is the Op's ``acc_dtype`` (float64 for `Mean`), else the
    output dtype: a float32 sum accumulates in float64 by default, on the
    CPU (see the module docstring). Both dtypes are JAX's canonical ones:
    32-bit in a program that computes without x64.
    """
    reduce = reduction_of(op.scalar_op, node)
    out_dtype = node.outputs[0].type.dtype
    acc_dtype = "float64" if isinstance(op, Mean) else op.acc_dtype or out_dtype

    def careduce(x: Any) -> Any:
        x = jnp.asarray(x)
        axes = tuple(range(x.ndim)) if op.axis is None else tuple(op.axis)
        out, acc = (jax.dtypes.canonicalize_dtype(dtype) for dtype in (out_dtype, acc_dtype))

        def accumulated_in(dtype: np.dtype) -> Callable[[Any], Any]:
            return lambda x: cast_as_numpy(reduce(x.astype(dtype), axis=axes), out)

        if acc.itemsize > max(x.dtype.itemsize, out.itemsize):
            return jax.lax.platform_dependent(x, cpu=accumulated_in(acc), default=accumulated_in(out))
        return accumulated_in(acc)(x)

    return careduce


@jax_funcify.register(MaxAndArgmax)
def _max_and_argmax(op: MaxAndArgmax, **kwargs: Any) -> Callable[..., Any]:
    def max_and_argmax(x: Any) -> tuple[Any, Any]:
        axes, argmax = argmax_over(x, op.axis)
        return jnp.max(x, axis=axes), argmax

    return max_and_argmax


@jax_funcify.register(Argmax)
def _argmax(op: Argmax, **kwargs: Any) -> Callable[..., Any]:
    def argmax(x: Any) -> Any:
        return argmax_over(x, op.axis)[1]

    return argmax
