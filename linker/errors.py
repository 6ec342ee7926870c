"""Errors raised by the aejax JAX linker.

Each takes a single message, so Aesara's own error annotation (which
re-creates the exception with extra text) works with them.
"""

from __future__ import annotations

from typing import Any, Iterable


def variable_name(var: Any) -> str:
    """How error messages and warnings name a graph variable."""
    return var.name or str(var)


class AejaxLinkerError(Exception):
    """Base class of the linker's errors."""


class LoweringError(AejaxLinkerError, NotImplementedError):
    """An Aesara node has no JAX lowering, or JAX cannot trace it.

    ``node`` is the Apply node at fault (``None`` when unknown) and
    ``shape_inputs`` the runtime scalar inputs of the compiled graph the node
    depends on: making them static may let JAX trace it.
    """

    def __init__(self, message: str, node: Any = None, shape_inputs: Iterable[Any] = ()) -> None:
        super().__init__(message)
        self.node = node
        self.shape_inputs = tuple(shape_inputs)


class InputValueError(AejaxLinkerError, TypeError):
    """A value at the linker's storage boundary is not valid for its variable."""


class InvalidValueError(AejaxLinkerError, ValueError):
    """The values given to a graph are invalid for it (a lowering checked them).

    For example a Scan sequence shorter than the number of steps. It passes
    through the lowering unchanged, like Aesara's own error for the case.
    """
