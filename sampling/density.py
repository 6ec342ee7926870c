"""A model's graphs as JAX functions of the flat position: the log-density a sampler moves on, and what each draw
gives back (the posterior on the constrained scale, deterministics, log-likelihoods).

Run-time checks of the log-density (aeppl's parameter checks, a Cholesky of a
non-finite matrix, index bounds) fold into a failure code
(`aejax.linker.JaxGraph.checked_fn`); while sampling, a proposal that fails
one, or whose log-density is not finite, has log-density ``-inf``, so the
sampler rejects it, as Stan does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp

from aejax.linker import JaxGraph, jaxify
from aejax.linker.checks import PASSED
from aejax.sampling.layout import Layout
from aejax.sampling.model import ModelGraphs

State = dict[str, Any]


@dataclass(frozen=True)
class JaxModel:
    """The JAX functions of a model's graphs (`ModelGraphs`), each taking its graph's state as an argument.

    The states hold the shared variables the graphs read (data given as
    shared variables); they are arguments of a program, not constants in it.
    """

    layout: Layout
    density: JaxGraph
    quantities: JaxGraph
    forward: JaxGraph
    posterior_names: tuple[str, ...]
    log_likelihood_names: tuple[str, ...]

    @classmethod
    def of(cls, graphs: ModelGraphs) -> JaxModel:
        """The model's functions, lowered in JAX's precision now (the caller's `running_in`)."""
        values = list(graphs.values)
        outputs = [*graphs.posterior.values(), *graphs.log_likelihood.values()]
        return cls(
            layout=graphs.layout,
            density=jaxify(values, [graphs.log_density]),
            quantities=jaxify(values, outputs),
            forward=jaxify(list(graphs.placeholders), list(graphs.unconstrained)),
            posterior_names=tuple(graphs.posterior),
            log_likelihood_names=tuple(graphs.log_likelihood),
        )

    @property
    def states(self) -> tuple[State, State, State]:
        """The states of `density`, `quantities` and `forward`, as a program takes them."""
        return self.density.state, self.quantities.state, self.forward.state

    def checked_log_density(self, state: State, position: Any) -> tuple[Any, Any]:
        """``(log_density, failure_code)`` at the flat ``position``; the code is `PASSED` while every check holds."""
        ([log_density], _), code = self.density.checked_fn(state, *self.layout.unpacked(position))
        return log_density, code

    def rejecting_log_density(self, state: State, position: Any) -> Any:
        """The log-density at ``position``, ``-inf`` where a check fails or it is not finite: a proposal rejected."""
        log_density, code = self.checked_log_density(state, position)
        return jnp.where((code == PASSED) & jnp.isfinite(log_density), log_density, -jnp.inf)

    def unchecked_log_density(self, state: State, position: Any) -> Any:
        """The log-density at ``position`` as the graph computes it, its checks not applied."""
        return self.checked_log_density(state, position)[0]

    def draw_quantities(self, state: State, position: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """What the draw at ``position`` gives back: the posterior (constrained) and the log-likelihoods, by name."""
        (outputs, _), _ = self.quantities.checked_fn(state, *self.layout.unpacked(position))
        split = len(self.posterior_names)
        return dict(zip(self.posterior_names, outputs[:split])), dict(zip(self.log_likelihood_names, outputs[split:]))

    def unconstrained(self, state: State, constrained: list[Any]) -> Any:
        """The flat position of the free variables' constrained values ``constrained`` (in the layout's order)."""
        (values, _), _ = self.forward.checked_fn(state, *constrained)
        return self.layout.packed(values)
