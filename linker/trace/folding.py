"""Small concrete values computed with numpy while tracing, through each Op's own ``perform``.

A node whose inputs are all concrete (numpy values, not tracers) and small is
evaluated with Aesara's reference implementation instead of its JAX lowering:
so ``x.shape[0] * 2``, `MakeVector` of constants, casts and slice bounds stay
plain integers while JAX traces the graph (the values that must be concrete:
`aejax.linker.lengths.concrete`). Results larger than `FOLD_LIMIT` elements
are not folded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from aesara.graph.basic import Apply, NoParams, Variable
from aesara.graph.utils import MethodNotDefined
from aesara.scalar.basic import ScalarType
from aesara.scan.op import Scan
from aesara.tensor.basic import AllocEmpty
from aesara.tensor.random.op import RandomVariable
from aesara.tensor.type import DenseTensorType

from aejax.linker.lengths.concrete import is_traced

FOLD_LIMIT = 64
"""Largest number of elements a value may have to be computed with numpy while tracing."""


def is_numeric(var: Variable) -> bool:
    """Whether ``var`` is a dense tensor or a scalar (sparse tensors are not)."""
    return isinstance(var.type, (DenseTensorType, ScalarType))


def host_value(value: Any, var: Variable) -> Any:
    """``value`` as the numpy value ``var``'s ``perform`` takes.

    Arrays are copied: ``perform`` may write to its inputs, and values from
    constants or JAX callbacks must not change (or are read-only). ``None``
    (an input given as ``None``, which `Default` replaces) stays ``None``.
    """
    if value is None:
        return None
    if isinstance(var.type, DenseTensorType):
        return np.array(value, dtype=var.type.dtype)
    if isinstance(var.type, ScalarType):
        return np.dtype(var.type.dtype).type(value)
    return value


def foldable(node: Apply, args: Sequence[Any]) -> bool:
    """Whether ``node`` on ``args`` is computed with numpy: numeric, concrete and small."""
    # AllocEmpty's values are not a function of its inputs; a Scan's perform is a Python loop.
    if isinstance(node.op, (Scan, RandomVariable, AllocEmpty)):
        return False
    if not all(is_numeric(out) for out in node.outputs):
        return False
    return not any(is_traced(arg) for arg in args) and all(
        np.size(arg) <= FOLD_LIMIT for arg, var in zip(args, node.inputs) if is_numeric(var)
    )


def perform(node: Apply, host_args: Sequence[Any]) -> list[Any]:
    """``node``'s outputs computed by its Op's own ``perform`` on host values."""
    storage: list[list[Any]] = [[None] for _ in node.outputs]
    params = node.run_params()
    extra = () if params is NoParams else (params,)
    node.op.perform(node, list(host_args), storage, *extra)
    return [cell[0] for cell in storage]


def fold(node: Apply, args: Sequence[Any]) -> list[Any] | None:
    """Compute ``node`` with numpy through ``perform``; ``None`` if that is not possible.

    Without numpy's floating-point warnings (``log(0.0)`` is ``-inf``): the
    reference backends fold with C code, which gives none.
    """
    try:
        with np.errstate(all="ignore"):
            results = perform(node, [host_value(arg, var) for arg, var in zip(args, node.inputs)])
    except (MethodNotDefined, NotImplementedError):
        return None
    if any(np.size(result) > FOLD_LIMIT for result in results):
        return None
    return results
