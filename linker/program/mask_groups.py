"""Which values of run-time length that cross between programs were selected by one mask.

The values one node makes share a mask, as do values that a program returns
holding one traced mask (a selection and an elementwise function of it).
Each such group enters the next program with one mask, built from the length
of its first value, so row-by-row nodes there may combine its values. A
program's trace finds the groups of the values it returns (`MaskGroups.found`);
two values are only grouped when they always hold the same rows, so a group
stays right for every later plan.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import jax.numpy as jnp
from aesara.graph.basic import Variable

from aejax.linker.lengths.ragged import Masked, Ragged

GroupPairs = tuple[tuple[Variable, Hashable], ...]
"""Values, each with the group it belongs to (the node that made the group's first value)."""


@dataclass(frozen=True)
class MaskGroups:
    """The groups known so far (a value not in ``group_of`` is in its own node's group); replaced, never changed."""

    group_of: Mapping[Variable, Hashable] = field(default_factory=lambda: MappingProxyType({}))

    def group(self, var: Variable) -> Hashable:
        """The group of ``var``."""
        return self.group_of.get(var, var.owner)

    def entered(self, inputs: Sequence[Variable], values: Sequence[Any]) -> list[Any]:
        """``values`` with each bucketed `Ragged` value as a `Masked` one (inside jit), one mask per group."""
        masks: dict[tuple[Hashable, int], Any] = {}
        entered = []
        for var, value in zip(inputs, values):
            if isinstance(value, Ragged):
                rows = value.buffer.shape[0]
                key = (self.group(var), rows)
                if key not in masks:
                    masks[key] = jnp.arange(rows) < value.length
                value = Masked(value.buffer, masks[key])
            entered.append(value)
        return entered

    def grouped_with(self, variables: Sequence[Variable]) -> frozenset[Variable]:
        """``variables`` and the values grouped with any of them: they enter cut to their length together."""
        groups = {self.group(var) for var in variables}
        return frozenset(variables) | {var for var, group in self.group_of.items() if group in groups}

    def found(
        self, inputs: Sequence[Variable], entered: Sequence[Any], outputs: Sequence[Variable], results: Sequence[Any]
    ) -> GroupPairs:
        """The groups of the `Masked` ``results`` by their traced masks, joining the groups of ``inputs`` that hold them."""
        group_of_mask = {id(v.mask): self.group(var) for var, v in zip(inputs, entered) if isinstance(v, Masked)}
        return tuple(
            (var, group_of_mask.setdefault(id(result.mask), var.owner))
            for var, result in zip(outputs, results)
            if isinstance(result, Masked)
        )

    def holds(self, pairs: GroupPairs) -> bool:
        """Whether every value in ``pairs`` is in its group here already."""
        return all(var in self.group_of and self.group_of[var] == group for var, group in pairs)

    def joined(self, pairs: GroupPairs) -> MaskGroups:
        """These groups with ``pairs``' values put in theirs; ``self`` if they are there already."""
        if self.holds(pairs):
            return self
        return MaskGroups(MappingProxyType({**self.group_of, **dict(pairs)}))
