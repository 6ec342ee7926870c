"""Lowerings of graph-level Ops: inner graphs, copies and run-time checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np
from aesara.compile.builders import OpFromGraph
from aesara.compile.ops import DeepCopyOp, ViewOp
from aesara.graph.fg import FunctionGraph
from aesara.raise_op import CheckAndRaise
from aesara.typed_list.basic import MakeList

from aejax.linker.checks import require
from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.errors import LoweringError, variable_name
from aejax.linker.lengths import masked
from aejax.linker.lengths.concrete import is_traced
from aejax.linker.lengths.consumers import takes_run_time_lengths
from aejax.linker.trace.lowering import LoweredGraph


@jax_funcify.register(FunctionGraph)
def _function_graph(fgraph: FunctionGraph, node: Any = None, **kwargs: Any) -> LoweredGraph:
    return LoweredGraph.of(fgraph, jax_funcify, **kwargs)


@jax_funcify.register(OpFromGraph)
def _op_from_graph(op: OpFromGraph, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    """The outputs of ``op``'s inner graph; `LoweringError` if that graph updates shared variables.

    Aesara's ``OpFromGraph(..., inline=False)`` stores such updates (a random
    generator's, say) from inside its node; the program would compute and
    drop them, and every call would read the same values.
    """
    updated = sorted((op.fgraph.update_mapping or {}).values())
    if updated:
        names = ", ".join(repr(variable_name(node.inputs[i])) for i in updated)
        raise LoweringError(
            f"node {node}: the OpFromGraph updates {names} inside its inner graph, which AEJAX would not store "
            "(each call would read the same values); build it with inline=True, or return the new values as "
            "outputs and pass them to aesara.function's updates",
            node=node,
        )
    inner = jax_funcify(op.fgraph)
    n_outputs = len(node.outputs)

    def op_from_graph(*inputs: Any) -> Any:
        outputs = inner(*inputs)[:n_outputs]
        return outputs if n_outputs > 1 else outputs[0]

    return op_from_graph


@jax_funcify.register(DeepCopyOp)
@jax_funcify.register(ViewOp)
def _copy_or_view(op: DeepCopyOp | ViewOp, **kwargs: Any) -> Callable[..., Any]:
    """The value itself: JAX values are immutable, and one of run-time length stays as it is."""

    def copy_or_view(x: Any) -> Any:
        return x

    return takes_run_time_lengths(copy_or_view, ragged=True, ranges=True, masked=True)


@jax_funcify.register(CheckAndRaise)
def _check_and_raise(op: CheckAndRaise, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    def check_and_raise(x: Any, *conditions: Any) -> Any:
        conditions = tuple(masked.holds(c) for c in conditions)
        if not all(np.all(c) for c in conditions if not is_traced(c)):
            raise op.exc_type(op.msg)
        traced = [jnp.all(c) for c in conditions if is_traced(c)]
        if traced:
            require(jnp.stack(traced), op.exc_type, op.msg, f"node {node}")
        return x

    return takes_run_time_lengths(check_and_raise, masked=True)


@jax_funcify.register(MakeList)
def _make_list(op: MakeList, **kwargs: Any) -> Callable[..., Any]:
    """The list of its inputs: inside the trace a typed list is a Python list of JAX values."""

    def make_list(*items: Any) -> list[Any]:
        return list(items)

    return make_list
