"""Ops that count: how often JAX traces a lowering (how many traces a first call costs), how often a program runs."""

import aesara
import jax

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


class Counted(aesara.graph.op.Op):
    """``x`` as it is, lowered with a host callback that counts the runs of the compiled program (``Counted.runs``)."""

    __props__ = ()
    runs = 0

    def make_node(self, x):
        return aesara.graph.basic.Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = inputs[0].copy()


def _count_run():
    Counted.runs += 1


@aejax.linker.jax_funcify.register(Counted)
def _counted(op, node=None, **kwargs):
    def counted(x):
        jax.debug.callback(_count_run)
        return x

    return counted
