"""NUTS with aehmc on a 2-D correlated Gaussian: several chains on aejax and on Aesara's C backend.

aehmc builds the No-U-Turn sampler out of Aesara Scans: each transition
doubles its trajectory until the trajectory turns back on itself, so it runs
loops whose lengths are known only at run time. A chain of transitions is one
more Scan around them. aejax runs the whole chain as one jit program; Aesara's
C backend runs the same graph loop by loop. Both should sample the target, a
Gaussian with mean (1, -2), unit variances and correlation 0.5, and their
posterior means should agree within Monte Carlo error. (They do; both also
draw a slightly wider cloud than the target, standard deviations about 1.1
over 12,000 draws on either backend where NumPyro's NUTS gives 1.0: that is
aehmc 0.0.11's sampler, not the backend.)

Run: python examples/nuts.py   (writes nuts_posterior.png with ``pip install '.[examples]'``)
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

import aejax.adapters  # noqa: F401  # isort: skip  (first: under numpy 2 it makes Aesara 2.9.4 work)
import aesara
import aesara.tensor as at
import numpy as np
from aehmc import hmc, nuts
from aesara.tensor.random.utils import RandomStream

sys.path.insert(0, str(Path(__file__).resolve().parent))
import figures  # noqa: E402
from progress import Progress  # noqa: E402
from timing import AEJAX, AESARA, BACKENDS, timing_line, yes  # noqa: E402

MEAN = np.array([1.0, -2.0])
COV = np.array([[1.0, 0.5], [0.5, 1.0]])
PRECISION = np.linalg.inv(COV)
STEP_SIZE = 0.25
BURN_IN = 100
Z = 4.0  # how many Monte Carlo standard errors count as agreeing


def logprob(q: Any) -> Any:
    """The target's log-density, up to a constant."""
    d = q - MEAN
    return -0.5 * (d @ PRECISION @ d)


def chain_graph(transitions: int, seed: int = 2024) -> tuple[list, list, Any]:
    """A chain of ``transitions`` NUTS transitions from ``q0`` as one Scan: positions and acceptance probabilities."""
    q0 = at.dvector("q0")
    kernel = nuts.new_kernel(RandomStream(seed), logprob)

    def transition(q, energy, grad):
        (q, energy, grad, p_accept, *_), updates = kernel(q, energy, grad, np.float64(STEP_SIZE), at.ones(2))
        return (q, energy, grad, p_accept), updates

    _, energy, grad = hmc.new_state(q0, logprob)
    (positions, _, _, accepts), updates = aesara.scan(
        transition, outputs_info=[q0, energy, grad, None], n_steps=transitions
    )
    return [q0], [positions, accepts], updates


def run_chains(label: str, draws: int, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each chain's draws after burn-in ``(chains, draws, 2)`` and acceptance probabilities, on backend ``label``.

    Each backend gets a graph of its own: compiling with Aesara's C backend
    rewrites the inner graphs of the Scans in place, and aejax runs nested
    loops best from the graphs Aesara builds.
    """
    inputs, outputs, updates = chain_graph(BURN_IN + draws)
    what = f"NUTS chain: {BURN_IN + draws} transitions -> q, accept"
    with Progress(f"NUTS chains on {label}", len(starts)) as progress:
        progress.step("chain 1 (compile and run)")
        start = time.perf_counter()
        chain = aesara.function(inputs, outputs, updates=updates, mode=BACKENDS[label])
        results = [chain(starts[0])]
        seconds = [time.perf_counter() - start]
        for k, q0 in enumerate(starts[1:], 2):
            progress.step(f"chain {k}")
            start = time.perf_counter()
            results.append(chain(q0))
            seconds.append(time.perf_counter() - start)
        progress.print(timing_line(what, label, seconds[0], statistics.median(seconds[1:] or seconds), "chain"))
    positions = np.stack([q[BURN_IN:] for q, _ in results])
    accepts = np.stack([a[BURN_IN:] for _, a in results])
    return positions, accepts


def standard_error(positions: np.ndarray, batches_per_chain: int = 5) -> np.ndarray:
    """Monte Carlo standard error of the posterior mean over all chains ``(chains, draws, 2)``, by batch means."""
    chains, draws, dims = positions.shape
    size = draws // batches_per_chain
    batch_means = positions[:, : size * batches_per_chain].reshape(chains * batches_per_chain, size, dims).mean(1)
    return batch_means.std(axis=0, ddof=1) / np.sqrt(len(batch_means))


def summary(label: str, positions: np.ndarray, accepts: np.ndarray) -> str:
    """One line: the posterior mean, standard deviations and correlation of ``label``'s draws."""
    flat = positions.reshape(-1, 2)
    return (
        f"  {label:12} mean {np.round(flat.mean(0), 3)} +- {np.round(standard_error(positions), 3)}, "
        f"sd {np.round(flat.std(0), 3)}, correlation {np.corrcoef(flat.T)[0, 1]:.3f}, "
        f"mean acceptance {accepts.mean():.3f}"
    )


def draw(path: str, samples: dict[str, np.ndarray]) -> Path | None:
    """Each backend's draws as a cloud of points, inside the target's 2-standard-deviation ellipse."""
    angle = np.linspace(0, 2 * np.pi, 200)
    ellipse = MEAN + 2 * np.stack([np.cos(angle), np.sin(angle)], 1) @ np.linalg.cholesky(COV).T
    series = [
        figures.Series(f"{label}, {len(q.reshape(-1, 2))} draws", q[..., 1].ravel(), q[..., 0].ravel(), "cloud")
        for label, q in samples.items()
    ]
    series.append(figures.Series("target: 2 standard deviations", ellipse[:, 1], ellipse[:, 0], "dashed"))
    title = "NUTS (aehmc) on a 2-D Gaussian, correlation 0.5"
    return figures.lines(path, title, series, "q[0]", "q[1]", size=(5.6, 5.0))


def main(chains: int = 4, draws: int = 500, with_c: bool = True, figure: str = "nuts_posterior.png") -> dict:
    backends = [label for label in BACKENDS if with_c or label == AEJAX]
    print(f"NUTS (aehmc) on a 2-D Gaussian with correlation 0.5: {chains} chains of {draws} draws after")
    print(f"{BURN_IN} burn-in transitions, step size {STEP_SIZE}. Each chain is one Scan of NUTS transitions, whose")
    print("own loops have lengths known only at run time; it runs on " + " and on ".join(backends) + ".")
    starts = MEAN + np.random.default_rng(0).normal(scale=3.0, size=(chains, 2))
    samples, accepts = {}, {}
    for label in backends:
        samples[label], accepts[label] = run_chains(label, draws, starts)
    for label in backends:
        print(summary(label, samples[label], accepts[label]))
    print(f"  {'target':12} mean {MEAN}, sd {np.sqrt(np.diag(COV))}, correlation {COV[0, 1]}")
    draw(figure, samples)
    ours = samples[AEJAX]
    if with_c:
        other = samples[AESARA]
        error = np.hypot(standard_error(ours), standard_error(other))
        agree = np.all(np.abs(ours.mean((0, 1)) - other.mean((0, 1))) < Z * error)
        print(f"{AEJAX} and {AESARA} posterior means agree within Monte Carlo error ({Z:.0f} s.e.): {yes(agree)}")
    else:
        agree = np.all(np.abs(ours.mean((0, 1)) - MEAN) < Z * standard_error(ours))
        print(f"{AEJAX} posterior mean agrees with the target's within Monte Carlo error ({Z:.0f} s.e.): {yes(agree)}")
    return {"samples": samples, "accepts": accepts}


if __name__ == "__main__":
    main()
