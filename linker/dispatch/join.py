"""`Join`: concatenation, also of values of run-time length.

Joining `Ragged` values along their rows (the reversed trace of an until
loop and the zeros that pad it to a sequence's length, in the gradient of
such a loop) gives a `Ragged` value as long as their lengths together; a
selection ``x[nonzero(m)]`` (`Masked`) joins as its rows moved to the front.
Along another axis the values have the same rows, and are joined as
elementwise Ops combine them (`aejax.linker.lengths.ragged_rows.ragged_elementwise`,
`aejax.linker.lengths.masked.elementwise`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
from aesara.tensor.basic import Join

from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.lengths import masked
from aejax.linker.lengths.concrete import static_ints
from aejax.linker.lengths.consumers import takes_run_time_lengths
from aejax.linker.lengths.ragged import Masked, Ragged, concatenated_rows, selected_rows_first
from aejax.linker.lengths.ragged_rows import ragged_elementwise


def _concatenated(axis: Any, *tensors: Any) -> Any:
    (axis,) = static_ints([axis], "the axis of a join")
    return jnp.concatenate([jnp.asarray(t) for t in tensors], axis=axis)


def _across_rows(node: Any, axis: Any, tensors: tuple[Any, ...]) -> Any:
    """The join of values of run-time length along an axis other than their rows (their lengths checked)."""
    if all(isinstance(t, Masked) for t in tensors) and masked.share_one_mask(tensors):
        return masked.elementwise(node, _concatenated, [axis, *tensors])
    return ragged_elementwise(node, _concatenated, [axis, *[selected_rows_first(t) for t in tensors]])


@jax_funcify.register(Join)
def _join(op: Join, node: Any, **kwargs: Any) -> Callable[..., Any]:
    out = node.outputs[0].type

    def join(axis: Any, *tensors: Any) -> Any:
        if not any(isinstance(t, (Ragged, Masked)) for t in tensors):
            return _concatenated(axis, *tensors)
        (axis,) = static_ints([axis], "the axis of a join")
        if axis % out.ndim != 0:
            return _across_rows(node, axis, tensors)
        return concatenated_rows([selected_rows_first(t) for t in tensors], out.dtype)

    return takes_run_time_lengths(join, ragged=True, masked=True)
