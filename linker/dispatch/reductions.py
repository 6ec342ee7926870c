"""Reductions whose Aesara lowerings do not trace under jit, or do not exist."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
from aesara.tensor.math import Argmax, MaxAndArgmax, ProdWithoutZeros

from aejax.linker.dispatch.basic import jax_funcify


def argmax_over(x: Any, axis: Any) -> tuple[tuple[int, ...], Any]:
    """The reduced axes and the argmax of ``x`` over them (numpy's flat order)."""
    axes = tuple(range(x.ndim)) if axis is None else tuple(int(a) for a in axis)
    kept = [i for i in range(x.ndim) if i not in axes]
    moved = jnp.transpose(x, kept + list(axes))
    reduced = math.prod(x.shape[a] for a in axes)  # not -1: a kept axis of length 0 leaves it undecided
    flat = moved.reshape(moved.shape[: len(kept)] + (reduced,))
    return axes, jnp.argmax(flat, axis=-1)


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


@jax_funcify.register(ProdWithoutZeros)
def _prod_without_zeros(op: ProdWithoutZeros, **kwargs: Any) -> Callable[..., Any]:
    """The product of the nonzero entries (Aesara's gradient of ``prod`` uses it); JAX has no such reduction."""

    def prod_without_zeros(x: Any) -> Any:
        x = jnp.asarray(x, op.acc_dtype)
        return jnp.prod(jnp.where(x == 0, jnp.ones_like(x), x), axis=op.axis)

    return prod_without_zeros
