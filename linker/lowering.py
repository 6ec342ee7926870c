"""Turn an Aesara `FunctionGraph` into a JAX-traceable Python function.

The function walks the graph's nodes in topological order. Two rules keep
shapes concrete while JAX traces it (ARCHITECTURE.md, "Shapes under jit"):

- A node whose inputs are all concrete (numpy values, not tracers) and small
  is evaluated with numpy through the Op's own ``perform``, Aesara's reference
  implementation; so ``x.shape[0] * 2``, `MakeVector` of constants, casts and
  slice bounds stay plain integers. Results larger than `FOLD_LIMIT`
  elements are not folded.
- Every other node runs its JAX lowering; outputs are cast to the dtype the
  graph declares, so JAX's promotion rules never change a graph's types.

A failing node raises `LoweringError` naming the node and its traced inputs.
Two kinds of errors pass through unchanged: `InvalidValueError` (a lowering
found the graph's values invalid) and the exception an Op declares it raises
(``exc_type``, as `CheckAndRaise` does).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
import numpy as np
from aesara.graph.basic import Apply, Constant, NoParams, Variable
from aesara.graph.fg import FunctionGraph
from aesara.graph.utils import MethodNotDefined
from aesara.scalar.basic import ScalarType
from aesara.scan.op import Scan
from aesara.tensor.basic import AllocEmpty
from aesara.tensor.random.op import RandomVariable
from aesara.tensor.type import TensorType

from aejax.linker.errors import InvalidValueError, LoweringError
from aejax.linker.ragged import NeedsSplit, Ragged

FOLD_LIMIT = 64
"""Largest number of elements a value may have to be computed with numpy while tracing."""


def is_traced(value: Any) -> bool:
    """Whether ``value``'s value is unknown while tracing (a JAX tracer or a `Ragged`)."""
    return isinstance(value, (jax.core.Tracer, Ragged))


def _numeric(var: Variable) -> bool:
    return isinstance(var.type, (TensorType, ScalarType))


def _host_value(value: Any, var: Variable) -> Any:
    if isinstance(var.type, TensorType):
        return np.asarray(value, dtype=var.type.dtype)
    if isinstance(var.type, ScalarType):
        return np.dtype(var.type.dtype).type(value)
    return value


def _foldable(node: Apply, args: Sequence[Any]) -> bool:
    # AllocEmpty's values are not a function of its inputs; a Scan's perform is a Python loop.
    if isinstance(node.op, (Scan, RandomVariable, AllocEmpty)):
        return False
    if not all(_numeric(out) for out in node.outputs):
        return False
    return not any(is_traced(arg) for arg in args) and all(
        np.size(arg) <= FOLD_LIMIT for arg, var in zip(args, node.inputs) if _numeric(var)
    )


def fold(node: Apply, args: Sequence[Any]) -> list[Any] | None:
    """Compute ``node`` with numpy through ``perform``; ``None`` if that is not possible."""
    storage: list[list[Any]] = [[None] for _ in node.outputs]
    host_args = [_host_value(arg, var) for arg, var in zip(args, node.inputs)]
    params = node.run_params()
    extra = () if params is NoParams else (params,)
    try:
        node.op.perform(node, host_args, storage, *extra)
    except (MethodNotDefined, NotImplementedError):
        return None
    results = [cell[0] for cell in storage]
    if any(np.size(result) > FOLD_LIMIT for result in results):
        return None
    return results


def _as_declared(value: Any, var: Variable) -> Any:
    if not isinstance(var.type, (TensorType, ScalarType)):
        return value
    dtype = np.dtype(var.type.dtype)
    if getattr(value, "dtype", None) == dtype:
        return value
    if is_traced(value) or isinstance(value, jax.Array):
        return value.astype(dtype)
    return np.asarray(value, dtype=dtype)


def _traced_inputs(node: Apply, args: Sequence[Any]) -> str:
    names = [str(var) for var, arg in zip(node.inputs, args) if is_traced(arg)]
    return ", ".join(names) or "none"


def node_error(node: Apply, args: Sequence[Any], error: Exception) -> LoweringError:
    """A `LoweringError` for ``node`` failing with ``error`` while tracing."""
    return LoweringError(
        f"JAX could not trace node {node} (Op {node.op}): "
        f"{type(error).__name__}: {error}\n"
        f"Traced inputs of the node: {_traced_inputs(node, args)}. "
        "If a shape depends on one of them, make it a constant or a scalar "
        "input of the compiled function (aejax then compiles one program per value).",
        node=node,
    )


Step = tuple[Apply, Callable[..., Any]]
"""A node and its JAX lowering."""


def lower_nodes(fgraph: FunctionGraph, funcify: Callable[..., Callable[..., Any]], **kwargs: Any) -> list[Step]:
    """Each node of ``fgraph`` in topological order with its lowering."""
    return [(node, funcify(node.op, node=node, **kwargs)) for node in fgraph.toposort()]


class LoweredGraph:
    """A graph (inputs, outputs, nodes in order) as a JAX-traceable callable.

    Calling it returns the tuple of outputs. A `Ragged` value (run-time
    length) may be a graph output, or the input of a lowering that accepts it
    (``accepts_ragged``, e.g. indexing its last row); any other consumer
    raises `NeedsSplit`, asking the linker to end the jit program after the
    node that made it.
    """

    def __init__(self, inputs: Sequence[Variable], outputs: Sequence[Variable], steps: Sequence[Step]) -> None:
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.steps = list(steps)

    @classmethod
    def of(cls, fgraph: FunctionGraph, funcify: Callable[..., Callable[..., Any]], **kwargs: Any) -> "LoweredGraph":
        """The lowering of a whole `FunctionGraph`."""
        return cls(fgraph.inputs, fgraph.outputs, lower_nodes(fgraph, funcify, **kwargs))

    def __call__(self, *inputs: Any) -> tuple[Any, ...]:
        env: dict[Variable, Any] = dict(zip(self.inputs, inputs))
        for node, fn in self.steps:
            args = [lookup(env, var) for var in node.inputs]
            if not getattr(fn, "accepts_ragged", False):
                for var, arg in zip(node.inputs, args):
                    if isinstance(arg, Ragged):
                        raise NeedsSplit(var.owner)
            env.update(zip(node.outputs, run_node(node, fn, args)))
        return tuple(lookup(env, var) for var in self.outputs)


def lookup(env: dict[Variable, Any], var: Variable) -> Any:
    """The value of ``var`` in ``env``, or its data if it is a constant."""
    if isinstance(var, Constant):
        return var.data
    return env[var]


def run_node(node: Apply, fn: Callable[..., Any], args: Sequence[Any]) -> list[Any]:
    """The outputs of ``node``: folded with numpy when concrete, else from its JAX lowering."""
    try:
        folded = fold(node, args) if _foldable(node, args) else None
        out = folded if folded is not None else fn(*args)
    except LoweringError as error:
        if error.node is node:
            raise
        raise LoweringError(f"{error}\n(inside node {node})", node=node) from error
    except NeedsSplit as error:
        raise LoweringError(
            f"node {error.node} inside node {node} returns a trace whose length is known "
            "only at run time (a Scan with an until condition), and another node of the "
            "same loop uses it; JAX needs static shapes there. Use only the last values of "
            "the inner until-loop's outputs, or move it out of the loop.",
            node=node,
        ) from error
    except Exception as error:
        if isinstance(error, InvalidValueError) or type(error) is getattr(node.op, "exc_type", None):
            raise
        raise node_error(node, args, error) from error
    if folded is not None:
        return folded
    outs = [out] if len(node.outputs) == 1 else list(out)
    return [
        value if isinstance(value, Ragged) else _as_declared(value, var)
        for value, var in zip(outs, node.outputs)
    ]
