"""What lowering one node came to while JAX traces it: its outputs, or what it needs instead.

A lowering (`aejax.linker.dispatch`, `aejax.linker.scan`) says that it
cannot run as traced by raising: JAX's own errors for a traced size, our
`NotStaticError`, a `BoundsNeeded`, a `NeedsSplit`. `attempt` is the one
place that turns such an exception into an `Outcome`; the lowering loop
(`aejax.linker.trace.lowering`) decides on that value what to do next:
lower the node again on the call's values, retry it on all the rows of a
value of run-time length, end the program there, or raise. The node's
failure code is part of its `Outputs`: an attempt that comes to anything
else leaves none behind.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aesara.graph.basic import Apply

from aejax.linker.checks import code_of, filed_under, fold
from aejax.linker.errors import LoweringError
from aejax.linker.lengths.bounds import BoundsNeeded
from aejax.linker.lengths.ragged import NeedsSplit
from aejax.linker.trace.host_failures import HostObjectError, UnknownShapesError


@dataclass(frozen=True)
class Outputs:
    """The node's outputs, each as its variable declares, and the failure code of the checks it met (`aejax.linker.checks`)."""

    values: tuple[Any, ...]
    code: Any = None
    """``None``: the node met no check."""


@dataclass(frozen=True)
class NeedsStatic:
    """The node needs a size or shape concrete that is traced.

    The call being traced may tell it (`aejax.linker.trace.refill`); else a
    program that starts at the node (or, for a `BoundsNeeded`, at the node
    it names) makes it a static input.
    """

    error: LoweringError


@dataclass(frozen=True)
class Split:
    """A value of run-time length reaches the node: the program ends after ``error.node``, which made it."""

    error: NeedsSplit


@dataclass(frozen=True)
class OnHost:
    """The node runs on the host between two programs: its output shapes are unknown, or it takes a Python object."""

    error: UnknownShapesError | HostObjectError


@dataclass(frozen=True)
class Failed:
    """The node fails in a way no program can help: ``error`` is raised as it is."""

    error: Exception


Outcome = Outputs | NeedsStatic | Split | OnHost | Failed
"""What lowering a node came to."""

ENDS_PROGRAM = (NeedsStatic, Split, OnHost)
"""The outcomes after which the node may run in a program that starts at it, or on the host."""


def attempt(
    node: Apply,
    compute: Callable[[], Sequence[Any]],
    failure: Callable[[Exception], Exception],
) -> Outcome:
    """What computing ``node``'s outputs with ``compute`` came to.

    ``failure`` says what an exception ``compute`` raises stands for (a
    `LoweringError` naming ``node``, or the exception as it is); the
    `Outcome` is chosen from that. The checks met while computing fold into
    the code of `Outputs`, never into a code around the node.
    """
    try:
        with filed_under(node):
            values, code = code_of(lambda: tuple(compute()))
        return Outputs(values, code)
    except Exception as error:  # the one place a lowering's exception becomes a value (module docstring)
        return _described(node, failure(error))


def _described(node: Apply, error: Exception) -> Outcome:
    """The `Outcome` of ``node`` failing with ``error``."""
    if isinstance(error, NeedsSplit):
        return Split(error)
    if (
        isinstance(error, LoweringError)
        and error.needs_static
        and (error.node is node or isinstance(error, BoundsNeeded))
    ):
        return NeedsStatic(error)
    if isinstance(error, (UnknownShapesError, HostObjectError)) and error.node is node:
        return OnHost(error)
    return Failed(error)


def outputs_of(outcome: Outcome) -> tuple[Any, ...]:
    """The outputs ``outcome`` holds, its failure code folded into the code around the node; its error is raised if it
    holds none."""
    if isinstance(outcome, Outputs):
        fold(outcome.code)
        return outcome.values
    raise outcome.error
