"""Ops with a Python implementation only, for tests that give them lowerings of their own or run them on the host."""

import aesara.tensor as at
import numpy as np
from aesara.graph.basic import Apply
from aesara.graph.op import Op


class PythonDouble(Op):
    """``x * 2`` in Python; a test registers a JAX lowering (right or wrong) on a subclass of its own."""

    def make_node(self, x):
        x = at.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = inputs[0] * 2


class NoShape(Op):
    """``x[:, None] - x[None, :]``, with neither a static output shape nor ``infer_shape``."""

    __props__ = ()

    def make_node(self, x):
        x = at.as_tensor_variable(x)
        return Apply(self, [x], [at.matrix(dtype=x.dtype)])

    def perform(self, node, inputs, outputs):
        (x,) = inputs
        outputs[0][0] = np.subtract.outer(x, x)
