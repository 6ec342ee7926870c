"""aehmc's NUTS as a `Sampler`: the one-graph route, aehmc's kernel and Stan's window adaptation built as Aesara
graphs on the model's log-density and lowered by aejax (`jaxify`).

Two graphs are built once per model: the start (`hmc.new_state` and the
adaptation's initial state at a position) and the transition (one NUTS
step, then, while ``step < warmup``, one step of aehmc's
``window_adaptation``). The transition's random stream is a state entry of
its `JaxGraph` (one generator per random draw of aehmc's): keys split from
each chain's key take their places, and the transition gives the keys its
updates leave.

Where proposals are rejected (`sample`'s ``reject_failed_checks``), the
log-density graph's own checks (aeppl's parameter checks, asserts) make it
``-inf`` instead of raising, and a transition that fails a check aejax makes
on the host's behalf (a Cholesky of a non-finite matrix, say) keeps the
chain where it was and counts as divergent.

aehmc 0.0.11's NUTS is wider than the posterior (docs/sampling.md#aehmc); it
reports each transition's tree depth, not its leapfrog steps, and not the
Hamiltonian's energy.
"""

from __future__ import annotations

from typing import Any

import aesara
import aesara.tensor as at
import jax
import jax.numpy as jnp
import numpy as np
from aesara.graph.basic import Variable, clone_get_equiv, io_toposort
from aesara.raise_op import CheckAndRaise
from aesara.tensor.random.utils import RandomStream

from aejax.linker import JaxGraph, jaxify
from aejax.linker.checks import PASSED
from aejax.sampling.model import ModelGraphs
from aejax.sampling.samplers import LogDensity, Sampler, Settings

PARAMETERS = 2
"""The adapted parameters, last in the carried values: the step size and the inverse mass matrix."""


def aehmc_sampler(graphs: ModelGraphs, settings: Settings, reject_failed_checks: bool) -> Sampler:
    """aehmc's NUTS with its window adaptation on the model of ``graphs`` (its graphs built and lowered now)."""
    with aesara.config.change_flags(cxx=""):  # Aesara folds constants as it builds loops: in Python, not C
        return built_sampler(graphs, settings, reject_failed_checks)


def built_sampler(graphs: ModelGraphs, settings: Settings, reject_failed_checks: bool) -> Sampler:
    """`aehmc_sampler`, built."""
    from aehmc import hmc, nuts, window_adaptation

    position = at.tensor(graphs.log_density.dtype, shape=(graphs.layout.dims,), name="position")
    log_density = density_at(graphs, rejecting_density(graphs.log_density) if reject_failed_checks else None)
    kernel = nuts.new_kernel(RandomStream(0), log_density, max_num_expansions=settings.max_tree_depth)
    init, adapt = window_adaptation.window_adaptation(
        max(settings.warmup, 1),
        is_mass_matrix_full=settings.dense_mass,
        target_acceptance_rate=settings.target_accept,
    )
    (dual_averaging, mass_matrix), parameters = init((position,))
    warmup_state = [*dual_averaging, *mass_matrix]
    start = jaxify([position], [*hmc.new_state(position, log_density), *warmup_state, *parameters])

    step = at.iscalar("step")
    q, energy, grad = position.type("q"), at.scalar("energy", dtype=graphs.log_density.dtype), position.type("grad")
    carried = [value.type() for value in [*warmup_state, *parameters]]
    (q_new, energy_new, grad_new, accept, depth, _, diverging), updates = kernel(q, energy, grad, *carried[-2:])
    split = (carried[: len(dual_averaging)], carried[len(dual_averaging) : -PARAMETERS])
    stage = at.minimum(step, settings.warmup - 1)  # aehmc's schedule has one entry per warmup step
    (new_dual_averaging, new_mass_matrix), new_parameters = adapt(
        stage, split, carried[-PARAMETERS:], (q_new, energy_new, grad_new, accept)
    )
    adapted = [*new_dual_averaging, *new_mass_matrix, *new_parameters]
    kept = [at.switch(at.lt(step, settings.warmup), new, old).astype(old.dtype) for new, old in zip(adapted, carried)]
    outputs = [q_new, energy_new, grad_new, *kept, accept, depth, diverging]
    transition = jaxify([step, q, energy, grad, *carried], outputs, updates)
    return Sampler(
        begin=lambda _, key, at_position, __: aehmc_begin(start, transition, key, at_position),
        step=lambda _, state, __: aehmc_step(transition, state),
        kept=aehmc_kept,
        adapts_in_begin=False,
    )


def density_at(graphs: ModelGraphs, log_density: Variable | None) -> LogDensity:
    """The model's log-density (``log_density``, or the graphs' own) as a function of a flat position graph.

    Not ``clone_replace``: it copies the replacements' own graphs too, and
    aehmc's gradient with respect to a leapfrog step's position would find
    the copy disconnected from it.
    """
    log_density = graphs.log_density if log_density is None else log_density
    layout = graphs.layout

    def at_position(flat: Variable) -> Variable:
        values = [
            flat[start : start + size].reshape(shape)
            for start, size, shape in zip(layout.starts, layout.sizes, layout.shapes)
        ]
        memo = dict(zip(graphs.values, values))
        return clone_get_equiv(graphs.values, [log_density], copy_inputs=False, copy_orphans=False, memo=memo)[
            log_density
        ]

    return at_position


def rejecting_density(log_density: Variable) -> Variable:
    """``log_density`` without its checks (`CheckAndRaise` nodes): ``-inf`` where one fails or it is not finite."""
    checks = [node for node in io_toposort([], [log_density]) if isinstance(node.op, CheckAndRaise)]
    unchecked = aesara.clone_replace(log_density, {node.outputs[0]: node.inputs[0] for node in checks})
    holds = [at.all(condition) for node in checks for condition in node.inputs[1:]]
    finite = at.lt(at.abs(unchecked), np.inf)  # false for NaN too
    valid = at.and_(at.all(at.stack(holds)), finite) if holds else finite
    return at.switch(valid, unchecked, -np.inf)


def random_entries(graph: JaxGraph) -> list[str]:
    """The names of the transition's random generators among its state's entries (one per random draw of aehmc's)."""
    return [name for name, value in graph.state.items() if jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key)]


def aehmc_begin(start: JaxGraph, transition: JaxGraph, key: Any, position: Any) -> tuple:
    """A chain at ``position``: the transition's state (keys split from ``key`` as its generators), the step's index, the
    position, potential energy and gradient, the adaptation's state and parameters, and the last transition's
    acceptance, tree depth and divergence."""
    (values, _), _ = start.checked_fn(start.state, position)
    generators = random_entries(transition)
    state = {**transition.state, **dict(zip(generators, jax.random.split(key, len(generators))))}
    q, energy, grad, *carried = values
    step = jnp.asarray(0, jnp.int32)
    (outputs, _), _ = jax.eval_shape(lambda: transition.checked_fn(state, step, q, energy, grad, *carried))
    last = tuple(jnp.zeros(out.shape, out.dtype) for out in outputs[-3:])  # no transition yet: its statistics' shapes
    return state, step, q, energy, grad, carried, last


def aehmc_step(transition: JaxGraph, chain: tuple) -> tuple:
    """The chain after one transition (where a check of aejax's fails in it, the chain as it was, divergent)."""
    state, step, q, energy, grad, carried, _ = chain
    (outputs, new_state), code = transition.checked_fn(state, step, q, energy, grad, *carried)
    q_new, energy_new, grad_new, *rest = outputs
    kept, (accept, depth, diverging) = rest[:-3], rest[-3:]
    moved = (new_state, step + 1, q_new, energy_new, grad_new, kept, (accept, depth, diverging))
    stuck = (new_state, step + 1, q, energy, grad, carried, (jnp.zeros_like(accept), depth, jnp.asarray(True)))
    return jax.tree.map(lambda new, old: jnp.where(code == PASSED, new, old), moved, stuck)


def aehmc_kept(chain: tuple) -> tuple[Any, dict[str, Any]]:
    _, _, q, energy, _, carried, (accept, depth, diverging) = chain
    stats = {
        "diverging": diverging,
        "acceptance_rate": accept,
        "step_size": carried[-PARAMETERS],
        "tree_depth": depth,
        "lp": -energy,
    }
    return q, stats
