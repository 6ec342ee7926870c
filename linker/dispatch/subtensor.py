"""Indexing with concrete slice bounds, traced scalar indices, and rows of `Ragged` traces."""

from __future__ import annotations

from typing import Any, Callable

import jax.numpy as jnp
from aesara.graph.basic import Constant
from jax import lax
from aesara.tensor.subtensor import (
    AdvancedIncSubtensor,
    AdvancedIncSubtensor1,
    AdvancedSubtensor,
    AdvancedSubtensor1,
    IncSubtensor,
    Subtensor,
    indices_from_subtensor,
)

from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.ragged import Ragged


@jax_funcify.register(Subtensor)
@jax_funcify.register(AdvancedSubtensor)
@jax_funcify.register(AdvancedSubtensor1)
def _subtensor(op: Any, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    idx_list = getattr(op, "idx_list", None)

    def subtensor(x: Any, *index_values: Any) -> Any:
        indices = tuple(indices_from_subtensor(index_values, idx_list))
        if isinstance(x, Ragged):
            if isinstance(indices[0], slice):
                return ragged_tail(x, int(indices[0].start))
            return ragged_row(x, indices[0])[indices[1:]]
        return x[indices]

    subtensor.accepts_ragged = bool(idx_list) and (  # type: ignore[attr-defined]
        not isinstance(idx_list[0], slice) or _is_tail(idx_list, node)
    )
    return subtensor


def _is_tail(idx_list: Any, node: Any) -> bool:
    """Whether the Subtensor is ``x[k:]`` with a constant ``k >= 0`` and nothing else."""
    first = idx_list[0]
    if len(idx_list) != 1 or first.stop is not None or first.step is not None or first.start is None:
        return False
    start = node.inputs[1]
    return isinstance(start, Constant) and int(start.data) >= 0


def ragged_tail(value: Ragged, start: int) -> Ragged:
    """``value[start:]`` of a `Ragged` value, still ragged."""
    return Ragged(value.buffer[start:], jnp.maximum(value.length - start, 0))


def ragged_row(value: Ragged, row: Any) -> Any:
    """Row ``row`` (negative counts from the run-time end) of a `Ragged` value."""
    position = jnp.where(row < 0, value.length + row, row)
    return lax.dynamic_index_in_dim(value.buffer, position, keepdims=False)


@jax_funcify.register(IncSubtensor)
@jax_funcify.register(AdvancedIncSubtensor)
@jax_funcify.register(AdvancedIncSubtensor1)
def _inc_subtensor(op: Any, **kwargs: Any) -> Callable[..., Any]:
    idx_list = getattr(op, "idx_list", None)
    set_instead_of_inc = op.set_instead_of_inc

    def inc_subtensor(x: Any, y: Any, *index_values: Any) -> Any:
        indices = tuple(indices_from_subtensor(index_values, idx_list) if idx_list else index_values)
        target = jnp.asarray(x).at[indices]
        return target.set(y) if set_instead_of_inc else target.add(y)

    return inc_subtensor
