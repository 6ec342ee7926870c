"""Stochastic volatility: a Gaussian random walk of log-volatility with draws inside the loop.

The shared random generator advances on every call, and `jaxify` exports
the same graph as a pure JAX function that `jax.vmap` runs for many chains,
one PRNG key each. Over many chains the final log-volatility spreads like a
random walk: its standard deviation is sigma * sqrt(steps).

Run: python examples/stochastic_volatility.py   (writes stochastic_volatility.png with ``pip install '.[examples]'``)
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import aejax.adapters  # noqa: F401  # isort: skip  (first: under numpy 2 it makes Aesara 2.9.4 work)
import aesara
import aesara.tensor as at
import jax
import numpy as np
from aesara.tensor.random.utils import RandomStream

sys.path.insert(0, str(Path(__file__).resolve().parent))
import figures  # noqa: E402
from progress import Progress  # noqa: E402
from timing import compare_backends, timing_line, yes  # noqa: E402

import aejax.linker  # noqa: E402

SIGMA, H0 = 0.1, -1.0
DRAWN_CHAINS, DRAWN_POINTS = 30, 300
CHAINS_PER_BATCH = 100


def volatility_graph(steps: int, seed: int = 2024) -> tuple[list, list, dict]:
    """A log-volatility random walk and the returns it drives."""
    srng = RandomStream(seed=seed)
    sigma = at.dscalar("sigma")
    h0 = at.dscalar("h0")

    def step(h, sigma):
        h_new = h + srng.normal(0.0, sigma)
        return h_new, srng.normal(0.0, 1.0) * at.exp(h_new / 2)

    (log_vol, returns), updates = aesara.scan(step, outputs_info=[h0, None], non_sequences=sigma, n_steps=steps)
    return [sigma, h0], [log_vol, returns], updates


def chain_paths(inputs: list, log_vol: object, updates: dict, chains: int) -> np.ndarray:
    """Log-volatility paths of ``chains`` chains (one row each) from ``jaxify`` + ``jax.vmap``, one key per chain.

    The chains run in batches of about `CHAINS_PER_BATCH`, one ``jit(vmap(fn))`` call each.
    """
    graph = aejax.linker.jaxify(inputs, log_vol, updates)
    run = jax.jit(jax.vmap(graph.fn, in_axes=({name: 0 for name in graph.state}, None, None)))
    keys = {name: jax.random.split(key, chains) for name, key in graph.state.items()}
    batches = np.array_split(np.arange(chains), max(1, chains // CHAINS_PER_BATCH))
    paths, seconds = [], []
    with Progress("chains", len(batches)) as progress:
        for batch in batches:
            progress.step(f"chains {batch[0] + 1}-{batch[-1] + 1}")
            start = time.perf_counter()
            paths.append(np.asarray(run({name: key[batch] for name, key in keys.items()}, SIGMA, H0)[0]))
            seconds.append(time.perf_counter() - start)
        what = f"jit(vmap(jaxify fn)), {len(batches[0])} chains"
        progress.print(timing_line(what, "JAX", seconds[0], statistics.median(seconds[1:] or seconds), "batch"))
    return np.concatenate(paths)


def draw(path: str, paths: np.ndarray) -> Path | None:
    """A few chains' paths, thinned, inside the random walk's +-2 standard deviations."""
    steps = paths.shape[1]
    every = max(1, steps // DRAWN_POINTS)
    t = np.arange(1, steps + 1)[::every]
    drawn = paths[:DRAWN_CHAINS, ::every].T
    band = H0 + 2 * SIGMA * np.sqrt(t)[:, None] * np.array([-1.0, 1.0])
    series = [
        figures.Series(f"{min(DRAWN_CHAINS, len(paths))} of {len(paths)} chains (jaxify + vmap)", drawn, t, "faint"),
        figures.Series("h0 +- 2 sigma sqrt(t)", band, t, "dashed"),
    ]
    title = "Stochastic volatility: log-volatility paths, one PRNG key per chain"
    return figures.lines(path, title, series, "step", "log-volatility")


def main(
    steps: int = 10_000,
    chains: int = 1000,
    calls: int = 5,
    with_c: bool = True,
    figure: str = "stochastic_volatility.png",
) -> dict:
    print(f"Stochastic volatility, {steps} steps: a Scan that draws two normals per step from a shared generator.")
    print(f"One path on aejax vs Aesara's C backend, then {chains} chains at once: jaxify exports the graph")
    print("as a pure JAX function, and jax.vmap runs it with one PRNG key per chain.")
    inputs, outputs, updates = volatility_graph(steps)
    log_vol, returns = compare_backends(
        "volatility path -> log_vol, returns", inputs, outputs, (SIGMA, H0), updates=updates, calls=calls, with_c=with_c
    )
    print(f"one path: final log-volatility {log_vol[-1]:.3f}, return std {returns.std():.3f}")
    paths = chain_paths(inputs, outputs[0], updates, chains)
    finals, theory = paths[:, -1], SIGMA * np.sqrt(steps)
    print(
        f"{chains} chains: final log-volatility mean {finals.mean():.3f} (theory {H0}), "
        f"std {finals.std():.3f} (theory {theory:.3f})"
    )
    draw(figure, paths)
    close = abs(finals.std() / theory - 1) < 0.1
    print(
        f"std of the final log-volatility over {chains} chains is within 10% of "
        f"sigma*sqrt(steps)={theory:.3f}: {yes(close)}"
    )
    return {"log_vol": log_vol, "returns": returns, "finals": finals}


if __name__ == "__main__":
    main()
