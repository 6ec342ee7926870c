"""A node run on the host between two jit programs, with Aesara's own implementation.

`GraphProgram` (`aejax.linker.program.segments`) ends the jit program before
such a node, runs the node with its Op's ``perform`` (Aesara's reference
implementation; a lazy Op such as `IfElse`, which has none, through its
thunk) on the values that program returned, and continues with the next
program on its outputs, compiled for their shapes. A node runs there when

- its output's shape depends on the values of traced inputs (``unique(x)``,
  ``repeat(x, r)`` of a computed ``r``), which JAX cannot trace, and making
  inputs static did not help;
- its output shapes are unknown while tracing (no static shape, no
  ``infer_shape``), so it cannot run in a host callback either: only running
  it tells them (a Scan whose step has such a node runs as a whole);
- it takes or produces values that stay on the host, Python objects of
  Aesara's `Generic` Type (`aejax.adapters.stays_on_host`), which no program
  can hold, or its inner graph does. Such a graph may have no jit program
  at all.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from aesara.graph.basic import Apply, Constant, Variable
from aesara.graph.op import Op, _NoPythonOp
from aesara.link.c.op import COp, _NoPythonCOp, _NoPythonExternalCOp

from aejax.linker.errors import caller_stacklevel, mark_raised_by
from aejax.linker.trace.folding import host_value, is_numeric, perform
from aejax.linker.trace.host_failures import host_objects

_NO_PERFORM = {cls.perform for cls in (Op, _NoPythonOp, _NoPythonCOp, _NoPythonExternalCOp)}
_PERFORM_THUNKS = {Op.make_thunk, COp.make_thunk}
"""The generic ``make_thunk`` methods: they run ``perform`` (or C code), nothing of their own."""

VALUE_SHAPES = "the shape of its output depends on the values of its inputs, which JAX cannot trace"
UNKNOWN_SHAPES = (
    "the output shapes of its Op, or of an Op of its inner graph, are unknown while tracing (no static shapes, "
    "no infer_shape), so it cannot run in a JAX host callback; give those outputs static shapes or the Op an "
    "infer_shape to keep it inside the program"
)
INNER_OBJECTS = "its inner graph takes or produces Python objects (Generic values), which cannot enter a JAX program"


class HostNodeWarning(UserWarning):
    """A node runs on the host between two jit programs: its output's shape depends on values, or is unknown."""


def _python_implementation(op: Op) -> str | None:
    """``"perform"`` or ``"thunk"``: how the host runs ``op`` without C code; ``None`` if it cannot."""
    if type(op).perform not in _NO_PERFORM:
        return "perform"
    return "thunk" if type(op).make_thunk not in _PERFORM_THUNKS else None


def host_node_problem(node: Apply) -> str | None:
    """Why ``node`` cannot run on the host between programs; ``None`` if it can.

    It can when its Op has a Python implementation and each of its inputs and
    outputs is an array, a scalar or a value that stays on the host. An input
    may also be a constant of another type (the slice of ``x[:, mask]``): it
    never crosses a program.
    """
    if _python_implementation(node.op) is None:
        return f"Op {node.op} has no Python implementation to run on the host"
    kept = set(host_objects(node))
    inputs = [var for var in node.inputs if not (is_numeric(var) or isinstance(var, Constant) or var in kept)]
    outputs = [var for var in node.outputs if not (is_numeric(var) or var in kept)]
    others = inputs + outputs
    if others:
        types = ", ".join(f"{var} of type {var.type}" for var in others)
        return f"its values {types} cannot cross between the host and a JAX program"
    return None


def runs_on_host(node: Apply) -> bool:
    """Whether ``node`` can run on the host between programs (see `host_node_problem`)."""
    return host_node_problem(node) is None


class HostNode:
    """The program of a segment that is one node computed by its Op's Python implementation.

    ``reason`` says why the node runs on the host, in the `HostNodeWarning`
    given when the segment is made; ``None`` gives none (a node of Python
    objects has nowhere else to run).
    """

    cache_size = 0
    """It compiles nothing (set by `GraphProgram.cache_size` like a jit segment's)."""

    def __init__(
        self, node: Apply, inputs: Sequence[Variable], outputs: Sequence[Variable], reason: str | None = VALUE_SHAPES
    ) -> None:
        self.node = node
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self._thunk = _python_implementation(node.op) == "thunk"
        if reason is not None:
            warnings.warn(
                f"node {node} runs on the host: {reason}. aejax ends the JAX program before it and runs it "
                "with Aesara's implementation, on every call",
                HostNodeWarning,
                stacklevel=caller_stacklevel(),
            )

    def __call__(self, *values: Any) -> tuple[Any, ...]:
        """The outputs for the values of ``inputs`` (the node's inputs but its constants)."""
        given = dict(zip(self.inputs, values))
        args = [self._argument(var, given) for var in self.node.inputs]
        try:
            results = self._run_thunk(args) if self._thunk else perform(self.node, args)
        except Exception as error:
            mark_raised_by(error, self.node, args)
            raise
        computed = dict(zip(self.node.outputs, results))
        return tuple(computed[var] for var in self.outputs)

    @staticmethod
    def _argument(var: Variable, given: dict[Variable, Any]) -> Any:
        if isinstance(var, Constant):
            return host_value(var.data, var)
        value = given[var]
        return host_value(np.asarray(value), var) if is_numeric(var) else value

    def _run_thunk(self, args: Sequence[Any]) -> list[Any]:
        """The outputs computed by the thunk the Op makes itself (a lazy Op's), every input given."""
        node = self.node
        storage = {var: [arg] for var, arg in zip(node.inputs, args)} | {var: [None] for var in node.outputs}
        done = {var: [True] for var in node.inputs} | {var: [False] for var in node.outputs}
        thunk = node.op.make_thunk(node, storage, done, [], impl="py")
        missing = thunk()
        if missing:
            raise RuntimeError(f"node {node} asked again for inputs {missing}, which were all given")
        return [storage[var][0] for var in node.outputs]
