"""Errors raised by the aejax JAX linker, and where its warnings point.

Each takes a single message, so Aesara's own error annotation (which
re-creates the exception with extra text) works with them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import aesara
import jax


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


class NotStaticError(AejaxLinkerError, TypeError):
    """A lowering needed a concrete size or shape while tracing and got a traced value."""


class InputValueError(AejaxLinkerError, TypeError):
    """A value at the linker's storage boundary is not valid for its variable."""


class InvalidValueError(AejaxLinkerError, ValueError):
    """The values given to a graph are invalid for it (a lowering checked them).

    For example a Scan sequence shorter than the number of steps. It passes
    through the lowering unchanged, like Aesara's own error for the case.
    """


class IndexOutOfBoundsError(InvalidValueError, IndexError):
    """A concrete index is outside the axis it indexes (where Aesara raises `IndexError`)."""


class AllocationError(InvalidValueError, MemoryError):
    """A value would need more memory than there is (e.g. a Scan's traces for its ``n_steps``)."""


_LIBRARIES = tuple(str(Path(module.__file__).resolve().parent) for module in (aesara, jax, sys.modules["aejax.linker"]))


def caller_stacklevel() -> int:
    """The `warnings.warn` stack level of the first frame outside aejax, Aesara and JAX."""
    frame, level = sys._getframe(1), 1
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(_LIBRARIES):
        frame, level = frame.f_back, level + 1
    return level
