"""Array constructors whose sizes come from concrete values."""

from __future__ import annotations

from typing import Any, Callable

import jax.numpy as jnp
from aesara.tensor.basic import Alloc, AllocEmpty, ARange, Eye
from aesara.tensor.extra_ops import BroadcastTo

from aejax.linker.concrete import static_ints, static_scalars
from aejax.linker.dispatch.basic import jax_funcify


@jax_funcify.register(ARange)
def _arange(op: ARange, **kwargs: Any) -> Callable[..., Any]:
    def arange(start: Any, stop: Any, step: Any) -> Any:
        return jnp.arange(*static_scalars((start, stop, step)), dtype=op.dtype)

    return arange


@jax_funcify.register(Alloc)
@jax_funcify.register(BroadcastTo)
def _alloc(op: Alloc | BroadcastTo, **kwargs: Any) -> Callable[..., Any]:
    def alloc(x: Any, *shape: Any) -> Any:
        return jnp.broadcast_to(x, static_ints(shape))

    return alloc


@jax_funcify.register(AllocEmpty)
def _alloc_empty(op: AllocEmpty, **kwargs: Any) -> Callable[..., Any]:
    def alloc_empty(*shape: Any) -> Any:
        return jnp.zeros(static_ints(shape), dtype=op.dtype)

    return alloc_empty


@jax_funcify.register(Eye)
def _eye(op: Eye, **kwargs: Any) -> Callable[..., Any]:
    def eye(n: Any, m: Any, k: Any) -> Any:
        rows, cols, offset = static_ints((n, m, k))
        return jnp.eye(rows, cols, offset, dtype=op.dtype)

    return eye
