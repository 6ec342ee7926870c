"""One row of an array at a run-time position: read, written, or rotated to the front.

A loop carries small buffers (a Scan's last states, aehmc's momentum
checkpoints) that each step reads or writes at a position computed at run
time. One chain does that best with ``lax.dynamic_index_in_dim`` and
``lax.dynamic_update_index_in_dim``. Under ``jax.vmap`` a position that
differs per chain turns them into a gather or a scatter with batching
dimensions, whose cost on a TPU grows with the number of chains (a few ms
per step at 1024 chains), while selects over the buffer's rows stay
elementwise. So each function here is a `jax.custom_batching.custom_vmap`:
unbatched, or at a position shared by the chains, it is the dynamic slice;
at a position that differs per chain it is the selects, except on the CPU,
where a batched scatter into all but the smallest buffers is the faster
(`benchmarks/chains_runner.py --crossover`, see docs/benchmarks.rst).

Selects move values without arithmetic: the results are bit for bit those
of the dynamic slices, for every position inside the buffer. Each function
has a `jax.custom_jvp` rule made of the dynamic slices, so it can be
differentiated in both modes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.custom_batching import custom_vmap

SELECT_MOST_ROWS = 32
"""The most rows of a buffer read and written by selects at a per-chain position (on an accelerator)."""

SELECT_MOST_BYTES = 64 * 1024
"""The largest buffer, in bytes per chain, read and written by selects at a per-chain position."""

CPU_SELECT_MOST_ELEMENTS = 16
"""On the CPU, the largest buffer, in elements per chain, read and written by selects at a per-chain position."""


def by_select(buffer: Any) -> bool:
    """Whether ``buffer``'s rows may be read and written by selects: a few rows and bytes, no PRNG keys."""
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
        return _dynamic_row(buffer, position)
    return _row_at(buffer, position)


def with_row_at(buffer: Any, position: Any, row: Any) -> Any:
    """``buffer`` with row ``position`` replaced by ``row`` (cast to the buffer's dtype).

    In numpy, on a copy: ``buffer[position] = row``.
    """
    buffer = jnp.asarray(buffer)
    row = row if _is_key(buffer) else lax.convert_element_type(row, buffer.dtype)
    if buffer.shape[0] == 1:
        return jnp.broadcast_to(row, buffer.shape)
    if not by_select(buffer):
        return _dynamic_write(buffer, position, row)
    return _with_row_at(buffer, position, jnp.broadcast_to(row, buffer.shape[1:]))


def rotated(buffer: Any, shift: Any) -> Any:
    """``buffer`` rotated ``shift`` rows towards its start (``0 <= shift < len(buffer)``).

    In numpy: ``np.roll(buffer, -shift, axis=0)``.
    """
    buffer = jnp.asarray(buffer)
    if buffer.shape[0] == 1:
        return buffer
    if not by_select(buffer):
        return _dynamic_roll(buffer, shift)
    return _rotated(buffer, shift)


def _dynamic_row(buffer: Any, position: Any) -> Any:
    return lax.dynamic_index_in_dim(buffer, position, keepdims=False)


def _dynamic_write(buffer: Any, position: Any, row: Any) -> Any:
    return lax.dynamic_update_index_in_dim(buffer, row, position, 0)


def _dynamic_roll(buffer: Any, shift: Any) -> Any:
    return jnp.roll(buffer, -shift, axis=0)


def _selected_row(buffer: Any, position: Any) -> Any:
    row = buffer[0]
    for k in range(1, buffer.shape[0]):
        row = jnp.where(position == k, buffer[k], row)
    return row


def _selected_write(buffer: Any, position: Any, row: Any) -> Any:
    rows = lax.broadcasted_iota(jnp.int32, (buffer.shape[0],) + (1,) * (buffer.ndim - 1), 0)
    return jnp.where(rows == position, row, buffer)


def _selected_roll(buffer: Any, shift: Any) -> Any:
    result = buffer
    for k in range(1, buffer.shape[0]):
        result = jnp.where(shift == k, jnp.roll(buffer, -k, axis=0), result)
    return result


def per_chain(dynamic: Callable[..., Any], selected: Callable[..., Any]) -> Callable[..., Any]:
    """``dynamic(buffer, position, *rest)``, batched by ``selected`` where the position differs per chain.

    Under ``vmap`` every argument keeps its own batching. With a position the
    chains share, ``dynamic`` is vmapped (a dynamic slice of each chain's
    buffer). With a position per chain, ``selected`` is vmapped (elementwise)
    on an accelerator and for a buffer of at most `CPU_SELECT_MOST_ELEMENTS`
    elements per chain on the CPU; ``dynamic`` is vmapped (a gather or a
    scatter) on the CPU otherwise.
    The jvp is ``dynamic`` applied to the tangents: both functions are linear
    in the buffer and the rest.
    """
    batched = custom_vmap(dynamic)

    @batched.def_vmap
    def rule(axis_size: Any, in_batched: list[bool], buffer: Any, position: Any, *rest: Any) -> tuple[Any, bool]:
        axes = [0 if b else None for b in in_batched]
        by_slices = jax.vmap(dynamic, in_axes=axes)
        if not in_batched[1]:
            return by_slices(buffer, position, *rest), True
        by_selects = jax.vmap(selected, in_axes=axes)
        if math.prod(jnp.shape(buffer)[1:] if in_batched[0] else jnp.shape(buffer)) <= CPU_SELECT_MOST_ELEMENTS:
            return by_selects(buffer, position, *rest), True
        return lax.platform_dependent(buffer, position, *rest, cpu=by_slices, default=by_selects), True

    differentiable = jax.custom_jvp(batched)

    @differentiable.defjvp
    def jvp(primals: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, Any]:
        buffer, position, *rest = primals
        buffer_tangent, _, *rest_tangents = tangents
        return differentiable(*primals), dynamic(buffer_tangent, position, *rest_tangents)

    return differentiable


_row_at = per_chain(_dynamic_row, _selected_row)
_with_row_at = per_chain(_dynamic_write, _selected_write)
_rotated = per_chain(_dynamic_roll, _selected_roll)


def _is_key(buffer: Any) -> bool:
    return jax.dtypes.issubdtype(jnp.result_type(buffer), jax.dtypes.prng_key)
