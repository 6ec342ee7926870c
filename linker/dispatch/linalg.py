"""Linear algebra Ops of `aesara.tensor.{math,nlinalg,slinalg}` that Aesara's JAX backend lacks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import jax.scipy.linalg as jsl
from aesara.tensor.math import MatMul
from aesara.tensor.nlinalg import Inv, Lstsq, MatrixPinv, TensorInv, TensorSolve
from aesara.tensor.slinalg import (
    BilinearSolveDiscreteLyapunov,
    CholeskySolve,
    Eigvalsh,
    Expm,
    SolveContinuousLyapunov,
)

from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.errors import LoweringError


@jax_funcify.register(MatMul)
def _matmul(op: MatMul, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    dtype = node.outputs[0].dtype

    def matmul(a: Any, b: Any) -> Any:
        return jnp.matmul(a.astype(dtype), b.astype(dtype))

    return matmul


@jax_funcify.register(Inv)
def _inv(op: Inv, **kwargs: Any) -> Callable[..., Any]:
    return jnp.linalg.inv


@jax_funcify.register(MatrixPinv)
def _pinv(op: MatrixPinv, **kwargs: Any) -> Callable[..., Any]:
    return lambda x: jnp.linalg.pinv(x, hermitian=op.hermitian)


@jax_funcify.register(TensorInv)
def _tensor_inv(op: TensorInv, **kwargs: Any) -> Callable[..., Any]:
    return lambda a: jnp.linalg.tensorinv(a, op.ind)


@jax_funcify.register(TensorSolve)
def _tensor_solve(op: TensorSolve, **kwargs: Any) -> Callable[..., Any]:
    return lambda a, b: jnp.linalg.tensorsolve(a, b, op.axes)


@jax_funcify.register(Lstsq)
def _lstsq(op: Lstsq, **kwargs: Any) -> Callable[..., Any]:
    def lstsq(a: Any, b: Any, rcond: Any) -> tuple[Any, ...]:
        return tuple(jnp.linalg.lstsq(a, b, rcond))

    return lstsq


@jax_funcify.register(CholeskySolve)
def _cholesky_solve(op: CholeskySolve, **kwargs: Any) -> Callable[..., Any]:
    return lambda c, b: jsl.cho_solve((c, op.lower), b)


@jax_funcify.register(Eigvalsh)
def _eigvalsh(op: Eigvalsh, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    if len(node.inputs) != 1:
        raise LoweringError(
            f"node {node}: JAX has no generalized symmetric eigenvalue solver (Eigvalsh with b)",
            node=node,
        )
    return lambda a: jsl.eigh(a, lower=op.lower, eigvals_only=True)


@jax_funcify.register(Expm)
def _expm(op: Expm, **kwargs: Any) -> Callable[..., Any]:
    return jsl.expm


def _kron_solve(operator: Any, rhs: Any) -> Any:
    # Solve the matrix equation vec(X) = operator^-1 vec(rhs), row-major vec.
    n = rhs.shape[0]
    return jnp.linalg.solve(operator, rhs.reshape(n * n)).reshape(n, n)


@jax_funcify.register(SolveContinuousLyapunov)
def _continuous_lyapunov(op: SolveContinuousLyapunov, **kwargs: Any) -> Callable[..., Any]:
    # A X + X A^H = Q; with row-major vec, vec(A X) = (A kron I) vec X and vec(X B) = (I kron B^T) vec X.
    def solve_continuous_lyapunov(a: Any, q: Any) -> Any:
        eye = jnp.eye(a.shape[0], dtype=a.dtype)
        return _kron_solve(jnp.kron(a, eye) + jnp.kron(eye, a.conj()), q)

    return solve_continuous_lyapunov


@jax_funcify.register(BilinearSolveDiscreteLyapunov)
def _discrete_lyapunov(op: BilinearSolveDiscreteLyapunov, **kwargs: Any) -> Callable[..., Any]:
    # A X A^H - X + Q = 0: vec(A X A^H) = (A kron conj(A)) vec X, row-major.
    def solve_discrete_lyapunov(a: Any, q: Any) -> Any:
        n = a.shape[0]
        return _kron_solve(jnp.eye(n * n, dtype=a.dtype) - jnp.kron(a, a.conj()), q)

    return solve_discrete_lyapunov
