"""Where each chain starts: Stan's draw (uniform(-2, 2) on the unconstrained scale), drawn again where the
log-density or its gradient is not finite or a check fails, or the user's values.

`chain_start` gives, per chain, the position and its failure: `PASSED`,
a check's number in the log-density's `CheckTable`, or `NOT_FINITE`; the
host then raises for the first chain that failed (`raise_failed_starts`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from aejax.linker.chains import chain_axis
from aejax.linker.checks import PASSED, CheckTable
from aejax.linker.mesh import gathered
from aejax.sampling.density import JaxModel, State
from aejax.sampling.layout import Layout

DRAWS = 100
"""How many times a chain's start is drawn before the chain fails."""

RADIUS = 2.0
"""Stan's starts are uniform in (-RADIUS, RADIUS) on the unconstrained scale."""

NOT_FINITE = -2
"""The failure of a start whose log-density or gradient is not finite though every check held."""


def start_failure(model: JaxModel, state: State, position: Any) -> Any:
    """`PASSED`, the number of the first failed check, or `NOT_FINITE` for the start ``position``."""
    (log_density, code), gradient = jax.value_and_grad(model.checked_log_density, argnums=1, has_aux=True)(
        state, position
    )
    finite = jnp.isfinite(log_density) & jnp.all(jnp.isfinite(gradient))
    return jnp.where(code != PASSED, code, jnp.where(finite, PASSED, NOT_FINITE)).astype("int32")


def drawn_start(model: JaxModel, state: State, key: Any) -> tuple[Any, Any]:
    """A chain's start, drawn up to `DRAWS` times until it is one the sampler can move from, and its failure."""
    dims = model.layout.dims
    dtype = jnp.result_type(float)

    def draw(key: Any) -> Any:
        return jax.random.uniform(key, (dims,), dtype, -RADIUS, RADIUS)

    def again(carry: tuple[Any, Any, Any, Any]) -> Any:
        tries, _, failure, _ = carry
        return (failure != PASSED) & (tries < DRAWS)

    def redraw(carry: tuple[Any, Any, Any, Any]) -> tuple[Any, Any, Any, Any]:
        tries, _, _, key = carry
        key, drawing = jax.random.split(key)
        position = draw(drawing)
        return tries + 1, position, start_failure(model, state, position), key

    key, first = jax.random.split(key)
    position = draw(first)
    _, position, failure, _ = lax.while_loop(again, redraw, (1, position, start_failure(model, state, position), key))
    return position, failure


def raise_failed_start(failures: np.ndarray, checks: CheckTable, given: bool) -> None:
    """Raise for the first chain whose start failed: its check's exception, or `ValueError`, naming the chain."""
    failed = np.flatnonzero(failures != PASSED)
    if not failed.size:
        return
    chain, code = int(failed[0]), int(failures[failed[0]])
    where = "the initial values given" if given else f"{DRAWS} starts drawn uniformly in (-{RADIUS}, {RADIUS})"
    if code == NOT_FINITE:
        raise ValueError(f"the log-density or its gradient is not finite at {where} for chain {chain}")
    exc_type, message = checks.entries()[code]
    raise exc_type(f"{message} (at {where} for chain {chain})")


def given_values(model: JaxModel, initial: Mapping[str, Any], chains: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The user's ``initial`` values as arrays, and each one's chain axis (``None``: the same for every chain);
    `ValueError` naming one that is no sampled variable, or not shaped for one chain or every chain."""
    names = model.layout.names
    unknown = sorted(set(initial) - set(names))
    if unknown:
        raise ValueError(f"initial= names {unknown}, which are not sampled variables; these are {list(names)}")
    given = {name: np.asarray(value) for name, value in initial.items()}
    variables = dict(zip(names, model.forward.inputs))
    axes = {
        name: chain_axis(f"initial value of {name!r}", value, variables[name].ndim, chains)
        for name, value in given.items()
    }
    return given, axes


def chain_start(model: JaxModel, key: Any, values: dict[str, Any], states: tuple[State, State, State]) -> tuple:
    """A chain's start, ``(position, failure, outside)``: drawn, with the user's ``values`` in (constrained, by
    name); ``outside`` is -1, or the index of a variable whose given value lies outside its support."""
    density_state, quantities_state, forward_state = states
    position, failure = drawn_start(model, density_state, key)
    if not values:
        return position, failure, jnp.asarray(-1)
    drawn, _ = model.draw_quantities(quantities_state, position)
    constrained = [values.get(name, drawn[name]) for name in model.layout.names]
    position = model.unconstrained(forward_state, constrained)
    return position, start_failure(model, density_state, position), outside_support(model.layout, position)


def raise_failed_starts(failures: Any, outside: Any, given: bool, model: JaxModel) -> None:
    """Raise for the first chain whose start failed (`chain_start`'s ``failure`` and ``outside`` of each chain)."""
    raise_outside_support(gathered(outside), model.layout.names)
    raise_failed_start(gathered(failures), model.density.checks, given)


def outside_support(layout: Layout, position: Any) -> Any:
    """The index of the first variable whose unconstrained value at ``position`` is not finite, -1 if none: an
    initial value its transform cannot take (outside its support)."""
    finite = jnp.stack([jnp.all(jnp.isfinite(value)) for value in layout.unpacked(position)])
    return jnp.where(jnp.all(finite), -1, jnp.argmin(finite))


def raise_outside_support(outside: np.ndarray, names: Sequence[str]) -> None:
    """`ValueError` naming the variable and the first chain whose initial value lies outside its support."""
    chains = np.flatnonzero(outside >= 0)
    if chains.size:
        name = names[int(outside[chains[0]])]
        raise ValueError(
            f"the initial value of {name!r} for chain {int(chains[0])} lies outside its support: its transform "
            "to the unconstrained scale is not finite there"
        )
