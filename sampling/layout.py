"""Where each sampled variable lies in the flat position vector a sampler moves."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp


@dataclass(frozen=True)
class Layout:
    """The variables of a position, each a slice of one flat vector, in order.

    ``names[i]`` has shape ``shapes[i]`` and occupies ``[starts[i], starts[i] + sizes[i])``.
    """

    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]

    @property
    def sizes(self) -> tuple[int, ...]:
        """The number of entries of each variable."""
        return tuple(math.prod(shape) for shape in self.shapes)

    @property
    def starts(self) -> tuple[int, ...]:
        """Where each variable starts in the flat vector."""
        starts, offset = [], 0
        for size in self.sizes:
            starts.append(offset)
            offset += size
        return tuple(starts)

    @property
    def dims(self) -> int:
        """The length of the flat vector."""
        return sum(self.sizes)

    def unpacked(self, flat: Any) -> list[Any]:
        """The variables' values of one flat vector ``flat`` (traceable), each in its shape."""
        return [
            jnp.reshape(flat[start : start + size], shape)
            for start, size, shape in zip(self.starts, self.sizes, self.shapes)
        ]

    def packed(self, values: list[Any]) -> Any:
        """The flat vector of the variables' ``values``, each in its shape (traceable)."""
        return jnp.concatenate([jnp.reshape(value, (-1,)) for value in values]) if values else jnp.zeros((0,))
