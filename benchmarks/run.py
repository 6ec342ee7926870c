"""Run the benchmark suite: aejax vs hand-written JAX vs Aesara's C backend.

    python benchmarks/run.py [--rounds 7] [--scale 1.0] [--skip-c]

Every round runs the three systems in a shuffled order; each system's time in
a round is the median of repeated calls (``block_until_ready`` for JAX), and
ratios are taken per round, then their median is reported, since this
machine is noisy. Compile time is the time to compile and make the first call.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import jax

jax.config.update("jax_enable_x64", True)

sys.path.insert(0, str(Path(__file__).resolve().parent))

import aejax.linker  # noqa: E402
from workloads import Workload, all_workloads  # noqa: E402


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    jax.block_until_ready(fn())
    return time.perf_counter() - start


def median_call(fn: Callable[[], Any], budget: float = 0.3, max_calls: int = 50) -> float:
    times = [timed(fn)]
    while sum(times) < budget and len(times) < max_calls:
        times.append(timed(fn))
    return statistics.median(times)


def systems(work: Workload, with_c: bool) -> dict[str, tuple[float, Callable[[], Any]]]:
    """Each system's compile time and a zero-argument call."""
    found = {}
    start = time.perf_counter()
    ours = work.aesara_function(aejax.linker.mode)
    jax.block_until_ready(ours(*work.args))
    found["aejax"] = (time.perf_counter() - start, lambda: ours(*work.args))
    start = time.perf_counter()
    jax.block_until_ready(work.jax_fn(*work.jax_args))
    found["jax"] = (time.perf_counter() - start, lambda: work.jax_fn(*work.jax_args))
    if with_c:
        start = time.perf_counter()
        c_fn = work.aesara_function("FAST_RUN")
        c_fn(*work.args)
        found["aesara C"] = (time.perf_counter() - start, lambda: c_fn(*work.args))
    return found


def measure(work: Workload, rounds: int, with_c: bool) -> dict[str, Any]:
    found = systems(work, with_c)
    per_round: dict[str, list[float]] = {name: [] for name in found}
    for _ in range(rounds):
        order = list(found)
        random.shuffle(order)
        for name in order:
            per_round[name].append(median_call(found[name][1]))
    ratios = {
        name: statistics.median(a / b for a, b in zip(per_round[name], per_round["jax"]))
        for name in found
        if name != "jax"
    }
    return {
        "compile": {name: c for name, (c, _) in found.items()},
        "call": {name: statistics.median(t) for name, t in per_round.items()},
        "ratio": ratios,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--skip-c", action="store_true", help="leave out Aesara's C backend")
    args = parser.parse_args()
    header = f"{'workload':26} {'aejax ms':>9} {'JAX ms':>9} {'C ms':>9} {'aejax/JAX':>9} {'target':>6} {'C/JAX':>8} {'compile aejax/JAX/C s':>22}"
    print(header)
    print("-" * len(header))
    for work in all_workloads(args.scale):
        r = measure(work, args.rounds, not args.skip_c)
        call, comp = r["call"], r["compile"]
        c_ms = f"{call['aesara C'] * 1e3:9.2f}" if "aesara C" in call else f"{'-':>9}"
        c_ratio = f"{r['ratio']['aesara C']:8.1f}" if "aesara C" in r["ratio"] else f"{'-':>8}"
        compiles = "/".join(f"{comp[k]:.2f}" for k in ("aejax", "jax", "aesara C") if k in comp)
        ok = "ok" if r["ratio"]["aejax"] <= work.target else "MISS"
        print(
            f"{work.name:26} {call['aejax'] * 1e3:9.3f} {call['jax'] * 1e3:9.3f} {c_ms} "
            f"{r['ratio']['aejax']:9.2f} {work.target:5.1f}{ok[0]} {c_ratio} {compiles:>22}"
        )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
