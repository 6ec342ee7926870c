"""The graph rewrites of aejax's JAX mode.

`JAX_REWRITES` selects Aesara's own rewrites:

- included: ``fast_run`` (canonicalisation, specialisation, scan rewrites such
  as ``scan_save_mem`` and the scan push-outs, shape rewrites), plus Aesara's
  two JAX rewrites that turn boolean-mask indexing into ``where``
  (``jax_boolean_indexing_sum``, ``jax_boolean_indexing_set_or_inc``);
- excluded: ``inplace`` (JAX arrays are immutable; in-place Ops only add
  destroy-handler work), ``cxx_only`` and ``BlasOpt`` (C and BLAS Ops with no
  JAX lowering), ``fusion`` (XLA fuses elementwise work itself; Aesara's
  `Composite` loops would only hide the graph from it). Aesara's
  ``jax_shape_parameter_as_tuple`` / ``jax_size_parameter_as_tuple`` are not
  needed: the lowering evaluates concrete shape arithmetic with numpy while
  tracing.

Before them, `JAXGraphRewriter` runs aejax's own rewrite
`until_scan_keep_last`, Aesara's ``scan_save_mem`` for ``until`` loops
(which Aesara leaves alone): when only the last value of an output is used,
its buffer holds only the rows the loop reads, so the loop carries no trace.
It runs first because later canonicalisation rewrites ``x[1:][-1]`` into an
index computed from the shape, which no longer says "the last row".
"""

from __future__ import annotations

from typing import Any

import aesara.tensor as at
from aesara.compile import optdb
from aesara.graph.basic import Variable
from aesara.graph.fg import FunctionGraph
from aesara.graph.rewriting.basic import GraphRewriter, in2out, node_rewriter
from aesara.graph.rewriting.db import RewriteDatabaseQuery
from aesara.scan.op import Scan
from aesara.tensor.exceptions import NotScalarConstantError
from aesara.tensor.subtensor import Subtensor, get_constant_idx

from aejax.linker.scan_layout import ScanLayout

JAX_REWRITES = RewriteDatabaseQuery(
    include=["fast_run", "jax_boolean_indexing_sum", "jax_boolean_indexing_set_or_inc"],
    exclude=["cxx_only", "BlasOpt", "inplace", "fusion"],
)


def _constant_index(client: Any) -> list[Any] | None:
    if not isinstance(getattr(client, "op", None), Subtensor):
        return None
    try:
        return get_constant_idx(client.op.idx_list, client.inputs, only_process_constants=True)
    except NotScalarConstantError:
        return None


def last_row_reads(fgraph: FunctionGraph, var: Variable) -> list[Variable] | None:
    """The ``var[-1]`` (or ``var[k:][-1]``) variables, if they are all that uses ``var``."""
    reads = []
    for client, _ in fgraph.clients[var]:
        index = _constant_index(client)
        if index is None:
            return None
        first = index[0]
        if first == -1:
            reads.append(client.outputs[0])
        elif isinstance(first, slice) and first.stop is None and first.step is None and len(index) == 1:
            tails = last_row_reads(fgraph, client.outputs[0])
            if tails is None:
                return None
            reads.extend(tails)
        else:
            return None
    return reads or None


@node_rewriter([Scan])
def until_scan_keep_last(fgraph: FunctionGraph, node: Any) -> dict[Variable, Variable] | bool:
    """Shrink the buffers of an ``until`` Scan's outputs of which only the last row is used."""
    layout = ScanLayout.of(node.op)
    if not layout.as_while:
        return False
    inputs = list(node.inputs)
    shrunk: dict[int, list[Variable]] = {}
    for k, width in enumerate(layout.sot_windows()):
        out = layout.sot_output_index(k)
        reads = last_row_reads(fgraph, node.outputs[out])
        if reads is not None:
            position = layout.sot_input_index(k)
            inputs[position] = inputs[position][:width]
            shrunk[out] = reads
    for k in range(layout.n_nit_sot):
        out = layout.nit_sot_output_index(k)
        reads = last_row_reads(fgraph, node.outputs[out])
        if reads is not None:
            inputs[layout.nit_sot_input_index(k)] = at.as_tensor_variable(1, dtype=node.inputs[layout.nit_sot_input_index(k)].dtype)
            shrunk[out] = reads
    if not shrunk:
        return False
    new = node.op.make_node(*inputs)
    replacements: dict[Variable, Variable] = {}
    for index, (old, fresh) in enumerate(zip(node.outputs, new.outputs)):
        if index in shrunk:
            replacements.update((read, fresh[-1]) for read in shrunk[index])
        else:
            replacements[old] = fresh
    return replacements


class JAXGraphRewriter(GraphRewriter):
    """aejax's early rewrites, then Aesara's rewrites selected by `JAX_REWRITES`."""

    def __init__(self) -> None:
        self.early = in2out(until_scan_keep_last, ignore_newtrees=True)

    def apply(self, fgraph: FunctionGraph) -> None:
        self.early.rewrite(fgraph)
        optdb.query(JAX_REWRITES).rewrite(fgraph)

    def add_requirements(self, fgraph: FunctionGraph) -> None:
        self.early.add_requirements(fgraph)
