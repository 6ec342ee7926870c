"""`ValuesWithin`: an integer tensor, with the least and greatest value its elements may hold beside it.

aejax's rewrite `aejax.linker.rewrites.scan.ScanSequenceBounds` wraps a
Scan's integer sequence in it when the step makes a size from the sequence's
rows (``arange(2, y_t + 1)`` in aemcmc's CRT sampler) and the graph bounds
nothing about their values (``y`` an input). The bounds are computed from the
sequence itself, so the value is unchanged; `aejax.linker.lengths.bounds`
reads them, once they are known while tracing, as what every row may hold.
"""

from __future__ import annotations

from typing import Any

import aesara.tensor as at
import numpy as np
from aesara.gradient import DisconnectedType
from aesara.graph.basic import Apply, Variable
from aesara.graph.op import Op


class ValuesWithin(Op):
    """``x``, every element of which lies within ``[low, high]`` (integer scalars).

    Its output is ``x`` itself (a view); ``low`` and ``high`` only say what
    ``x`` may hold. Whoever builds the node vouches for them.
    """

    __props__ = ()
    view_map = {0: [0]}

    def make_node(self, x: Any, low: Any, high: Any) -> Apply:
        x, low, high = (at.as_tensor_variable(v) for v in (x, low, high))
        for bound in (low, high):
            if bound.type.ndim != 0 or np.dtype(bound.type.dtype).kind not in "iu":
                raise TypeError(f"the least and greatest values of a tensor are integer scalars, not {bound.type}")
        return Apply(self, [x, low, high], [x.type()])

    def perform(self, node: Apply, inputs: list[Any], output_storage: list[list[Any]]) -> None:
        output_storage[0][0] = inputs[0]

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list[Any]) -> list[Any]:
        return [shapes[0]]

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        return [[True], [False], [False]]

    def grad(self, inputs: list[Variable], output_grads: list[Variable]) -> list[Variable]:
        return [output_grads[0], DisconnectedType()(), DisconnectedType()()]


within_bounds = ValuesWithin()
"""``within_bounds(x, low, high)``: ``x``, known to hold only elements within ``[low, high]``."""
