"""Where each chain starts: Stan's draw (uniform(-2, 2) on the unconstrained scale), drawn again where the
log-density or its gradient is not finite or a check fails, or the user's values.

`initial_positions` returns, per chain, the position and its failure: `PASSED`,
a check's number in the log-density's `CheckTable`, or `NOT_FINITE`; the
host then raises for the first chain that failed (`raise_failed_start`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from aejax.linker.checks import PASSED, CheckTable
from aejax.sampling.density import JaxModel, State

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
