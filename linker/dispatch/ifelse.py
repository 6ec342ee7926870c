"""`IfElse`: the branch a condition picks, also when the branches differ in shape.

Both branches' values are inputs of the node, computed before it. A condition
known while tracing picks its branch outright. A traced one picks with
``lax.cond`` when the branches have the same shapes; when they differ, the
result's shape depends on the condition's value, so the lowering asks for it
to be concrete (`NotStaticError`): aejax then makes the condition a static
input of the program that starts at this node (`aejax.linker.program`).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from aesara.ifelse import IfElse

from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.errors import NotStaticError
from aejax.linker.lengths.concrete import is_traced


def _same_shapes(left: tuple[Any, ...], right: tuple[Any, ...]) -> bool:
    return all(np.shape(a) == np.shape(b) for a, b in zip(left, right))


@jax_funcify.register(IfElse)
def _ifelse(op: IfElse, node: Any = None, **kwargs: Any) -> Any:
    n_outs = op.n_outs

    def ifelse(condition: Any, *branches: Any) -> Any:
        then, otherwise = branches[:n_outs], branches[n_outs:]
        if not is_traced(condition):
            picked = then if bool(condition) else otherwise
        elif _same_shapes(then, otherwise):
            picked = jax.lax.cond(condition, lambda: then, lambda: otherwise)
        else:
            raise NotStaticError(
                f"the branches of {node} differ in shape, so its condition must be known while tracing"
            )
        return picked if n_outs > 1 else picked[0]

    return ifelse
