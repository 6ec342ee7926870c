"""Values that must be concrete while JAX traces: sizes, shapes, step counts.

A lowering that needs a Python number (a shape for ``jnp.zeros``, a Scan's
number of steps) asks for it here; a traced value raises `NotStaticError`,
which, like JAX's own errors for a value that had to be concrete, makes the
lowering loop lower the node again on the values the call gave its inputs
(`aejax.linker.trace.call_values`), which then become static inputs.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from aejax.linker.errors import NotStaticError
from aejax.linker.lengths.ragged import RUN_TIME_LENGTH


def is_shape_failure(error: Exception) -> bool:
    """Whether ``error`` says a lowering needed a concrete size or shape and got a traced value.

    Besides our own `NotStaticError`, JAX's errors for an integer or a value
    that had to be concrete count; a traced value in a Python ``if`` does not.
    """
    if isinstance(error, jax.errors.TracerBoolConversionError):
        return False
    return isinstance(
        error, (NotStaticError, jax.errors.ConcretizationTypeError, jax.errors.TracerIntegerConversionError)
    )


def is_traced(value: Any) -> bool:
    """Whether ``value``'s value is unknown while tracing (a JAX tracer, or of run-time length)."""
    return isinstance(value, (jax.core.Tracer, *RUN_TIME_LENGTH))


def is_symbolic(size: Any) -> bool:
    """Whether a length of a value's shape is a symbolic dimension of `jax.export`, known only when the exported
    program runs (not a Python or numpy integer)."""
    return not isinstance(size, (int, np.integer))


def static_scalars(values: Any, what: str = "a size or shape") -> tuple[Any, ...]:
    """Python scalars of concrete values; `NotStaticError` saying ``what`` must be static if one is traced."""
    try:
        return tuple(np.asarray(v).item() for v in values)
    except Exception as error:
        raise NotStaticError(f"{what} must be known while tracing ({error})") from error


def static_ints(values: Any, what: str = "a size or shape") -> tuple[int, ...]:
    """Concrete integers of a shape; `NotStaticError` if one is traced."""
    return tuple(int(v) for v in static_scalars(values, what))
