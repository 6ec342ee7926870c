"""`IfElse`: the branch a condition picks, also when the branches differ in shape.

The lowering loop runs the nodes that only one branch needs inside that
branch, so the branch not taken does not run (`aejax.linker.trace.branches`,
which picks the branch); this lowering is for an IfElse whose branches'
values are all computed before it anyway. A condition known while tracing
picks its branch outright. A traced one picks with ``lax.cond`` when the
branches have the same shapes; when they differ, the result's shape depends
on the condition's value, so the lowering asks for it to be concrete
(`NotStaticError`): aejax then makes the condition a static input of the
program that starts at this node (`aejax.linker.program`).

Under `jax.vmap` with a condition that differs between the batch members,
JAX turns ``lax.cond`` into a select: both branches run for every member.
"""

from __future__ import annotations

from typing import Any

from aesara.ifelse import IfElse

from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.trace.branches import if_else


@jax_funcify.register(IfElse)
def _ifelse(op: IfElse, node: Any = None, **kwargs: Any) -> Any:
    n_outs = op.n_outs

    def ifelse(condition: Any, *branches: Any) -> Any:
        then, otherwise = branches[:n_outs], branches[n_outs:]
        picked = if_else(node, condition, lambda: then, lambda: otherwise)
        return tuple(picked) if n_outs > 1 else picked[0]

    return ifelse
