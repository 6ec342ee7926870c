"""Errors raised by the aejax JAX linker, and where its warnings point.

Each takes a single message, so Aesara's own error annotation (which
re-creates the exception with extra text) works with them.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import aesara
import jax
import numpy as np
from aesara.graph.basic import Apply


def variable_name(var: Any) -> str:
    """How error messages and warnings name a graph variable."""
    return var.name or str(var)


class AejaxLinkerError(Exception):
    """Base class of the linker's errors."""


class LoweringError(AejaxLinkerError, NotImplementedError):
    """An Aesara node has no JAX lowering, or JAX cannot trace it.

    ``node`` is the Apply node at fault (``None`` when unknown).
    ``needs_static`` says that the node needed a concrete size or shape while
    tracing: making the graph's integer scalar inputs it depends on static may
    let JAX trace it.
    """

    def __init__(self, message: str, node: Any = None, needs_static: bool = False) -> None:
        super().__init__(message)
        self.node = node
        self.needs_static = needs_static


class NodeValueError(LoweringError, ValueError):
    """A node's inputs do not fit (e.g. their shapes), where Aesara raises a `ValueError`."""


class NodeTypeError(LoweringError, TypeError):
    """A node's inputs do not fit, where Aesara raises a `TypeError`."""


class NodeIndexError(LoweringError, IndexError):
    """A node's inputs do not fit (e.g. a boolean mask's shape), where Aesara raises an `IndexError`."""


class NotStaticError(AejaxLinkerError, TypeError):
    """A lowering needed a concrete size or shape while tracing and got a traced value."""


class InputValueError(AejaxLinkerError, TypeError):
    """A value at the linker's storage boundary is not valid for its variable."""


class ValueCheckError(AejaxLinkerError):
    """A lowering's check of the values given to a graph failed.

    It passes through the lowering unchanged, like Aesara's own error for the
    case; each subclass is also the built-in exception Aesara raises there.
    """


class InvalidValueError(ValueCheckError, ValueError):
    """The values given to a graph are invalid for it (a lowering checked them).

    For example a Scan sequence shorter than the number of steps.
    """


class InvalidMatrixError(InvalidValueError, np.linalg.LinAlgError):
    """A linear-algebra input is not shaped as the Op needs (where numpy raises `LinAlgError`)."""


class ShapeAssertionError(ValueCheckError, AssertionError):
    """A value's shape is not the one a `SpecifyShape` node specifies (where Aesara raises `AssertionError`)."""


class IndexOutOfBoundsError(InvalidValueError, IndexError):
    """A concrete index is outside the axis it indexes (where Aesara raises `IndexError`)."""


class AllocationError(InvalidValueError, MemoryError):
    """A value would need more memory than there is (e.g. a Scan's traces for its ``n_steps``)."""


class NotKept:
    """Stands for an input value of a node that stayed inside the JAX program: no copy of it left the program."""

    def __repr__(self) -> str:
        return "(computed inside the JAX program)"


NOT_KEPT = NotKept()


class RaisedBy(NamedTuple):
    """The node whose check or ``perform`` raised an exception, and its input values where they are known.

    Aesara's ``raise_with_op`` names such a node and shows its inputs; a
    program's error names the node as Aesara's backends do, not the program.
    """

    node: Apply
    inputs: Sequence[Any] | None
    """What ``perform`` was given on the host; ``None`` for a check inside a program, whose inputs stayed there."""

    def thunk(self, program_inputs: Mapping[Any, Any]) -> Any:
        """What ``raise_with_op`` reads of a thunk (its input cells): the values the node was given, or those of
        ``program_inputs`` (by variable) among its inputs and `NOT_KEPT` for the others."""
        if self.inputs is not None:
            return SimpleNamespace(inputs=[[value] for value in self.inputs])
        return SimpleNamespace(inputs=[[program_inputs.get(var, NOT_KEPT)] for var in self.node.inputs])


def mark_raised_by(error: BaseException, node: Apply, inputs: Sequence[Any] | None = None) -> BaseException:
    """``error``, marked as raised by ``node`` (given ``inputs`` on the host, if it was): see `raised_by`."""
    error._aejax_raised_by = RaisedBy(node, None if inputs is None else list(inputs))  # type: ignore[attr-defined]
    return error


def raised_by(error: BaseException) -> RaisedBy | None:
    """The node whose check or ``perform`` raised ``error``, if it was marked (`mark_raised_by`)."""
    return getattr(error, "_aejax_raised_by", None)


_REBUILDABLE: dict[type, type] = {}


def _from_message(self: BaseException, message: str) -> None:
    BaseException.__init__(self, message)


def _rebuildable_type(cls: type[BaseException]) -> type[BaseException]:
    """A subclass of ``cls`` made from a single message (its ``__init__`` and ``__str__`` those of `BaseException`)."""
    if cls not in _REBUILDABLE:
        namespace = {"__init__": _from_message, "__str__": BaseException.__str__, "__module__": cls.__module__}
        _REBUILDABLE[cls] = type(cls.__name__, (cls,), namespace)
    return _REBUILDABLE[cls]


def rebuildable(error: BaseException) -> BaseException:
    """``error``, or an error of a subclass of its type with its message, that its type can re-create from a message.

    Aesara's ``raise_with_op`` re-creates the error of a failed call as
    ``type(error)(message)``; some errors (JAX's ``TracerArrayConversionError``
    takes a tracer) cannot be made so, and the call would fail with an
    unrelated ``AttributeError``.
    """
    try:
        type(error)(str(error))
    except Exception:
        return _rebuildable_type(type(error))(str(error))
    return error


_LIBRARIES = tuple(str(Path(module.__file__).resolve().parent) for module in (aesara, jax, sys.modules["aejax.linker"]))


def caller_stacklevel() -> int:
    """The `warnings.warn` stack level of the first frame outside aejax, Aesara and JAX."""
    frame, level = sys._getframe(1), 1
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(_LIBRARIES):
        frame, level = frame.f_back, level + 1
    return level
