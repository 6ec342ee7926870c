"""Values whose leading length is only known when the program runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax


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


class NeedsSplit(Exception):
    """A node's `Ragged` output feeds another node of the same jit program."""

    def __init__(self, node: Any) -> None:
        super().__init__(f"the program must be split after node {node}")
        self.node = node
