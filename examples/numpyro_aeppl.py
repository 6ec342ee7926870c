"""An aeppl logistic regression sampled by NumPyro's NUTS, its log-density exported with `jaxify`.

The model is the benchmarks' (``benchmarks/workloads.py``): three coefficients
~ N(0, 1) and 200 outcomes ~ Bernoulli(sigmoid(X @ coefficients)), written
with Aesara random variables. aeppl's ``joint_logprob`` turns it into the
graph of the joint log-density at given coefficients, and
``aejax.linker.jaxify`` exports that graph as a pure JAX function; negated, it
is NumPyro's potential energy, ``NUTS(potential_fn=...)``, which ``MCMC`` runs
from ``init_params``. The same potential written by hand in JAX is sampled the
same way (same settings, same keys), and the two posteriors are compared.

Timing: ``MCMC.run`` traces and compiles its sampling loop again on every
call (NumPyro 0.22.0), so a second ``run`` would time compilation again. Each
sampler is therefore one ``jax.jit`` of "build the MCMC, warm up, sample" as a
function of the key: the first call compiles, and the calls with new keys that
follow run the compiled loops and are timed. NUTS transitions differ in their
numbers of leapfrog steps (gradient evaluations), so the time per leapfrog
step is shown beside the time per transition.

aeppl's graph checks that the Bernoulli's probabilities lie in [0, 1]; inside
a JAX function that check depends on traced values and cannot raise, so aejax
warns once that it is not checked.

Run: python examples/numpyro_aeppl.py [--plot [PATH]]   (--plot draws the posteriors, with matplotlib, in
numpyro_aeppl.png in the current directory, or in PATH)
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aejax.adapters  # noqa: F401  # isort: skip  (first: under numpy 2 it makes Aesara 2.9.4 work)
import aesara.tensor as at
import jax
import jax.numpy as jnp
import numpy as np
from numpyro.diagnostics import effective_sample_size
from numpyro.infer import MCMC, NUTS

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.append(str(Path(__file__).resolve().parents[1] / "benchmarks"))
import figures  # noqa: E402
from progress import Progress  # noqa: E402
from timing import timing_line, yes  # noqa: E402
from workloads import logistic_data, logistic_logprob, logistic_potential  # noqa: E402

import aejax.linker  # noqa: E402

jax.config.update("jax_enable_x64", True)  # the model is float64, Aesara's floatX

AEPPL = "aeppl + jaxify"
HAND = "hand-written JAX"
TRUE_COEFFICIENTS = np.array([1.0, -0.5, 0.25])
"""The coefficients ``workloads.logistic_data`` draws its outcomes with."""
FIGURE = "numpyro_aeppl.png"
"""Where ``--plot`` without a path draws the posteriors, in the current directory."""
Z = 4.0  # how many Monte Carlo standard errors count as agreeing
SEED = 0

Potential = Callable[[Any], Any]
Sampler = Callable[[Any], tuple[Any, Any]]
"""``key -> (draws (samples, 3), leapfrog steps of every transition, warm-up first)``, jitted."""


def exported_potential(X: np.ndarray, y: np.ndarray) -> Potential:
    """aeppl's joint log-density of the coefficients, exported by `jaxify` and negated: a potential energy."""
    q = at.dvector("q")
    graph = aejax.linker.jaxify([q], logistic_logprob(X, y)(q))

    def potential(z: Any) -> Any:
        logp, _ = graph.fn(graph.state, z)  # no updates: the state does not change
        return -logp

    return potential


def potentials(X: np.ndarray, y: np.ndarray) -> dict[str, Potential]:
    """The two potentials by label: exported from aeppl's graph, and hand-written in JAX."""
    return {AEPPL: exported_potential(X, y), HAND: logistic_potential(X, y)}


def largest_differences(exported: Potential, hand: Potential, points: np.ndarray) -> tuple[float, float]:
    """The largest relative differences of the potentials' values, and of their gradients, at ``points``."""
    values, gradients = [], []
    for z in points:
        (mine, my_grad), (theirs, their_grad) = (jax.value_and_grad(p)(jnp.asarray(z)) for p in (exported, hand))
        values.append(abs(float(mine - theirs)) / abs(float(theirs)))
        gradients.append(float(jnp.max(jnp.abs(my_grad - their_grad)) / jnp.max(jnp.abs(their_grad))))
    return max(values), max(gradients)


def nuts_sampler(potential: Potential, warmup: int, samples: int, dims: int = 3) -> Sampler:
    """One chain of NumPyro's NUTS on ``potential`` from the origin, as a jitted function of the key.

    ``MCMC.warmup`` adapts the step size and the (diagonal) mass matrix, then
    ``MCMC.run`` draws ``samples`` from where the warm-up ended.
    """

    def run(key: Any) -> tuple[Any, Any]:
        warmup_key, sample_key = jax.random.split(key)
        mcmc = MCMC(NUTS(potential_fn=potential), num_warmup=warmup, num_samples=samples, progress_bar=False)
        mcmc.warmup(warmup_key, init_params=jnp.zeros(dims), extra_fields=("num_steps",), collect_warmup=True)
        warmup_steps = mcmc.get_extra_fields()["num_steps"]
        mcmc.run(sample_key, extra_fields=("num_steps",))
        return mcmc.get_samples(), jnp.concatenate([warmup_steps, mcmc.get_extra_fields()["num_steps"]])

    return jax.jit(run)


def timed(sampler: Sampler, seed: int) -> tuple[float, np.ndarray, np.ndarray]:
    """Seconds of one call of ``sampler`` with key ``seed`` (until its results are ready), its draws and steps."""
    start = time.perf_counter()
    draws, steps = jax.block_until_ready(sampler(jax.random.key(seed)))
    return time.perf_counter() - start, np.asarray(draws), np.asarray(steps)


def standard_error(draws: np.ndarray) -> np.ndarray:
    """Monte Carlo standard error of the posterior mean of one chain's ``draws`` ``(samples, dims)``, by ESS."""
    return draws.std(0) / np.sqrt(effective_sample_size(draws[None]))


def summary(label: str, draws: np.ndarray, steps: np.ndarray, samples: int) -> str:
    """One line: ``label``'s posterior means with their standard errors, sds, and NUTS trees' mean size."""
    return (
        f"  {label:17} mean {np.round(draws.mean(0), 3)} +- {np.round(standard_error(draws), 3)}, "
        f"sd {np.round(draws.std(0), 3)}, leapfrog steps per transition {steps[-samples:].mean():.1f}"
    )


def time_samplers(samplers: dict[str, Sampler], transitions: int, repeats: int) -> dict[str, dict[str, Any]]:
    """Compile and run each sampler with key `SEED`, then time ``repeats`` runs with new keys, taking turns.

    Prints a timing line per sampler; returns each one's first draws and
    steps, its compile+first-run seconds, and the seconds of each timed run:
    in all, per transition and per leapfrog step.
    """
    results: dict[str, dict[str, Any]] = {}
    with Progress("NumPyro NUTS", len(samplers) * (1 + repeats)) as progress:
        for label, sampler in samplers.items():
            progress.step(f"{label}: compile and run")
            first, draws, steps = timed(sampler, SEED)
            results[label] = {
                "draws": draws,
                "steps": steps,
                "first": first,
                "run": [],
                "transition": [],
                "leapfrog": [],
            }
        for seed in range(SEED + 1, SEED + 1 + repeats):
            for label, sampler in samplers.items():
                progress.step(f"{label}: timed run, key {seed}")
                seconds, _, steps = timed(sampler, seed)
                results[label]["run"].append(seconds)
                results[label]["transition"].append(seconds / transitions)
                results[label]["leapfrog"].append(seconds / steps.sum())
        for label, result in results.items():
            what = f"NUTS, {transitions} transitions"
            progress.print(timing_line(what, label, result["first"], statistics.median(result["run"]), "run"))
    return results


def timing_summary(label: str, result: dict[str, Any]) -> str:
    """The median time per transition and per leapfrog step of ``label``'s timed runs."""
    runs = len(result["transition"])
    return (
        f"  {label:17} per transition {statistics.median(result['transition']) * 1e6:7.1f} us, "
        f"per leapfrog step {statistics.median(result['leapfrog']) * 1e6:6.2f} us (median of {runs} runs)"
    )


def mean_difference(draws: dict[str, np.ndarray]) -> tuple[float, float]:
    """The largest difference of the two posterior means, in posterior sds and in Monte Carlo standard errors."""
    mine, theirs = draws[AEPPL], draws[HAND]
    difference = np.abs(mine.mean(0) - theirs.mean(0))
    in_sds = difference / (0.5 * (mine.std(0) + theirs.std(0)))
    in_errors = difference / np.hypot(standard_error(mine), standard_error(theirs))
    return float(in_sds.max()), float(in_errors.max())


def draw(path: str | Path, draws: dict[str, np.ndarray]) -> Path | None:
    """Each coefficient's two posterior histograms overlaid, one panel each, the true coefficient dashed."""
    fig = figures.agg_figure((9.6, 3.4))
    if fig is None:
        print(f"figure {Path(path).name} not written: matplotlib is not installed ({figures.INSTALL_HINT})")
        return None
    for k, axes in enumerate(fig.subplots(1, len(TRUE_COEFFICIENTS))):
        edges = np.histogram_bin_edges(np.concatenate([d[:, k] for d in draws.values()]), bins=30)
        for label, values in draws.items():
            axes.hist(values[:, k], bins=edges, density=True, histtype="step", lw=1.8, label=label)
        axes.axvline(TRUE_COEFFICIENTS[k], **figures.STYLES["dashed"], label="true coefficient")
        axes.set(title=f"coefficient {k}", xlabel="value", ylabel="posterior density" if k == 0 else "", yticks=[])
        axes.grid(alpha=0.3)
    fig.axes[0].legend(fontsize=8)
    samples = len(next(iter(draws.values())))
    fig.suptitle(f"Logistic regression posterior, NumPyro NUTS, {samples} draws each", fontsize=11)
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png")
    target = Path(path).resolve()
    figures.small_png(png, target)
    print(f"figure: {target}")
    return target


def main(warmup: int = 500, samples: int = 500, repeats: int = 11, figure: str | Path | None = None) -> dict:
    X, y = logistic_data()
    print(f"Bayesian logistic regression ({len(y)} points, {X.shape[1]} coefficients) in aeppl; its log-density")
    print("exported with aejax.linker.jaxify is NumPyro's NUTS potential, beside the same potential")
    print(f"hand-written in JAX. One chain each: {warmup} warm-up transitions, {samples} draws, the same keys.")
    found = potentials(X, y)
    points = np.random.default_rng(1).normal(scale=2.0, size=(5, X.shape[1]))
    value_difference, gradient_difference = largest_differences(found[AEPPL], found[HAND], points)
    print(
        f"  potential and gradient at {len(points)} random points: largest relative differences "
        f"{value_difference:.1e} and {gradient_difference:.1e}"
    )
    samplers = {label: nuts_sampler(potential, warmup, samples) for label, potential in found.items()}
    results = time_samplers(samplers, warmup + samples, repeats)
    draws = {label: result["draws"] for label, result in results.items()}
    for label, result in results.items():
        print(summary(label, result["draws"], result["steps"], samples))
    print(f"  {'true':17} {TRUE_COEFFICIENTS}")
    for label, result in results.items():
        print(timing_summary(label, result))
    in_sds, in_errors = mean_difference(draws)
    print(f"  largest difference of posterior means: {in_sds:.3f} posterior sd ({in_errors:.2f} Monte Carlo s.e.)")
    if figure is not None:
        draw(figure, draws)
    print(f"{AEPPL} and {HAND} posterior means agree within Monte Carlo error ({Z:.0f} s.e.): {yes(in_errors < Z)}")
    return {"potentials": found, "samplers": samplers, "results": results, "draws": draws, "in_errors": in_errors}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--plot", nargs="?", const=FIGURE, metavar="PATH", help=f"draw the posteriors in PATH (default: {FIGURE})"
    )
    main(figure=parser.parse_args().plot)
