"""Linear algebra Ops of `aesara.tensor.{math,nlinalg,slinalg}` that Aesara's JAX backend lacks or gets wrong.

Where the reference raises ``LinAlgError`` (a singular matrix, one that is
not positive definite) or scipy's ``ValueError`` for an input that is not
finite, JAX returns infinities or nans; the lowerings here check the
factorization they compute, and the call fails after it with the
reference's exception (`aejax.linker.checks.require`).

The Ops of `aesara.tensor.nlinalg` compute with ``numpy.linalg``, which
computes float32 (complex64) matrices in double precision and rounds the
results; JAX computes them in single precision. On the CPU their lowerings
do as numpy does (`as_numpy_computes`), so float32 eigenvectors, singular
values or inverses are the reference's. A program for an accelerator keeps
float32 (no float64 operation there), as does a program without x64. The
Ops of `aesara.tensor.slinalg` compute with scipy, in the input's own
precision, as JAX does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
from aesara.tensor.math import MatMul
from aesara.tensor.nlinalg import (
    SVD,
    Det,
    Eig,
    Eigh,
    Inv,
    Lstsq,
    MatrixInverse,
    MatrixPinv,
    QRFull,
    TensorInv,
    TensorSolve,
)
from aesara.tensor.slinalg import (
    BilinearSolveDiscreteLyapunov,
    Cholesky,
    CholeskySolve,
    Eigvalsh,
    EigvalshGrad,
    Expm,
    Solve,
    SolveContinuousLyapunov,
    SolveTriangular,
)

from aejax.linker.checks import InnerCodes, checking, require, shapes_only
from aejax.linker.dispatch.basic import aesara_jax_funcify, jax_funcify
from aejax.linker.errors import InvalidMatrixError, variable_name
from aejax.linker.lengths.ragged import Ragged


@jax_funcify.register(MatMul)
def _matmul(op: MatMul, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    dtype = node.outputs[0].dtype

    def matmul(a: Any, b: Any) -> Any:
        return jnp.matmul(a.astype(dtype), b.astype(dtype))

    return matmul


WIDENED = {np.dtype("float32"): np.dtype("float64"), np.dtype("complex64"): np.dtype("complex128")}
"""The dtype ``numpy.linalg`` computes each single-precision dtype in."""


def _widened(value: Any) -> Any:
    wide = WIDENED.get(np.dtype(getattr(value, "dtype", object)))
    return value if wide is None else jnp.asarray(value, wide)


def per_platform(cpu: Callable[..., Any], default: Callable[..., Any], *args: Any) -> Any:
    """``cpu(*args)`` in a program for the CPU, else ``default(*args)`` (`jax.lax.platform_dependent`).

    Inside a program the branches' checks (`require`) leave each branch as
    its failure code, which the function around it reports.
    """
    if not checking():
        return jax.lax.platform_dependent(*args, cpu=cpu, default=default)

    codes = InnerCodes()
    result, code = jax.lax.platform_dependent(*args, cpu=codes.coded(cpu), default=codes.coded(default))
    codes.fold(code)
    return result


def as_numpy_computes(compute: Callable[..., Any]) -> Callable[..., Any]:
    """``compute`` in ``numpy.linalg``'s precision on the CPU: single-precision inputs (`WIDENED`) computed in double
    precision, each result rounded to the dtype ``compute`` gives it; as it is on other platforms, for inputs of no
    single-precision dtype, and in a program without x64 (it has no double precision)."""

    def computed(*args: Any) -> Any:
        double = jax.dtypes.canonicalize_dtype(np.float64) == np.float64
        if not double or not any(np.dtype(getattr(a, "dtype", object)) in WIDENED for a in args):
            return compute(*args)
        narrow = shapes_only(compute, *args)

        def in_double(*values: Any) -> Any:
            results = compute(*(_widened(v) for v in values))
            return jax.tree.map(lambda result, like: result.astype(like.dtype), results, narrow)

        return per_platform(in_double, compute, *args)

    return computed


def _aesaras_as_numpy_computes(op: Any, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    """Aesara's lowering of ``op`` (a ``numpy.linalg`` Op), in numpy's precision on the CPU."""
    return as_numpy_computes(aesara_jax_funcify(op, node=node, **kwargs))


for _numpy_op in (Det, Eig, Eigh, QRFull, SVD):
    jax_funcify.register(_numpy_op, _aesaras_as_numpy_computes)


def inexact(*arrays: Any) -> list[Any]:
    """``arrays`` as JAX arrays of their common float (or complex) dtype: integers are solved in float64."""
    dtype = jnp.result_type(*(jnp.asarray(a).dtype for a in arrays), float)
    return [jnp.asarray(a, dtype) for a in arrays]


def require_finite(node: Any, *arrays: Any) -> None:
    """Fail the call with `ValueError` if one of ``arrays`` holds an infinity or nan, as scipy's ``check_finite``."""
    require(
        jnp.all(jnp.stack([jnp.all(jnp.isfinite(a)) for a in arrays])),
        ValueError,
        f"node {node}: an input holds an infinity or nan (array must not contain infs or NaNs)",
        f"node {node}",
    )


def require_nonsingular(factors: Any, node: Any) -> None:
    """Fail the call with ``LinAlgError`` if an LU factorization has a zero pivot, as LAPACK's ``getrf`` reports."""
    require(
        jnp.all(jnp.diagonal(factors, axis1=-2, axis2=-1) != 0),
        np.linalg.LinAlgError,
        f"node {node}: the matrix is singular (its LU factorization has a zero pivot)",
        f"node {node}",
    )


def checked_lu(a: Any, node: Any) -> tuple[Any, Any]:
    """``lu_factor(a)``, ``node``'s call failing with ``LinAlgError`` if ``a`` is singular."""
    factors, pivots = jsl.lu_factor(a)
    require_nonsingular(factors, node)
    return factors, pivots


def inverse(a: Any, node: Any) -> Any:
    """The inverse of the square matrices ``a`` (``jnp.linalg.inv``'s values), ``LinAlgError`` if one is singular."""
    (a,) = inexact(a)
    identity = jnp.broadcast_to(jnp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    return jsl.lu_solve(checked_lu(a, node), identity)


@jax_funcify.register(Inv)
@jax_funcify.register(MatrixInverse)
def _inv(op: Inv | MatrixInverse, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    return as_numpy_computes(lambda x: inverse(x, node))


@jax_funcify.register(MatrixPinv)
def _pinv(op: MatrixPinv, **kwargs: Any) -> Callable[..., Any]:
    """numpy's ``pinv``: the singular values above ``1e-15`` times the largest inverted, the others taken as zero (JAX's
    ``pinv`` drops those below ``10 * max(m, n)`` machine epsilons); the SVD in numpy's precision (`as_numpy_computes`),
    the product in the input's, as numpy computes them."""
    svd = as_numpy_computes(lambda a: jnp.linalg.svd(a, full_matrices=False, hermitian=op.hermitian))

    def pinv(x: Any) -> Any:
        (x,) = inexact(x)
        u, s, vt = svd(x.conj())
        large = s > 1e-15 * jnp.max(s, axis=-1, keepdims=True, initial=0)
        inverted = jnp.where(large, 1 / jnp.where(large, s, 1), 0)
        return jnp.swapaxes(vt, -1, -2) @ (inverted[..., None] * jnp.swapaxes(u, -1, -2))

    return pinv


@jax_funcify.register(TensorInv)
def _tensor_inv(op: TensorInv, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    """numpy's ``tensorinv``: the inverse of ``a`` read as a matrix of its first ``ind`` axes by the others."""

    def tensor_inv(a: Any) -> Any:
        rows, columns = a.shape[: op.ind], a.shape[op.ind :]
        return inverse(a.reshape(math.prod(rows), math.prod(columns)), node).reshape(columns + rows)

    return as_numpy_computes(tensor_inv)


@jax_funcify.register(TensorSolve)
def _tensor_solve(op: TensorSolve, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    """numpy's ``tensorsolve``: ``x`` with ``tensordot(a, x, x.ndim) == b``, the ``axes`` of ``a`` moved last."""

    def tensor_solve(a: Any, b: Any) -> Any:
        a, b = inexact(a, b)
        if op.axes is not None:
            moved = [k % a.ndim for k in op.axes]
            a = jnp.transpose(a, [k for k in range(a.ndim) if k not in moved] + moved)
        shape = a.shape[b.ndim :]
        system = a.reshape(-1, math.prod(shape))
        return jsl.lu_solve(checked_lu(system, node), b.ravel()).reshape(shape)

    return as_numpy_computes(tensor_solve)


def _check_lstsq_shapes(node: Any, a: Any, b: Any) -> None:
    """`InvalidMatrixError` (numpy's `LinAlgError`) unless ``a`` is a matrix with as many rows as ``b``."""
    name = variable_name(node.inputs[0])
    if np.ndim(a) != 2:
        raise InvalidMatrixError(
            f"node {node}: {np.ndim(a)}-dimensional array {name!r} given. Array must be two-dimensional"
        )
    if np.ndim(b) not in (1, 2) or np.shape(b)[0] != np.shape(a)[0]:
        raise InvalidMatrixError(
            f"node {node}: incompatible dimensions: {name!r} has shape {np.shape(a)}, "
            f"{variable_name(node.inputs[1])!r} has shape {np.shape(b)}"
        )


@jax_funcify.register(Lstsq)
def _lstsq(op: Lstsq, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    """numpy's ``lstsq`` (LAPACK's ``gelsd``): the solution, residuals, rank and singular values.

    Singular values up to ``rcond`` times the largest count as zero; an
    ``rcond`` outside (0, 1) stands for the machine precision, as LAPACK
    reads it (JAX's ``lstsq`` takes ``rcond=1`` as given, and so drops all
    but the largest). Integer systems are solved in float64.
    """

    def lstsq(a: Any, b: Any, rcond: Any) -> tuple[Any, ...]:
        _check_lstsq_shapes(node, a, b)
        a, b = inexact(a, b)
        u, s, vt = jnp.linalg.svd(a, full_matrices=False)
        precision = jnp.finfo(s.dtype).eps / 2  # LAPACK's machine precision: the unit roundoff
        rcond = jnp.where((rcond <= 0) | (rcond >= 1), precision, rcond)
        kept = s > rcond * jnp.max(s, initial=0)
        reciprocal = jnp.where(kept, 1 / jnp.where(kept, s, 1), 0)
        columns = b if b.ndim == 2 else b[:, None]
        x = vt.conj().T @ (reciprocal[:, None] * (u.conj().T @ columns))
        rank = jnp.sum(kept)
        return x if b.ndim == 2 else x[:, 0], _lstsq_residuals(a, columns, x, rank), rank, s

    return as_numpy_computes(lstsq)


def _lstsq_residuals(a: Any, b: Any, x: Any, rank: Any) -> Any:
    """numpy's residuals of ``a @ x = b`` (``b`` a matrix of columns): the squared norm of each column's
    error for a tall system of full rank, else none; a `Ragged` vector when only the rank tells which."""
    rows, columns = a.shape
    if rows <= columns:
        return jnp.zeros((0,), jnp.finfo(a.dtype).dtype)
    errors = jnp.sum(jnp.abs(b - a @ x) ** 2, axis=0)
    return Ragged(errors, jnp.where(rank == columns, errors.shape[0], 0))


@jax_funcify.register(Cholesky)
def _cholesky(op: Cholesky, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    """scipy's ``cholesky``, from the triangle ``lower`` names: ``LinAlgError`` after the call if the matrix is not
    positive definite (JAX returns nans), or all nans with ``on_error="nan"``; ``ValueError`` for a nan input."""

    def cholesky(a: Any) -> Any:
        require_finite(node, a)
        factor = jsl.cholesky(a, lower=op.lower)
        failed = jnp.any(jnp.isnan(factor))
        if op.on_error == "nan":
            return jnp.where(failed, jnp.nan, factor)
        require(
            ~failed,
            np.linalg.LinAlgError,
            f"node {node}: the matrix is not positive definite (a leading minor is not positive)",
            f"node {node}",
        )
        return factor

    return cholesky


def _read_as(a: Any, assume_a: str, lower: bool) -> Any:
    """The matrix scipy's ``solve`` reads from ``a``: a symmetric (hermitian) one only from the triangle ``lower``
    names, mirrored; any other as it is."""
    if assume_a not in ("sym", "her"):
        return a
    triangle, strict = (jnp.tril(a), jnp.tril(a, -1)) if lower else (jnp.triu(a), jnp.triu(a, 1))
    mirrored = strict.conj() if assume_a == "her" else strict
    return triangle + jnp.swapaxes(mirrored, -1, -2)


@jax_funcify.register(Solve)
def _solve(op: Solve, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    """scipy's ``solve``: LU for ``assume_a`` "gen", "sym" and "her" (of the triangle scipy reads), Cholesky for
    "pos"; ``LinAlgError`` after the call for a singular matrix (or one not positive definite, for "pos").

    Aesara's lowering solves every structure with LU of the whole matrix.
    """
    not_positive = f"node {node}: the matrix is not positive definite, as assume_a='pos' says (Matrix is singular.)"

    def solve(a: Any, b: Any) -> Any:
        a, b = inexact(a, b)
        if op.check_finite:
            require_finite(node, a, b)
        if op.assume_a != "pos":
            return jsl.lu_solve(checked_lu(_read_as(a, op.assume_a, op.lower), node), b)
        factor = jsl.cholesky(a, lower=op.lower)
        require(~jnp.any(jnp.isnan(factor)), np.linalg.LinAlgError, not_positive, f"node {node}")
        return jsl.cho_solve((factor, op.lower), b)

    return solve


@jax_funcify.register(SolveTriangular)
def _solve_triangular(op: SolveTriangular, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    """scipy's ``solve_triangular``: ``LinAlgError`` after the call for a zero on the diagonal (unless it is taken
    as ones)."""

    def solve_triangular(a: Any, b: Any) -> Any:
        a, b = inexact(a, b)
        if op.check_finite:
            require_finite(node, a, b)
        if not op.unit_diagonal:
            require(
                jnp.all(jnp.diagonal(a) != 0),
                np.linalg.LinAlgError,
                f"node {node}: the triangular matrix is singular (a zero on its diagonal)",
                f"node {node}",
            )
        return jsl.solve_triangular(a, b, trans=op.trans, lower=op.lower, unit_diagonal=op.unit_diagonal)

    return solve_triangular


@jax_funcify.register(CholeskySolve)
def _cholesky_solve(op: CholeskySolve, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    def cholesky_solve(c: Any, b: Any) -> Any:
        if op.check_finite:
            require_finite(node, c, b)
        return jsl.cho_solve((c, op.lower), b)

    return cholesky_solve


def _hermitian(a: Any, lower: bool) -> Any:
    """The hermitian (symmetric) matrix LAPACK reads from ``a``: the triangle ``lower`` names, mirrored."""
    return _read_as(a, "her", lower)


def _positive_definite_factor(b: Any, node: Any) -> Any:
    """The lower Cholesky factor ``L`` of the hermitian ``b = L L^H``; ``LinAlgError`` after the call if ``b`` is not
    positive definite, as LAPACK's ``sygvd`` reports."""
    factor = jsl.cholesky(b, lower=True)
    require(
        ~jnp.any(jnp.isnan(factor)),
        np.linalg.LinAlgError,
        f"node {node}: the matrix b is not positive definite (a leading minor is not positive), "
        "so the generalized eigenvalue problem cannot be reduced",
        f"node {node}",
    )
    return factor


def _reduced(a: Any, factor: Any) -> Any:
    """``L^-1 a L^-H`` for the Cholesky factor ``L`` of ``b``: its eigenvalues are those of ``a v = w b v``, and its
    eigenvectors ``u`` give the problem's as ``L^-H u``."""
    left = jsl.solve_triangular(factor, a, lower=True)  # L^-1 a, whose conjugate transpose is a L^-H
    return jsl.solve_triangular(factor, left.conj().swapaxes(-1, -2), lower=True)


def generalized_eigh(a: Any, b: Any, lower: bool, node: Any) -> tuple[Any, Any]:
    """scipy's ``eigh(a, b, lower=lower)``: the eigenvalues ``w`` (ascending) and ``b``-orthonormal eigenvectors ``v``
    of ``a v = w b v``, each matrix read from its triangle ``lower``; ``ValueError`` after the call for an input that
    is not finite, ``LinAlgError`` for a ``b`` that is not positive definite."""
    a, b = inexact(a, b)
    require_finite(node, a, b)
    factor = _positive_definite_factor(_hermitian(b, lower), node)
    w, u = jnp.linalg.eigh(_reduced(_hermitian(a, lower), factor))
    return w, jsl.solve_triangular(factor.conj().swapaxes(-1, -2), u, lower=False)


@jax_funcify.register(Eigvalsh)
def _eigvalsh(op: Eigvalsh, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    """scipy's ``eigvalsh(a, b=None, lower=lower)``, reading only the triangle ``lower`` names (JAX's ``eigh`` averages
    ``a`` with its transpose); with ``b``, the generalized problem ``a v = w b v`` reduced to a standard one by the
    Cholesky factor of ``b`` (`generalized_eigh`)."""
    dtype = node.outputs[0].dtype

    def eigvalsh(a: Any, b: Any = None) -> Any:
        if b is None:
            return jsl.eigh(_hermitian(a, op.lower), eigvals_only=True).astype(dtype)
        return generalized_eigh(a, b, op.lower, node)[0].astype(dtype)

    return eigvalsh


def _folded(g: Any, lower: bool) -> Any:
    """``g`` with its strict triangle opposite ``lower`` added, transposed, to the one ``lower`` names: the gradient
    with respect to the entries LAPACK reads."""
    if lower:
        return jnp.tril(g) + jnp.triu(g, 1).T
    return jnp.triu(g) + jnp.tril(g, -1).T


@jax_funcify.register(EigvalshGrad)
def _eigvalsh_grad(op: EigvalshGrad, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    """The gradients of ``eigvalsh(a, b)`` with respect to ``a`` and ``b``, for ``gw`` that of the eigenvalues:
    ``v diag(gw) v^T`` and ``-v diag(gw w) v^T`` of the generalized eigenvectors ``v``, folded onto the triangle read."""
    a_dtype, b_dtype = (out.dtype for out in node.outputs)

    def eigvalsh_grad(a: Any, b: Any, gw: Any) -> tuple[Any, Any]:
        w, v = generalized_eigh(a, b, op.lower, node)
        grad_a = (v * gw) @ v.T
        grad_b = -(v * (gw * w)) @ v.T
        return _folded(grad_a, op.lower).astype(a_dtype), _folded(grad_b, op.lower).astype(b_dtype)

    return eigvalsh_grad


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
