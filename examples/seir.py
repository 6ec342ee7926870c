"""SEIR epidemic model as an Aesara Scan, run on JAX through aejax.

The model moves people between Susceptible, Exposed, Infectious and Recovered
compartments day by day (sit-sot outputs), compares the expected new cases
with observed counts (a sequence) and sums their Poisson log-probabilities.
The built-in data are synthetic counts drawn from the model itself.

Run: python examples/seir.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import aesara
import aesara.tensor as at
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import compare_backends  # noqa: E402

POPULATION = 1_000_000.0
TRUE_RATES = (0.45, 0.2, 0.1)  # beta (infection), sigma (incubation), gamma (recovery)


def seir_graph() -> tuple[list, list]:
    """Inputs (rates, initial state, observed cases) and outputs (log-likelihood, trajectories)."""
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
    s, e, i = POPULATION - 10.0, 0.0, 10.0
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(days):
        infections, onsets, recoveries = beta * s * i / POPULATION, sigma * e, gamma * i
        s, e, i = s - infections, e + infections - onsets, i + onsets - recoveries
        cases.append(rng.poisson(max(onsets, 1e-9)))
    return np.asarray(cases, dtype=np.float64)


def main(days: int = 365, calls: int = 5, with_c: bool = True) -> dict:
    inputs, outputs = seir_graph()
    cases = synthetic_cases(days)
    start = (POPULATION - 10.0, 0.0, 10.0, 0.0)
    print(f"SEIR model, {days} days, population {POPULATION:,.0f}")
    loglik, expected, infectious = compare_backends(inputs, outputs, (*TRUE_RATES, *start, cases), calls=calls, with_c=with_c)
    wrong = compare_backends(inputs, outputs[0], (0.3, 0.2, 0.1, *start, cases), calls=1, with_c=with_c)
    print(f"log-likelihood at the true rates   {float(loglik):14.2f}")
    print(f"log-likelihood at beta=0.3         {float(wrong):14.2f}")
    print(f"peak infectious {infectious.max():,.0f} on day {int(infectious.argmax())}")
    return {"loglik": float(loglik), "wrong_loglik": float(wrong), "expected": expected, "infectious": infectious}


if __name__ == "__main__":
    main()
