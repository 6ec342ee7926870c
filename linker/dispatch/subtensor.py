"""Indexing with concrete slice bounds, traced scalar indices, and rows of `Ragged` traces.

Integer indices are checked against the axis they index, as Aesara does (JAX
would clamp them): a concrete index out of bounds raises
`IndexOutOfBoundsError` while tracing, a traced one fails the call with
`IndexError` after it returns (`aejax.linker.checks.require`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np
from aesara.graph.basic import Constant
from aesara.tensor.subtensor import (
    AdvancedIncSubtensor,
    AdvancedIncSubtensor1,
    AdvancedSubtensor,
    AdvancedSubtensor1,
    IncSubtensor,
    Subtensor,
    indices_from_subtensor,
)
from aesara.tensor.type import TensorType, integer_dtypes
from aesara.tensor.type_other import SliceType
from jax import lax

from aejax.linker.checks import require
from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.dispatch.rows import by_select, row_at, with_row_at
from aejax.linker.errors import IndexOutOfBoundsError, NotStaticError
from aejax.linker.lengths import masked
from aejax.linker.lengths.concrete import is_traced, static_scalars
from aejax.linker.lengths.consumers import takes_run_time_lengths
from aejax.linker.lengths.ragged import (
    RUN_TIME_LENGTH,
    Masked,
    Ragged,
    RangeRows,
    as_selection,
    buffer_of,
    from_end,
    row_count,
    selected_rows_first,
    slice_positions,
    with_length_of,
)


@jax_funcify.register(Subtensor)
@jax_funcify.register(AdvancedSubtensor)
@jax_funcify.register(AdvancedSubtensor1)
def _subtensor(op: Any, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    idx_list = getattr(op, "idx_list", None)
    by_boolean_mask = isinstance(op, AdvancedSubtensor) and _slices_after_a_mask(node, 1) is not None
    by_arrays = _indexed_by_arrays_only(node, node_indices_from=1)

    def subtensor(x: Any, *index_values: Any) -> Any:
        if by_boolean_mask and (is_traced(index_values[0]) or isinstance(x, RUN_TIME_LENGTH)):
            mask, cuts = selected_rows_first(index_values[0]), static_slices(index_values[1:])
            return masked.boolean_selection(selected_rows_first(x), mask, node, cuts)
        if by_arrays and any(isinstance(v, RUN_TIME_LENGTH) for v in (x, *index_values)):
            return masked.gather(selected_rows_first(x), [as_selection(v) for v in index_values], node)
        indices = tuple(indices_from_subtensor(index_values, idx_list))
        if isinstance(x, Ragged):
            return ragged_subtensor(x, indices, node)
        if isinstance(x, RangeRows):
            if isinstance(indices[0], slice):
                return x.sliced(indices[0])
            return x.row(row_position(x.length, indices[0], node))
        if isinstance(x, Masked) and _rows_sliced_first(indices):
            return ragged_subtensor(selected_rows_first(x), indices, node)
        if any(isinstance(v, Masked) for v in (x, *index_values)):
            return masked.gather(selected_rows_first(x), index_values, node)
        _require_concrete_masks(index_values, node)
        check_bounds(jnp.shape(x), indices, node)
        if selects_a_row(x, indices):
            return row_at(x, from_end(jnp.shape(x)[0], indices[0]))[static_slices(indices[1:])]
        return indexable(x, index_values)[static_slices(indices)]

    return takes_run_time_lengths(
        subtensor,
        ragged=bool(idx_list) or by_arrays or by_boolean_mask,
        ranges=bool(idx_list) and len(idx_list) == 1,
        masked=not idx_list,
    )


def _require_concrete_masks(index_values: Sequence[Any], node: Any) -> None:
    """`NotStaticError` if a boolean index is traced: the length it selects depends on its values.

    A leading mask followed by slices only is a `Masked` selection (an update
    at it, by full slices only, a ``where``); any other
    (a mask beside an index array or another mask: ``x[[0], m]``,
    ``x[m1, m2]``) needs the mask's values, so the node runs on the host
    between programs (`aejax.linker.program.host_node`).
    """
    for value in index_values:
        if is_traced(value) and getattr(value, "dtype", None) == np.bool_:
            raise NotStaticError(
                f"node {node} indexes with a traced boolean mask beside other indices; the number "
                "of elements it selects depends on the mask's values"
            )


def _indexed_by_arrays_only(node: Any, node_indices_from: int) -> bool:
    """Whether ``node`` indexes with integer arrays only, one per leading axis (no slices, no ``None``).

    Its index inputs start at position ``node_indices_from``.
    """
    advanced = (AdvancedSubtensor, AdvancedSubtensor1, AdvancedIncSubtensor, AdvancedIncSubtensor1)
    if node is None or not isinstance(node.op, advanced):
        return False
    indices = node.inputs[node_indices_from:]
    return all(isinstance(i.type, TensorType) and i.type.dtype in integer_dtypes for i in indices)


def _rows_sliced_first(indices: tuple[Any, ...]) -> bool:
    """Whether ``indices`` slice the rows and keep them first: a leading slice, no `Masked` index, and the
    array indices after it side by side (numpy moves the axes of array indices apart by a slice to the front)."""
    if not indices or not isinstance(indices[0], slice) or any(isinstance(i, Masked) for i in indices):
        return False
    arrays = [k for k, i in enumerate(indices) if i is not None and not isinstance(i, slice)]
    return not arrays or arrays[-1] - arrays[0] == len(arrays) - 1


def indexable(x: Any, index_values: Sequence[Any]) -> Any:
    """``x`` as a JAX array when an index is traced (a numpy constant cannot take a tracer)."""
    return jnp.asarray(x) if any(is_traced(v) for v in index_values) else x


def check_bounds(shape: tuple[int, ...], indices: tuple[Any, ...], node: Any) -> None:
    """Check every integer index in ``indices`` against the size of the axis it indexes.

    Axes are counted as numpy counts them: a slice or an integer (array) index
    takes one axis, a boolean mask as many as it has dimensions, ``None`` none.
    """
    _require_broadcastable(indices, node)
    axis = 0
    for index in indices:
        if index is None:
            continue
        kind = "" if isinstance(index, slice) else _dtype_kind(index)
        if kind == "b":
            _check_mask_shape(index, shape[axis : axis + np.ndim(index)], axis, node)
            axis += np.ndim(index)
            continue
        if kind in ("i", "u") and axis < len(shape):
            _check_axis(index, axis, shape[axis], node)
        axis += 1


def _check_mask_shape(mask: Any, sizes: tuple[Any, ...], axis: int, node: Any) -> None:
    """`IndexOutOfBoundsError` (an `IndexError`, as numpy's) unless ``mask`` has the sizes of the axes it indexes."""
    mask_shape = tuple(np.shape(mask))
    if mask_shape and not any(is_traced(size) for size in sizes) and mask_shape != tuple(sizes):
        raise IndexOutOfBoundsError(
            f"boolean index did not match shape of indexed array in index {axis}: got {mask_shape}, "
            f"expected {tuple(sizes)} in node {node}"
        )


def _require_broadcastable(indices: tuple[Any, ...], node: Any) -> None:
    """Raise `IndexError`, as numpy does, when the integer array indices cannot broadcast together."""
    shapes = [np.shape(i) for i in indices if i is not None and not isinstance(i, slice) and _dtype_kind(i) in "iu"]
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexOutOfBoundsError(
            f"the index arrays of node {node} cannot be broadcast together (shapes {', '.join(map(str, shapes))})"
        ) from None


def _dtype_kind(index: Any) -> str:
    dtype = getattr(index, "dtype", None)
    return np.dtype(dtype if dtype is not None else type(index)).kind


def _check_axis(index: Any, axis: int, size: Any, node: Any) -> None:
    """Check ``index`` against ``size``, the size of ``axis`` (traced for a value of run-time length)."""
    if is_traced(index) and not is_traced(size) and size == 0 and np.size(index):  # JAX cannot index an empty axis
        raise IndexOutOfBoundsError(f"an index is out of bounds for axis {axis} with size 0 in node {node}")
    if is_traced(index) or is_traced(size):
        masked.require_inside(index, size, axis, node)
        return
    values = np.asarray(index, "int64")
    outside = values[(values < -size) | (values >= size)]
    if outside.size:
        raise IndexOutOfBoundsError(
            f"index {outside.flat[0]} is out of bounds for axis {axis} with size {size} in node {node}"
        )


def static_slices(indices: tuple[Any, ...]) -> tuple[Any, ...]:
    """``indices`` with every slice bound concrete (a traced bound decides a shape)."""
    return tuple(
        slice(*(None if b is None else static_scalars([b], "a slice bound")[0] for b in (i.start, i.stop, i.step)))
        if isinstance(i, slice)
        else i
        for i in indices
    )


def ragged_subtensor(x: Ragged, indices: tuple[Any, ...], node: Any) -> Any:
    """Basic indexing of ``node``'s `Ragged` value; a slice of its rows is still ragged."""
    first, rest = indices[0], static_slices(indices[1:])
    check_bounds(jnp.shape(x.buffer), (slice(None), *rest), node)
    if not isinstance(first, slice):
        return ragged_row(x, first, node)[rest]
    rows = x.sliced(first)
    return Ragged(jnp.asarray(rows.buffer)[(slice(None), *rest)], rows.length) if rest else rows


def ragged_row(value: Ragged, row: Any, node: Any) -> Any:
    """Row ``row`` (negative counts from the run-time end) of ``node``'s `Ragged` value."""
    position = row_position(value.length, row, node, value.at_least)
    return lax.dynamic_index_in_dim(value.buffer, position, keepdims=False)


def row_position(length: Any, row: Any, node: Any, at_least: int = 0) -> Any:
    """Where row ``row`` (negative counts from the end) of ``length`` rows is; `IndexError` past them, as numpy raises.

    A constant ``row`` among the ``at_least`` rows there always are is not checked.
    """
    if is_traced(row) or not -at_least <= row < at_least:
        _check_axis(row, 0, length, node)
    return from_end(length, row)


@jax_funcify.register(IncSubtensor)
@jax_funcify.register(AdvancedIncSubtensor)
@jax_funcify.register(AdvancedIncSubtensor1)
def _inc_subtensor(op: Any, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    idx_list = getattr(op, "idx_list", None)
    set_instead_of_inc = op.set_instead_of_inc
    ignore_duplicates = getattr(op, "ignore_duplicates", False)
    # x[i] += y read as numpy does (each position once) is written for whole arrays only: index
    # arrays of run-time length (which may repeat a position) enter it from the host, after a split.
    whole_arrays_only = ignore_duplicates and not set_instead_of_inc
    by_boolean_mask = isinstance(op, AdvancedIncSubtensor) and _only_full_slices_after_a_mask(node, 2)
    by_arrays = not whole_arrays_only and _indexed_by_arrays_only(node, node_indices_from=2)

    def inc_subtensor(x: Any, y: Any, *index_values: Any) -> Any:
        if by_boolean_mask and (is_traced(index_values[0]) or any(isinstance(v, RUN_TIME_LENGTH) for v in (x, y))):
            x, flags = selected_rows_first(x), selected_rows_first(index_values[0])
            flags = masked.mask_over_buffer(flags, x, node)
            return with_length_of(x, boolean_mask_update(jnp.asarray(buffer_of(x)), y, flags, set_instead_of_inc, node))
        if by_arrays and any(isinstance(v, RUN_TIME_LENGTH) for v in (x, y, *index_values)):
            indices = [as_selection(v) for v in index_values]
            return masked.scatter(selected_rows_first(x), y, indices, set_instead_of_inc, node)
        if isinstance(x, Ragged) or isinstance(y, Ragged):
            indices = tuple(indices_from_subtensor(index_values, idx_list))
            return ragged_update(x, y, indices, set_instead_of_inc, node)
        if any(isinstance(v, Masked) for v in (x, y, *index_values)):
            return masked.scatter(selected_rows_first(x), y, index_values, set_instead_of_inc, node)
        indices = tuple(indices_from_subtensor(index_values, idx_list) if idx_list else index_values)
        if idx_list and _rows_with_traced_bounds(indices):  # x[a:b] = y, a or b traced: rows at run-time positions
            return ragged_update(x, y, indices, set_instead_of_inc, node)
        _require_concrete_masks(index_values, node)
        check_bounds(jnp.shape(x), indices, node)
        if idx_list and selects_a_row(x, indices):
            return row_updated(jnp.asarray(x), static_slices(indices), y, set_instead_of_inc)
        return updated_at(jnp.asarray(x), static_slices(indices), y, set_instead_of_inc, ignore_duplicates)

    return takes_run_time_lengths(
        inc_subtensor,
        ragged=bool(idx_list) or by_arrays or by_boolean_mask,
        masked=not idx_list and not whole_arrays_only,
    )


def selects_a_row(x: Any, indices: tuple[Any, ...]) -> bool:
    """Whether ``indices`` start with a traced integer scalar into the first axis of ``x``, a buffer small
    enough for selects (`aejax.linker.dispatch.rows`): under ``vmap`` the position may differ per chain.

    The other indices must be slices or integer scalars: with an array among
    them, numpy's advanced indexing may put the indexed axes first
    (``x[i, :, [0, 1]]`` is not ``x[i][:, [0, 1]]``).
    """
    first = indices[0] if indices else None
    return (
        _integer_scalar(first)
        and is_traced(first)
        and all(isinstance(i, slice) or _integer_scalar(i) for i in indices[1:])
        and jnp.ndim(x) > 0
        and by_select(x)
    )


def _integer_scalar(index: Any) -> bool:
    return index is not None and not isinstance(index, slice) and jnp.ndim(index) == 0 and _dtype_kind(index) in "iu"


def row_updated(x: Any, indices: tuple[Any, ...], y: Any, set_instead_of_inc: bool) -> Any:
    """``x`` with ``x[indices]`` set to (or incremented by) ``y``, where ``indices[0]`` picks a row (`selects_a_row`).

    In numpy, on a copy: ``x[indices] = y`` (or ``+= y``); only the picked
    row changes, so duplicates cannot arise.
    """
    position = from_end(x.shape[0], indices[0])
    row = updated_at(row_at(x, position), indices[1:], y, set_instead_of_inc, ignore_duplicates=False)
    return with_row_at(x, position, row)


def updated_at(x: Any, indices: tuple[Any, ...], y: Any, set_instead_of_inc: bool, ignore_duplicates: bool) -> Any:
    """``x`` with ``x[indices]`` set to (or incremented by) ``y``.

    An increment adds ``y`` once per index, so a repeated position adds it
    as often as it repeats (``numpy.add.at``), unless ``ignore_duplicates``:
    then it is numpy's ``x[indices] += y``, each position written once with
    its old value plus the value of its last occurrence.
    """
    target = x.at[indices]
    if set_instead_of_inc:
        return target.set(y)
    if ignore_duplicates:
        return target.set((x[indices] + y).astype(x.dtype))
    return target.add(y)


def _rows_with_traced_bounds(indices: tuple[Any, ...]) -> bool:
    """Whether the first of ``indices`` is a slice whose start or stop is traced."""
    first = indices[0] if indices else None
    return isinstance(first, slice) and any(is_traced(b) for b in (first.start, first.stop))


def ragged_update(x: Any, y: Any, indices: tuple[Any, ...], set_instead_of_inc: bool, node: Any) -> Any:
    """``node``'s ``x`` with ``x[indices]`` set to (or incremented by) ``y``, where ``x`` or ``y`` is `Ragged`
    or the first index a slice with traced bounds.

    The first index picks rows of ``x``'s run-time length: one row, or the
    rows of a slice, each written from the matching row of ``y`` (which has
    as many rows as the slice, or one, broadcast).
    """
    buffer, length = (x.buffer, x.length) if isinstance(x, Ragged) else (jnp.asarray(x), x.shape[0])
    first, rest = indices[0], static_slices(indices[1:])
    values = y.buffer if isinstance(y, Ragged) else jnp.asarray(y, buffer.dtype)
    if isinstance(first, slice):
        start, step, count = slice_positions(length, first)
        one_per_row = isinstance(y, Ragged) or (values.ndim == buffer.ndim and values.shape[0] != 1)
        if one_per_row:
            require(
                row_count(y) == count,
                ValueError,
                f"node {node} sets a slice of rows from a value of another length (known only at run time)",
                f"node {node}",
            )
        rows = values.shape[0] if one_per_row else buffer.shape[0]
        taken = jnp.arange(rows)
        positions = jnp.where(taken < count, start + taken * step, buffer.shape[0])
        values = values if one_per_row else jnp.broadcast_to(values, (rows,) + buffer[(0, *rest)].shape)
    else:
        positions = row_position(length, first, node)
    target = buffer.at[(positions, *rest)]
    updated = target.set(values, mode="drop") if set_instead_of_inc else target.add(values, mode="drop")
    return with_length_of(x, updated)


def _slices_after_a_mask(node: Any, node_indices_from: int) -> int | None:
    """How many slices follow ``node``'s first index input (at ``node_indices_from``) if it is a boolean mask and
    only slices follow it (``x[mask]``: 0, ``m[mask, 1:]``: 1); ``None`` otherwise."""
    indices = [] if node is None else node.inputs[node_indices_from:]
    first_is_mask = bool(indices) and getattr(indices[0].type, "dtype", None) == "bool"  # a leading slice has no dtype
    if not first_is_mask or not all(isinstance(i.type, SliceType) for i in indices[1:]):
        return None
    return len(indices) - 1


def _only_full_slices_after_a_mask(node: Any, node_indices_from: int) -> bool:
    """Whether ``node`` indexes with a boolean mask followed by constant full slices only (``x[mask]``,
    ``x[mask, ...]``, ``x[mask, :]``): numpy's ``x[mask]``, as axes after the last index are taken whole."""
    if _slices_after_a_mask(node, node_indices_from) is None:
        return False
    after = node.inputs[node_indices_from + 1 :]
    return all(isinstance(i, Constant) and i.data == slice(None) for i in after)


def boolean_mask_update(x: Any, y: Any, mask: Any, set_instead_of_inc: bool, node: Any) -> Any:
    """``x`` with ``x[mask]`` set to (or incremented by) ``y``, for a traced boolean ``mask``.

    As in numpy, ``y`` is either one value per selected element, in row-major
    order of the mask (``x[mask] = y``), or broadcast to all of them. The
    shape of ``x[mask]`` depends on the mask's values, so the update is written
    with ``where`` over the whole of ``x``; a ``y`` with one row per selected
    element is gathered by each element's rank among the selected ones, and a
    check fails the call when their numbers differ.
    """
    tail = x.shape[mask.ndim :]
    if isinstance(y, (Masked, Ragged)):  # x[mask] computed on (a selection's rows, an until trace)
        rows_first = selected_rows_first(y)
        values = _by_rank(mask, tail, jnp.asarray(rows_first.buffer, x.dtype), rows_first.length, node)
    elif jnp.ndim(y) > len(tail) and jnp.shape(y)[0] != 1:
        values = _by_rank(mask, tail, jnp.asarray(y, x.dtype), jnp.shape(y)[0], node)
    else:
        y = jnp.asarray(y, x.dtype)
        values = jnp.broadcast_to(y[0] if y.ndim > len(tail) else y, tail)
    where = jnp.reshape(mask, mask.shape + (1,) * len(tail))
    return jnp.where(where, values if set_instead_of_inc else x + values, x)


def _by_rank(mask: Any, tail: tuple[int, ...], rows: Any, count: Any, node: Any) -> Any:
    """``rows``' first ``count`` rows laid out where ``mask`` holds, in row-major order; a check that it holds ``count`` times."""
    flat_mask = jnp.ravel(mask)
    require(
        jnp.sum(flat_mask) == count,
        ValueError,
        f"node {node} assigns values to the elements a boolean mask selects, but not one per element",
        f"node {node}",
    )
    rank = jnp.clip(jnp.cumsum(flat_mask) - 1, 0, rows.shape[0] - 1)
    return rows[rank].reshape(mask.shape + tail)
