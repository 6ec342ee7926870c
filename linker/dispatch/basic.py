"""Our `jax_funcify` dispatcher.

Lowerings registered here take precedence; any other `Op` falls back to
Aesara's own ``aesara.link.jax.dispatch.jax_funcify``. Aesara's modules are
not modified.
"""

from __future__ import annotations

from functools import singledispatch
from typing import Any, Callable

from aesara.link.jax.dispatch import jax_funcify as aesara_jax_funcify

from aejax.linker.errors import LoweringError


@singledispatch
def jax_funcify(op: Any, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    """Return a JAX-traceable Python function computing ``node``'s outputs."""
    try:
        return aesara_jax_funcify(op, node=node, **kwargs)
    except NotImplementedError as error:
        raise LoweringError(
            f"no JAX lowering for Op {op} in node {node}: {error}\n"
            "Register one with aejax.linker.jax_funcify.register("
            f"{type(op).__name__}), or compile this graph with another mode.",
            node=node,
        ) from error
