"""The plan of a graph that runs as several programs: what the traces of its programs found.

`GraphProgram` (`aejax.linker.program.segments`) runs a graph from a `Plan`.
Tracing a program does not change the plan: what the trace finds rides out
of the program as static data of its result (`Found`, in `Ended`), the same
for every call of that compiled program, and the runner joins it into the
plan it holds. A trace that finds something new makes a new `Plan` object;
one that finds nothing new leaves the same object, so a caller tells a plan
that changed by identity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from aesara.graph.basic import Apply, Variable

from aejax.linker.program.mask_groups import GroupPairs, MaskGroups


@dataclass(frozen=True)
class Found:
    """What one trace of a program found for the plan.

    ``exact``: values that enter the programs after it cut to their length
    rather than bucketed; ``host``: a node to run on the host, with the
    reason (a `aejax.linker.program.host_node` text); ``groups``: the mask
    groups of the values it returns (`MaskGroups.found`).
    """

    exact: frozenset[Variable] = frozenset()
    host: tuple[Apply, str] | None = None
    groups: GroupPairs = ()


NOTHING = Found()
"""What a trace that found nothing returns."""


@dataclass(frozen=True, eq=False)
class Plan:
    """How a graph's programs run: nodes run on the host (each with its reason, ``None`` for one that takes or
    produces Python objects), values that enter a program cut to their length (``exact``), and mask groups.

    Replaced, never changed: `joined` makes a new plan.
    """

    host_reasons: Mapping[Apply, str | None]
    exact: frozenset[Variable] = frozenset()
    groups: MaskGroups = field(default_factory=MaskGroups)

    @classmethod
    def first(cls, object_nodes: Iterable[Apply]) -> Plan:
        """The plan before any trace: the nodes of Python objects run on the host."""
        return cls(MappingProxyType(dict.fromkeys(object_nodes)))

    def holds(self, found: Found) -> bool:
        """Whether this plan holds all that ``found`` says (a node already on the host keeps its first reason)."""
        if found is NOTHING:
            return True
        return (
            found.exact <= self.exact
            and (found.host is None or found.host[0] in self.host_reasons)
            and self.groups.holds(found.groups)
        )

    def joined(self, found: Found) -> Plan:
        """This plan with what ``found`` says; ``self`` if it holds it already."""
        if self.holds(found):
            return self
        host_reasons = self.host_reasons
        if found.host is not None and found.host[0] not in host_reasons:
            host_reasons = MappingProxyType({**host_reasons, found.host[0]: found.host[1]})
        return Plan(host_reasons, self.exact | found.exact, self.groups.joined(found.groups))
