"""Shapes as concrete numpy values while tracing (the run-time length of a `Ragged` aside)."""

from __future__ import annotations

from typing import Any, Callable

import jax.numpy as jnp
import numpy as np
from aesara.tensor.shape import Reshape, Shape, Shape_i, SpecifyShape

from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.concrete import is_traced, static_ints
from aejax.linker.errors import InvalidValueError, variable_name
from aejax.linker.ragged import Ragged, RangeRows, buffer_of


@jax_funcify.register(Shape)
def _shape(op: Shape, **kwargs: Any) -> Callable[..., Any]:
    def shape(x: Any) -> Any:
        if isinstance(x, RangeRows):
            return jnp.asarray([x.length], dtype="int64")
        if isinstance(x, Ragged):
            return jnp.asarray([x.length, *x.buffer.shape[1:]], dtype="int64")
        return np.asarray(np.shape(x), dtype="int64")

    shape.accepts_ragged = shape.accepts_range = True  # type: ignore[attr-defined]
    return shape


@jax_funcify.register(Shape_i)
def _shape_i(op: Shape_i, **kwargs: Any) -> Callable[..., Any]:
    def shape_i(x: Any) -> Any:
        if isinstance(x, (Ragged, RangeRows)) and op.i == 0:
            return x.length
        return np.int64(np.shape(buffer_of(x))[op.i])

    shape_i.accepts_ragged = shape_i.accepts_range = True  # type: ignore[attr-defined]
    return shape_i


@jax_funcify.register(Reshape)
def _reshape(op: Reshape, **kwargs: Any) -> Callable[..., Any]:
    def reshape(x: Any, shape: Any) -> Any:
        return x.reshape(static_ints(shape))

    return reshape


@jax_funcify.register(SpecifyShape)
def _specify_shape(op: SpecifyShape, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    def specify_shape(x: Any, *shape: Any) -> Any:
        for axis, (want, got) in enumerate(zip(shape, np.shape(x))):
            if want is not None and not is_traced(want) and int(want) != got:
                raise InvalidValueError(
                    f"{variable_name(node.inputs[0])!r} has length {got} on axis {axis}, "
                    f"but node {node} specifies {int(want)}"
                )
        return x

    return specify_shape
