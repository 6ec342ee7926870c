"""Values whose leading length is only known when the program runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from aejax.linker.errors import NotStaticError


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
        """The value: the buffer cut to its run-time length (outside jit; numpy, so no
        program is compiled per length)."""
        return np.asarray(self.buffer)[: int(self.length)]


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


@jax.tree_util.register_pytree_node_class
@dataclass(frozen=True)
class RangeRows:
    """``arange(start, stop, step)`` with traced bounds, never materialised.

    Its length is known only at run time. A Scan over it reads row ``i`` as
    ``start + i * step`` from its loop counter; its shape is its length. Any
    other use needs the bounds while tracing (made static, if they come from
    scalar inputs).
    """

    start: Any
    step: Any
    length: Any
    dtype: str

    @classmethod
    def of(cls, start: Any, stop: Any, step: Any, dtype: str) -> "RangeRows":
        """The rows of ``arange(start, stop, step)`` (numpy's length rule)."""
        length = jnp.maximum(jnp.ceil((stop - start) / step), 0).astype("int64")
        return cls(start, step, length, dtype)

    def tree_flatten(self) -> tuple[tuple[Any, Any, Any], str]:
        return (self.start, self.step, self.length), self.dtype

    @classmethod
    def tree_unflatten(cls, dtype: str, children: tuple[Any, Any, Any]) -> "RangeRows":
        return cls(*children, dtype)

    def row(self, index: Any) -> Any:
        """Row ``index``: ``start + index * step``."""
        return jnp.asarray(self.start + index * self.step).astype(self.dtype)

    def sliced(self, rows: slice) -> "RangeRows":
        """``self[rows]`` for a slice with a positive step (bounds may be traced)."""
        step = 1 if rows.step is None else int(rows.step)
        if step <= 0:
            raise NotStaticError(f"a slice of a run-time arange with step {step} is not supported")
        first = self._position(rows.start, 0)
        stop = jnp.maximum(self._position(rows.stop, self.length), first)
        return RangeRows(self.start + first * self.step, self.step * step, (stop - first + step - 1) // step, self.dtype)

    def _position(self, bound: Any, default: Any) -> Any:
        if bound is None:
            return default
        return jnp.clip(jnp.where(bound < 0, self.length + bound, bound), 0, self.length)

    def trim(self) -> Any:
        """The value as an array (outside jit)."""
        start, step, length = (np.asarray(v).item() for v in (self.start, self.step, self.length))
        return start + step * np.arange(length, dtype=self.dtype)


RUN_TIME_LENGTH = (Ragged, Masked, RangeRows)
"""The kinds of values whose leading length is known only at run time."""


def trimmed(value: Any) -> Any:
    """A value of run-time length cut to its length (outside jit); anything else as it is."""
    return value.trim() if isinstance(value, RUN_TIME_LENGTH) else value


class NeedsSplit(Exception):
    """A node's output of run-time length feeds another node of the same jit program."""

    def __init__(self, node: Any) -> None:
        super().__init__(f"the program must be split after node {node}")
        self.node = node
