"""`Join`: concatenation, also of values of run-time length.

Joining `Ragged` values along their rows (the reversed trace of an until
loop and the zeros that pad it to a sequence's length, in the gradient of
such a loop) gives a `Ragged` value as long as their lengths together. Along
another axis the values have the same rows, and are joined as elementwise
Ops combine them (`aejax.linker.lowering.ragged_elementwise`).
"""

from __future__ import annotations

from typing import Any, Callable

import jax.numpy as jnp
from aesara.tensor.basic import Join

from aejax.linker.concrete import static_ints
from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.lowering import ragged_elementwise
from aejax.linker.ragged import Ragged, concatenated_rows


def _concatenated(axis: Any, *tensors: Any) -> Any:
    (axis,) = static_ints([axis], "the axis of a join")
    return jnp.concatenate([jnp.asarray(t) for t in tensors], axis=axis)


@jax_funcify.register(Join)
def _join(op: Join, node: Any, **kwargs: Any) -> Callable[..., Any]:
    out = node.outputs[0].type

    def join(axis: Any, *tensors: Any) -> Any:
        if not any(isinstance(t, Ragged) for t in tensors):
            return _concatenated(axis, *tensors)
        (axis,) = static_ints([axis], "the axis of a join")
        if axis % out.ndim == 0:
            return concatenated_rows(tensors, out.dtype)
        return ragged_elementwise(node, _concatenated, [axis, *tensors])

    join.accepts_ragged = True  # type: ignore[attr-defined]
    return join
