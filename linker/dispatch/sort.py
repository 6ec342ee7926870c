"""Sorting and unique values, which Aesara 2.9.4's JAX backend does not lower (its `Unique` fails).

How many unique values an array has depends on its values: `Unique` of a
traced array raises `NotStaticError`, on which aejax runs the node on the host
between two programs (`aejax.linker.program.host_node`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np
from aesara.tensor.extra_ops import Unique
from aesara.tensor.sort import ArgSortOp, SortOp

from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.errors import NotStaticError
from aejax.linker.lengths.concrete import is_traced, static_ints


def _axis(axis: Any) -> int | None:
    """The sort axis as a Python int: JAX needs it while tracing, so a symbolic axis is made static."""
    return None if axis is None else static_ints((axis,), "the axis of a sort")[0]


@jax_funcify.register(SortOp)
def _sort(op: SortOp, **kwargs: Any) -> Callable[..., Any]:
    def sort(x: Any, axis: Any) -> Any:
        return jnp.sort(x, axis=_axis(axis))

    return sort


@jax_funcify.register(ArgSortOp)
def _argsort(op: ArgSortOp, **kwargs: Any) -> Callable[..., Any]:
    def argsort(x: Any, axis: Any) -> Any:
        return jnp.argsort(x, axis=_axis(axis), stable=True)

    return argsort


@jax_funcify.register(Unique)
def _unique(op: Unique, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    def unique(x: Any) -> Any:
        if is_traced(x):
            raise NotStaticError(
                f"the unique values of {node} depend on its input's values, which must be known while tracing"
            )
        found = np.unique(
            x,
            return_index=op.return_index,
            return_inverse=op.return_inverse,
            return_counts=op.return_counts,
            axis=op.axis,
        )
        return found

    return unique
