"""Indexing with concrete slice bounds, traced scalar indices, and rows of `Ragged` traces."""

from __future__ import annotations

from typing import Any, Callable

import jax.numpy as jnp
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
def _subtensor(op: Any, **kwargs: Any) -> Callable[..., Any]:
    idx_list = getattr(op, "idx_list", None)

    def subtensor(x: Any, *index_values: Any) -> Any:
        indices = tuple(indices_from_subtensor(index_values, idx_list))
        if isinstance(x, Ragged):
            return ragged_row(x, indices[0])[indices[1:]]
        return x[indices]

    subtensor.accepts_ragged = bool(idx_list) and not isinstance(idx_list[0], slice)  # type: ignore[attr-defined]
    return subtensor


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
