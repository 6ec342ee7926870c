"""Nodes computed on every buffer row of `Ragged` values: elementwise Ops, elementwise draws, reductions.

A `Ragged` value's buffer holds its rows and padding past its run-time
length. An elementwise node computes every buffer row (the padding's results
are never used), and its result is ragged again unless a whole array argument
fixes its rows; a reduction over the rows sees the value as a `Masked` one
(`aejax.linker.lengths.masked`), a reduction along other axes keeps it ragged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax.numpy as jnp
from aesara.graph.basic import Apply

from aejax.linker.checks import require
from aejax.linker.lengths import masked
from aejax.linker.lengths.ragged import RUN_TIME_LENGTH, Ragged, each_output, rows_padded


def ragged_reduction(node: Apply, fn: Callable[..., Any], x: Ragged) -> Any:
    """A reduction of a `Ragged` value: over its rows as a `Masked` value, else row by row (still ragged)."""
    if node.op.axis is not None and 0 not in node.op.axis:
        return Ragged(fn(x.buffer), x.length)
    return masked.reduction(node, fn, x.as_masked())


def ragged_elementwise(node: Apply, fn: Callable[..., Any], args: Sequence[Any]) -> Any:
    """An elementwise node with `Ragged` arguments, computed on every buffer row.

    Aesara's shapes agree at run time, so a ragged argument is as long as any
    full-length argument: then the result is cut to that static length;
    otherwise it is ragged, its buffer as long as the longest.
    """
    rows, length, static = _common_rows(node, args)
    out = fn(*[rows_padded(a.buffer, rows) if isinstance(a, Ragged) else a for a in args])
    if static:
        return out
    return each_output(out, lambda o: Ragged(o, length))


def ragged_draw(node: Apply, fn: Callable[..., Any], args: Sequence[Any]) -> tuple[Any, Any]:
    """An elementwise random draw (`masked.is_elementwise_draw`) from `Ragged` parameters, on every buffer row.

    ``bernoulli(h / (arange(2, y + 1) - 1 + h))`` inside a Scan's step, as in
    aemcmc's CRT sampler: every row of the parameters' buffers is drawn, and
    the sample has their run-time length (the rows past it are drawn but
    never used), as `ragged_elementwise` computes an elementwise Op. The new
    random state is returned as it is.
    """
    state, size, dtype, *params = args
    rows, length, static = _common_rows(node, params, output=1)
    new_state, sample = fn(
        state, size, dtype, *[rows_padded(p.buffer, rows) if isinstance(p, Ragged) else p for p in params]
    )
    return new_state, sample if static else Ragged(sample, length)


def _common_rows(node: Apply, args: Sequence[Any], output: int = 0) -> tuple[int, Any, bool]:
    """The buffer rows an elementwise computation over ``args`` (some `Ragged`) takes, their length, and whether it is static.

    The length is a whole array argument's rows where one is an array along
    the rows of ``node``'s output ``output`` (static), else the `Ragged`
    arguments' run-time length, checked to be the same for all of them.
    """
    static = whole_array_rows(node, args, output)
    rows = static[0] if static else max(a.buffer.shape[0] for a in args if isinstance(a, Ragged))
    length = static[0] if static else next(a.length for a in args if isinstance(a, Ragged))
    _require_lengths(node, [a.length for a in args if isinstance(a, Ragged)], length)
    return rows, length, bool(static)


def whole_array_rows(node: Apply, args: Sequence[Any], output: int = 0) -> list[int]:
    """The rows of each of ``args`` that is an array along the rows of ``node``'s output ``output`` (not broadcast along them)."""
    ndim = node.outputs[output].type.ndim
    return [
        jnp.shape(a)[0]
        for a in args
        if not isinstance(a, RUN_TIME_LENGTH) and jnp.ndim(a) == ndim and jnp.shape(a)[0] != 1
    ]


def _require_lengths(node: Apply, lengths: Sequence[Any], length: Any) -> None:
    """Check that the run-time ``lengths`` of ``node``'s arguments are all ``length``, as Aesara requires of their shapes."""
    differing = [other for other in lengths if other is not length]
    if differing:
        require(
            jnp.all(jnp.stack(differing) == length),
            ValueError,
            f"the arguments of node {node} differ in length on axis 0 (lengths known only at run time)",
            f"node {node}",
        )
