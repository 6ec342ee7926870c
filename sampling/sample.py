"""`sample`: a model of Aesara random variables, sampled by NUTS on many chains, into ArviZ's InferenceData.

The call plans, compiles, then runs. Planning (`aejax.sampling.model`)
builds the model's graphs once: the log-density on the unconstrained scale,
what each draw gives back, the forward transforms of initial values. They
are exported as JAX functions (`aejax.sampling.density`) in the model's
precision (64 bits for a float64 model, as Aesara computes it). Three
programs run them (`aejax.sampling.programs`), each vmapped over the chains
(``jax.shard_map`` of that over ``mesh=``, one block of chains per device):
the chains' starts and the sampler's first state, the sampler's steps
(warmup and draws, some steps a call, while a bar shows how many have run),
and the draws' posterior and log-likelihoods. They are compiled side by
side, or loaded from aejax's store, where a process that sampled the same
model before left them.

The key decides every draw: chain ``k`` has the key
``jax.random.split(key, chains)[k]``, so one key gives the same draws on one
device as on a mesh.
"""

from __future__ import annotations

import importlib.util
import operator
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import aesara
import jax
import numpy as np
from aeppl.transforms import RVTransform
from aesara.graph.basic import Variable
from jax.sharding import Mesh

from aejax.linker.call.precision import running_in
from aejax.linker.chains import chain_mesh
from aejax.linker.checks import PASSED, CheckTable
from aejax.linker.mesh import gathered
from aejax.linker.scan.progress import tqdm_bar
from aejax.sampling.aehmc import aehmc_sampler
from aejax.sampling.blocks import on_chains
from aejax.sampling.density import JaxModel
from aejax.sampling.initial import given_values, raise_failed_starts
from aejax.sampling.model import ModelGraphs, density_graphs, model_graphs
from aejax.sampling.programs import ChainPlan, chains_store, chunks, compiling_programs, first_step
from aejax.sampling.samplers import BLACKJAX_NUTS, NUMPYRO_NUTS, Sampler, Settings

SAMPLERS: dict[str, Callable[[ModelGraphs, Settings, bool], Sampler]] = {
    "numpyro": lambda *_: NUMPYRO_NUTS,
    "blackjax": lambda *_: BLACKJAX_NUTS,
    "aehmc": aehmc_sampler,
}
"""Each sampler by name, the name of the package that has it, made for a model (``graphs, settings,
reject_failed_checks``): aehmc's is built on the model's graphs, the others take any log-density."""


def sample(
    *random_variables: Variable,
    observed: Mapping[Variable, Any] | None = None,
    log_density: Variable | None = None,
    values: Sequence[Variable] | None = None,
    sampler: str = "numpyro",
    chains: int = 4,
    warmup: int = 1000,
    draws: int = 1000,
    key: Any = 0,
    target_accept: float = 0.8,
    max_tree_depth: int = 10,
    dense_mass: bool = False,
    transforms: Mapping[Variable | str, RVTransform | None] | None = None,
    deterministics: Mapping[str, Variable] | None = None,
    initial: Mapping[str, Any] | None = None,
    reject_failed_checks: bool = True,
    mesh: Mesh | Sequence[Any] | None = None,
    progress: bool | None = None,
    x64: bool | None = None,
    dims: Mapping[str, Sequence[str]] | None = None,
    coords: Mapping[str, Sequence[Any]] | None = None,
) -> Any:
    """Sample the model's free variables given ``observed``, by NUTS; return ArviZ's ``InferenceData``.

    The model comes as Aesara random variables (aeppl's convention:
    ``random_variables`` and ``observed``), or as a ``log_density`` of the
    value variables ``values``.

    Parameters
    ----------
    random_variables
        The random variables to sample (named); none: every random variable
        the observed ones depend on.
    observed
        Each observed random variable's value.
    log_density, values
        Instead of random variables: a scalar expression, the log-density,
        of the named value variables ``values`` (each of a shape fixed in
        its type), sampled on their own scale (no transform).
    sampler
        ``"numpyro"`` (NumPyro's NUTS), ``"blackjax"`` (BlackJAX's) or
        ``"aehmc"`` (aehmc's, built as Aesara graphs on the model's: wider
        than the posterior, docs/sampling.md), each after Stan's window
        adaptation of its step size and mass matrix.
    chains, warmup, draws
        The number of chains, and of warmup and kept transitions of each.
    key
        A JAX PRNG key or an int seed: it decides every draw.
    target_accept, max_tree_depth, dense_mass
        NUTS's target acceptance rate, its largest tree depth, and a dense
        (not diagonal) mass matrix.
    transforms
        A free variable (or its name) to an aeppl ``RVTransform``, or to
        ``None`` to sample it unconstrained; the others take aeppl's default
        transform for their distribution.
    deterministics
        Names of Aesara expressions of the model's variables, computed at
        every draw into the posterior.
    initial
        A free variable's name to its initial value (constrained scale), the
        same for every chain or one per chain (a leading axis of
        ``chains``); the others start as Stan starts them: uniform in (-2, 2)
        on the unconstrained scale, drawn again where the log-density or
        its gradient is not finite.
    reject_failed_checks
        A proposal that fails one of the log-density's checks (aeppl's
        parameter checks), or whose log-density is not finite, is rejected
        (log-density ``-inf``), as Stan does. ``False``: the checks do not
        take part in sampling, and a draw that fails one raises it.
    mesh
        A ``jax.sharding.Mesh`` or a list of devices: each runs its own block
        of the chains (``chains`` must be a multiple of the devices).
    progress
        A progress bar for the warmup and the draws (``None``: when tqdm is installed).
    x64
        Compute in 64 bits (``None``: as the model's dtype, float64 for Aesara's default floatX).
    dims, coords
        ArviZ's names of a variable's dimensions and their coordinates (``az.from_dict``'s).

    Returns
    -------
    arviz.InferenceData
        ``posterior`` (constrained, with the deterministics), ``sample_stats``
        (diverging, acceptance_rate, step_size, lp; n_steps and energy, not
        with aehmc; tree_depth with BlackJAX and aehmc; its attributes
        ``compile_time`` and ``sampling_time``, in seconds), ``log_likelihood`` (one entry per
        observation) and ``observed_data``.
    """
    settings = checked_settings(sampler, chains, warmup, draws, target_accept, max_tree_depth, dense_mass)
    progress = importlib.util.find_spec("tqdm") is not None if progress is None else progress
    mesh = chain_mesh(mesh)
    if mesh is not None and chains % mesh.size:
        raise ValueError(f"chains={chains} cannot be split across the mesh's {mesh.size} devices: ask for a multiple")
    model_given = {"random_variables": random_variables, "observed": observed, "transforms": transforms}
    graphs, model, x64 = planned(model_given, log_density, values, deterministics, x64)
    with running_in(x64):
        key_data, key_impl = chain_keys(key, chains)
        chain_sampler = SAMPLERS[sampler](graphs, settings, reject_failed_checks)
        plan = ChainPlan(model, chain_sampler, settings, reject_failed_checks, key_impl)
        given, axes = given_values(model, initial or {}, chains)
        keys = on_chains(key_data, mesh, 0)
        given = {name: on_chains(value, mesh, axes[name]) for name, value in given.items()}
        states = on_chains(model.states, mesh, None)
        store = None if mesh is not None else chains_store(graphs, plan, sampler, chains)
        started = time.perf_counter()
        compiling = compiling_programs(plan, store, mesh, keys, (given, axes), states)
        importlib.import_module("arviz")  # while XLA compiles: ArviZ takes about a second to import
        programs, compiled_at = compiling.result()
        running = time.perf_counter()
        carry, failures, outside = programs.begin(keys, given, *states)
        raise_failed_starts(failures, outside, bool(given), model)
        carry = advanced(programs.advance, plan, carry, states[0], mesh, progress)
        stats, posterior, log_likelihood, codes = programs.finish(carry, *states[:2])
        jax.block_until_ready(posterior)
        times = {"compile_time": compiled_at - started, "sampling_time": time.perf_counter() - running}
        raise_failed_draw(gathered(codes), model.density.checks)
        labels = {"dims": dims, "coords": coords}
        return inference_data(posterior, stats, log_likelihood, graphs.observed, times, labels)


def advanced(program: Any, plan: ChainPlan, carry: Any, density_state: Any, mesh: Mesh | None, progress: bool) -> Any:
    """The chains' carry once ``program`` (`aejax.sampling.programs.advance`) has run every step, a chunk a call; a
    bar shows the steps run, if ``progress`` (in the first process, where a mesh spans several)."""
    bar = tqdm_bar()(total=plan.steps, desc="sampling") if progress and jax.process_index() == 0 else None
    for first in chunks(plan):
        carry = program(carry, first_step(first, mesh), density_state)
        if bar is not None:
            jax.block_until_ready(carry)
            bar.update(min(plan.chunk, plan.steps - first))
    if bar is not None:
        bar.close()
    return carry


def planned(
    model_given: dict[str, Any],
    log_density: Variable | None,
    values: Sequence[Variable] | None,
    deterministics: Mapping[str, Variable] | None,
    x64: bool | None,
) -> tuple[ModelGraphs, JaxModel, bool]:
    """The model's graphs, their JAX functions, and the precision they compute in (the model's unless ``x64``).

    The model is either ``model_given`` (random variables, observed ones,
    transforms), or ``log_density`` of ``values``: `TypeError` if both or
    neither are given.
    """
    as_variables = bool(model_given["random_variables"]) or model_given["observed"] is not None
    if as_variables == (log_density is not None or values is not None):
        raise TypeError(
            "sample() takes a model either as random variables and observed={...}, or as log_density= and values=, "
            "not both or neither"
        )
    if not as_variables and model_given["transforms"]:
        raise TypeError("transforms= applies to random variables: a log_density is sampled on its values' own scale")
    # Aesara folds constants while the graphs are built: in Python, not by compiling C code for each
    with aesara.config.change_flags(cxx=""):
        if as_variables:
            graphs = model_graphs(
                model_given["random_variables"],
                model_given["observed"] or {},
                model_given["transforms"],
                deterministics,
            )
        else:
            graphs = density_graphs(log_density, values or [], deterministics)
        x64 = graphs.x64 if x64 is None else x64
        with running_in(x64):
            return graphs, JaxModel.of(graphs), x64


def checked_settings(
    sampler: str,
    chains: int,
    warmup: int,
    draws: int,
    target_accept: float,
    max_tree_depth: int,
    dense_mass: bool,
) -> Settings:
    """The chains' `Settings`: `ValueError` or `TypeError` naming the argument at fault, `ImportError` naming the
    package a sampler needs."""
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler={sampler!r} is not one of {sorted(SAMPLERS)}")
    if importlib.util.find_spec(sampler) is None:
        raise ImportError(f"sampler={sampler!r} needs {sampler}: pip install 'aejax[sampling]' {sampler}")
    for name, value, least in (("chains", chains, 1), ("warmup", warmup, 0), ("draws", draws, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int, not {type(value).__name__} ({value!r})")
        if value < least:
            raise ValueError(f"{name} must be at least {least}, not {value}")
    if not 0 < target_accept < 1:
        raise ValueError(f"target_accept must lie between 0 and 1, not {target_accept}")
    if operator.index(max_tree_depth) < 1:
        raise ValueError(f"max_tree_depth must be at least 1, not {max_tree_depth}")
    return Settings(int(warmup), int(draws), float(target_accept), int(max_tree_depth), bool(dense_mass))


def chain_keys(key: Any, chains: int) -> tuple[np.ndarray, str]:
    """The data of each chain's key, from ``key`` (a PRNG key, or an int seed), and their PRNG implementation."""
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        key = jax.random.key(int(key))
    keys = jax.random.split(key, chains)
    return np.asarray(jax.random.key_data(keys)), str(jax.random.key_impl(keys))


def raise_failed_draw(codes: np.ndarray, checks: CheckTable) -> None:
    """Raise the check that the first draw failing one failed (``codes``: ``(chain, draw)``), naming its chain and
    draw."""
    failed = np.argwhere(codes != PASSED)
    if not failed.size:
        return
    chain, draw = (int(i) for i in failed[0])
    exc_type, message = checks.entries()[codes[chain, draw]]
    raise exc_type(f"{message} (at draw {draw} of chain {chain})")


def inference_data(
    posterior: dict[str, Any],
    stats: dict[str, Any],
    log_likelihood: dict[str, Any],
    observed: dict[str, np.ndarray],
    times: dict[str, float],
    labels: dict[str, Any],
) -> Any:
    """ArviZ's ``InferenceData`` of the draws: every array as numpy, with leading axes ``(chain, draw)``; the
    seconds the sampler's program took to compile and to run (warmup and draws) in ``sample_stats.attrs``;
    ``labels`` holds ArviZ's ``dims`` and ``coords``."""
    import arviz as az

    as_numpy = lambda values: {name: gathered(value) for name, value in values.items()}
    idata = az.from_dict(
        posterior=as_numpy(posterior),
        sample_stats=as_numpy(stats),
        log_likelihood=as_numpy(log_likelihood),
        observed_data=observed,
        **labels,
    )
    idata.sample_stats.attrs.update(times)
    return idata
