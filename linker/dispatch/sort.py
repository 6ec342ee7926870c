"""Sorting, which Aesara 2.9.4's JAX backend does not lower."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np
from aesara.tensor.sort import ArgSortOp, SortOp

from aejax.linker.dispatch.basic import jax_funcify


def _axis(axis: Any) -> int | None:
    return None if axis is None else int(np.asarray(axis))


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
