"""Values whose leading length is only known when the program runs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from aejax.linker.errors import NotStaticError


@jax.tree_util.register_pytree_node_class
@dataclass(frozen=True)
class Ragged:
    """A buffer whose first ``length`` rows are the value; the rest is padding.

    A `Scan` with an ``until`` condition returns its traces this way: how
    many steps it ran is known only at run time; so do arrays whose size is
    computed from such a length, with a buffer as long as the graph's bound
    (`aejax.linker.lengths.bounds`). A `Ragged` value may leave a jit program, where
    it is trimmed (`trim`). Inside the program, the lowerings that take it
    (`aejax.linker.lengths.consumers`: indexing, slicing, updates, Scans) take it, as do
    elementwise Ops and reductions over its rows (`aejax.linker.lengths.ragged_rows`);
    for any other consumer the linker splits the program after the node that
    makes it.
    """

    buffer: Any
    length: Any
    at_least: int = 0
    """Rows it has whatever happens at run time (an ``until`` loop that may run ``n >= 1`` steps runs one):
    reading one of them needs no run-time check."""

    def tree_flatten(self) -> tuple[tuple[Any, Any], int]:
        return (self.buffer, self.length), self.at_least

    @classmethod
    def tree_unflatten(cls, at_least: int, children: tuple[Any, Any]) -> Ragged:
        return cls(*children, at_least)

    def trim(self) -> Any:
        """The value: the buffer cut to its run-time length (outside jit; numpy, so no
        program is compiled per length)."""
        return np.asarray(self.buffer)[: int(self.length)]

    def as_masked(self) -> Masked:
        """The same rows as a `Masked` value (the first ``length`` rows selected)."""
        return Masked(self.buffer, jnp.arange(self.buffer.shape[0]) < self.length)

    def sliced(self, rows: slice) -> Ragged:
        """``value[rows]`` for a slice with a constant step (bounds may be traced), still ragged.

        ``value[start:stop]`` with constant bounds ``>= 0`` cuts the buffer
        itself (``stop`` bounds the rows); other slices gather their rows.
        """
        if _is_cut(rows):
            start = 0 if rows.start is None else int(rows.start)
            stop = None if rows.stop is None else int(rows.stop)
            end = self.length if stop is None else jnp.minimum(self.length, stop)
            kept = self.at_least if stop is None else min(self.at_least, stop)
            return Ragged(self.buffer[start:stop], jnp.maximum(end - start, 0), max(kept - start, 0))
        return rows_of(self.buffer, self.length, rows)


@jax.tree_util.register_pytree_node_class
@dataclass(frozen=True)
class Masked:
    """The rows of ``buffer`` where ``mask`` holds, in order: a value of run-time length.

    ``x[nonzero(mask)]`` inside jit (see `aejax.linker.lengths.masked`). Like a
    `Ragged` value it may leave a jit program, where it is cut (`trim`).
    """

    buffer: Any
    mask: Any

    def tree_flatten(self) -> tuple[tuple[Any, Any], None]:
        return (self.buffer, self.mask), None

    @classmethod
    def tree_unflatten(cls, aux: None, children: tuple[Any, Any]) -> Masked:
        return cls(*children)

    @property
    def length(self) -> Any:
        """How many rows are selected (traced)."""
        return jnp.sum(self.mask, dtype=index_dtype())

    def trim(self) -> Any:
        """The value: the selected rows (outside jit)."""
        return np.asarray(self.buffer)[np.asarray(self.mask)]

    def as_ragged(self) -> Ragged:
        """The selected rows moved to the front of a buffer as long: a `Ragged` value of the same rows."""
        (selected,) = jnp.nonzero(self.mask, size=self.mask.shape[0], fill_value=0)
        return Ragged(jnp.asarray(self.buffer)[selected], self.length)


@jax.tree_util.register_pytree_node_class
@dataclass(frozen=True)
class RangeRows:
    """``arange(start, stop, step)`` with traced bounds, never materialised.

    Its length is known only at run time. A Scan over it reads row ``i`` as
    ``start + i * step`` from its loop counter; its shape is its length. Any
    other use needs the bounds while tracing (made static, if they come from
    scalar inputs).
    """

    start: Any
    step: Any
    length: Any
    dtype: str

    @classmethod
    def of(cls, start: Any, stop: Any, step: Any, dtype: str) -> RangeRows:
        """The rows of ``arange(start, stop, step)`` (numpy's length rule)."""
        length = jnp.maximum(jnp.ceil((stop - start) / step), 0).astype(index_dtype())
        return cls(start, step, length, dtype)

    def tree_flatten(self) -> tuple[tuple[Any, Any, Any], str]:
        return (self.start, self.step, self.length), self.dtype

    @classmethod
    def tree_unflatten(cls, dtype: str, children: tuple[Any, Any, Any]) -> RangeRows:
        return cls(*children, dtype)

    def row(self, index: Any) -> Any:
        """Row ``index``: ``start + index * step``."""
        return jnp.asarray(self.start + index * self.step).astype(self.dtype)

    def sliced(self, rows: slice) -> RangeRows:
        """``self[rows]`` for a slice with a constant step (bounds may be traced)."""
        first, step, count = slice_positions(self.length, rows)
        return RangeRows(self.start + first * self.step, self.step * step, count, self.dtype)

    def as_ragged(self, bound: int) -> Ragged:
        """The rows as a `Ragged` buffer of ``bound`` rows (at least the range's length)."""
        return Ragged(self.row(jnp.arange(bound)), jnp.minimum(self.length, bound))

    def trim(self) -> Any:
        """The value as an array (outside jit)."""
        start, step, length = (np.asarray(v).item() for v in (self.start, self.step, self.length))
        return start + step * np.arange(length, dtype=self.dtype)


def _is_cut(rows: slice) -> bool:
    """Whether ``rows`` is ``start:stop`` with constant bounds ``>= 0`` (either may be absent) and step 1."""
    bounds_fixed = all(
        b is None or (not isinstance(b, jax.core.Tracer) and int(b) >= 0) for b in (rows.start, rows.stop)
    )
    return bounds_fixed and (rows.step is None or (not isinstance(rows.step, jax.core.Tracer) and int(rows.step) == 1))


def slice_positions(length: Any, rows: slice) -> tuple[Any, int, Any]:
    """Where ``x[rows]`` starts in ``x`` of ``length`` rows, its step and its number of rows.

    numpy's rules, with ``length`` and the bounds possibly traced; the step
    must be a constant.
    """
    step = 1 if rows.step is None else _constant_step(rows.step)
    if step > 0:
        first = _clipped(rows.start, length, 0, 0, length)
        stop = _clipped(rows.stop, length, length, 0, length)
        return first, step, jnp.maximum((stop - first + step - 1) // step, 0)
    first = _clipped(rows.start, length, length - 1, -1, length - 1)
    stop = _clipped(rows.stop, length, -1, -1, length - 1)
    return first, step, jnp.maximum((first - stop - step - 1) // -step, 0)


def _constant_step(step: Any) -> int:
    try:
        value = int(np.asarray(step).item())
    except Exception as error:
        raise NotStaticError(
            f"the step of a slice of a run-time length must be known while tracing ({error})"
        ) from error
    if value == 0:
        raise ValueError("slice step cannot be zero")
    return value


def from_end(length: Any, index: Any) -> Any:
    """``index`` with a negative one counted from ``length``, as numpy counts it (in `index_dtype`: a narrow one would wrap)."""
    index = as_index(index)
    return jnp.where(index < 0, length + index, index)


def index_dtype() -> np.dtype:
    """The widest integer dtype of the program being traced: int64, int32 in one computed without x64."""
    return jax.dtypes.canonicalize_dtype(np.int64)


def as_index(index: Any) -> Any:
    """An integer index in `index_dtype`, so that comparing it with a size or adding one cannot wrap around."""
    return jnp.asarray(index, index_dtype())


def buffer_of(value: Any) -> Any:
    """The array of ``value``: a `Ragged` value's bound-sized buffer, anything else as it is."""
    return value.buffer if isinstance(value, Ragged) else value


def with_length_of(value: Any, buffer: Any) -> Any:
    """``buffer``, computed from ``value``'s buffer, as a value of its length: `Ragged` if ``value`` is."""
    return Ragged(buffer, value.length) if isinstance(value, Ragged) else buffer


def row_count(value: Any) -> Any:
    """How many rows ``value`` has: traced for a `Ragged` value or a range with traced bounds, else its first size."""
    return value.length if isinstance(value, (Ragged, RangeRows)) else jnp.shape(value)[0]


def as_selection(value: Any) -> Any:
    """A `Ragged` value as the `Masked` selection of its rows (`Ragged.as_masked`); anything else as it is."""
    return value.as_masked() if isinstance(value, Ragged) else value


def selected_rows_first(value: Any) -> Any:
    """A `Masked` selection as a `Ragged` value of its rows (`Masked.as_ragged`); anything else as it is."""
    return value.as_ragged() if isinstance(value, Masked) else value


def _clipped(bound: Any, length: Any, default: Any, low: Any, high: Any) -> Any:
    if bound is None:
        return default
    return jnp.clip(from_end(length, bound), low, high)


def rows_padded(buffer: Any, rows: int) -> Any:
    """``buffer`` cut or zero-padded to ``rows`` rows."""
    buffer = jnp.asarray(buffer)
    if buffer.shape[0] >= rows:
        return buffer[:rows]
    return jnp.concatenate([buffer, jnp.zeros((rows - buffer.shape[0],) + buffer.shape[1:], buffer.dtype)])


def concatenated_rows(pieces: Sequence[Any], dtype: Any) -> Ragged:
    """The rows of ``pieces`` (`Ragged` values or arrays) one after another, in ``dtype``.

    The buffer is as long as theirs together. Each piece is written where
    the rows before it end, so the padding of one is overwritten by the
    rows of the next, and the padding of the last is left at the end.
    """
    buffers = [jnp.asarray(buffer_of(piece), dtype) for piece in pieces]
    joined = jnp.zeros((sum(b.shape[0] for b in buffers), *buffers[0].shape[1:]), dtype)
    length: Any = 0
    for piece, buffer in zip(pieces, buffers):
        joined = lax.dynamic_update_slice_in_dim(joined, buffer, length, axis=0)
        length = length + (piece.length if isinstance(piece, Ragged) else buffer.shape[0])
    return Ragged(joined, length)


def rows_of(buffer: Any, length: Any, rows: slice) -> Ragged:
    """``x[rows]`` where ``x`` is the first ``length`` rows of ``buffer``, as long a `Ragged` buffer."""
    first, step, count = slice_positions(length, rows)
    size = buffer.shape[0]
    positions = jnp.clip(first + jnp.arange(size) * step, 0, size - 1)
    return Ragged(jnp.asarray(buffer)[positions], count)


def each_output(out: Any, wrap: Callable[[Any], Any]) -> Any:
    """``wrap`` applied to a lowering's output, or to each of its outputs."""
    return type(out)(wrap(o) for o in out) if isinstance(out, (tuple, list)) else wrap(out)


RUN_TIME_LENGTH = (Ragged, Masked, RangeRows)
"""The kinds of values whose leading length is known only at run time."""


def trimmed(value: Any) -> Any:
    """A value of run-time length cut to its length (outside jit); anything else as it is."""
    return value.trim() if isinstance(value, RUN_TIME_LENGTH) else value


class NeedsSplit(Exception):
    """A node's output of run-time length feeds another node of the same jit program."""

    def __init__(self, node: Any) -> None:
        super().__init__(f"the program must be split after node {node}")
        self.node = node
