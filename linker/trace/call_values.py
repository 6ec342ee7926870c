"""The values of the call a program is traced for, read where a node needs one concrete.

A program is traced with all of its inputs traced. A node that needs an
integer concrete (``alloc(0, n)``, ``x[:n]``, a Scan's step count) fails to
lower on a traced one; the lowering loop (`aejax.linker.trace.lowering`)
then takes the values of that node's traced inputs that the call tells (an
input that may be made static, or a small value computed from such inputs
and constants) and lowers the node again on them. The program so traced
computes the graph for those input values only: the inputs read are its
static inputs, whose values key it (`aejax.linker.program.static_inputs`).
So the trace that makes a program also finds which inputs are static, and
nothing is traced twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from aesara.graph.basic import Apply, Variable

from aejax.linker.errors import LoweringError, variable_name
from aejax.linker.trace_context import current, entered


class CallValues:
    """The values a call gives the inputs that may be made static, and which of them tracing read.

    ``read`` maps each input read to the first node that needed it concrete;
    ``known`` keeps the values worked out from them (by the lowering loop).
    Once its program is kept under the values of some inputs, ``limit``
    holds them: a later trace of that program (JAX traces again for
    arguments of another dtype) may read no other input, whose value the
    program's calls do not share.
    """

    def __init__(self, values: Mapping[Variable, Any]) -> None:
        self.values = dict(values)
        self.read: dict[Variable, Apply] = {}
        self.known: dict[Variable, tuple[Any, frozenset[Variable]] | None] = {}
        self.limit: frozenset[Variable] | None = None

    def note_read(self, inputs: Iterable[Variable], node: Apply) -> None:
        """Record that ``node`` needed the values of ``inputs`` concrete."""
        for var in inputs:
            if self.limit is not None and var not in self.limit:
                raise LoweringError(
                    f"node {node} needs the value of input {variable_name(var)!r} while a program kept for other "
                    "static inputs is traced again; report the graph",
                    node=node,
                )
            self.read.setdefault(var, node)


def call_values() -> CallValues | None:
    """The call values of the program being traced; ``None`` where a trace cannot read any (``jaxify``)."""
    return current().call_values


@contextmanager
def reading_call_values(values: CallValues) -> Iterator[None]:
    """Let the function traced in the block read ``values`` where a node needs them."""
    with entered(call_values=values):
        yield
