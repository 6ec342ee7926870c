"""Reductions whose Aesara lowerings do not trace under jit."""

from __future__ import annotations

from typing import Any, Callable

import jax.numpy as jnp
from aesara.tensor.math import MaxAndArgmax

from aejax.linker.dispatch.basic import jax_funcify


@jax_funcify.register(MaxAndArgmax)
def _max_and_argmax(op: MaxAndArgmax, **kwargs: Any) -> Callable[..., Any]:
    def max_and_argmax(x: Any) -> tuple[Any, Any]:
        axes = tuple(range(x.ndim)) if op.axis is None else tuple(int(a) for a in op.axis)
        kept = [i for i in range(x.ndim) if i not in axes]
        moved = jnp.transpose(x, kept + list(axes))
        flat = moved.reshape(moved.shape[: len(kept)] + (-1,))
        return jnp.max(x, axis=axes), jnp.argmax(flat, axis=-1)

    return max_and_argmax
