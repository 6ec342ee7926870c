"""The precision of a compiled program: JAX's ``jax_enable_x64`` belongs to the program, not to the process.

Each compiled function decides once, from its graph and where it runs,
whether its program computes with 64-bit types (`program_x64`):

- with them (``x64``) when any variable of the graph, or of an inner graph
  its Ops hold (a Scan's step, a Composite's), is ``float64`` or
  ``complex128``: a float64 graph computes in float64;
- with them on the CPU whatever the graph: Aesara's C backend sums a
  float32 tensor in a float64 accumulator and counts in int64, and so does
  the program there;
- without them otherwise, for a float32 graph on an accelerator: 32-bit
  integers, float32 accumulators, no float64 operation on a TPU.

A mode asks for another with ``mode.with_x64(True)`` or ``with_x64(False)``
(`aejax.linker.mode`). The precision is decided once, when the graph is
compiled, and the calls that run the program keep it, whatever wraps them
(an `AejaxFunction`, a plain Aesara `Function` of a mode built on aejax's
linker, a copy, an unpickled function, another thread): the thunk Aesara
runs (`aejax.linker.call.linker.HostCall`) and the direct calls
(`aejax.linker.call.direct_call`) compare JAX's effective setting (this
thread's, else the process's) with the program's, one read of the flag, and
only when they differ run inside ``jax.experimental.enable_x64(x64)``
(`running_in`; inline in the exact calls, so that no frame stands between
the call and its program), which changes this thread's setting alone: the
inputs encoded, the program traced and run, the outputs decoded. JAX's
compiled programs do not carry the setting themselves: a `jax.jit` function
called under another one traces and compiles again for it, and an
ahead-of-time ``Compiled`` one refuses arguments canonicalised without x64
(a float64 numpy array becomes float32) and converts what its host
callbacks return with the caller's setting. A program run without x64 takes
64-bit host values narrowed to 32 bits by their codecs
(`aejax.adapters.jax`), and its outputs are decoded to their Types' dtypes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import jax
from aesara.graph.basic import Variable, applys_between, vars_between
from aesara.graph.fg import FunctionGraph
from aesara.graph.op import HasInnerGraph
from aesara.tensor.elemwise import Elemwise
from jax.experimental import enable_x64

WIDE_FLOATS = frozenset({"float64", "complex128"})
"""The dtypes that make a program compute with x64."""


class PrecisionWarning(UserWarning):
    """A graph holding float64 values is traced with ``jax_enable_x64`` off, so it computes in float32."""


def wide_float_variables(fgraph: FunctionGraph) -> Iterator[Variable]:
    """The variables of ``fgraph``, and of the inner graphs its Ops hold, whose dtype is in `WIDE_FLOATS`."""
    for var in graph_variables(fgraph.inputs, fgraph.outputs):
        if getattr(var.type, "dtype", None) in WIDE_FLOATS:
            yield var


def graph_variables(inputs: Sequence[Variable], outputs: Sequence[Variable]) -> Iterator[Variable]:
    """The variables between ``inputs`` and ``outputs``, and those of every inner graph of their Ops, recursively
    (Aesara's `HasInnerGraph`: a Scan's step, an `Elemwise`'s `Composite`).

    Each Op's inner graph is walked once, however many nodes hold the Op:
    walked once per node, a NUTS chain's nested Scans and shared Composites
    took minutes.
    """
    graphs, walked = [(inputs, outputs)], set()
    while graphs:
        inputs, outputs = graphs.pop()
        yield from vars_between(inputs, outputs)
        for node in applys_between(inputs, outputs):
            op = node.op.scalar_op if isinstance(node.op, Elemwise) else node.op
            if isinstance(op, HasInnerGraph) and id(op) not in walked:
                walked.add(id(op))
                graphs.append((op.inner_inputs, op.inner_outputs))


def program_x64(fgraph: FunctionGraph, asked: bool | None, backend: str | None = None) -> bool:
    """Whether the program of ``fgraph`` computes with 64-bit types (see the module docstring).

    ``asked`` is the mode's choice (``None``: decide); ``backend`` the
    platform the program runs on, JAX's default backend unless given.
    """
    if asked is not None:
        return asked
    if (backend or jax.default_backend()) == "cpu":
        return True
    return next(wide_float_variables(fgraph), None) is not None


def running_in(x64: bool | None) -> contextlib.AbstractContextManager[Any]:
    """A context in which JAX's effective ``jax_enable_x64`` is ``x64`` (``None``: as it is), for this thread only."""
    if x64 is None or jax.config.jax_enable_x64 is x64:
        return contextlib.nullcontext()
    return enable_x64(x64)
