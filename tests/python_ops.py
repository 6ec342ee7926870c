"""Ops with a Python implementation only, for tests that give them lowerings of their own."""

import aesara.tensor as at
from aesara.graph.basic import Apply
from aesara.graph.op import Op


class PythonDouble(Op):
    """``x * 2`` in Python; a test registers a JAX lowering (right or wrong) on a subclass of its own."""

    def make_node(self, x):
        x = at.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = inputs[0] * 2
