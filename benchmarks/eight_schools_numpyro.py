"""Eight schools written in NumPyro, the anchor of ``benchmarks/eight_schools.py`` (issue #50).

The non-centered model a NumPyro user writes: ``mu ~ Normal(0, 5)``,
``tau ~ HalfCauchy(5)``, ``theta_tilde ~ Normal(0, 1)`` for each school,
``y ~ Normal(mu + tau * theta_tilde, sigma)``, on the standard data (Rubin
1981). One ``MCMC.run``, as a NumPyro user writes it, warms NUTS up (step
size and diagonal mass matrix) then draws, all chains at once
(``chain_method="vectorized"``), in NumPyro's default 32-bit precision, and
the draws go into ArviZ with ``az.from_numpyro``. The command line and the
JSON it writes are those of ``examples/eight_schools.py``:

    python benchmarks/eight_schools_numpyro.py [--chains 4] [--warmup 1000] [--draws 1000] [--seed 0] [--json PATH]

``seconds``: ``imports`` (JAX, NumPyro, ArviZ), ``compile`` (JAX's tracing,
lowering and XLA compiling, all inside ``MCMC.run``, told apart by
`cold_start.JaxTimers`), and ``warmup``: the rest of ``MCMC.run``, warmup and
draws together, since one loop runs both; ``draws`` is 0. (Calling
``MCMC.warmup`` then ``MCMC.run`` would time them apart, but compiles a
second loop: about 10 s more here.)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cold_start import JaxTimers  # noqa: E402  (the standard library alone)

ROUTE = "numpyro_model"
TREATMENT_EFFECTS = (28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0)
"""The estimated effects of coaching in the eight schools (Rubin 1981)."""
STANDARD_ERRORS = (15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0)
"""Their standard errors."""
MU_SCALE = 5.0
"""The scale of ``mu``'s Normal prior (centered at 0)."""
TAU_SCALE = 5.0
"""The scale of ``tau``'s half-Cauchy prior."""


def model(sigma: Any, y: Any = None) -> None:
    """The non-centered eight schools in NumPyro."""
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, MU_SCALE))
    tau = numpyro.sample("tau", dist.HalfCauchy(TAU_SCALE))
    with numpyro.plate("school", len(sigma)):
        theta_tilde = numpyro.sample("theta_tilde", dist.Normal(0.0, 1.0))
        theta = numpyro.deterministic("theta", mu + tau * theta_tilde)
        numpyro.sample("y", dist.Normal(theta, sigma), obs=y)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Warm up and draw as ``args`` say; the JSON fields of ``examples/eight_schools.py``."""
    start = time.perf_counter()
    import arviz as az
    import jax
    import numpy as np
    from numpyro.infer import MCMC, NUTS

    seconds = {"imports": time.perf_counter() - start}
    timers = JaxTimers()
    jax.monitoring.register_event_time_span_listener(timers)
    mcmc = MCMC(
        NUTS(model),
        num_warmup=args.warmup,
        num_samples=args.draws,
        num_chains=args.chains,
        chain_method="vectorized",
        progress_bar=False,
    )
    sigma, y = np.array(STANDARD_ERRORS), np.array(TREATMENT_EFFECTS)
    with timers.listen():
        wall, start = time.time(), time.perf_counter()
        mcmc.run(jax.random.PRNGKey(args.seed), sigma, y=y, extra_fields=("num_steps", "diverging"))
        jax.block_until_ready(mcmc.get_samples())
        elapsed = time.perf_counter() - start
    running = timers.phases(elapsed, (wall, time.time()))["rest"]
    seconds.update(compile=elapsed - running, warmup=running, draws=0.0)
    posterior = az.from_numpyro(mcmc)
    ess = az.ess(posterior, var_names=["mu", "tau"], method="bulk")
    fields = mcmc.get_extra_fields()
    return {
        "route": ROUTE,
        "chains": args.chains,
        "warmup": args.warmup,
        "draws": args.draws,
        "seconds": seconds,
        "ess_bulk": {name: float(ess[name]) for name in ("mu", "tau")},
        "leapfrog_steps_per_transition": float(np.mean(fields["num_steps"])),
        "divergences": int(np.sum(fields["diverging"])),
        "posterior_mean": {name: float(posterior.posterior[name].mean()) for name in ("mu", "tau")},
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the results here as JSON")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    result = run(args)
    text = json.dumps(result, indent=1)
    if args.json:
        args.json.write_text(text + "\n")
    sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
