"""Many NUTS chains of an aeppl model in one call, turned into an ArviZ ``InferenceData``.

The model: a linear regression with three coefficients ~ N(0, 2^2) and 50
outcomes ~ N(X @ coefficients, 1), written with Aesara random variables;
aeppl's ``joint_logprob`` gives its log-density, aehmc's NUTS samples it, and
a chain of transitions is one Scan. The function is compiled once with
aejax's mode; `aejax.linker.many_chains` turns it into a function of a key
and a number of chains (64 on a CPU, 1024 on an accelerator): every chain's
random state is split from the key, and all chains run in one vectorized
program. The draws become an ``InferenceData`` with ``chain`` and ``draw``
dimensions, whose R-hat, effective sample sizes and trace plot ArviZ gives.

The posterior is known exactly (a Gaussian prior and likelihood with a known
noise scale), so the example prints each coefficient's error against it.
aehmc 0.0.11's NUTS is biased, on Aesara's C backend as on aejax: on aehmc's
own test target (standard deviations 1 and 2) it gives 0.943 and 1.900 over
60 seeds on the C backend, and the same on aejax; with a fixed step size of
0.25, a unit-variance Gaussian comes out with variance about 1.19 on a CPU
and a TPU alike. Expect standard deviations a few per cent off here too; the
means agree with the exact ones within Monte Carlo error.

Run: python examples/many_chains.py [--chains N] [--draws N] [--plot [PATH]]
(``pip install -e '.[examples]'``; the trace plot goes to many_chains_trace.png
in the current directory, or to PATH: ``--plot docs/many_chains_trace.png``
redraws the README's picture)
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path
from typing import Any

import aejax.adapters  # noqa: F401  # isort: skip  (first: under numpy 2 it makes Aesara 2.9.4 work)
import aesara
import aesara.tensor as at
import jax
import numpy as np
from aeppl import joint_logprob
from aesara.tensor.random.utils import RandomStream

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.append(str(Path(__file__).resolve().parents[1] / "benchmarks"))
import figures  # noqa: E402
import workloads  # noqa: E402
from timing import yes  # noqa: E402

import aejax.linker  # noqa: E402

TRUE_COEFFICIENTS = np.array([0.5, -1.0, 2.0])
PRIOR_SD = 2.0
NOISE_SD = 1.0
POINTS = 50
STEP_SIZE = 0.05
BURN_IN = 100
Z = 4.0  # how many Monte Carlo standard errors count as agreeing
FIGURE = "many_chains_trace.png"
"""Where the trace plot goes unless ``--plot`` says, in the current directory."""


def regression_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Covariates ``(POINTS, 3)`` and outcomes drawn with `TRUE_COEFFICIENTS`."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(POINTS, len(TRUE_COEFFICIENTS)))
    return X, X @ TRUE_COEFFICIENTS + NOISE_SD * rng.normal(size=POINTS)


def regression_logprob(X: np.ndarray, y: np.ndarray) -> Any:
    """aeppl's joint log-density of the coefficients and the observed outcomes, as a function of the coefficients."""
    srng = RandomStream(0)
    coefficients = srng.normal(0, PRIOR_SD, size=X.shape[1])
    outcomes = srng.normal(at.dot(at.constant(X), coefficients), NOISE_SD)
    return lambda q: joint_logprob(realized={coefficients: q, outcomes: at.constant(y)})[0]


def exact_posterior(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The posterior's mean and standard deviations, in closed form."""
    precision = X.T @ X / NOISE_SD**2 + np.eye(X.shape[1]) / PRIOR_SD**2
    covariance = np.linalg.inv(precision)
    return covariance @ X.T @ y / NOISE_SD**2, np.sqrt(np.diag(covariance))


def nuts_chain(logprob: Any, transitions: int, dims: int) -> aesara.compile.function.types.Function:
    """``q0 -> (positions, acceptance probabilities)``: ``transitions`` NUTS transitions as one Scan, on aejax."""
    inputs, outputs, updates = workloads.nuts_chain(logprob, transitions, STEP_SIZE, dims, seed=2024)
    return aesara.function(inputs, outputs, updates=updates, mode=aejax.linker.mode)


def default_chains() -> int:
    """64 chains on a CPU, 1024 on an accelerator."""
    return 64 if jax.default_backend() == "cpu" else 1024


def sample(chains: int, draws: int, seed: int = 0) -> dict[str, Any]:
    """Every chain's draws after burn-in and the timings of the first (compiling) and a second call."""
    X, y = regression_data()
    mean, sd = exact_posterior(X, y)
    chain = nuts_chain(regression_logprob(X, y), BURN_IN + draws, X.shape[1])
    run = aejax.linker.many_chains(chain)
    starts = mean + 3 * sd * np.random.default_rng(seed).normal(size=(chains, len(mean)))
    seconds = []
    for key in jax.random.split(jax.random.key(seed), 2):
        start = time.perf_counter()
        result = run(key, chains, starts)
        positions, accepts = (np.asarray(x) for x in result.outputs)
        seconds.append(time.perf_counter() - start)
    return {
        "positions": positions[:, BURN_IN:],
        "accepts": accepts[:, BURN_IN:],
        "seconds": seconds,
        "exact": (mean, sd),
        "state": result.state,
    }


def inference_data(positions: np.ndarray, accepts: np.ndarray) -> Any:
    """The draws as an ``arviz.InferenceData``: ``beta`` with dims ``(chain, draw, coefficient)``."""
    import arviz as az

    return az.from_dict(
        posterior={"beta": positions},
        sample_stats={"acceptance_rate": accepts},
        coords={"coefficient": [f"x{i}" for i in range(positions.shape[-1])]},
        dims={"beta": ["coefficient"]},
    )


def report(idata: Any, exact: tuple[np.ndarray, np.ndarray]) -> tuple[bool, bool]:
    """Print ArviZ's summary and the error against the exact posterior; whether R-hat and the means are fine."""
    import arviz as az

    summary = az.summary(idata, var_names=["beta"], kind="all", round_to="none")  # at 1024 chains mcse rounds to 0
    print(summary[["mean", "sd", "mcse_mean", "ess_bulk", "ess_tail", "r_hat"]].to_string())
    mean, sd = exact
    drawn = idata.posterior["beta"]
    errors = (drawn.mean(("chain", "draw")).values - mean) / summary["mcse_mean"].values
    sd_ratio = drawn.std(("chain", "draw")).values / sd
    print(f"exact posterior mean {np.round(mean, 4)}, sd {np.round(sd, 4)}")
    print(f"error of the means, in Monte Carlo standard errors: {np.round(errors, 2)}")
    print(f"drawn sd / exact sd: {np.round(sd_ratio, 3)}  (aehmc 0.0.11's NUTS runs wide; see the docstring)")
    rhat = float(az.rhat(idata, var_names=["beta"])["beta"].max())
    rhat_fine = rhat < 1.01
    means_agree = bool(np.all(np.abs(errors) < Z))
    print(f"largest R-hat {rhat:.4f}, below 1.01: {yes(rhat_fine)}")
    print(f"posterior means agree with the exact ones within {Z:.0f} Monte Carlo standard errors: {yes(means_agree)}")
    return rhat_fine, means_agree


def trace_plot(idata: Any, path: Path, exact: tuple[np.ndarray, np.ndarray]) -> Path | None:
    """ArviZ's trace plot of the coefficients with the ``exact`` posterior (means, sds), written to ``path``;
    ``None`` without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import arviz as az
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
    except ImportError:
        print("figure: not drawn; pip install '.[examples]' for matplotlib")
        return None
    chains = idata.posterior.sizes["chain"]
    density, trace = az.plot_trace(idata, var_names=["beta"], compact=True, combined=True, figsize=(9, 3.6))[0]
    exact_style = {"color": "black", "ls": "--", "lw": 1.0}
    for mean, sd in zip(*exact):
        x = np.linspace(mean - 4 * sd, mean + 4 * sd, 200)
        density.plot(x, np.exp(-0.5 * ((x - mean) / sd) ** 2) / (sd * np.sqrt(2 * np.pi)), **exact_style)
        trace.axhline(mean, **exact_style)
    coefficients = idata.posterior["coefficient"].values
    handles = [Line2D([], [], color=f"C{k}", label=f"beta[{name}]") for k, name in enumerate(coefficients)]
    density.legend(handles=[*handles, Line2D([], [], **exact_style, label="exact posterior")], fontsize=8)
    density.set(title=f"posterior density, {chains} chains pooled", xlabel="coefficient value", ylabel="density")
    trace.set(title="each chain's draws (exact mean dashed)", xlabel="draw, after burn-in", ylabel="coefficient value")
    figure = density.figure
    figure.suptitle(f"NUTS (aehmc) on aejax: {chains} chains, one call")
    figure.tight_layout()
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=90)
    plt.close(figure)
    figures.small_png(png, path)
    print(f"figure: {path.resolve()}")
    return path


def main(chains: int | None = None, draws: int = 1000, figure: Path | str = FIGURE) -> dict[str, Any]:
    chains = chains or default_chains()
    print(f"NUTS (aehmc) on an aeppl linear regression: {chains} chains of {draws} draws after {BURN_IN} burn-in")
    print(f"transitions, step size {STEP_SIZE}, all chains in one call of one compiled function on {jax.devices()[0]}.")
    result = sample(chains, draws)
    first, second = result["seconds"]
    transitions = chains * (BURN_IN + draws)
    print(
        f"compile + first call {first:.1f} s; a second call {second:.2f} s ({transitions / second:,.0f} transitions/s)"
    )
    idata = inference_data(result["positions"], result["accepts"])
    result["rhat_fine"], result["means_agree"] = report(idata, result["exact"])
    result["idata"] = idata
    trace_plot(idata, Path(figure), result["exact"])
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chains", type=int, help="default: 64 on a CPU, 1024 on an accelerator")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument(
        "--plot", nargs="?", const=FIGURE, default=FIGURE, metavar="PATH", help=f"the trace plot's path ({FIGURE})"
    )
    args = parser.parse_args()
    main(args.chains, args.draws, args.plot)
