"""Stochastic volatility: a Gaussian random walk of log-volatility with draws inside the loop.

The shared random generator advances on every call, and `jaxify` exports
the same graph as a pure JAX function that `jax.vmap` runs for many chains,
one PRNG key each.

Run: python examples/stochastic_volatility.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import aesara
import aesara.tensor as at
import jax
import numpy as np
from aesara.tensor.random.utils import RandomStream

sys.path.insert(0, str(Path(__file__).resolve().parent))
import aejax.linker  # noqa: E402
from timing import compare_backends  # noqa: E402


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


def main(steps: int = 10_000, chains: int = 1000, calls: int = 5, with_c: bool = True) -> dict:
    inputs, outputs, updates = volatility_graph(steps)
    print(f"stochastic volatility, {steps} steps")
    log_vol, returns = compare_backends(inputs, outputs, (0.1, -1.0), updates=updates, calls=calls, with_c=with_c)
    print(f"one path: final log-volatility {log_vol[-1]:.3f}, return std {returns.std():.3f}")

    graph = aejax.linker.jaxify(inputs, outputs[0][-1], updates)
    chain_keys = {name: jax.random.split(key, chains) for name, key in graph.state.items()}
    run = jax.jit(jax.vmap(graph.fn, in_axes=({name: 0 for name in graph.state}, None, None)))
    finals, _ = run(chain_keys, 0.1, -1.0)
    finals = np.asarray(finals)
    print(f"{chains} chains with jaxify + vmap: final log-volatility mean {finals.mean():.3f}, "
          f"std {finals.std():.3f} (theory {0.1 * np.sqrt(steps):.3f})")
    return {"log_vol": log_vol, "returns": returns, "finals": finals}


if __name__ == "__main__":
    main()
