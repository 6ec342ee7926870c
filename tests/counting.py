"""An Op whose lowering counts how often JAX traces it: how many traces a first call costs."""

import aesara

import aejax.linker


class Halve(aesara.graph.op.Op):
    """``x / 2``, lowered by a function that counts how often it is traced (``Halve.traced``)."""

    __props__ = ()
    traced = 0

    def make_node(self, x):
        return aesara.graph.basic.Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = inputs[0] / 2


@aejax.linker.jax_funcify.register(Halve)
def _halve(op, node=None, **kwargs):
    def halve(x):
        Halve.traced += 1
        return x / 2

    return halve
