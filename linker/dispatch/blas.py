"""Aesara's BLAS Ops as plain dot products (aejax's rewrites do not create them; a graph may hold them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
from aesara.tensor.blas import Dot22, Dot22Scalar, Gemm, Gemv, Ger

from aejax.linker.dispatch.basic import jax_funcify


def _scaled(beta: Any, z: Any) -> Any:
    # BLAS ignores the accumulator when beta is 0, even if it holds nan.
    return jnp.where(beta == 0, 0, beta * z)


@jax_funcify.register(Dot22)
def _dot22(op: Dot22, **kwargs: Any) -> Callable[..., Any]:
    return jnp.dot


@jax_funcify.register(Dot22Scalar)
def _dot22_scalar(op: Dot22Scalar, **kwargs: Any) -> Callable[..., Any]:
    return lambda x, y, alpha: alpha * jnp.dot(x, y)


@jax_funcify.register(Gemm)
def _gemm(op: Gemm, **kwargs: Any) -> Callable[..., Any]:
    return lambda z, alpha, x, y, beta: _scaled(beta, z) + alpha * jnp.dot(x, y)


@jax_funcify.register(Gemv)
def _gemv(op: Gemv, **kwargs: Any) -> Callable[..., Any]:
    return lambda y, alpha, a, x, beta: _scaled(beta, y) + alpha * jnp.dot(a, x)


@jax_funcify.register(Ger)
def _ger(op: Ger, **kwargs: Any) -> Callable[..., Any]:
    return lambda a, alpha, x, y: a + alpha * jnp.outer(x, y)
