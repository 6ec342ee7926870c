"""Rewrites that stand in for Aesara's `ShapeFeature`, which aejax's mode leaves out.

Aesara's feature infers a symbolic shape for every node that a rewrite adds,
the inner graphs of Scans included; some rewrites only simplify a graph
when it is there. JAX knows every shape while tracing, so aejax does without
it (`aejax.linker.rewrites`) and keeps, in these rewrites, the
simplifications its graphs need from it: shapes read per axis, through
views of an array (`VIEWS`), whole slices and fills dropped, and no check
made for a value of which only the shape is read; and, shaped by their
inputs (`ShapedByInputs`), Aesara's rewrites that would not stop without it.
"""

from __future__ import annotations

from typing import Any

import aesara.tensor as at
from aesara.graph.basic import Variable, ancestors, clone_replace
from aesara.graph.fg import FunctionGraph
from aesara.graph.rewriting.basic import NodeRewriter
from aesara.raise_op import CheckAndRaise
from aesara.scalar.basic import Second
from aesara.tensor.basic import MakeVector, ScalarFromTensor, TensorFromScalar
from aesara.tensor.elemwise import DimShuffle, Elemwise
from aesara.tensor.extra_ops import broadcast_shape
from aesara.tensor.rewriting.basic import local_useless_fill
from aesara.tensor.shape import Shape, Shape_i, Unbroadcast
from aesara.tensor.subtensor import Subtensor, get_constant_idx


class ShapeAsEntries(NodeRewriter):
    """Write ``x.shape`` as the vector of its entries: ``Shape_i`` per axis, the static sizes as constants.

    Aesara does this with its `ShapeFeature` (``local_shape_to_shape_i``),
    which aejax's mode leaves out. Each entry then stands alone: ``x.shape[0]``
    becomes ``Shape_i{0}(x)``, a length `aejax.linker.lengths.bounds` can bound and
    the lowering reads from a value of run-time length.
    """

    def tracks(self) -> list[type]:
        return [Shape]

    def transform(self, fgraph: FunctionGraph, node: Any, *args: Any, **kwargs: Any) -> list[Variable] | bool:
        x = node.inputs[0]
        if not isinstance(node.op, Shape) or not isinstance(x.type, at.TensorType):
            return False
        return [MakeVector("int64")(*[axis_length(x, axis) for axis in range(x.type.ndim)])]


VIEWS = (DimShuffle, Unbroadcast, CheckAndRaise)
"""Ops whose output is a view of their first input: its elements rearranged (``DimShuffle``, ``Unbroadcast``) or as
they are, once a condition is checked (``CheckAndRaise``, ``Assert``)."""


class AxisLengthThroughViews(NodeRewriter):
    """``Shape_i`` of a view (`VIEWS`) as `axis_length` reads it: from the array it views.

    ``aesara.scan`` sizes each state's buffer ``n_steps + init.shape[0]``
    with ``init = unbroadcast(x0[None])``: its length is the constant 1. The
    length of ``assert_op(x, c)`` is ``x``'s, whatever ``c``: a graph that
    reads only the shape does not check ``c``, as under Aesara's `ShapeFeature`.
    """

    def tracks(self) -> list[type]:
        return [Shape_i]

    def transform(self, fgraph: FunctionGraph, node: Any, *args: Any, **kwargs: Any) -> list[Variable] | bool:
        x = node.inputs[0]
        if not isinstance(node.op, Shape_i) or not isinstance(getattr(x.owner, "op", None), VIEWS):
            return False
        return [axis_length(x, node.op.i)]


def axis_length(x: Variable, axis: int) -> Variable:
    """The length of ``x``'s axis: a constant if static, else ``Shape_i`` of the array it views (`VIEWS`)."""
    while isinstance(getattr(x.owner, "op", None), VIEWS) and x.type.shape[axis] is None:
        if isinstance(x.owner.op, DimShuffle):
            axis = x.owner.op.new_order[axis]  # never "x": a new axis has the static length 1
        x = x.owner.inputs[0]
    size = x.type.shape[axis]
    return Shape_i(axis)(x) if size is None else at.constant(size, dtype="int64")


class WholeSlices(NodeRewriter):
    """``x[0:]`` and ``x[:x.shape[0]]`` (each index a slice over the whole axis, step 1) as ``x``.

    ``aesara.scan`` gives its sequences as ``x[0:]``, cut to ``x.shape[0]``
    steps when it runs over all of ``x``; Aesara's ``local_useless_subtensor``
    removes those only with its `ShapeFeature`. Without them, errors name the
    sequence ``x[0:]`` rather than ``x``.
    """

    def tracks(self) -> list[type]:
        return [Subtensor]

    def transform(self, fgraph: FunctionGraph, node: Any, *args: Any, **kwargs: Any) -> list[Variable] | bool:
        if not isinstance(node.op, Subtensor):
            return False
        x = node.inputs[0]
        index = get_constant_idx(node.op.idx_list, node.inputs, allow_partial=True, only_process_constants=True)
        if not all(_covers_the_axis(entry, x, axis) for axis, entry in enumerate(index)):
            return False
        return [x]


def _covers_the_axis(entry: Any, x: Variable, axis: int) -> bool:
    if not isinstance(entry, slice):
        return False
    starts_at_zero = entry.start is None or (not isinstance(entry.start, Variable) and entry.start == 0)
    steps_by_one = entry.step is None or (not isinstance(entry.step, Variable) and entry.step == 1)
    ends_at_the_end = entry.stop is None or (isinstance(entry.stop, Variable) and _is_length_of(entry.stop, x, axis))
    return starts_at_zero and steps_by_one and ends_at_the_end


def _is_length_of(stop: Variable, x: Variable, axis: int) -> bool:
    """Whether ``stop`` is ``x.shape[axis]`` (``Shape_i``, maybe converted between scalar and tensor)."""
    while stop.owner is not None and isinstance(stop.owner.op, (ScalarFromTensor, TensorFromScalar)):
        stop = stop.owner.inputs[0]
    node = stop.owner
    return node is not None and isinstance(node.op, Shape_i) and node.op.i == axis and node.inputs[0] is x


class UselessFill(NodeRewriter):
    """Aesara's ``local_useless_fill``: ``fill(x, y)`` as ``y`` where ``y`` already has the result's type.

    A class so that the mode pickles (Aesara's rewrite is not importable by its name).
    """

    def tracks(self) -> list[Any]:
        return local_useless_fill.tracks()

    def transform(self, fgraph: FunctionGraph, node: Any, *args: Any, **kwargs: Any) -> Any:
        return local_useless_fill.transform(fgraph, node)


class FillOfChecked(NodeRewriter):
    """``fill(assert_op(x, c), y)`` as ``fill(x, y)``: a fill reads only its first input's shape, which is ``x``'s.

    The gradient of a checked value is such a fill (``ones_like``); Aesara's
    ``local_fill_to_alloc`` drops its check the same way, reading the shape
    through its `ShapeFeature`, so only the value itself is checked.
    """

    def tracks(self) -> list[Any]:
        return [Elemwise]

    def transform(self, fgraph: FunctionGraph, node: Any, *args: Any, **kwargs: Any) -> list[Variable] | bool:
        if not isinstance(node.op, Elemwise) or not isinstance(node.op.scalar_op, Second):
            return False
        checked, value = node.inputs
        if not isinstance(getattr(checked.owner, "op", None), CheckAndRaise):
            return False
        return [node.op(checked.owner.inputs[0], value)]


class ShapedByInputs(NodeRewriter):
    """Aesara's elementwise rewrite ``rewriter``, its replacement shaped by the node's inputs, not by its output.

    Without the feature, Aesara's ``broadcast_like`` shapes a replacement
    that must broadcast (``mul(0, x)`` as zeros, ``x ** 0`` as ones) by the
    shape of the very output it replaces: that output stays in the graph and
    the rewrite fires on it again, forever. Here that shape is the broadcast
    of the inputs' shapes, as the feature infers the shape of an
    elementwise output. ``rewriter`` is the name of Aesara's rewrite in
    ``database`` (its object does not pickle).
    """

    def __init__(self, database: Any, rewriter: str):
        self.database = database
        self.rewriter = rewriter

    def tracks(self) -> list[Any]:
        return self.database[self.rewriter].tracks()

    def transform(self, fgraph: FunctionGraph, node: Any, *args: Any, **kwargs: Any) -> Any:
        replacements = self.database[self.rewriter].transform(fgraph, node)
        if not isinstance(replacements, list):
            return replacements
        own_shapes = [
            v
            for v in ancestors(replacements, blockers=fgraph.variables)
            if v.owner is not None and isinstance(v.owner.op, Shape) and v.owner.inputs[0] in node.outputs
        ]
        if not own_shapes:
            return replacements
        shape = at.as_tensor_variable(broadcast_shape(*node.inputs), dtype="int64")
        return clone_replace(replacements, dict.fromkeys(own_shapes, shape))
