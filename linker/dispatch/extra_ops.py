"""Tensor Ops of `aesara.tensor.basic`, `extra_ops` and `sort` that Aesara's JAX backend lacks.

`Split` and `Nonzero` make outputs whose shapes depend on input values. Split
sizes must be concrete while tracing (a `LoweringError` names the node
otherwise), unless the rows split are of run-time length: then each piece is
`Ragged` too. ``nonzero`` of a traced array is a `Masked` selection
(`aejax.linker.lengths.masked`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from aesara.tensor.basic import Choose, Default, Nonzero, PermuteRowElements, Split
from aesara.tensor.extra_ops import (
    CpuContiguous,
    FillDiagonal,
    FillDiagonalOffset,
    Repeat,
    SearchsortedOp,
    UnravelIndex,
)
from aesara.tensor.math import Convolve
from aesara.tensor.sort import TopKOp

from aejax.linker.checks import require
from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.errors import InvalidValueError, LoweringError
from aejax.linker.lengths import masked
from aejax.linker.lengths.concrete import is_traced, static_ints
from aejax.linker.lengths.consumers import takes_run_time_lengths
from aejax.linker.lengths.ragged import Ragged, buffer_of, index_dtype, rows_of, with_length_of


def _one_or_tuple(values: list[Any]) -> Any:
    return values[0] if len(values) == 1 else tuple(values)


def split_sizes(op: Split, node: Any, length: int, splits: Any) -> list[int]:
    """The concrete split sizes of ``node``, checked against the split axis' ``length``."""
    if is_traced(splits):
        raise LoweringError(
            f"the split sizes of node {node} are only known at run time; JAX needs them "
            "while tracing. Make them constants or integer scalar inputs of the function.",
            node=node,
            needs_static=True,
        )
    sizes = list(static_ints(np.ravel(splits), "split sizes"))
    if len(sizes) != op.len_splits or sum(sizes) != length or min(sizes, default=0) < 0:
        raise InvalidValueError(
            f"node {node}: split sizes {sizes} do not cut an axis of length {length} "
            f"into {op.len_splits} non-negative parts"
        )
    return sizes


@jax_funcify.register(Split)
def _split(op: Split, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    def split(x: Any, axis: Any, splits: Any) -> Any:
        (axis,) = static_ints((axis,), "the split axis")
        if isinstance(x, Ragged) and axis == 0:
            return _one_or_tuple(ragged_pieces(op, node, x, splits))
        buffer = buffer_of(x)
        sizes = split_sizes(op, node, buffer.shape[axis], splits)
        return _one_or_tuple([with_length_of(x, p) for p in jnp.split(buffer, np.cumsum(sizes)[:-1], axis=axis)])

    return takes_run_time_lengths(split, ragged=True)


def ragged_pieces(op: Split, node: Any, x: Ragged, splits: Any) -> list[Ragged]:
    """The rows of ``x``, of run-time length, cut into pieces of ``splits`` rows (traced or not), each `Ragged`.

    The sizes must add up to the length and none be negative (`ValueError`
    after the call, as numpy raises).
    """
    sizes = jnp.ravel(jnp.asarray(splits))
    if sizes.shape[0] != op.len_splits:
        raise InvalidValueError(f"node {node}: {sizes.shape[0]} split sizes for {op.len_splits} parts")
    require(
        (jnp.sum(sizes) == x.length) & jnp.all(sizes >= 0),
        ValueError,
        f"node {node}: the split sizes do not cut the rows of run-time length into non-negative parts",
        f"node {node}",
    )
    ends = jnp.cumsum(sizes)
    return [rows_of(x.buffer, x.length, slice(end - size, end)) for size, end in zip(sizes, ends)]


@jax_funcify.register(Nonzero)
def _nonzero(op: Nonzero, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    def nonzero(a: Any) -> Any:
        if is_traced(a):
            return _one_or_tuple(list(masked.nonzero_positions(a)))
        return _one_or_tuple([index.astype("int64") for index in np.nonzero(np.asarray(a))])

    return takes_run_time_lengths(nonzero, ragged=True)


@jax_funcify.register(Choose)
def _choose(op: Choose, **kwargs: Any) -> Callable[..., Any]:
    # JAX cannot raise on a traced out-of-range index; "raise" then clips.
    mode = "clip" if op.mode == "raise" else op.mode

    def choose(a: Any, choices: Any) -> Any:
        return jnp.choose(a, choices, mode=mode)

    return choose


@jax_funcify.register(Default)
def _default(op: Default, **kwargs: Any) -> Callable[..., Any]:
    """``x``, or ``default`` where ``x`` is ``None``: an input given as ``None`` reaches the program as
    ``None`` (jit takes it as an empty pytree), so the program traced for it takes the default."""

    def default_(x: Any, default: Any) -> Any:
        return default if x is None else x

    return default_


@jax_funcify.register(FillDiagonal)
def _fill_diagonal(op: FillDiagonal, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    """``a`` with ``val`` at ``a[i, i, ..., i]``, as numpy's ``fill_diagonal`` (a matrix may be rectangular).

    Aesara's lowering fills ``a[..., i, i]``, every matrix of a tensor.
    """

    def fill_diagonal(a: Any, val: Any) -> Any:
        a = jnp.asarray(a)
        if a.ndim > 2 and len(set(a.shape)) > 1:
            raise InvalidValueError(
                f"node {node}: the diagonal of a {a.ndim}-d tensor is only defined when all its axes have one "
                f"length, not shape {a.shape} (numpy's fill_diagonal raises the same)"
            )
        diagonal = jnp.arange(min(a.shape))
        return a.at[(diagonal,) * a.ndim].set(val)

    return fill_diagonal


@jax_funcify.register(FillDiagonalOffset)
def _fill_diagonal_offset(op: FillDiagonalOffset, **kwargs: Any) -> Callable[..., Any]:
    """Matrix ``a`` with ``val`` on its diagonal ``column - row == offset`` (``offset`` may be traced).

    Written, as Aesara's ``perform`` writes it, as a slice of ``a.flat``, with
    its quirk: for an offset past a tall matrix's width the slice's end is
    negative and counts from the end, so it writes entries of later rows.
    """

    def fill_diagonal_offset(a: Any, val: Any, offset: Any) -> Any:
        height, width = jnp.shape(a)
        start = jnp.where(offset >= 0, offset, -offset * width)
        steps = jnp.minimum(min(height, width), jnp.where(offset >= 0, width - offset, height + offset))
        end = start + (width + 1) * steps
        end = jnp.where(end < 0, end + height * width, end)
        flat = jnp.arange(height * width).reshape(height, width)
        on_slice = (flat >= start) & (flat < end) & ((flat - start) % (width + 1) == 0)
        return jnp.where(on_slice, jnp.asarray(val, jnp.result_type(a)), a)

    return fill_diagonal_offset


@jax_funcify.register(CpuContiguous)
def _cpu_contiguous(op: CpuContiguous, **kwargs: Any) -> Callable[..., Any]:
    return lambda x: x


@jax_funcify.register(PermuteRowElements)
def _permute_row_elements(op: PermuteRowElements, **kwargs: Any) -> Callable[..., Any]:
    def permute_row_elements(x: Any, y: Any, inverse: Any) -> Any:
        shape = jnp.broadcast_shapes(x.shape[:-1], y.shape[:-1])
        x = jnp.broadcast_to(x, shape + x.shape[-1:])
        y = jnp.broadcast_to(y, shape + y.shape[-1:])
        # out[..., y[i]] = x[..., i] is out = x taken at the inverse permutation argsort(y).
        order = jnp.argsort(y, axis=-1) if static_ints((inverse,), "the inverse flag")[0] else y
        return jnp.take_along_axis(x, order, axis=-1)

    return permute_row_elements


@jax_funcify.register(SearchsortedOp)
def _searchsorted(op: SearchsortedOp, **kwargs: Any) -> Callable[..., Any]:
    def searchsorted(x: Any, v: Any, sorter: Any = None) -> Any:
        return jnp.searchsorted(x, v, side=op.side, sorter=sorter)

    return searchsorted


@jax_funcify.register(Convolve)
def _convolve(op: Convolve, **kwargs: Any) -> Callable[..., Any]:
    def convolve(a: Any, v: Any) -> Any:
        return jnp.convolve(a, v, mode=op.mode)

    return convolve


def reversed_order(x: Any) -> Any:
    """A key whose descending order is ``x``'s ascending order, without overflow.

    Negating an integer overflows at the dtype's minimum (``-(-128)`` is
    ``-128`` in int8); bitwise not, ``-x - 1``, reverses the order of signed
    and unsigned integers and of booleans exactly.
    """
    if jnp.issubdtype(x.dtype, jnp.inexact):
        return -x
    return ~x


@jax_funcify.register(TopKOp)
def _top_k(op: TopKOp, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    # Positive k selects the largest entries, negative k the smallest; the order is unspecified.
    index_dtype = node.outputs[-1].dtype if node is not None and op.return_indices else "int64"

    def top_k(x: Any, k: Any) -> Any:
        (k,) = static_ints((k,), "topk's k")
        if k == 0 or abs(k) > x.shape[op.axis]:
            raise InvalidValueError(f"node {node}: k={k} is not in 1..{x.shape[op.axis]} in magnitude")
        moved = jnp.moveaxis(x, op.axis, -1)
        _, indices = jax.lax.top_k(moved if k > 0 else reversed_order(moved), abs(k))
        values = jnp.take_along_axis(moved, indices, axis=-1)
        outputs = [values] * op.return_values + [indices.astype(index_dtype)] * op.return_indices
        return _one_or_tuple([jnp.moveaxis(out, -1, op.axis) for out in outputs])

    return top_k


@jax_funcify.register(Repeat)
def _repeat(op: Repeat, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    # Concrete repeats as int64: JAX sums them, or multiplies them by the array's size, in the repeats' own dtype
    # under numpy 2 (an int8 3 times 100 elements made 44; numpy 1.26 widened it).
    def repeat(x: Any, repeats: Any) -> Any:
        return jnp.repeat(x, repeats if is_traced(repeats) else np.asarray(repeats, np.int64), axis=op.axis)

    return repeat


@jax_funcify.register(UnravelIndex)
def _unravel_index(op: UnravelIndex, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    # Aesara's own lowering ignores `order`; Fortran order is C order of the reversed shape.
    def unravel_index(indices: Any, dims: Any) -> Any:
        shape = static_ints(tuple(dims), "the shape of unravel_index")
        size = math.prod(shape)
        require(
            jnp.all((indices >= 0) & (indices < size)),
            ValueError,
            f"node {node}: an index is out of bounds for an array of size {size}",
            f"node {node}",
        )
        if op.order == "F":
            coordinates = jnp.unravel_index(indices, shape[::-1])[::-1]
        else:
            coordinates = jnp.unravel_index(indices, shape)
        return _one_or_tuple([jnp.asarray(c, index_dtype()) for c in coordinates])

    return unravel_index
