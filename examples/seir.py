"""SEIR epidemic model as an Aesara Scan, run on JAX through aejax.

The model moves people between Susceptible, Exposed, Infectious and Recovered
compartments day by day (sit-sot outputs), compares the expected new cases
with observed counts (a sequence) and sums their Poisson log-probabilities.
The built-in data are synthetic counts drawn from the model itself, so the
infection rate that fits them best should be the true one.

Run: python examples/seir.py   (writes seir.png with ``pip install '.[examples]'``)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aejax.adapters  # noqa: F401  # isort: skip  (first: under numpy 2 it makes Aesara 2.9.4 work)
import aesara
import aesara.tensor as at
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import figures  # noqa: E402
from timing import compare_backends, yes  # noqa: E402

import aejax.linker  # noqa: E402

POPULATION = 1_000_000.0
TRUE_RATES = (0.45, 0.2, 0.1)  # beta (infection), sigma (incubation), gamma (recovery)
START = (POPULATION - 10.0, 0.0, 10.0, 0.0)  # S, E, I, R on day 0
WRONG_BETA = 0.3
BETA_GRID = np.round(np.arange(0.30, 0.601, 0.005), 3)


def seir_graph() -> tuple[list, list]:
    """Inputs (rates, initial state, observed cases) and outputs (log-likelihood, expected cases, infectious)."""
    beta, sigma, gamma = at.dscalar("beta"), at.dscalar("sigma"), at.dscalar("gamma")
    s0, e0, i0, r0 = (at.dscalar(n) for n in ("s0", "e0", "i0", "r0"))
    observed = at.dvector("observed")

    def day(obs, s, e, i, r, beta, sigma, gamma):
        infections = beta * s * i / POPULATION
        onsets = sigma * e
        recoveries = gamma * i
        expected = at.maximum(onsets, 1e-9)
        logp = obs * at.log(expected) - expected - at.gammaln(obs + 1)
        return s - infections, e + infections - onsets, i + onsets - recoveries, r + recoveries, expected, logp

    (s, e, i, r, expected, logp), _ = aesara.scan(
        day,
        sequences=observed,
        outputs_info=[s0, e0, i0, r0, None, None],
        non_sequences=[beta, sigma, gamma],
    )
    inputs = [beta, sigma, gamma, s0, e0, i0, r0, observed]
    return inputs, [logp.sum(), expected, i]


def synthetic_cases(days: int, seed: int = 7) -> np.ndarray:
    """Observed new cases per day, drawn from the model with `TRUE_RATES`."""
    beta, sigma, gamma = TRUE_RATES
    s, e, i = START[:3]
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(days):
        infections, onsets, recoveries = beta * s * i / POPULATION, sigma * e, gamma * i
        s, e, i = s - infections, e + infections - onsets, i + onsets - recoveries
        cases.append(rng.poisson(max(onsets, 1e-9)))
    return np.asarray(cases, dtype=np.float64)


def fit_beta(seir: Callable[..., Any], cases: np.ndarray) -> float:
    """The infection rate on `BETA_GRID` with the highest log-likelihood (sigma and gamma at the truth)."""
    logliks = [float(seir(beta, *TRUE_RATES[1:], *START, cases)[0]) for beta in BETA_GRID]
    return float(BETA_GRID[int(np.argmax(logliks))])


def draw(path: str, cases: np.ndarray, fitted: np.ndarray, wrong: np.ndarray, beta: float) -> Path | None:
    """Observed cases against the expectation at the fitted rate and at `WRONG_BETA`."""
    series = [
        figures.Series("observed cases", cases, style="dots"),
        figures.Series(f"expected, fitted beta={beta:.3f}", fitted),
        figures.Series(f"expected, beta={WRONG_BETA}", wrong, style="dashed"),
    ]
    title = "SEIR: observed new cases and the fitted expectation"
    return figures.lines(path, title, series, "day", "new cases per day")


def main(days: int = 365, calls: int = 5, with_c: bool = True, figure: str = "seir.png") -> dict:
    cases = synthetic_cases(days)
    print(f"SEIR epidemic, {days} days, population {POPULATION:,.0f}: the log-likelihood of daily case counts")
    print("is a Scan over days; aejax runs it as one JAX program, timed here against Aesara's C backend,")
    print(f"then used to fit the infection rate beta on a grid of {len(BETA_GRID)} values.")
    inputs, outputs = seir_graph()
    truth = (*TRUE_RATES, *START, cases)
    loglik, expected, infectious = compare_backends(
        "seir(true rates) -> loglik, cases, I", inputs, outputs, truth, calls=calls, with_c=with_c
    )
    seir = aesara.function(inputs, outputs, mode=aejax.linker.mode)
    wrong_loglik, wrong_expected, _ = seir(WRONG_BETA, *TRUE_RATES[1:], *START, cases)
    beta = fit_beta(seir, cases)
    print(f"log-likelihood at the true rates {TRUE_RATES}: {float(loglik):14.2f}")
    print(f"log-likelihood at beta={WRONG_BETA}:                {float(wrong_loglik):14.2f}")
    print(f"best beta on the grid: {beta:.3f} (true {TRUE_RATES[0]})")
    print(f"peak infectious {infectious.max():,.0f} on day {int(infectious.argmax())}")
    draw(figure, cases, seir(beta, *TRUE_RATES[1:], *START, cases)[1], wrong_expected, beta)
    print(f"log-likelihood at the true rates is higher than at beta={WRONG_BETA}: {yes(loglik > wrong_loglik)}")
    return {
        "loglik": float(loglik),
        "wrong_loglik": float(wrong_loglik),
        "beta": beta,
        "expected": expected,
        "infectious": infectious,
    }


if __name__ == "__main__":
    main()
