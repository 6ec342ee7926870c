"""Eight schools, non-centered: Stan-style warmup and NUTS draws on many chains, into ArviZ.

The model (Rubin 1981; the standard data): each school's effect is
``theta = mu + tau * theta_tilde`` and its measured effect ``y ~ N(theta, sigma)``,
with ``mu ~ N(0, 5)``, ``tau ~ HalfCauchy(5)`` and ``theta_tilde ~ N(0, 1)``
(8 of them). It is written with Aesara random variables; aeppl's
``joint_logprob`` gives its log-density.

**The constrained parameter** (the ``aehmc`` route; `aejax.sampling.sample`
does it for the others). ``tau`` is positive, so the samplers move
``log_tau`` instead: aeppl's ``TransformValuesRewrite`` with a
``LogTransform`` writes the density of ``log_tau``, Jacobian included. The
transform makes a *new* value variable (in the log space) and replaces the
one it was given: so ``tau`` must not be in ``realized`` (a value given there
is dropped, and the graph asks for the new, unseen variable:
``MissingInputError`` when the value is ``q[1]``, an unused input when it is a
variable of its own). ``tau`` is passed to ``joint_logprob`` as a random
variable instead; the value variables it returns (``mu``, ``log_tau``,
``theta_tilde``) are replaced by slices of one position vector ``q`` of 10.
The draws go back to ``tau = exp(log_tau)`` for ArviZ.

**Routes** (``--route``), each on many chains at once:

- ``numpyro`` and ``blackjax``: the one call, `aejax.sampling.sample`, given
  the model's random variables and the observed ``y``: it takes aeppl's
  default transform of ``tau`` (the log), runs NumPyro's or BlackJAX's NUTS
  with Stan's window adaptation on the exported log-density, warmup and
  draws in one compiled program, the chains vmapped, and returns the
  InferenceData (``theta`` as a deterministic). The model is `model`.
  BlackJAX is the extra ``blackjax`` on the current stack; on the old pins
  (jax 0.7.1, below its declared jax>=0.9, on which it runs) install it
  apart: ``pip install --no-deps blackjax==1.7.1 optax absl-py``.
- ``aehmc`` (default): the one-graph route, built by hand as below: aehmc
  0.0.11's ``window_adaptation`` (step size by dual averaging, a diagonal
  mass matrix, Stan's windows) then its NUTS, compiled with aejax's mode
  and run on all chains in one program by `aejax.linker.many_chains`. Each
  chain adapts its own step size and mass matrix. Warmup and draws are two
  calls of one compiled function (built, traced and compiled once): a call
  that adapts, from step size 1 and a unit mass matrix, and a call that
  keeps the step size, inverse mass matrix and start it is given, one per
  chain, the warmup call's last. No loop is built from another loop's
  outputs (that made Aesara spend minutes inferring shapes). Aesara folds
  constants while it builds the loops; the example has it do so in Python
  (``cxx=""``), else it compiles C code for them (17 s on an empty compile
  directory). aehmc 0.0.11's NUTS is wider than the posterior (a variance
  of about 1.2 on a unit Gaussian, docs/bayesian_workflow.md): sample with
  the other routes.

aehmc's NUTS reports each transition's tree depth, not its leapfrog steps, so
its ``leapfrog_steps_per_transition`` is ``null`` in the JSON and its
``sample_stats`` hold ``tree_depth``; NumPyro's and BlackJAX's hold
``n_steps``.

Run: python examples/eight_schools.py [--route aehmc|numpyro|blackjax] [--chains N] [--warmup W]
[--draws D] [--seed S] [--json PATH]   (``pip install -e '.[examples]'``; BlackJAX as above)
"""

from __future__ import annotations

import time

IMPORTS_START = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any, NamedTuple  # noqa: E402

import aejax.adapters  # noqa: E402, F401  # isort: skip  (first: under numpy 2 it makes Aesara 2.9.4 work)
import aesara  # noqa: E402
import aesara.tensor as at  # noqa: E402
import arviz as az  # noqa: E402
import jax  # noqa: E402
import numpy as np  # noqa: E402
from aehmc import hmc, nuts, window_adaptation  # noqa: E402
from aeppl import joint_logprob  # noqa: E402
from aeppl.transforms import LogTransform, TransformValuesRewrite  # noqa: E402
from aesara.graph.basic import clone_get_equiv  # noqa: E402
from aesara.ifelse import ifelse  # noqa: E402
from aesara.tensor.random.utils import RandomStream  # noqa: E402

import aejax.linker  # noqa: E402
import aejax.sampling  # noqa: E402

IMPORTS_END = time.perf_counter()

jax.config.update("jax_enable_x64", True)  # the model is float64, Aesara's floatX

Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
SCHOOLS = [
    "Choate",
    "Deerfield",
    "Phillips Andover",
    "Phillips Exeter",
    "Hotchkiss",
    "Lawrenceville",
    "St. Paul's",
    "Mt. Hermon",
]
DIMS = 2 + len(Y)
"""The position's length: ``mu``, ``log_tau``, then the 8 ``theta_tilde``."""
ROUTES = ("aehmc", "numpyro", "blackjax")


def log_density(q: Any) -> Any:
    """The model's joint log-density at position ``q = [mu, log_tau, theta_tilde (8)]``, Jacobian of ``log_tau`` in."""
    srng = RandomStream(0)
    mu = srng.normal(0.0, 5.0)
    tau = srng.halfcauchy(0.0, 5.0)
    theta_tilde = srng.normal(0.0, 1.0, size=len(Y))
    y = srng.normal(mu + tau * theta_tilde, SIGMA)
    logp, values = joint_logprob(
        mu, tau, theta_tilde, realized={y: at.constant(Y)}, extra_rewrites=TransformValuesRewrite({tau: LogTransform()})
    )
    # Not `clone_replace`: it copies the replacements' own graphs too, and aehmc's gradient with respect to a
    # position that is not a root variable (a leapfrog step's) would find the copy disconnected from it.
    positions = dict(zip(values, [q[0], q[1], q[2:]]))
    return clone_get_equiv(values, [logp], copy_inputs=False, copy_orphans=False, memo=positions)[logp]


class Sampled(NamedTuple):
    """One route's draws and statistics, every array with leading axes ``(chain, draw)``, and its timings."""

    positions: np.ndarray
    """``(chains, draws, DIMS)``, in the sampler's (unconstrained) space."""
    stats: dict[str, np.ndarray]
    seconds: dict[str, float]


def initial_positions(chains: int, seed: int) -> np.ndarray:
    """Stan's default starts: every coordinate uniform in (-2, 2), one row per chain."""
    return np.random.default_rng(seed).uniform(-2.0, 2.0, size=(chains, DIMS))


def timed(function: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """``function(*args)`` with its results ready, and the seconds it took."""
    start = time.perf_counter()
    result = jax.block_until_ready(function(*args))
    return result, time.perf_counter() - start


def position(name: str) -> Any:
    """A vector of `DIMS`, its length in its type: Aesara then knows the shapes aehmc's loops allocate without
    inferring them from the graph (building the loops takes half the time)."""
    return at.tensor("float64", shape=(DIMS,), name=name)


def aehmc_chain(warmup: int, draws: int, seed: int) -> aesara.compile.function.types.Function:
    """One chain of aehmc's NUTS with Stan's window adaptation, on aejax, that adapts or merely samples.

    ``(q0, step_size, inverse_mass_matrix, adapting) -> (positions, step sizes,
    inverse mass matrices, acceptance, tree depths, divergences)``, one row per
    transition, ``max(warmup, draws)`` of them. With ``adapting`` true the
    first ``warmup`` transitions adapt the step size and mass matrix from the
    given ones, as ``aehmc.window_adaptation.run`` does; with it false, the
    given ones stay: those the warmup call's row ``warmup - 1`` ends with. So
    one graph, traced and compiled once, serves both phases, and the draws'
    call takes its step size, mass matrix and start as inputs, not from the
    warmup loop's outputs.
    """
    q0, step_size, inverse_mass_matrix = position("q0"), at.dscalar("step_size"), position("inverse_mass_matrix")
    adapting = at.scalar("adapting", dtype="bool")
    kernel = nuts.new_kernel(RandomStream(seed), log_density)
    start_adaptation, adapt = window_adaptation.window_adaptation(warmup, initial_step_size=step_size)
    (dual_averaging, mass_matrix), _ = start_adaptation((q0,))
    adaptation = len(dual_averaging) + len(mass_matrix)

    def transition(
        step: Any, adapts: Any, q: Any, energy: Any, grad: Any, *carried: Any
    ) -> tuple[tuple[Any, ...], Any]:
        state, parameters = carried[:adaptation], carried[adaptation:]
        (q, energy, grad, accept, depth, _, diverging), updates = kernel(q, energy, grad, *parameters)
        stage = at.minimum(step, warmup - 1)  # aehmc's schedule has `warmup` entries
        split = (state[: len(dual_averaging)], state[len(dual_averaging) :])
        (new_dual_averaging, new_mass_matrix), new_parameters = adapt(
            stage, split, parameters, (q, energy, grad, accept)
        )
        new = [*new_dual_averaging, *new_mass_matrix, *new_parameters]
        kept = ifelse(adapts, new, list(carried))
        return (q, energy, grad, *kept, accept, depth, diverging), updates

    steps = at.arange(max(warmup, draws))
    trace, updates = aesara.scan(
        transition,
        # Not `adapting & (steps < warmup)`: with warmup == draws, Aesara 2.9.4 folds `steps < warmup` to all true
        # and `local_useless_elemwise` drops it, leaving a sequence of one entry: a loop of one step.
        sequences=[steps, at.lt(steps, at.switch(adapting, warmup, 0))],
        outputs_info=[*hmc.new_state(q0, log_density), *dual_averaging, *mass_matrix, step_size, inverse_mass_matrix]
        + [None] * 3,
    )
    outputs = [trace[0], *trace[-5:]]
    return aesara.function(
        [q0, step_size, inverse_mass_matrix, adapting], outputs, updates=updates, mode=aejax.linker.mode
    )


def sample_aehmc(chains: int, warmup: int, draws: int, seed: int) -> Sampled:
    """aehmc's window adaptation, then NUTS draws, on ``chains`` chains each with its own step size and mass matrix."""
    start = time.perf_counter()
    with aesara.config.change_flags(cxx=""):  # Aesara folds constants while it builds loops: in Python, not C
        run = aejax.linker.many_chains(aehmc_chain(warmup, draws, seed))
    compile_seconds = time.perf_counter() - start
    warmup_key, draws_key = jax.random.split(jax.random.key(seed))
    q0 = initial_positions(chains, seed)  # every argument shaped as the draws' call's: one program for both
    adapted, warmup_seconds = timed(
        lambda: run(warmup_key, chains, q0, np.ones(chains), np.ones((chains, DIMS)), True).outputs
    )
    q, step_size, inverse_mass_matrix = (np.asarray(x)[:, warmup - 1] for x in adapted[:3])
    result, draws_seconds = timed(lambda: run(draws_key, chains, q, step_size, inverse_mass_matrix, False).outputs)
    positions, _, _, accepts, depths, divergings = (np.asarray(x)[:, :draws] for x in result)
    stats = {
        "acceptance_rate": accepts,
        "diverging": divergings.astype(bool),
        "tree_depth": depths,
        "step_size": np.broadcast_to(step_size[:, None], accepts.shape),
    }
    seconds = {"compile": compile_seconds, "warmup": warmup_seconds, "draws": draws_seconds}
    return Sampled(positions, stats, seconds)


def model() -> tuple[list[Any], dict[Any, np.ndarray], dict[str, Any]]:
    """The model as `aejax.sampling.sample` takes it: its random variables, the observed ``y`` with its values, and
    the deterministic ``theta``."""
    srng = RandomStream(0)
    mu = srng.normal(0.0, 5.0, name="mu")
    tau = srng.halfcauchy(0.0, 5.0, name="tau")
    theta_tilde = srng.normal(0.0, 1.0, size=len(Y), name="theta_tilde")
    y = srng.normal(mu + tau * theta_tilde, SIGMA, name="y")
    return [mu, tau, theta_tilde], {y: Y}, {"theta": mu + tau * theta_tilde}


def sampled_by(sampler: str, chains: int, warmup: int, draws: int, seed: int) -> az.InferenceData:
    """The model sampled by `aejax.sampling.sample` with ``sampler``'s NUTS."""
    free, observed, deterministics = model()
    dims = {"theta_tilde": ["school"], "theta": ["school"], "y": ["school"]}
    options = {"chains": chains, "warmup": warmup, "draws": draws, "key": seed}
    return aejax.sampling.sample(
        *free,
        observed=observed,
        deterministics=deterministics,
        sampler=sampler,
        dims=dims,
        coords={"school": SCHOOLS},
        **options,
    )


def aehmc_inference_data(sampled: Sampled) -> az.InferenceData:
    """The draws as ArviZ's ``InferenceData``: ``mu``, ``tau`` (constrained), ``theta_tilde`` and ``theta``."""
    q = sampled.positions
    mu, tau, theta_tilde = q[..., 0], np.exp(q[..., 1]), q[..., 2:]
    return az.from_dict(
        posterior={
            "mu": mu,
            "tau": tau,
            "theta_tilde": theta_tilde,
            "theta": mu[..., None] + tau[..., None] * theta_tilde,
        },
        sample_stats=sampled.stats,
        observed_data={"y": Y},
        constant_data={"sigma": SIGMA},
        coords={"school": SCHOOLS},
        dims={"theta_tilde": ["school"], "theta": ["school"], "y": ["school"], "sigma": ["school"]},
    )


def leapfrog_steps(stats: dict[str, np.ndarray]) -> float | None:
    """The mean leapfrog steps per transition over all chains, or ``None`` where the route does not count them."""
    return float(np.mean(stats["n_steps"])) if "n_steps" in stats else None


def report(
    route: str, chains: int, warmup: int, draws: int, seconds: dict[str, float], idata: az.InferenceData
) -> dict:
    """The benchmark's record of a run (see the module's ``--json``)."""
    ess = az.ess(idata, var_names=["mu", "tau"], method="bulk")
    stats = {name: idata.sample_stats[name].values for name in idata.sample_stats}
    return {
        "route": route,
        "chains": chains,
        "warmup": warmup,
        "draws": draws,
        "seconds": {"imports": IMPORTS_END - IMPORTS_START, **seconds},
        "ess_bulk": {name: float(ess[name]) for name in ("mu", "tau")},
        "leapfrog_steps_per_transition": leapfrog_steps(stats),
        "divergences": int(stats["diverging"].sum()),
        "posterior_mean": {name: float(idata.posterior[name].mean()) for name in ("mu", "tau")},
    }


def main(
    route: str = "aehmc", chains: int = 4, warmup: int = 1000, draws: int = 1000, seed: int = 0, path: str | None = None
) -> dict[str, Any]:
    """Sample the model by ``route``, print ArviZ's summary, the divergences and the timings; return the record."""
    if route == "aehmc":
        sampled = sample_aehmc(chains, warmup, draws, seed)
        idata, seconds = aehmc_inference_data(sampled), sampled.seconds
    else:
        start = time.perf_counter()
        idata = sampled_by(route, chains, warmup, draws, seed)
        times = idata.sample_stats.attrs
        # one program warms up and draws: both under warmup, as benchmarks/eight_schools.py reads NumPyro's own
        prepared = time.perf_counter() - start - times["sampling_time"] - times["compile_time"]
        seconds = {"compile": prepared + times["compile_time"], "warmup": times["sampling_time"], "draws": 0.0}
    record = report(route, chains, warmup, draws, seconds, idata)
    summary = az.summary(idata, var_names=["mu", "tau", "theta"])
    print(f"eight schools, non-centered, route {route}: {chains} chains, {warmup} warmup + {draws} draws each")
    print(summary[["mean", "sd", "ess_bulk", "r_hat"]].to_string())
    print(f"divergences in the draws: {record['divergences']} of {chains * draws}")
    steps = record["leapfrog_steps_per_transition"]
    if steps is None:
        print(
            f"tree depth per transition: {idata.sample_stats['tree_depth'].mean():.2f} (aehmc counts no leapfrog steps)"
        )
    else:
        print(f"leapfrog steps per transition: {steps:.1f}")
    seconds = record["seconds"]
    print(
        ", ".join(f"{phase} {value:.1f} s" for phase, value in seconds.items())
        + f"; in all {sum(seconds.values()):.1f} s"
    )
    if path is not None:
        with open(path, "w") as file:
            json.dump(record, file, indent=1)
    return {"record": record, "idata": idata}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--route", choices=ROUTES, default="aehmc")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="PATH", help="write the run's record (timings, ESS, steps) as JSON")
    args = parser.parse_args()
    main(args.route, args.chains, args.warmup, args.draws, args.seed, args.json)
