"""The posteriordb suite: each posterior of `posteriordb_models.MODELS` sampled by aejax (`aejax.sampling.sample`, with each
sampler) and by NumPyro's own model, every parameter checked against posteriordb's reference posterior.

A parameter passes when its posterior mean is within 4 Monte Carlo standard errors of the reference mean
(``|z| < 4``) and its standard deviation within [0.8, 1.25] of the reference's. Each run is a new Python
process with an empty Aesara compile directory and no JAX cache, so its ``first_result_s`` (from the process's
start to the InferenceData, imports and compilation included) is what a user's first run takes; ``ess_per_s`` is
the smallest bulk ESS over the parameters divided by those seconds, the same work for every implementation.

Run: python benchmarks/posteriordb/run.py [--only NAME ...] [--implementations ...] [--chains 4] [--warmup 1000]
[--draws 1000] [--out results.json]
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

HERE = Path(__file__).resolve().parent
IMPLEMENTATIONS = ("aejax-numpyro", "aejax-blackjax", "aejax-aehmc", "numpyro")
"""aejax with NumPyro's NUTS, with BlackJAX's, with aehmc's, and NumPyro's own model with its NUTS."""
Z_LIMIT = 4.0
SD_RATIO = (0.8, 1.25)


def posteriors() -> dict[str, Any]:
    """posteriordb's data and reference summary of each posterior (`extract.py` wrote them)."""
    return json.loads((HERE / "posteriors.json").read_text())


def stan_names(name: str, values: Any) -> dict[str, Any]:
    """A variable's draws ``(chain, draw, *shape)`` by posteriordb's names of its entries (``beta[1]``, ...)."""
    import numpy as np

    shape = values.shape[2:]
    if not shape:
        return {name: values}
    return {
        f"{name}[{','.join(str(i + 1) for i in index)}]": values[(slice(None), slice(None), *index)]
        for index in np.ndindex(*shape)
    }


def checked(idata: Any, reference: dict[str, dict[str, float]]) -> dict[str, Any]:
    """Each reference parameter's z of the mean, sd ratio, bulk ESS and whether it passes."""
    import arviz as az
    import numpy as np

    draws = {}
    for name, values in idata.posterior.items():
        draws.update(stan_names(name, np.asarray(values)))
    rows = {}
    for name, ref in reference.items():
        values = draws[name]
        dataset = az.convert_to_dataset(values)
        mcse = float(az.mcse(dataset)["x"])
        ess = float(az.ess(dataset, method="bulk")["x"])
        z = (values.mean() - ref["mean"]) / mcse
        ratio = values.std(ddof=1) / ref["sd"]
        passed = abs(z) < Z_LIMIT and SD_RATIO[0] <= ratio <= SD_RATIO[1]
        rows[name] = {"z": float(z), "sd_ratio": float(ratio), "ess_bulk": ess, "passed": bool(passed)}
    return rows


def sample_aejax(name: str, data: dict, sampler: str, settings: dict[str, int]) -> Any:
    from posteriordb_models import MODELS

    from aejax.sampling import sample

    model = MODELS[name](data)
    return sample(
        *model.free,
        observed=model.observed,
        transforms=model.transforms,
        deterministics=model.deterministics,
        sampler=sampler,
        key=settings["seed"],
        chains=settings["chains"],
        warmup=settings["warmup"],
        draws=settings["draws"],
        progress=False,
    )


def sample_numpyro(name: str, data: dict, settings: dict[str, int]) -> Any:
    import arviz as az
    import jax
    import numpyro
    from numpyro.infer import MCMC, NUTS
    from posteriordb_models import numpyro_model

    numpyro.enable_x64()
    mcmc = MCMC(
        NUTS(numpyro_model(name, data)),
        num_warmup=settings["warmup"],
        num_samples=settings["draws"],
        num_chains=settings["chains"],
        chain_method="vectorized",
        progress_bar=False,
    )
    mcmc.run(jax.random.key(settings["seed"]), extra_fields=("num_steps",))
    return az.from_numpyro(mcmc)


def child(name: str, implementation: str, settings: dict[str, int]) -> dict[str, Any]:
    """One run, in this (new) process: its timings and checks."""
    sys.path.insert(0, str(HERE))
    if implementation.startswith("aejax"):
        import aejax.adapters  # noqa: F401  (first: under numpy 2 it makes Aesara 2.9.4 importable)
    entry = posteriors()[name]
    start = time.perf_counter()
    if implementation == "numpyro":
        idata = sample_numpyro(name, entry["data"], settings)
    else:
        idata = sample_aejax(name, entry["data"], implementation.removeprefix("aejax-"), settings)
    done = time.perf_counter()
    parameters = checked(idata, entry["reference"])
    smallest_ess = min(row["ess_bulk"] for row in parameters.values())
    steps = idata.sample_stats["n_steps"].values.mean() if "n_steps" in idata.sample_stats else None
    return {
        "posterior": name,
        "implementation": implementation,
        **settings,
        "first_result_s": done - STARTED,
        "sample_s": done - start,
        "sampling_time_s": idata.sample_stats.attrs.get("sampling_time"),
        "ess_bulk_min": smallest_ess,
        "ess_per_s": smallest_ess / (done - STARTED),
        "leapfrog_steps_per_draw": None if steps is None else float(steps),
        "divergences": int(idata.sample_stats["diverging"].values.sum()),
        "passed": all(row["passed"] for row in parameters.values()),
        "parameters": parameters,
    }


def run_child(name: str, implementation: str, settings: dict[str, int]) -> dict[str, Any]:
    """`child` in a new process with an empty Aesara compile directory."""
    with tempfile.TemporaryDirectory() as compiledir:
        env = {**os.environ, "AESARA_FLAGS": f"base_compiledir={compiledir}", "JAX_ENABLE_COMPILATION_CACHE": "false"}
        command = [sys.executable, __file__, "--child", name, implementation, json.dumps(settings)]
        done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        return {"posterior": name, "implementation": implementation, "error": done.stderr[-2000:], "passed": False}
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(results: list[dict[str, Any]]) -> str:
    """A markdown table of the runs: pass, first result, ESS per second of it, steps per draw, divergences."""
    lines = [
        "| posterior | implementation | passed | first result (s) | min bulk ESS | ESS/s | leapfrog steps/draw | "
        "divergences |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['posterior']} | {r['implementation']} | error | | | | | |")
            continue
        steps = "" if r["leapfrog_steps_per_draw"] is None else f"{r['leapfrog_steps_per_draw']:.1f}"
        lines.append(
            f"| {r['posterior']} | {r['implementation']} | {'yes' if r['passed'] else 'NO'} | "
            f"{r['first_result_s']:.1f} | {r['ess_bulk_min']:.0f} | {r['ess_per_s']:.0f} | "
            f"{steps} | {r['divergences']} |"
        )
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--implementations", nargs="*", default=list(IMPLEMENTATIONS))
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    settings = {"chains": args.chains, "warmup": args.warmup, "draws": args.draws, "seed": args.seed}
    results = []
    for name in args.only or list(posteriors()):
        for implementation in args.implementations:
            results.append(run_child(name, implementation, settings))
            last = results[-1]
            status = "error" if "error" in last else ("passed" if last["passed"] else "FAILED")
            print(f"{name} {implementation}: {status}", file=sys.stderr, flush=True)
            if args.out:
                args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))


if __name__ == "__main__":
    main()
