"""Values whose leading length is only known when the program runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import numpy as np


@jax.tree_util.register_pytree_node_class
@dataclass(frozen=True)
class Ragged:
    """A buffer whose first ``length`` rows are the value; the rest is padding.

    A `Scan` with an ``until`` condition returns its traces this way: how
    many steps it ran is known only at run time. A `Ragged` value may leave a
    jit program, where it is trimmed (`trim`); a node of the same program
    cannot consume it, so the linker splits the program after the node that
    makes it.
    """

    buffer: Any
    length: Any

    def tree_flatten(self) -> tuple[tuple[Any, Any], None]:
        return (self.buffer, self.length), None

    @classmethod
    def tree_unflatten(cls, aux: None, children: tuple[Any, Any]) -> "Ragged":
        return cls(*children)

    def trim(self) -> Any:
        """The value: the buffer cut to its run-time length (outside jit)."""
        return self.buffer[: int(self.length)]


@jax.tree_util.register_pytree_node_class
@dataclass(frozen=True)
class Masked:
    """The rows of ``buffer`` where ``mask`` holds, in order: a value of run-time length.

    ``x[nonzero(mask)]`` inside jit (see `aejax.linker.masked`). Like a
    `Ragged` value it may leave a jit program, where it is cut (`trim`).
    """

    buffer: Any
    mask: Any

    def tree_flatten(self) -> tuple[tuple[Any, Any], None]:
        return (self.buffer, self.mask), None

    @classmethod
    def tree_unflatten(cls, aux: None, children: tuple[Any, Any]) -> "Masked":
        return cls(*children)

    def trim(self) -> Any:
        """The value: the selected rows (outside jit)."""
        return np.asarray(self.buffer)[np.asarray(self.mask)]


RUN_TIME_LENGTH = (Ragged, Masked)
"""The kinds of values whose leading length is known only at run time."""


def trimmed(value: Any) -> Any:
    """A value of run-time length cut to its length (outside jit); anything else as it is."""
    return value.trim() if isinstance(value, RUN_TIME_LENGTH) else value


class NeedsSplit(Exception):
    """A node's output of run-time length feeds another node of the same jit program."""

    def __init__(self, node: Any) -> None:
        super().__init__(f"the program must be split after node {node}")
        self.node = node
