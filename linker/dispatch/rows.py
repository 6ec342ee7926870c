"""One row of an array at a run-time position: read, written, or rotated to the front.

A loop carries small buffers (a Scan's last states, aehmc's momentum
checkpoints) that each step reads or writes at a position computed at run
time. ``lax.dynamic_index_in_dim`` and ``lax.dynamic_update_index_in_dim`` do
that for one chain, but under ``jax.vmap`` a position that differs per chain
turns them into a gather or a scatter with batching dimensions, whose cost
on a TPU grows with the number of chains. A buffer with few rows is
therefore read and written by selects over its rows, which ``vmap`` keeps
elementwise; a large one keeps the dynamic slices, where a select would
touch every row at every step.

Selects move values without arithmetic: the results are bit for bit those
of the dynamic slices, for every position inside the buffer.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

SELECT_MOST_ROWS = 16
"""The most rows of a buffer read and written by selects."""

SELECT_MOST_BYTES = 64 * 1024
"""The largest buffer, in bytes, read and written by selects."""


def by_select(buffer: Any) -> bool:
    """Whether ``buffer``'s rows are read and written by selects: few rows, few bytes, no PRNG keys."""
    if _is_key(buffer):
        return False
    bytes_held = jnp.size(buffer) * jnp.result_type(buffer).itemsize
    return jnp.shape(buffer)[0] <= SELECT_MOST_ROWS and bytes_held <= SELECT_MOST_BYTES


def row_at(buffer: Any, position: Any) -> Any:
    """Row ``position`` of ``buffer`` (``0 <= position < len(buffer)``).

    In numpy: ``buffer[position]``.
    """
    buffer = jnp.asarray(buffer)
    if buffer.shape[0] == 1:
        return buffer[0]
    if not by_select(buffer):
        return lax.dynamic_index_in_dim(buffer, position, keepdims=False)
    row = buffer[0]
    for k in range(1, buffer.shape[0]):
        row = jnp.where(position == k, buffer[k], row)
    return row


def with_row_at(buffer: Any, position: Any, row: Any) -> Any:
    """``buffer`` with row ``position`` replaced by ``row`` (cast to the buffer's dtype).

    In numpy, on a copy: ``buffer[position] = row``.
    """
    buffer = jnp.asarray(buffer)
    row = lax.convert_element_type(row, buffer.dtype) if not _is_key(buffer) else row
    if buffer.shape[0] == 1:
        return jnp.broadcast_to(row, buffer.shape)
    if not by_select(buffer):
        return lax.dynamic_update_index_in_dim(buffer, row, position, 0)
    rows = lax.broadcasted_iota(jnp.int32, (buffer.shape[0],) + (1,) * (buffer.ndim - 1), 0)
    return jnp.where(rows == position, row, buffer)


def rotated(buffer: Any, shift: Any) -> Any:
    """``buffer`` rotated ``shift`` rows towards its start (``0 <= shift < len(buffer)``).

    In numpy: ``np.roll(buffer, -shift, axis=0)``.
    """
    buffer = jnp.asarray(buffer)
    size = buffer.shape[0]
    if size == 1:
        return buffer
    if not by_select(buffer):
        return jnp.roll(buffer, -shift, axis=0)
    result = buffer
    for k in range(1, size):
        result = jnp.where(shift == k, jnp.roll(buffer, -k, axis=0), result)
    return result


def _is_key(buffer: Any) -> bool:
    return jax.dtypes.issubdtype(jnp.result_type(buffer), jax.dtypes.prng_key)
