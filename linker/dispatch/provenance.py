"""Whether every lowering a graph needs is aejax's or Aesara's own, not code registered from elsewhere.

A program kept across processes (`aejax.linker.program.saved_programs`) is
found again by a digest of its graph and by the versions of aejax and Aesara.
A lowering or sampler that a user or another library registered may change
between two processes while the key stays the same, so a graph that needs
one is never kept.
"""

from __future__ import annotations

from collections.abc import Iterator

from aesara.graph.fg import FunctionGraph
from aesara.graph.op import Op
from aesara.link.jax.dispatch.random import jax_sample_fn
from aesara.tensor.random.op import RandomVariable

from aejax.linker.dispatch.basic import jax_funcify, overriding_class
from aejax.linker.dispatch.random import SAMPLERS

OWN_PACKAGES = ("aejax.", "aesara.")
"""The packages whose code the key of a kept program covers (by their versions)."""


def lowered_by_aejax_or_aesara(fgraph: FunctionGraph) -> bool:
    """Whether every Op of ``fgraph`` (those of inner graphs and scalar Ops too) is lowered by aejax's or Aesara's code."""
    return all(_lowering_module(op).startswith(OWN_PACKAGES) for op in _ops(fgraph, set()))


def _lowering_module(op: Op) -> str:
    if isinstance(op, RandomVariable):
        base = overriding_class(type(op), SAMPLERS, jax_sample_fn.registry)
        if base is not None and base not in SAMPLERS:
            return jax_sample_fn.registry[base].__module__ or ""
    return jax_funcify.lowering_module(type(op))


def _ops(fgraph: FunctionGraph, seen: set[int]) -> Iterator[Op]:
    """Every Op of ``fgraph``, and those an Op holds (a scalar Op, an inner graph's), each once."""
    for node in fgraph.apply_nodes:
        yield from _held_ops(node.op, seen)


def _held_ops(op: Op, seen: set[int]) -> Iterator[Op]:
    if id(op) in seen:
        return
    seen.add(id(op))
    yield op
    for value in vars(op).values():
        if isinstance(value, Op):
            yield from _held_ops(value, seen)
        elif isinstance(value, FunctionGraph):
            yield from _ops(value, seen)
