"""What a node that fails while JAX traces it is raised as.

A failed check of the graph's values passes through as it is; a size or
shape that had to be concrete becomes a `LoweringError` asking for static
inputs; inputs on which Aesara's own implementation fails as well raise that
failure's kind (`reference_failure`); anything else is a `LoweringError`
naming the node and its traced inputs. A failure inside a node (of a loop's
step) is raised as the node's own (`lowering_failure`); an `IfElse` passes
the failures of its branches' nodes on as they are (`branch_failure`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from aesara.graph.basic import Apply
from aesara.graph.utils import MethodNotDefined

from aejax.linker.errors import (
    LoweringError,
    NodeIndexError,
    NodeTypeError,
    NodeValueError,
    NotStaticError,
    ValueCheckError,
)
from aejax.linker.lengths.bounds import BoundsNeeded
from aejax.linker.lengths.concrete import is_shape_failure, is_symbolic, is_traced
from aejax.linker.lengths.ragged import RUN_TIME_LENGTH, NeedsSplit
from aejax.linker.trace.folding import host_value, is_numeric, perform


def _traced_inputs(node: Apply, args: Sequence[Any]) -> str:
    names = [str(var) for var, arg in zip(node.inputs, args) if is_traced(arg)]
    return ", ".join(names) or "none"


def reference_failure(node: Apply, args: Sequence[Any]) -> Exception | None:
    """The exception Aesara's own ``perform`` raises on inputs shaped like ``args``, if any.

    Traced arguments are replaced by zeros of their shape and dtype: this tells
    inputs that do not fit (shapes) apart from a fault of the lowering.
    """
    if not all(is_numeric(var) for var in node.inputs) or any(isinstance(a, RUN_TIME_LENGTH) for a in args):
        return None
    if any(is_symbolic(size) for arg in args for size in np.shape(arg)):
        return None  # a symbolic dimension of jax.export: no zeros of that shape to try
    host_args = [
        np.zeros(np.shape(arg), var.type.dtype) if is_traced(arg) else host_value(arg, var)
        for arg, var in zip(args, node.inputs)
    ]
    try:
        with np.errstate(all="ignore"):
            perform(node, host_args)
    except (MethodNotDefined, NotImplementedError):
        return None
    except Exception as error:
        return error
    return None


def _failure_kind(reference: Exception) -> type[LoweringError]:
    """The `LoweringError` raised where Aesara's implementation raises ``reference``: of the same built-in kind."""
    if isinstance(reference, TypeError):
        return NodeTypeError
    return NodeIndexError if isinstance(reference, IndexError) else NodeValueError


def traced_failure(node: Apply, args: Sequence[Any], error: Exception) -> Exception:
    """What ``node`` failing with ``error`` while tracing is raised as.

    A failed check of the graph's values passes through; a size or shape that
    had to be concrete is a `LoweringError` asking for static inputs; inputs
    on which Aesara's own implementation fails too raise that failure's class
    (`NodeValueError`, `NodeTypeError`, `NodeIndexError`); anything else is a `LoweringError`.
    """
    if isinstance(error, ValueCheckError) or type(error) is getattr(node.op, "exc_type", None):
        return error
    described = f"node {node} (Op {node.op}): {type(error).__name__}: {error}"
    if is_shape_failure(error):
        return LoweringError(
            f"JAX could not trace {described}\n"
            f"Traced inputs of the node: {_traced_inputs(node, args)}. A size or shape "
            "must be known while tracing: make the values it depends on constants or "
            "scalar inputs of the compiled function (aejax then compiles one program per value).",
            node=node,
            needs_static=True,
        )
    reference = reference_failure(node, args)
    if reference is not None:
        kind = _failure_kind(reference)
        shapes = ", ".join(str(np.shape(arg)) for arg in args)
        return kind(
            f"the inputs of {described}\ndo not fit (shapes {shapes}); Aesara raises "
            f"{type(reference).__name__}: {reference}",
            node=node,
        )
    return LoweringError(
        f"JAX could not trace {described}\nTraced inputs of the node: {_traced_inputs(node, args)}.",
        node=node,
    )


def raised_for(failure: Exception, error: Exception) -> Exception:
    """``failure``, with ``error`` as its cause (as ``raise failure from error`` would make it)."""
    if failure is not error:
        failure.__cause__ = error
    return failure


def lowering_failure(node: Apply, args: Sequence[Any], error: Exception) -> Exception:
    """What the lowering of ``node`` on ``args`` failing with ``error`` is raised as.

    Its own `LoweringError` and a `BoundsNeeded` (which names the node whose
    bounds a program should make static) as they are; the failure of a node
    inside it (a loop's step) as its own, with the same need of static
    values; a value of run-time length used inside it where its length must
    be known as a shape that depends on values; anything else as `traced_failure` says.
    """
    if isinstance(error, BoundsNeeded) or isinstance(error, LoweringError) and error.node is node:
        return error
    if isinstance(error, LoweringError):
        inside = type(error)(f"{error}\n(inside node {node})", node=node, needs_static=error.needs_static)
        return raised_for(inside, error)
    if isinstance(error, NeedsSplit):
        return raised_for(
            LoweringError(
                f"node {error.node} inside node {node} returns a value whose length is known "
                "only at run time (the trace of a Scan with an until condition, an arange of "
                "traced bounds, a selection x[mask]), and another node of the same loop uses it "
                "where its length must be known; JAX needs static shapes there. Use only the last "
                "values of an inner until-loop's outputs, or move the computation out of the loop.",
                node=node,
                needs_static=True,  # a shape that depends on values: a loop around ``node`` may run on the host
            ),
            error,
        )
    return raised_for(traced_failure(node, args, error), error)


def branch_failure(node: Apply, condition: Any, error: Exception) -> Exception:
    """What IfElse ``node`` failing with ``error`` is raised as.

    Its condition needed concrete (`NotStaticError`) as `traced_failure`
    says; any other failure, of a node in a branch, as it is.
    """
    if isinstance(error, NotStaticError):
        return raised_for(traced_failure(node, [condition], error), error)
    return error
