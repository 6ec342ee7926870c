"""How a node's lowering takes the values of run-time length among its arguments, or why the program ends before it.

A value of run-time length reaches a lowering as it is where the lowering
declares it takes that kind (`aejax.linker.lengths.consumers`): a `Ragged`
trace, a `RangeRows` range, a `Masked` selection. Otherwise the node is made
to take it (`taking_run_time_lengths`):

- a `Ragged` value where the node works row by row (an elementwise random
  draw too) or is a reduction (`aejax.linker.lengths.ragged_rows`);
- a `RangeRows` as a `Ragged` buffer of its bound from the graph
  (`ranges_bounded`, `aejax.linker.lengths.bounds`) when there is one; one
  without a bound asks for its bounds as static inputs;
- a `Masked` selection where the node works row by row, draws, reduces or
  takes a maximum (`aejax.linker.lengths.masked`), else as a `Ragged` value
  of its rows where a `Ragged` value is taken.

For any other consumer the answer is a `NeedsSplit` (returned, not raised),
asking the linker to end the program after the node that made the value,
which then enters the next program from the host, where its length is known.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax.numpy as jnp
from aesara.graph.basic import Apply, Variable, ancestors

from aejax.linker.errors import NotStaticError
from aejax.linker.lengths import masked
from aejax.linker.lengths.bounds import length_bound
from aejax.linker.lengths.consumers import run_time_lengths_taken
from aejax.linker.lengths.ragged import RUN_TIME_LENGTH, Masked, NeedsSplit, Ragged, RangeRows, selected_rows_first
from aejax.linker.lengths.ragged_rows import ragged_draw, ragged_elementwise, ragged_reduction, whole_array_rows


def taking_run_time_lengths(
    node: Apply, fn: Callable[..., Any], args: Sequence[Any]
) -> Callable[..., Any] | NeedsSplit:
    """``fn``, made to take the values of run-time length among ``args``; else where the program must split."""
    if any(isinstance(arg, Ragged) for arg in args) and not run_time_lengths_taken(fn).ragged:
        ragged = _taking_ragged(node, fn, args)
        return _split_after(node, args, Ragged) if ragged is None else _selections_first(ragged)
    for var, arg in zip(node.inputs, args):
        if isinstance(arg, RangeRows) and not run_time_lengths_taken(fn).ranges:
            return _needing_bounds(var)
    if not any(isinstance(arg, Masked) for arg in args) or run_time_lengths_taken(fn).masked:
        return fn
    if masked.is_row_wise(node) and masked.share_one_mask(args) and not whole_array_rows(node, args):
        return lambda *values: masked.elementwise(node, fn, values)
    if _draws_along_rows(node, args):
        params = args[3:]
        if masked.share_one_mask(params) and not whole_array_rows(node, params, output=1):
            return lambda *values: masked.draw_masked(node, fn, values)
        return _selections_first(lambda *values: ragged_draw(node, fn, values))
    if masked.is_reduction(node):
        return lambda x: masked.reduction(node, fn, x)
    if masked.is_extremum(node):
        return lambda x: masked.extremum(node, fn, x)
    if run_time_lengths_taken(fn).ragged:
        return _selections_first(fn)
    if masked.is_row_wise(node):  # selections made with different masks, or with whole arrays
        return _selections_first(lambda *values: ragged_elementwise(node, fn, values))
    return _split_after(node, args, Masked)


def _split_after(node: Apply, args: Sequence[Any], kind: type) -> NeedsSplit:
    """The split after the node that made ``node``'s first argument of ``kind`` (`Ragged`, `Masked`)."""
    return NeedsSplit(next(var.owner for var, arg in zip(node.inputs, args) if isinstance(arg, kind)))


def _selections_first(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, taking each `Masked` selection among its arguments as a `Ragged` value of its rows (`Masked.as_ragged`)."""
    return lambda *values: fn(*[selected_rows_first(v) for v in values])


def _taking_ragged(node: Apply, fn: Callable[..., Any], args: Sequence[Any]) -> Callable[..., Any] | None:
    """``fn`` for `Ragged` arguments: row by row, reductions and maxima over their rows; ``None`` for any other node."""
    if masked.is_row_wise(node):
        return lambda *values: ragged_elementwise(node, fn, values)
    if _draws_along_rows(node, args):
        return lambda *values: ragged_draw(node, fn, values)
    if masked.is_reduction(node):
        return lambda x: ragged_reduction(node, fn, x)
    if masked.is_extremum(node):
        return lambda x: masked.extremum(node, fn, x.as_masked())
    return None


def _draws_along_rows(node: Apply, args: Sequence[Any]) -> bool:
    """Whether ``node`` is an elementwise draw whose values of run-time length are parameters along its sample's rows."""
    if not masked.is_elementwise_draw(node) or any(isinstance(arg, RUN_TIME_LENGTH) for arg in args[:3]):
        return False
    ndim = node.outputs[1].type.ndim
    return all(jnp.ndim(a.buffer) == ndim for a in args[3:] if isinstance(a, (Ragged, Masked)))


def _needing_bounds(var: Variable) -> Callable[..., Any]:
    def needs_bounds(*args: Any) -> Any:
        raise NotStaticError(f"the bounds of the arange {var} must be known while tracing")

    return needs_bounds


def ranges_bounded(node: Apply, fn: Callable[..., Any], args: list[Any]) -> list[Any]:
    """``args``, each lazy arange a `Ragged` buffer of its bound from the graph (if it has one) unless ``fn`` takes ranges."""
    if run_time_lengths_taken(fn).ranges or not any(isinstance(arg, RangeRows) for arg in args):
        return args
    return [_bounded_range(var, arg) if isinstance(arg, RangeRows) else arg for var, arg in zip(node.inputs, args)]


def _bounded_range(var: Variable, value: RangeRows) -> RangeRows | Ragged:
    """A lazy arange as a `Ragged` buffer of its bound from the graph, if it has one."""
    bound = length_bound(var)
    return value if bound is None else value.as_ragged(bound)


def run_time_length_source(node: Apply, env: Mapping[Variable, Any], inputs: Sequence[Variable]) -> Apply | None:
    """The node that made a value of run-time length in ``env`` from which ``node``'s inputs are computed, if any.

    ``inputs`` are the inputs of the graph being traced: values the trace
    received, not made in it.
    """
    for var in ancestors(node.inputs, blockers=inputs):
        if var.owner is not None and var not in inputs and isinstance(env.get(var), (Ragged, Masked)):
            return var.owner
    return None
