"""Bounds of a Scan's sequence rows that the graph does not give, asked for as static inputs.

A step that makes a size from a sequence row (``arange(2, y_t + 1)``, as in
aemcmc's CRT sampler) is lowered with that size bounded by what the row may
hold (`aejax.linker.lengths.bounds`). When the sequence is an input, the
graph bounds nothing; aejax's rewrite `ScanSequenceBounds` has then wrapped
it in `ValuesWithin`, with its least and greatest values rounded to powers of
two. Those are traced where the sequence is, so the step fails; the Scan
lowering then raises `BoundsNeeded` naming the `ValuesWithin` node
(`bounds_request`), and the program starts a new program there, in which the
bounds are static inputs: one program per value of the rounded bounds. A
graph exported with ``jaxify`` cannot do that, and its Scan runs on the host
as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from aesara.graph.basic import Apply, Variable, ancestors

from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.errors import LoweringError, variable_name
from aejax.linker.graph.value_bounds import ValuesWithin
from aejax.linker.lengths.bounds import BoundsNeeded, static_inputs_possible, value_interval
from aejax.linker.lengths.consumers import takes_run_time_lengths


@jax_funcify.register(ValuesWithin)
def _values_within(op: ValuesWithin, **kwargs: Any) -> Callable[..., Any]:
    def values_within(x: Any, low: Any, high: Any) -> Any:
        return x

    return takes_run_time_lengths(values_within, ragged=True, ranges=True, masked=True)


def bounds_request(node: Apply, inner_sequences: Sequence[Variable], error: LoweringError) -> BoundsNeeded | None:
    """The `BoundsNeeded` for the first sequence of Scan ``node`` whose rows ``error`` needed bounds of, if one helps.

    ``inner_sequences`` are the step's sequence inputs in the graph the
    lowering traced. One helps when that sequence is wrapped in `ValuesWithin`
    whose bounds are still traced, and the program being traced can make
    them static (`static_inputs_possible`).
    """
    if error.node is None or not static_inputs_possible():
        return None
    used = set(ancestors(error.node.inputs))
    outer_sequences = node.inputs[1 : 1 + len(inner_sequences)]
    for inner, outer in zip(inner_sequences, outer_sequences):
        wrapper = outer.owner
        if inner in used and wrapper is not None and isinstance(wrapper.op, ValuesWithin):
            if value_interval(outer) is None:
                return BoundsNeeded(
                    f"the step of Scan {node.op} makes a size from the rows of its sequence "
                    f"{variable_name(wrapper.inputs[0])!r} (node {error.node}), and the bounds of its "
                    "values must be known while tracing",
                    node=wrapper,
                )
    return None
