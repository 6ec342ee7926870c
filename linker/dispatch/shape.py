"""Shapes as concrete numpy values while tracing (the run-time length of a `Ragged` aside).

A symbolic dimension (`jax.export.symbolic_shape`, as `aejax.linker.exporting`
makes for a length its Type leaves open) is a traced value: it is known only
when the exported program runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np
from aesara.tensor.shape import Reshape, Shape, Shape_i, SpecifyShape

from aejax.linker.checks import require
from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.errors import ShapeAssertionError, variable_name
from aejax.linker.lengths.concrete import is_symbolic, is_traced, static_ints
from aejax.linker.lengths.consumers import takes_run_time_lengths
from aejax.linker.lengths.ragged import RUN_TIME_LENGTH, Ragged, RangeRows, index_dtype, rows_padded


def _run_time_shape(x: Any) -> tuple[Any, ...]:
    """The shape of a value of run-time length: its traced length, then its rows' static shape."""
    if isinstance(x, RangeRows):
        return (x.length,)
    return (x.length, *x.buffer.shape[1:])


def size_value(size: Any) -> Any:
    """A length of a shape as the graph's int64 value: a numpy scalar, or a traced one for a symbolic dimension."""
    return jnp.asarray(size, dtype=index_dtype()) if is_symbolic(size) else np.int64(size)


@jax_funcify.register(Shape)
def _shape(op: Shape, **kwargs: Any) -> Callable[..., Any]:
    def shape(x: Any) -> Any:
        if isinstance(x, RUN_TIME_LENGTH):
            return jnp.asarray(_run_time_shape(x), dtype=index_dtype())
        if not any(is_symbolic(size) for size in np.shape(x)):
            return np.asarray(np.shape(x), dtype="int64")
        return jnp.stack([size_value(size) for size in np.shape(x)])

    return takes_run_time_lengths(shape, ragged=True, ranges=True, masked=True)


@jax_funcify.register(Shape_i)
def _shape_i(op: Shape_i, **kwargs: Any) -> Callable[..., Any]:
    def shape_i(x: Any) -> Any:
        if isinstance(x, RUN_TIME_LENGTH):
            size = _run_time_shape(x)[op.i]
            return size if is_traced(size) else np.int64(size)
        return size_value(np.shape(x)[op.i])

    return takes_run_time_lengths(shape_i, ragged=True, ranges=True, masked=True)


@jax_funcify.register(Reshape)
def _reshape(op: Reshape, **kwargs: Any) -> Callable[..., Any]:
    def reshape(x: Any, shape: Any) -> Any:
        return x.reshape(static_ints(shape))

    return reshape


def _shape_text(dims: Sequence[Any]) -> str:
    """A shape as Python prints a tuple, e.g. ``(3,)`` or ``(n, ?)``."""
    return f"({', '.join(map(str, dims))}{',' if len(dims) == 1 else ''})"


@jax_funcify.register(SpecifyShape)
def _specify_shape(op: SpecifyShape, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    """Check ``x``'s shape against the specified one: `ShapeAssertionError` (an `AssertionError`, as Aesara's) naming ``x`` and both shapes.

    A concrete mismatch raises while tracing; a size that is a traced value,
    or the run-time length of a `Ragged` ``x``, is a run-time check
    (`aejax.linker.checks.require`), as Aesara checks it at run time. A
    `Ragged` ``x`` whose length is specified as a constant leaves with that
    many rows, a static shape again.
    """
    name = variable_name(node.inputs[0])

    def specify_shape(x: Any, *shape: Any) -> Any:
        got = (x.length, *x.buffer.shape[1:]) if isinstance(x, Ragged) else np.shape(x)
        expected = [
            "?" if want is None else variable_name(var) if is_traced(want) else int(want)
            for want, var in zip(shape, node.inputs[1:])
        ]
        shown = ["?" if is_traced(size) else size for size in got]
        message = (
            f"SpecifyShape: {name!r} has shape {_shape_text(shown)}, "
            f"but node {node} specifies shape {_shape_text(expected)}"
        )
        pairs = [(want, size) for want, size in zip(shape, got) if want is not None]
        if any(int(want) != size for want, size in pairs if not (is_traced(want) or is_traced(size))):
            raise ShapeAssertionError(message)
        traced = [want == size for want, size in pairs if is_traced(want) or is_traced(size)]
        if traced:
            require(jnp.stack(traced), ShapeAssertionError, message, f"node {node}")
        if isinstance(x, Ragged) and shape[0] is not None and not is_traced(shape[0]):
            return rows_padded(x.buffer, int(shape[0]))
        return x

    return takes_run_time_lengths(specify_shape, ragged=True)
