"""Selections whose length depends on values: ``x[nonzero(mask)]`` inside jit.

``nonzero`` of a traced array has a data-dependent length, which JAX cannot
trace. aejax lowers it to a `Masked` value instead (and ``x[mask]`` of a
traced boolean mask to the same selection): a buffer as long as the
mask, of which only the rows where the mask holds are the value (in order).
Nodes that work row by row keep it masked without ever cutting it:

- indexing with masked indices (``y[nonzero(mask)]``) gathers every row;
- elementwise Ops, and `DimShuffle`s that keep the rows first, compute
  every row (`elementwise`); rows outside the mask are computed but never
  used;
- reductions over the rows fill the others with the reduction's identity
  (`reduction`), and ``max``/``argmax`` see the selected rows moved to the
  front (`extremum`);
- ``set_subtensor``/``inc_subtensor`` at masked indices scatter only the
  rows inside the mask;
- checks only look at rows inside the mask;
- joins along the rows and cumulative sums and products take the selected
  rows moved to the front, as a `Ragged` value (`ragged.selected_rows_first`,
  used by `aejax.linker.dispatch.join` and `aejax.linker.dispatch.cumulative`);
  so does every lowering that takes `Ragged` values (rows and slices of the
  selection, Scans over it) and elementwise Ops that combine it with a
  selection made by another mask or with a `Ragged` value
  (`aejax.linker.lowering`).

This is how aeppl's mixture log-densities (``logp[idx] = logprob(value[idx])``
with ``idx = nonzero(eq(i, k))``) run inside jit. Any other consumer (a sort,
a ``dot``) ends the jit program after the node that made the value, which is
then cut to its length on the host, as for a `Ragged` trace.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import jax.numpy as jnp
import numpy as np
from aesara.graph.basic import Apply
from aesara.tensor.elemwise import CAReduce, DimShuffle, Elemwise
from aesara.tensor.math import Argmax, MaxAndArgmax

from aejax.linker.checks import require
from aejax.linker.errors import LoweringError
from aejax.linker.ragged import Masked, each_output


def nonzero_positions(a: Any) -> tuple[Masked, ...]:
    """``nonzero(a)`` of a traced array: one masked coordinate vector per axis."""
    mask = jnp.ravel(a) != 0
    coordinates = jnp.unravel_index(jnp.arange(mask.shape[0]), jnp.shape(a))
    return tuple(Masked(c.astype("int64"), mask) for c in coordinates)


def share_one_mask(values: Sequence[Any]) -> bool:
    """Whether the `Masked` among ``values`` were all selected by one mask."""
    return len({id(v.mask) for v in values if isinstance(v, Masked)}) == 1


def common_mask(values: Sequence[Any], node: Apply) -> Any:
    """The one mask of the `Masked` among ``values``; a `LoweringError` if they differ."""
    if not share_one_mask(values):
        raise LoweringError(
            f"node {node} combines selections made with different masks (x[nonzero(m)]); "
            "their lengths are only known at run time",
            node=node,
        )
    return next(v.mask for v in values if isinstance(v, Masked))


def rows(value: Any) -> Any:
    """The buffer of a `Masked` value; anything else as it is."""
    return value.buffer if isinstance(value, Masked) else value


def _along_rows(mask: Any, ndim: int) -> Any:
    return jnp.reshape(mask, mask.shape + (1,) * (ndim - 1))


def elementwise(node: Apply, fn: Callable[..., Any], args: Sequence[Any]) -> Any:
    """An elementwise node on masked arguments: computed on every row, masked as they are."""
    mask = common_mask(args, node)
    return each_output(fn(*[rows(a) for a in args]), lambda o: Masked(o, mask))


def reduction(node: Apply, fn: Callable[..., Any], x: Masked) -> Any:
    """A reduction of a masked value: over its rows, rows outside the mask hold the identity; else row by row."""
    identity = getattr(node.op.scalar_op, "identity", None)
    if not _over_rows(node, x):
        return Masked(fn(x.buffer), x.mask)
    if identity is None:
        raise LoweringError(
            f"node {node} reduces the rows of a selection x[nonzero(m)] with a scalar Op that has no identity",
            node=node,
        )
    if np.isinf(identity):  # max and min: numpy has no identity for them, and refuses an empty selection
        _require_not_empty(node, x)
    return fn(_outside_filled(x, identity))


def extremum(node: Apply, fn: Callable[..., Any], x: Masked) -> Any:
    """``max``/``argmax`` (`MaxAndArgmax`, `Argmax`) of a selection; over its rows, an empty one raises `ValueError`.

    Over the rows they see its rows moved to the front and the others at the
    dtype's lowest value, so an index counts selected rows; along other axes
    they work row by row.
    """
    if not _over_rows(node, x):
        return each_output(fn(x.buffer), lambda o: Masked(o, x.mask))
    _require_not_empty(node, x)
    return fn(_outside_filled(x.as_ragged().as_masked(), -np.inf))


def _over_rows(node: Apply, x: Masked) -> bool:
    """Whether ``node`` reduces over the rows of ``x`` (its first axis)."""
    return node.op.axis is None or 0 in node.op.axis


def _require_not_empty(node: Apply, x: Masked) -> None:
    require(
        x.length > 0,
        ValueError,
        f"node {node} reduces an empty selection, and its reduction has no identity",
        f"node {node}",
    )


def _outside_filled(x: Masked, value: Any) -> Any:
    """``x``'s buffer with the rows outside its mask set to ``value`` (an infinity: the dtype's extreme value)."""
    fill = jnp.asarray(_within_dtype(value, x.buffer.dtype), x.buffer.dtype)
    return jnp.where(_along_rows(x.mask, x.buffer.ndim), x.buffer, fill)


def _within_dtype(identity: Any, dtype: Any) -> Any:
    """``identity``, an infinity made the extreme value of an integer or boolean ``dtype``."""
    if not np.isinf(identity) or jnp.issubdtype(dtype, jnp.floating):
        return identity
    bounds = (False, True) if dtype == jnp.bool_ else (jnp.iinfo(dtype).min, jnp.iinfo(dtype).max)
    return bounds[1] if identity > 0 else bounds[0]


def holds(condition: Any) -> Any:
    """A check's condition, true on the rows outside a `Masked` condition's mask."""
    if not isinstance(condition, Masked):
        return condition
    return jnp.where(_along_rows(condition.mask, jnp.ndim(condition.buffer)), condition.buffer, True)


def gather(x: Any, indices: Sequence[Any], node: Apply) -> Masked:
    """``x[indices]`` for masked integer indices (one per leading axis)."""
    mask = common_mask(indices, node)
    _require_in_bounds(x, indices, mask, node)
    return Masked(jnp.asarray(x)[tuple(rows(i) for i in indices)], mask)


def _require_in_bounds(x: Any, indices: Sequence[Any], mask: Any, node: Apply) -> None:
    """Check the selected entries of masked integer ``indices`` against the axes of ``x`` they index."""
    for axis, index in enumerate(indices):
        size = jnp.shape(x)[axis]
        inside = (rows(index) >= -size) & (rows(index) < size)
        require(
            jnp.all(inside | jnp.logical_not(mask)),
            IndexError,
            f"an index of node {node} is out of bounds for axis {axis} with size {size}",
            f"node {node}",
        )


def scatter(x: Any, values: Any, indices: Sequence[Any], set_instead_of_inc: bool, node: Apply) -> Any:
    """``x`` with ``values`` set at (or added to) masked integer ``indices``; other rows dropped.

    ``values`` is masked like the indices, or broadcast to every selected
    row, or an array with one row per selected row, in order.
    """
    mask = common_mask([*indices, values], node)
    x = jnp.asarray(x)
    _require_in_bounds(x, indices, mask, node)
    positions = [rows(i) for i in indices]
    if _one_row_per_selected(values, x, indices):
        positions = _first_selected(positions, mask, jnp.shape(values)[0], node)
        mask = positions[0] >= 0
    first = jnp.where(mask, positions[0], x.shape[0])
    target = x.at[(first, *positions[1:])]
    update = rows(values)
    return target.set(update, mode="drop") if set_instead_of_inc else target.add(update, mode="drop")


def _one_row_per_selected(values: Any, x: Any, indices: Sequence[Any]) -> bool:
    """Whether ``values`` is an array with a row for each row of ``x[indices]`` (not masked, not broadcast)."""
    selected_ndim = jnp.ndim(x) - len(indices) + 1
    return not isinstance(values, Masked) and jnp.ndim(values) == selected_ndim and jnp.shape(values)[0] != 1


def _first_selected(positions: Sequence[Any], mask: Any, count: int, node: Apply) -> list[Any]:
    """The first ``count`` selected entries of each of ``positions``, in order (``-1`` past the selection).

    The selection must have ``count`` rows, as Aesara requires of the values
    set at it.
    """
    require(
        jnp.sum(mask) == count,
        ValueError,
        f"node {node} sets {count} rows at a selection of another length (known only at run time)",
        f"node {node}",
    )
    (order,) = jnp.nonzero(mask, size=count, fill_value=-1)
    return [jnp.where(order >= 0, jnp.take(p, order, mode="clip"), -1) for p in positions]


def is_row_wise(node: Apply) -> bool:
    """Whether ``node`` computes each row of its outputs from the same row of its inputs.

    Elementwise Ops do, and so does a `DimShuffle` that keeps the rows as
    its first axis (``x[:, None]``, as ``stack(..., axis=1)`` makes).
    """
    if isinstance(node.op, DimShuffle):
        return node.op.new_order[:1] == (0,)
    return isinstance(node.op, Elemwise)


def is_extremum(node: Apply) -> bool:
    """Whether ``node`` takes a maximum and its position, or only its position (``max``, ``argmax``)."""
    return isinstance(node.op, (MaxAndArgmax, Argmax))


def is_reduction(node: Apply) -> bool:
    """Whether ``node`` is a reduction with a scalar Op (sum, product, max, ...)."""
    return isinstance(node.op, CAReduce)
