"""The chains' three programs: `begin` (the starts and the sampler's first state), `advance` (some steps of every
chain) and `finish` (what each draw gives back), each compiled once, or loaded from the store.

A chain's state and the rows of its draws travel between the programs as
the carry ``(state, rows)``, passed as its leaves (a program's arguments and
results are then arrays only, which an export can always serialize; the
samplers' states are their packages' own classes): `advance` runs `ChainPlan.chunk` steps a call,
writing each draw into its row (a warmup step writes the first row, which
the first draw overwrites), so the host calls it until every step has run
and moves the bar between calls. Steps past the last one leave the state
as it was: the draws do not depend on the chunk.

Where a single device runs the chains, each program runs through its
`jax.export` export, kept in aejax's store (`ProgramStore`): a second
process that samples the same model with the same settings loads the three
exports and compiles them from JAX's persistent cache, without tracing the
sampler again. The store key holds the model's graphs (their fingerprints
and names), the sampler with its package's version, the settings, the
chains, the arguments' shapes, and aejax's sources.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh

from aejax.linker.checks import PASSED, CheckTable
from aejax.linker.graph.fingerprint import NotFingerprintable, graph_fingerprint
from aejax.linker.program.saved_programs import Discovered, ProgramStore
from aejax.sampling.blocks import blocked, chains_sharding, on_chains
from aejax.sampling.density import JaxModel
from aejax.sampling.initial import chain_start
from aejax.sampling.model import ModelGraphs
from aejax.sampling.samplers import Sampler, Settings

CALLS = 20
"""How many calls of `advance` run a chain's steps (the bar moves after each)."""


@dataclass(frozen=True)
class ChainPlan:
    """What each chain does: the model it samples, by which sampler and settings."""

    model: JaxModel
    sampler: Sampler
    settings: Settings
    reject_failed_checks: bool
    key_impl: str
    """The PRNG implementation of the chains' keys, which the programs take as their data."""

    @property
    def steps(self) -> int:
        """How many steps `advance` runs in all."""
        return self.sampler.steps(self.settings)

    @property
    def chunk(self) -> int:
        """How many steps one call of `advance` runs."""
        return -(-self.steps // CALLS)

    def log_density(self, density_state: Any) -> Callable[[Any], Any]:
        """The log-density the sampler moves on, of a flat position."""
        if self.reject_failed_checks:
            return partial(self.model.rejecting_log_density, density_state)
        return partial(self.model.unchecked_log_density, density_state)


def begin(plan: ChainPlan, key_data: Any, values: dict[str, Any], *states: Any) -> tuple[list, Any, Any]:
    """`started`, the carry as its leaves."""
    carry, failure, outside = started(plan, key_data, values, *states)
    return jax.tree.leaves(carry), failure, outside


def started(plan: ChainPlan, key_data: Any, values: dict[str, Any], *states: Any) -> tuple[Any, Any, Any]:
    """A chain's carry at its start, from the key whose data is ``key_data``, with the start's failure and the
    variable whose given value is outside its support (`aejax.sampling.initial.chain_start`)."""
    key = jax.random.wrap_key_data(key_data, impl=plan.key_impl)
    start_key, sampler_key = jax.random.split(key)
    position, failure, outside = chain_start(plan.model, start_key, values, states)
    state = plan.sampler.begin(plan.log_density(states[0]), sampler_key, position, plan.settings)
    draws = plan.settings.draws
    rows = jax.tree.map(lambda v: jnp.zeros((draws, *jnp.shape(v)), jnp.result_type(v)), plan.sampler.kept(state))
    return (state, rows), failure, outside


def advance(plan: ChainPlan, carry_tree: Callable[[], Any], leaves: list, first: Any, density_state: Any) -> list:
    """A chain's carry after the steps ``first`` to ``first + plan.chunk`` (those before `ChainPlan.steps`);
    ``carry_tree()`` is the structure of the carry whose ``leaves`` the programs pass."""
    log_density = plan.log_density(density_state)
    last_row = plan.settings.draws - 1

    def step(carry: tuple[Any, Any], index: Any) -> tuple[tuple[Any, Any], None]:
        state, rows = carry
        moved = plan.sampler.step(log_density, state, plan.settings)
        state = jax.tree.map(lambda new, old: jnp.where(index < plan.steps, new, old), moved, state)
        row = jnp.clip(index - plan.sampler.first_draw(plan.settings), 0, last_row)
        kept = plan.sampler.kept(state)
        rows = jax.tree.map(lambda rows, value: lax.dynamic_update_index_in_dim(rows, value, row, 0), rows, kept)
        return (state, rows), None

    carry = jax.tree.unflatten(carry_tree(), leaves)
    return jax.tree.leaves(lax.scan(step, carry, first + jnp.arange(plan.chunk, dtype=jnp.int32))[0])


def finish(
    plan: ChainPlan, carry_tree: Callable[[], Any], leaves: list, density_state: Any, quantities_state: Any
) -> tuple[Any, Any, Any, Any]:
    """A chain's statistics, posterior and log-likelihoods at each draw, and each draw's failure code (all `PASSED`
    while checks reject proposals, else the code of the check a draw fails)."""
    _, (positions, stats) = jax.tree.unflatten(carry_tree(), leaves)
    posterior, log_likelihood = jax.vmap(partial(plan.model.draw_quantities, quantities_state))(positions)
    if plan.reject_failed_checks:
        codes = jnp.full(positions.shape[:1], PASSED, "int32")
    else:
        codes = jax.vmap(lambda position: plan.model.checked_log_density(density_state, position)[1])(positions)
    return stats, posterior, log_likelihood, codes


@dataclass(frozen=True)
class ChainPrograms:
    """The three programs, compiled for the chains' arguments."""

    begin: Any
    advance: Any
    finish: Any


@dataclass(frozen=True)
class Compiling:
    """The three programs as XLA compiles them, on threads of their own (each gives its program and when it was
    done, by ``time.perf_counter``)."""

    futures: dict[str, Future]

    def result(self) -> tuple[ChainPrograms, float]:
        """The programs, once compiled, and when the last of them was."""
        done = {name: future.result() for name, future in self.futures.items()}
        return ChainPrograms(**{name: program for name, (program, _) in done.items()}), max(t for _, t in done.values())


def compiling_programs(
    plan: ChainPlan,
    store: ProgramStore | None,
    mesh: Mesh | None,
    keys: Any,
    given: tuple[dict[str, Any], dict[str, Any]],
    states: tuple[Any, Any, Any],
) -> Compiling:
    """The programs for ``keys`` (the data of one key per chain) and the user's initial values ``given`` (values and
    their chain axes), all placed on ``mesh`` (`aejax.sampling.blocks.on_chains`), lowered here (in the caller's precision) and compiled side by side while the caller goes on, or loaded
    from ``store``."""
    values, axes = given
    density_state, quantities_state, _ = states
    chain_started = jax.vmap(partial(started, plan), in_axes=(0, axes, None, None, None))
    carry_tree = cache(lambda: jax.tree.structure(jax.eval_shape(chain_started, keys, values, *states)[0]))
    programs = {
        "begin": blocked(partial(begin, plan), mesh, (0, axes, None, None, None)),
        "advance": blocked(partial(advance, plan, carry_tree), mesh, (0, None, None)),
        "finish": blocked(partial(finish, plan, carry_tree), mesh, (0, None, None)),
    }
    first = jax.ShapeDtypeStruct((), jnp.int32, sharding=chains_sharding(mesh, None))
    begin_arguments = (keys, values, *states)
    loaded_begin = (
        None
        if store is None
        else loaded(store, entry_of(store, "begin", begin_arguments), programs["begin"], begin_arguments)
    )
    carry = [
        carry_leaf_spec(leaf, mesh) for leaf in jax.eval_shape(loaded_begin or programs["begin"], *begin_arguments)[0]
    ]
    pool = ThreadPoolExecutor(max_workers=len(programs))
    futures = {
        "advance": compiled(pool, store, "advance", programs["advance"], (carry, first, density_state)),  # the longest
        "finish": compiled(pool, store, "finish", programs["finish"], (carry, density_state, quantities_state)),
    }
    if loaded_begin is None:
        futures["begin"] = compiled(pool, store, "begin", programs["begin"], begin_arguments)
    else:
        futures["begin"] = pool.submit(timed, loaded_begin.trace(*begin_arguments).lower().compile)
    pool.shutdown(wait=False)  # its threads end as their compiles do
    return Compiling(futures)


def carry_leaf_spec(leaf: Any, mesh: Mesh | None) -> jax.ShapeDtypeStruct:
    """A carry leaf's shape and dtype, placed as the chains are."""
    return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=chains_sharding(mesh))


def entry_of(store: ProgramStore, name: str, arguments: tuple) -> str:
    """The store entry of the program ``name`` for ``arguments``."""
    return store.entry(Discovered(), name, arguments)


def loaded(store: ProgramStore, entry: str, program: Any, arguments: tuple) -> Any | None:
    """The program's export for ``arguments``, loaded from ``store``'s ``entry`` and compiled (from JAX's cache);
    ``None`` if the store does not hold it."""
    return store.loaded(entry, program, (), arguments, CheckTable())


def compiled(pool: ThreadPoolExecutor, store: ProgramStore | None, name: str, program: Any, arguments: tuple) -> Future:
    """The program lowered here for ``arguments`` and compiled on ``pool``: the call of its export, loaded from
    ``store`` where it holds it, or made now and saved."""
    if store is not None:
        entry = entry_of(store, name, arguments)
        program = loaded(store, entry, program, arguments) or exported(store, entry, program, arguments)
    return pool.submit(timed, program.trace(*arguments).lower().compile)


def timed(compile_lowered: Callable[[], Any]) -> tuple[Any, float]:
    """The compiled program, and when it was done."""
    return compile_lowered(), time.perf_counter()


def exported(store: ProgramStore, entry: str, program: Any, arguments: tuple) -> Any:
    """The program run through its export for ``arguments``, the export saved in ``store``'s ``entry``."""
    exporting = store.exporting(entry, program, (), arguments)
    store.save(entry, arguments, Discovered(), None, {})
    return exporting


def chains_store(graphs: ModelGraphs, plan: ChainPlan, sampler_name: str, chains: int) -> ProgramStore | None:
    """The store of the chains' programs of this model and plan, where it is on (``None``: turned off, without a
    key to sign its entries, or for a model the fingerprint cannot capture)."""
    return ProgramStore.of(lambda: chains_identity(graphs, plan, sampler_name, chains))


def chains_identity(graphs: ModelGraphs, plan: ChainPlan, sampler_name: str, chains: int) -> str | None:
    """What the chains' programs compute, as a digest; ``None`` for a graph the fingerprint cannot capture."""
    model = plan.model
    try:
        fingerprints = [
            graph_fingerprint(list(graphs.values), [graphs.log_density]),
            graph_fingerprint(list(graphs.values), [*graphs.posterior.values(), *graphs.log_likelihood.values()]),
            graph_fingerprint(list(graphs.placeholders), list(graphs.unconstrained)),
        ]
    except NotFingerprintable:
        return None
    names = (model.layout, model.posterior_names, model.log_likelihood_names)
    version = importlib.metadata.version(sampler_name)  # each sampler is named after its package
    parts = (
        fingerprints,
        names,
        sampler_name,
        version,
        plan.settings,
        plan.reject_failed_checks,
        plan.key_impl,
        chains,
    )
    return hashlib.sha256(repr((parts, sources_digest())).encode()).hexdigest()


@cache
def sources_digest() -> str:
    """A digest of aejax.sampling's sources (the store's own key covers the linker's and the adapters')."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def chunks(plan: ChainPlan) -> range:
    """The first step of each call of `advance`."""
    return range(0, plan.steps, plan.chunk)


def first_step(index: int, mesh: Mesh | None) -> Any:
    """`advance`'s argument ``first``, placed on ``mesh``."""
    return on_chains(np.asarray(index, np.int32), mesh, None)
