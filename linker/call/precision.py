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
only when they differ run inside ``enable_x64(x64)``
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

A function whose program has x64, made in a thread without it (JAX's
default), may be called there again and again, each call entering
``enable_x64`` (2 to 3 us). So its exact call
(`aejax.linker.call.direct_call.ExactCall`) comes to run a program that
takes each 64-bit argument as its 32-bit words (`taking_words`): JAX
converts no words whatever the setting, the program turns them back into
the values bit for bit, and what it returns is 64-bit whatever the setting
too. Whether a function's exact calls take words is
decided once, when the function is made (`takes_words`); either form is
right whatever the setting of the thread that calls it. That program is
compiled once the calls entering ``enable_x64`` have cost about what making
the program took (`calls_before_words`), since compiling it costs about as
much again.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
import jax.export
import numpy as np
from aesara.graph.basic import Variable, applys_between, vars_between
from aesara.graph.fg import FunctionGraph
from aesara.graph.op import HasInnerGraph
from aesara.tensor.elemwise import Elemwise

from aejax.adapters.jax_api import enable_x64
from aejax.adapters.words import WORD, program_value, word_count
from aejax.linker.checks import HOST_CALLS, CheckedProgram, stages_any

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


SWITCH_SECONDS = 2e-6
"""About what entering ``enable_x64`` adds to a call (2 to 3 us on a 2-core CPU, interleaved medians)."""


def calls_before_words(made_in: float) -> int:
    """How many calls enter ``enable_x64`` before an exact call takes words, its program made in ``made_in`` seconds.

    Taking words compiles the program once more, in about the time making
    it took: a function called a few times never pays for it, one called
    in a loop pays it once the switches it saves have cost as much.
    """
    return max(1, math.ceil(made_in / SWITCH_SECONDS))


def takes_words(x64: bool | None) -> bool:
    """Whether a function whose program has precision ``x64``, made now, calls it with 64-bit arguments as words.

    So when the program has x64 and this thread's setting is without it.
    """
    return bool(x64) and not jax.config.jax_enable_x64


def taking_words(program: Callable[..., Any], arguments: Sequence[jax.ShapeDtypeStruct]) -> Callable[..., Any]:
    """``program`` (jitted, with x64) for ``arguments``, each 64-bit one taken as its words, run with x64 whatever
    this thread's setting.

    Called with the words of each 64-bit argument
    (`aejax.adapters.words.host_words`) and the others as they are, it runs
    without entering ``enable_x64``. It is traced with x64 into a
    `jax.export` export, whose call is jitted: only 32-bit values cross it,
    so any setting traces the same program, and JAX's own fast path calls
    it (an ahead-of-time ``Compiled`` adds a Python layer to each call). A
    program that calls the host, which JAX does not export, is compiled
    ahead of time instead. A `CheckedProgram` stays one, its jitted
    function taking words.
    """
    if isinstance(program, CheckedProgram):
        return CheckedProgram(taking_words(program.jitted, arguments), program.checks)
    dtypes = [np.dtype(argument.dtype) for argument in arguments]

    def from_words(*values: Any) -> Any:
        return program(*[program_value(v, d) if word_count(d) else v for v, d in zip(values, dtypes)])

    crossing = [
        jax.ShapeDtypeStruct((*a.shape, word_count(d)), WORD) if word_count(d) else a for a, d in zip(arguments, dtypes)
    ]
    words_program = jax.jit(from_words)
    with enable_x64(True):
        traced = words_program.trace(*crossing)
        if stages_any(traced.jaxpr.jaxpr, HOST_CALLS):
            return traced.lower().compile()
        return jax.jit(jax.export.export(words_program)(*crossing).call)
