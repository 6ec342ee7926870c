"""The NUTS samplers `aejax.sampling.sample` runs, each as steps of one chain that `sample` vmaps over the chains.

A `Sampler` splits a chain in three parts, one program each
(`aejax.sampling.programs`): `Sampler.begin` makes the chain's state at its
start, `Sampler.step` moves it one transition, the ``index``-th of
`Sampler.steps`, and `Sampler.kept` says what a draw keeps (its position and
its statistics, by ArviZ's names). `sample` calls the stepping program
again and again, some steps each time, so a bar can show the chain's
progress from the host, and no program calls back into Python: each can be
exported and kept in the store.

``log_density`` maps a flat position to its log-density.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

LogDensity = Callable[[Any], Any]


@dataclass(frozen=True)
class Settings:
    """How a chain samples: its warmup and draws, and NUTS's options."""

    warmup: int
    draws: int
    target_accept: float
    max_tree_depth: int
    dense_mass: bool


@dataclass(frozen=True)
class Sampler:
    """A NUTS sampler, as the parts of a chain (see the module docstring).

    Attributes
    ----------
    begin
        ``begin(log_density, key, position, settings) -> state``: the chain at ``position``.
    step
        ``step(log_density, state, settings) -> state``: the next transition.
    kept
        ``kept(state) -> (position, stats)``: what a draw keeps.
    adapts_in_begin
        Whether `begin` runs the warmup (then `step` makes draws only) or
        `step` adapts during the first ``warmup`` steps.
    """

    begin: Callable[[LogDensity, Any, Any, Settings], Any]
    step: Callable[[LogDensity, Any, Settings], Any]
    kept: Callable[[Any], tuple[Any, dict[str, Any]]]
    adapts_in_begin: bool

    def steps(self, settings: Settings) -> int:
        """How many times `step` runs."""
        return settings.draws + (0 if self.adapts_in_begin else settings.warmup)

    def first_draw(self, settings: Settings) -> int:
        """The index of the first step that makes a draw (the steps before it are warmup)."""
        return 0 if self.adapts_in_begin else settings.warmup


def numpyro_kernel(log_density: LogDensity, key: Any, position: Any, settings: Settings) -> tuple[Any, Any]:
    """NumPyro's NUTS (``numpyro.infer.hmc.hmc``) on ``log_density``: its state at ``position`` and its transition,
    which adapts (Stan's windows) during the first ``settings.warmup`` transitions."""
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
    return state, transition


def numpyro_begin(log_density: LogDensity, key: Any, position: Any, settings: Settings) -> Any:
    return numpyro_kernel(log_density, key, position, settings)[0]


def numpyro_step(log_density: LogDensity, state: Any, settings: Settings) -> Any:
    # NumPyro's transition takes its settings from its init: the init is traced here too, and XLA drops what it computes
    _, transition = numpyro_kernel(log_density, state.rng_key, state.z, settings)
    return transition(state)


def numpyro_kept(state: Any) -> tuple[Any, dict[str, Any]]:
    stats = {
        "diverging": state.diverging,
        "acceptance_rate": state.accept_prob,
        "step_size": state.adapt_state.step_size,
        "n_steps": state.num_steps,
        "energy": state.energy,
        "lp": -state.potential_energy,
    }
    return state.z, stats


def blackjax_kernel(log_density: LogDensity, parameters: dict[str, Any], settings: Settings) -> Any:
    """BlackJAX's NUTS with the adapted ``parameters`` (its step size and inverse mass matrix)."""
    import blackjax

    return blackjax.nuts(log_density, max_num_doublings=settings.max_tree_depth, **parameters)


def blackjax_begin(log_density: LogDensity, key: Any, position: Any, settings: Settings) -> Any:
    """BlackJAX's ``window_adaptation``, run whole: BlackJAX's warmup is one loop of its own."""
    import blackjax

    warmup_key, draws_key = jax.random.split(key)
    adaptation = blackjax.window_adaptation(
        blackjax.nuts,
        log_density,
        is_mass_matrix_diagonal=not settings.dense_mass,
        target_acceptance_rate=settings.target_accept,
        max_num_doublings=settings.max_tree_depth,
    )
    (state, adapted), _ = adaptation.run(warmup_key, position, num_steps=settings.warmup)
    parameters = {name: adapted[name] for name in ("step_size", "inverse_mass_matrix")}  # arrays only: carried
    info = jax.eval_shape(lambda: blackjax_kernel(log_density, parameters, settings).step(draws_key, state)[1])
    return state, parameters, draws_key, jax.tree.map(lambda leaf: jnp.zeros(leaf.shape, leaf.dtype), info)


def blackjax_step(log_density: LogDensity, chain: Any, settings: Settings) -> Any:
    state, parameters, key, _ = chain
    key, stepping = jax.random.split(key)
    state, info = blackjax_kernel(log_density, parameters, settings).step(stepping, state)
    return state, parameters, key, info


def blackjax_kept(chain: Any) -> tuple[Any, dict[str, Any]]:
    state, parameters, _, info = chain
    stats = {
        "diverging": info.is_divergent,
        "acceptance_rate": info.acceptance_rate,
        "step_size": parameters["step_size"],
        "n_steps": info.num_integration_steps,
        "tree_depth": info.num_trajectory_expansions,
        "energy": info.energy,
        "lp": state.logdensity,
    }
    return state.position, stats


NUMPYRO_NUTS = Sampler(numpyro_begin, numpyro_step, numpyro_kept, adapts_in_begin=False)
"""NumPyro's NUTS, adapting in its first ``warmup`` steps."""

BLACKJAX_NUTS = Sampler(blackjax_begin, blackjax_step, blackjax_kept, adapts_in_begin=True)
"""BlackJAX's NUTS, after its window adaptation."""
