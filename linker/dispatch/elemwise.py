"""`Elemwise` and `Composite` through aejax's dispatcher.

Aesara's lowerings of both look their scalar Ops up in Aesara's own
dispatcher, which would hide every scalar lowering registered on
`jax_funcify` (e.g. ``erfcx``). These look them up in ours, which still
falls back to Aesara's for the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
from aesara.scalar.basic import Composite
from aesara.tensor.elemwise import Elemwise

from aejax.linker.dispatch.basic import jax_funcify


@jax_funcify.register(Elemwise)
def _elemwise(op: Elemwise, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    return jax_funcify(op.scalar_op, node=node, **kwargs)


@jax_funcify.register(Composite)
def _composite(op: Composite, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    inner = jax_funcify(op.fgraph)
    n_outputs = len(op.fgraph.outputs)

    # Vectorised, the inner scalar nodes see scalars, as their Ops expect.
    def composite(*inputs: Any) -> Any:
        outputs = inner(*inputs)
        return tuple(outputs) if n_outputs > 1 else outputs[0]

    return jnp.vectorize(composite)
