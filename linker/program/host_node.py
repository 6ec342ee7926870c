"""A node run on the host between two jit programs, because its output's shape depends on values.

``unique(x)``, ``repeat(x, r)`` of a computed ``r``: JAX cannot trace a node
whose output shape depends on the values of traced inputs, and making
inputs static does not help when those values are data. `GraphProgram`
(`aejax.linker.program.segments`) then ends the jit program before the node,
runs the node with its Op's own ``perform`` (Aesara's reference
implementation) on the values that program returned, and continues with the
next program on its outputs, compiled for their shapes.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from aesara.graph.basic import Apply, Constant, Variable

from aejax.linker.errors import caller_stacklevel
from aejax.linker.trace.lowering import host_value, is_numeric, perform


class HostNodeWarning(UserWarning):
    """A node runs on the host between two jit programs: its output's shape depends on values."""


def runs_on_host(node: Apply) -> bool:
    """Whether ``node`` can run on the host between programs: its inputs and outputs are arrays or scalars.

    An input may also be a constant of another type (the slice of ``x[:, mask]``): it never crosses a program.
    """
    inputs_fit = all(is_numeric(var) or isinstance(var, Constant) for var in node.inputs)
    return inputs_fit and all(is_numeric(var) for var in node.outputs)


class HostNode:
    """The program of a segment that is one node computed by its Op's ``perform``."""

    cache_size = 0
    """It compiles nothing (set by `GraphProgram.cache_size` like a jit segment's)."""

    def __init__(self, node: Apply, inputs: Sequence[Variable], outputs: Sequence[Variable]) -> None:
        self.node = node
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        warnings.warn(
            f"the shape of node {node}'s output depends on the values of its inputs, which JAX cannot "
            "trace: aejax ends the JAX program before it and runs it on the host, with Aesara's "
            "implementation, on every call",
            HostNodeWarning,
            stacklevel=caller_stacklevel(),
        )

    def __call__(self, *values: Any) -> tuple[Any, ...]:
        """The outputs for the values of ``inputs`` (the node's inputs but its constants)."""
        node = self.node
        given = dict(zip(self.inputs, values))
        args = [
            host_value(var.data if isinstance(var, Constant) else np.asarray(given[var]), var) for var in node.inputs
        ]
        computed = dict(zip(node.outputs, perform(node, args)))
        return tuple(computed[var] for var in self.outputs)
