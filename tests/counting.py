"""Counting: how often JAX traces a lowering (`Halve`) or any function (`TRACES`), how often a program runs
(`Counted`)."""

from collections.abc import Iterator
from contextlib import contextmanager

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


class TraceCounter:
    """Names the functions JAX traces while `counting` is on, but a saved export's call (``program``): a program
    loaded from the store traces only that."""

    def __init__(self) -> None:
        self.traced: list[str] = []
        self.on = False

    def __call__(self, event: str, duration: float, fun_name: str = "", **kwargs: object) -> None:
        if self.on and event.endswith("jaxpr_trace_duration") and fun_name != "program":
            self.traced.append(fun_name)

    @contextmanager
    def counting(self) -> Iterator[list[str]]:
        """The names traced during the block (JAX's listeners cannot be removed: this one is registered once)."""
        self.traced, self.on = [], True
        try:
            yield self.traced
        finally:
            self.on = False


TRACES = TraceCounter()
jax.monitoring.register_event_duration_secs_listener(TRACES)
