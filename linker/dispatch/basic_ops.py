"""Lowerings of graph-level Ops: inner graphs and run-time checks."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
from aesara.compile.builders import OpFromGraph
from aesara.graph.fg import FunctionGraph
from aesara.raise_op import CheckAndRaise

from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.lowering import LoweredGraph, is_traced


@jax_funcify.register(FunctionGraph)
def _function_graph(fgraph: FunctionGraph, **kwargs: Any) -> LoweredGraph:
    return LoweredGraph.of(fgraph, jax_funcify, **kwargs)


@jax_funcify.register(OpFromGraph)
def _op_from_graph(op: OpFromGraph, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    inner = jax_funcify(op.fgraph)
    n_outputs = len(node.outputs)

    def op_from_graph(*inputs: Any) -> Any:
        outputs = inner(*inputs)[:n_outputs]
        return outputs if n_outputs > 1 else outputs[0]

    return op_from_graph


@jax_funcify.register(CheckAndRaise)
def _check_and_raise(op: CheckAndRaise, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    def check_and_raise(x: Any, *conditions: Any) -> Any:
        if any(is_traced(c) for c in conditions):
            warnings.warn(
                f"the check {op.msg!r} of node {node} depends on traced values; "
                "JAX cannot raise inside jit, so it is not checked",
                stacklevel=2,
            )
        elif not all(np.all(c) for c in conditions):
            raise op.exc_type(op.msg)
        return x

    return check_and_raise
