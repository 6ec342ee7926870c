"""Array constructors whose sizes come from concrete values.

Their values are built so that XLA has nothing large to constant-fold (a range
is ``lax.iota`` behind an optimization barrier, a large buffer filled with a
constant a broadcast behind one, `filled`): compile time does not grow with
the size of the array, nor with what is computed from it (the gradient of a
loss on a Scan's last state scatters a constant into a zero buffer as long as
the trace, which XLA would otherwise fold into a literal).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from aesara.tensor.basic import Alloc, AllocEmpty, ARange, Eye, Tri
from aesara.tensor.extra_ops import BroadcastTo
from jax import lax

from aejax.linker.checks import require
from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.errors import AllocationError, NotStaticError
from aejax.linker.lengths.bounds import fixed_value, upper_bound
from aejax.linker.lengths.concrete import is_traced, static_ints, static_scalars
from aejax.linker.lengths.ragged import Ragged, RangeRows

FOLDABLE_RANGE = 1 << 16
"""Largest range left for XLA to constant-fold; longer ones are computed when the program runs."""


FOLDABLE_FILL = 1 << 14
"""Largest array filled with a constant that is left for XLA to constant-fold."""


def filled(value: Any, shape: Sequence[int]) -> Any:
    """``value`` broadcast to ``shape``; behind an optimization barrier when ``value`` is a constant and the result large."""
    out = jnp.broadcast_to(value, shape)
    if not is_traced(value) and math.prod(shape) > FOLDABLE_FILL:
        return lax.optimization_barrier(out)
    return out


def arange_values(start: Any, stop: Any, step: Any, dtype: str) -> Any:
    """``np.arange(start, stop, step, dtype)`` for concrete bounds, Python numbers as Aesara's ``perform`` takes them.

    Up to `FOLDABLE_RANGE` elements it is numpy's own array (a small constant).
    A longer range is ``first + iota * delta`` behind an optimization barrier,
    with numpy's increment ``delta = (start + step) - start`` in ``dtype``,
    bit for bit numpy's values.
    """
    if step == 0:
        raise ValueError("arange's step must not be zero")
    if all(isinstance(b, int) for b in (start, stop, step)):
        length = len(range(start, stop, step))
    else:
        length = max(0, math.ceil((stop - start) / step))
    if length <= FOLDABLE_RANGE:
        return np.arange(start, stop, step, dtype=dtype)
    first, second = np.array([start, start + step], dtype=dtype)
    return first + lax.optimization_barrier(lax.iota(dtype, length)) * (second - first)


def traced_range(start: Any, stop: Any, step: Any, dtype: str) -> RangeRows:
    """The lazy ``arange`` of traced bounds, its rows ``first + i * delta`` as the reference computes them.

    Aesara's ``perform`` calls ``np.arange`` on Python numbers: the length
    and ``start + step`` are computed in float64 (or exactly, for integers),
    and numpy fills the range from its first two values in ``dtype``, their
    difference the increment. In floats that difference is not ``step``: the
    rows would differ in the last bit with ``step``.
    """
    start, stop, step = (_as_python_number(bound) for bound in (start, stop, step))
    rows = RangeRows.of(start, stop, step, dtype)
    first = start.astype(dtype)
    delta = (start + step).astype(dtype) - first
    return RangeRows(first, delta, rows.length, dtype)


def _as_python_number(bound: Any) -> Any:
    """A traced bound in the precision of the Python number ``.item()`` gives: int64 or float64 (32 bits in a
    program without x64)."""
    bound = jnp.asarray(bound)
    return bound.astype(
        jax.dtypes.canonicalize_dtype(np.float64 if jnp.issubdtype(bound.dtype, jnp.inexact) else np.int64)
    )


@jax_funcify.register(ARange)
def _arange(op: ARange, **kwargs: Any) -> Callable[..., Any]:
    def arange(start: Any, stop: Any, step: Any) -> Any:
        if any(is_traced(bound) for bound in (start, stop, step)):
            return traced_range(start, stop, step, op.dtype)
        return arange_values(*static_scalars((start, stop, step)), dtype=op.dtype)

    return arange


def bounded_shape(shape: tuple[Any, ...], sizes: Sequence[Any]) -> tuple[tuple[int, ...], Any]:
    """A shape whose leading size may be traced: the static shape to allocate, and the run-time length.

    ``sizes`` are the shape's variables in the graph (empty when unknown). A
    traced leading size is allocated at its bound from the graph
    (`aejax.linker.lengths.bounds`); the length is then traced (``None`` when the
    shape is static), at most the bound. A traced size after it must be one
    the graph fixes (``x.shape[1]`` of a trace of run-time length). A
    negative run-time size raises `ValueError` after the call, as numpy does.
    """
    if not shape:
        return (), None
    variables = [*sizes, *[None] * len(shape)][: len(shape)]
    trailing = tuple(_fixed_size(size, var) for size, var in zip(shape[1:], variables[1:]))
    if not is_traced(shape[0]):
        return (*static_ints(shape[:1]), *trailing), None
    leading = variables[0]
    bound = None if leading is None else upper_bound(leading)
    if bound is None:
        raise NotStaticError(f"a size or shape must be known while tracing (size {leading} has no bound)")
    require(shape[0] >= 0, ValueError, f"the size {leading} is negative", f"size {leading}")
    require(
        shape[0] <= bound,
        RuntimeError,
        f"the size {leading} exceeds the bound {bound} aejax read from the graph; please report this graph",
        f"size {leading}",
    )  # a wrong bound would cut the value silently
    return (max(bound, 0), *trailing), jnp.clip(shape[0], 0, bound)


def _fixed_size(size: Any, var: Any) -> int:
    """A size that is not the leading one: concrete, or traced but fixed by the graph (`fixed_value`)."""
    fixed = fixed_value(var) if is_traced(size) and var is not None else None
    return fixed if fixed is not None else static_ints([size])[0]


def maybe_ragged(value: Any, length: Any) -> Any:
    """``value``, or the first ``length`` rows of it when ``length`` is traced."""
    return value if length is None else Ragged(value, length)


@jax_funcify.register(Alloc)
@jax_funcify.register(BroadcastTo)
def _alloc(op: Alloc | BroadcastTo, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    sizes = node.inputs[1:] if node is not None else []

    def alloc(x: Any, *shape: Any) -> Any:
        static, length = bounded_shape(shape, sizes)
        return maybe_ragged(filled(x, static), length)

    return alloc


@jax_funcify.register(AllocEmpty)
def _alloc_empty(op: AllocEmpty, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    sizes = node.inputs if node is not None else []

    def alloc_empty(*shape: Any) -> Any:
        static, length = bounded_shape(shape, sizes)
        return maybe_ragged(filled(np.zeros((), dtype=op.dtype), static), length)

    return alloc_empty


@jax_funcify.register(Eye)
@jax_funcify.register(Tri)
def _eye_or_tri(op: Eye | Tri, **kwargs: Any) -> Callable[..., Any]:
    build = jnp.eye if isinstance(op, Eye) else jnp.tri

    def eye_or_tri(n: Any, m: Any, k: Any) -> Any:
        rows, cols, offset = static_ints((n, n if m is None else m, k))  # a None argument: as many columns as rows
        return build(rows, cols, offset, dtype=op.dtype)

    return eye_or_tri


def memory_limit() -> int:
    """Bytes one array may take: this process's first device's memory, or the host's physical memory."""
    stats = jax.local_devices()[0].memory_stats() or {}
    if "bytes_limit" in stats:
        return int(stats["bytes_limit"])
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def require_memory(nbytes: int, what: str) -> None:
    """Raise `AllocationError` when ``nbytes`` exceed `memory_limit`; ``what`` says what needs them."""
    limit = memory_limit()
    if nbytes > limit:
        raise AllocationError(
            f"{what} would need {nbytes / 2**30:,.1f} GiB, more than the {limit / 2**30:,.1f} GiB "
            "of memory available; use a smaller value, or keep only the last values of the loop"
        )
