"""Selections whose length depends on values: ``x[nonzero(mask)]`` inside jit.

``nonzero`` of a traced array has a data-dependent length, which JAX cannot
trace. aejax lowers it to a `Masked` value instead (and ``x[mask]`` of a
traced boolean mask to the same selection): a buffer as long as the
mask, of which only the rows where the mask holds are the value (in order).
Nodes that work row by row keep it masked without ever cutting it:

- indexing with masked indices (``y[nonzero(mask)]``) gathers every row;
- elementwise Ops, and `DimShuffle`s that keep the rows first, compute
  every row (`elementwise`); rows outside the mask are computed but never
  used; so do random variables drawn element by element from their
  parameters (`is_elementwise_draw`, `draw_masked`);
- reductions over the rows fill the others with the reduction's identity
  (`reduction`), and ``max``/``argmax`` see the selected rows moved to the
  front (`extremum`);
- ``set_subtensor``/``inc_subtensor`` at masked indices scatter only the
  rows inside the mask;
- a value of run-time length is itself indexed the same way: a boolean
  mask of an until trace or of a selection (``trace[trace > 3]``,
  ``x[idx][x[idx] > 1]``), its rows picked by an index array, and updates at
  them (`boolean_selection`, `gather`, `scatter`);
- checks only look at rows inside the mask;
- joins along the rows and cumulative sums and products take the selected
  rows moved to the front, as a `Ragged` value (`ragged.selected_rows_first`,
  used by `aejax.linker.dispatch.join` and `aejax.linker.dispatch.cumulative`);
  so does every lowering that takes `Ragged` values (rows and slices of the
  selection, Scans over it) and elementwise Ops that combine it with a
  selection made by another mask or with a `Ragged` value
  (`aejax.linker.lengths.taking`).

This is how aeppl's mixture log-densities (``logp[idx] = logprob(value[idx])``
with ``idx = nonzero(eq(i, k))``) run inside jit. Any other consumer (a sort,
a ``dot``) ends the jit program after the node that made the value, which is
then cut to its length on the host, as for a `Ragged` trace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np
from aesara.graph.basic import Apply
from aesara.tensor.elemwise import CAReduce, DimShuffle, Elemwise
from aesara.tensor.math import Argmax, MaxAndArgmax
from aesara.tensor.random.op import RandomVariable

from aejax.linker.checks import require
from aejax.linker.errors import IndexOutOfBoundsError, LoweringError
from aejax.linker.lengths.concrete import is_traced
from aejax.linker.lengths.ragged import (
    Masked,
    Ragged,
    as_index,
    buffer_of,
    each_output,
    from_end,
    index_dtype,
    row_count,
    rows_padded,
    selected_rows_first,
    with_length_of,
)


def nonzero_positions(a: Any) -> tuple[Masked, ...]:
    """``nonzero(a)`` of a traced array or a `Ragged` one: one masked coordinate vector per axis.

    A `Ragged` value's padding rows count as zeros; its rows are the
    buffer's first ones, so a position in the buffer is one in the value.
    """
    if isinstance(a, Ragged):
        a = _outside_filled(a.as_masked(), 0)
    mask = jnp.ravel(a) != 0
    coordinates = jnp.unravel_index(jnp.arange(mask.shape[0]), jnp.shape(a))
    return tuple(Masked(c.astype(index_dtype()), mask) for c in coordinates)


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


def gather(x: Any, indices: Sequence[Any], node: Apply) -> Any:
    """``x[indices]`` for integer indices or slices, one per leading axis; ``x`` may be `Ragged`, indices `Masked`.

    A negative index counts from the end of its axis, for a `Ragged` value
    from the end of its run-time length. With masked indices the result is
    masked as they are.
    """
    masked = any(isinstance(i, Masked) for i in indices)
    if masked and not isinstance(indices[0], Masked):
        raise LoweringError(
            f"node {node} indexes an axis other than the first with a selection x[nonzero(m)] of run-time length",
            node=node,
        )
    mask = common_mask(indices, node) if masked else True
    sizes = _axis_sizes(x, len(indices))
    _require_in_bounds(sizes, indices, mask, node)
    positions = _positions(sizes, indices)
    picked = jnp.asarray(buffer_of(x))[positions]
    return Masked(picked, mask) if masked else picked


def _positions(sizes: Sequence[Any], indices: Sequence[Any]) -> tuple[Any, ...]:
    """``indices`` as positions: negative integers counted from the end of their axis (of ``sizes``), slices as they are."""
    return tuple(i if isinstance(i, slice) else from_end(size, rows(i)) for size, i in zip(sizes, indices))


def boolean_selection(x: Any, flags: Any, node: Apply, cuts: tuple[slice, ...] = ()) -> Masked:
    """``x[flags, *cuts]`` for a traced boolean mask over the leading axes of ``x`` (either may be `Ragged`),
    then static slices of the axes after them."""
    buffer = jnp.asarray(buffer_of(x))
    positions = nonzero_positions(mask_over_buffer(flags, x, node))
    return Masked(buffer[(*(p.buffer for p in positions), *cuts)], positions[0].mask)


def mask_over_buffer(flags: Any, x: Any, node: Apply) -> Any:
    """A boolean mask of ``x`` (either may be `Ragged`) as an array over the rows of ``x``'s buffer.

    Their lengths must agree (`IndexError`, as numpy raises); the mask is
    then padded with false rows, or cut, to the rows of the buffer, so every
    position it selects is inside ``x``.
    """
    _require_same_length(flags, x, node)
    if isinstance(flags, Ragged):
        flags = _outside_filled(flags.as_masked(), False)
    return rows_padded(flags, jnp.shape(buffer_of(x))[0])


def _require_same_length(flags: Any, x: Any, node: Apply) -> None:
    """Check that a boolean mask is as long as the value it indexes: while tracing if both lengths are known."""
    message = f"the boolean index of node {node} does not match the length of the array it indexes"
    mask_dims = jnp.shape(buffer_of(flags))[1:]
    if mask_dims != jnp.shape(buffer_of(x))[1 : 1 + len(mask_dims)]:
        raise IndexOutOfBoundsError(f"{message}: a mask of shape (n, {', '.join(map(str, mask_dims))})")
    lengths = [row_count(flags), row_count(x)]
    if any(is_traced(n) for n in lengths):
        require(lengths[0] == lengths[1], IndexError, message, f"node {node}")
    elif lengths[0] != lengths[1]:
        raise IndexOutOfBoundsError(f"{message}: the mask has {lengths[0]} rows, the array {lengths[1]}")


def _axis_sizes(x: Any, count: int) -> list[Any]:
    """The sizes of the first ``count`` axes of ``x``; a `Ragged` value's first one is its run-time length."""
    sizes: list[Any] = list(jnp.shape(buffer_of(x))[:count])
    if isinstance(x, Ragged):
        sizes[0] = x.length
    return sizes


def _require_in_bounds(sizes: Sequence[Any], indices: Sequence[Any], mask: Any, node: Apply) -> None:
    """Check the selected entries of integer ``indices`` (slices are not checked) against the ``sizes`` of their axes."""
    for axis, (size, index) in enumerate(zip(sizes, indices)):
        if not isinstance(index, slice):
            require_inside(rows(index), size, axis, node, selected=mask)


def require_inside(index: Any, size: Any, axis: int, node: Apply, selected: Any = True) -> None:
    """A run-time check that ``index`` (where ``selected``) is inside ``axis`` of ``size``, else `IndexError`."""
    index = as_index(index)
    inside = (index >= -size) & (index < size)
    of_size = "whose length is known only at run time" if is_traced(size) else f"with size {size}"
    message = f"an index of node {node} is out of bounds for axis {axis} {of_size}"
    require(jnp.all(inside | jnp.logical_not(selected)), IndexError, message, f"node {node}")


def scatter(x: Any, values: Any, indices: Sequence[Any], set_instead_of_inc: bool, node: Apply) -> Any:
    """``x`` with ``values`` set at (or added to) integer ``indices``, one per leading axis.

    ``x`` may be `Ragged` (the result keeps its length; a negative index
    counts from its run-time end), the indices `Masked` (rows outside their
    mask are dropped). ``values`` is masked like the indices, or broadcast to
    every selected row, or has one row per selected row, in order: an array,
    or the rows of a `Ragged` value.
    """
    buffer = jnp.asarray(buffer_of(x))
    selected = any(isinstance(i, Masked) for i in indices)
    if selected:
        mask = common_mask([*indices, values], node)
    else:
        mask, values = True, _one_per_index(selected_rows_first(values), indices[0], node)
    sizes = _axis_sizes(x, len(indices))
    _require_in_bounds(sizes, indices, mask, node)
    positions = list(_positions(sizes, indices))
    if selected and _one_row_per_selected(values, buffer, indices):
        positions = _first_selected(positions, mask, values, node)
        mask = positions[0] >= 0
    first = jnp.where(mask, positions[0], buffer.shape[0])
    target = buffer.at[(first, *positions[1:])]
    update = jnp.asarray(buffer_of(rows(values)), buffer.dtype)
    updated = target.set(update, mode="drop") if set_instead_of_inc else target.add(update, mode="drop")
    return with_length_of(x, updated)


def _one_per_index(values: Any, index: Any, node: Apply) -> Any:
    """``values`` for an index array: a `Ragged` value's rows, one per index (checked), padded or cut to them."""
    if not isinstance(values, Ragged):
        return values
    count = jnp.shape(index)[0]
    require(
        values.length == count,
        ValueError,
        f"node {node} sets {count} rows from a value of another length (known only at run time)",
        f"node {node}",
    )
    return rows_padded(values.buffer, count)


def _one_row_per_selected(values: Any, x: Any, indices: Sequence[Any]) -> bool:
    """Whether ``values`` has a row for each row of ``x[indices]`` (a `Ragged` value, or an array neither masked nor broadcast)."""
    if isinstance(values, Ragged):
        return True
    selected_ndim = jnp.ndim(x) - len(indices) + 1
    return not isinstance(values, Masked) and jnp.ndim(values) == selected_ndim and jnp.shape(values)[0] != 1


def _first_selected(positions: Sequence[Any], mask: Any, values: Any, node: Apply) -> list[Any]:
    """The selected entries of each of ``positions``, in order, one per row of ``values`` (``-1`` past the selection).

    The selection must have as many rows as ``values`` (a `Ragged` value's
    run-time length), as Aesara requires of the values set at it.
    """
    rows_given = jnp.shape(buffer_of(values))[0]
    count = row_count(values)
    require(
        jnp.sum(mask) == count,
        ValueError,
        f"node {node} sets {count} rows at a selection of another length (known only at run time)",
        f"node {node}",
    )
    (order,) = jnp.nonzero(mask, size=rows_given, fill_value=-1)
    return [jnp.where(order >= 0, jnp.take(p, order, mode="clip"), -1) for p in positions]


def is_row_wise(node: Apply) -> bool:
    """Whether ``node`` computes each row of its outputs from the same row of its inputs.

    Elementwise Ops do, and so does a `DimShuffle` that keeps the rows as
    its first axis (``x[:, None]``, as ``stack(..., axis=1)`` makes).
    """
    if isinstance(node.op, DimShuffle):
        return node.op.new_order[:1] == (0,)
    return isinstance(node.op, Elemwise)


def is_elementwise_draw(node: Apply) -> bool:
    """Whether ``node`` is a random variable drawn element by element from its parameters, with no ``size``.

    Such a draw (``bernoulli(p)``, ``normal(mu, sigma)``: scalar support and
    scalar parameters) has the parameters' broadcast shape, and each element
    is drawn independently from the same element of the parameters: it works
    row by row, like an elementwise Op. With a ``size`` the shape is the
    size's, not the parameters'.
    """
    op = node.op
    if not isinstance(op, RandomVariable) or op.ndim_supp != 0 or any(op.ndims_params):
        return False
    size = node.inputs[1]
    return getattr(size.type, "shape", None) == (0,)


def draw_masked(node: Apply, fn: Callable[..., Any], args: Sequence[Any]) -> tuple[Any, Any]:
    """An elementwise draw (`is_elementwise_draw`) from masked parameters: every row drawn, masked as they are.

    ``args`` are the node's (state, size, dtype, *params); the new state is
    returned as it is.
    """
    state, size, dtype, *params = args
    mask = common_mask(params, node)
    new_state, sample = fn(state, size, dtype, *[rows(p) for p in params])
    return new_state, Masked(sample, mask)


def is_extremum(node: Apply) -> bool:
    """Whether ``node`` takes a maximum and its position, or only its position (``max``, ``argmax``)."""
    return isinstance(node.op, (MaxAndArgmax, Argmax))


def is_reduction(node: Apply) -> bool:
    """Whether ``node`` is a reduction with a scalar Op (sum, product, max, ...)."""
    return isinstance(node.op, CAReduce)
