"""A function traced once, then replayed from its jaxpr wherever it is traced again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
from jax.extend.core import jaxpr_as_fun


def traced_once(fn: Callable[..., Any], *example: Any) -> tuple[Callable[..., Any], Any]:
    """``fn`` traced once on ``example``: a function replaying that trace, and the types of its result.

    The replay takes arguments of ``example``'s types and computes what ``fn``
    computed when traced (its jaxpr, with the values it closed over).

    Replaying the recorded jaxpr costs far less than tracing ``fn`` again: a
    Scan's step lowers every Scan nested in it each time it is traced.
    """
    closed, result = jax.make_jaxpr(fn, return_shape=True)(*example)
    return replaying(closed, result), result


def replaying(closed: Any, result: Any) -> Callable[..., Any]:
    """The function computing the jaxpr ``closed`` (a ``ClosedJaxpr``), returning a pytree shaped as ``result``."""
    tree = jax.tree_util.tree_structure(result)
    replay = jaxpr_as_fun(closed)

    def replayed(*args: Any) -> Any:
        return jax.tree_util.tree_unflatten(tree, replay(*jax.tree_util.tree_leaves(args)))

    return replayed
