"""The NUTS samplers `aejax.sampling.sample` runs, each as one chain: warmup (Stan's window adaptation) then draws,
one traceable function that `sample` vmaps over the chains and compiles once.

A sampler is called as ``sampler(log_density, key, position, settings)``
and returns the draws' positions (``(draws, dims)``) and statistics (by
ArviZ's names, one entry per draw). ``log_density`` maps a flat position to
its log-density.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from aejax.linker.scan.progress import Progress

LogDensity = Callable[[Any], Any]


@dataclass(frozen=True)
class Settings:
    """How a chain samples: its warmup and draws, NUTS's options, and whether a bar shows the loops' progress."""

    warmup: int
    draws: int
    target_accept: float
    max_tree_depth: int
    dense_mass: bool
    progress: bool

    def loop(self, body: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any, name: str) -> tuple[Any, Any]:
        """``lax.scan(body, init, xs)``, with a progress bar named ``name`` if asked for."""
        length = jax.tree.leaves(xs)[0].shape[0]
        if not self.progress or length == 0:
            return lax.scan(body, init, xs)
        return Progress().scan(body, init, xs, length, name)


def numpyro_nuts(log_density: LogDensity, key: Any, position: Any, settings: Settings) -> tuple[Any, dict[str, Any]]:
    """NumPyro's NUTS (``numpyro.infer.hmc.hmc``) with its Stan-style warmup."""
    from numpyro.infer.hmc import hmc

    start, transition = hmc(potential_fn=lambda z: -log_density(z), algo="NUTS")
    state = start(
        position,
        num_warmup=settings.warmup,
        dense_mass=settings.dense_mass,
        target_accept_prob=settings.target_accept,
        max_tree_depth=settings.max_tree_depth,
        rng_key=key,
    )
    state, _ = settings.loop(lambda s, _: (transition(s), None), state, jnp.arange(settings.warmup), "warmup")

    def draw(state: Any, _: Any) -> tuple[Any, tuple[Any, dict[str, Any]]]:
        state = transition(state)
        stats = {
            "diverging": state.diverging,
            "acceptance_rate": state.accept_prob,
            "step_size": state.adapt_state.step_size,
            "n_steps": state.num_steps,
            "energy": state.energy,
            "lp": -state.potential_energy,
        }
        return state, (state.z, stats)

    _, (positions, stats) = settings.loop(draw, state, jnp.arange(settings.draws), "sampling")
    return positions, stats


def blackjax_nuts(log_density: LogDensity, key: Any, position: Any, settings: Settings) -> tuple[Any, dict[str, Any]]:
    """BlackJAX's NUTS after its ``window_adaptation``."""
    import blackjax

    warmup_key, draws_key = jax.random.split(key)
    adaptation = blackjax.window_adaptation(
        blackjax.nuts,
        log_density,
        is_mass_matrix_diagonal=not settings.dense_mass,
        target_acceptance_rate=settings.target_accept,
        max_num_doublings=settings.max_tree_depth,
    )
    (state, parameters), _ = adaptation.run(warmup_key, position, num_steps=settings.warmup)
    kernel = blackjax.nuts(log_density, **parameters)  # the parameters hold max_num_doublings

    def draw(state: Any, key: Any) -> tuple[Any, tuple[Any, dict[str, Any]]]:
        state, info = kernel.step(key, state)
        stats = {
            "diverging": info.is_divergent,
            "acceptance_rate": info.acceptance_rate,
            "step_size": parameters["step_size"],
            "n_steps": info.num_integration_steps,
            "tree_depth": info.num_trajectory_expansions,
            "energy": info.energy,
            "lp": state.logdensity,
        }
        return state, (state.position, stats)

    _, (positions, stats) = settings.loop(draw, state, jax.random.split(draws_key, settings.draws), "sampling")
    return positions, stats


SAMPLERS: dict[str, Callable[..., tuple[Any, dict[str, Any]]]] = {"numpyro": numpyro_nuts, "blackjax": blackjax_nuts}
"""The samplers by name; NumPyro's is the default."""
