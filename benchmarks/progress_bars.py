"""What a progress bar inside the program costs: loops with ``mode.with_progress`` on and off.

    python benchmarks/progress_bars.py [--rounds 7] [--only NAME]

The main case is a loop long enough to watch: a 10,000-step Scan of an SEIR
epidemic on 500 patches coupled by a mobility matrix (`seir_metapopulation`,
about half a second a call on a CPU). The benchmark suite's 10,000-step Scans
of a scalar (a fraction of a millisecond) show the fixed cost a bar adds to a
call, and 500 NUTS transitions in one Scan a loop in between.

Each workload is compiled five times with aejax's mode: twice without bars
(the second is a control: its ratio to the first is the noise of the
machine), with the default bar (20 moves a loop), with a bar moving once,
at the end, and with the default bar on every call (``min_seconds=0``). With
the default ``min_seconds`` a function whose calls take under 0.1 s
runs them without bars after its second call (`aejax.linker.program.watched`):
the short loops' "20 moves" column is that steady state, the last column
what a bar on each of their calls costs.
The bars are tqdm's, written to ``os.devnull``, so tqdm's own work is timed
too. The four take turns within each round (`run.interleaved_medians`; a
call of the long loop is a turn of its own), each leading a round in turn;
the ratios to the call without bars are taken per round. Printed: each variant's median and fastest time
over the rounds, the median of the per-round ratios and the ratio of the
fastest times.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from functools import partial
from pathlib import Path
from typing import Any

import aejax.adapters  # noqa: F401  # isort: skip  (first: under numpy 2 it makes Aesara 2.9.4 work)
import aesara
import aesara.tensor as at
import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import interleaved_medians, ready  # noqa: E402
from workloads import Workload, nuts_gaussian, random_walk, scalar_recurrence  # noqa: E402

import aejax.linker  # noqa: E402


def seir_metapopulation(steps: int, patches: int, seed: int = 0) -> Workload:
    """An SEIR epidemic on ``patches`` places, ``steps`` Euler steps in one Scan: the infected total at each step.

    Infection in a place comes from the infected of every place through a
    row-stochastic mobility matrix (a matrix-vector product a step); the
    recovered are what the other three leave, so they are not carried.
    """
    rng = np.random.default_rng(seed)
    mobility = at.constant(rng.dirichlet(np.full(patches, 0.5), size=patches))
    dt, contact, incubation, recovery = 0.05, 0.4, 0.2, 0.1

    def step(s: Any, e: Any, i: Any) -> tuple[Any, ...]:
        infections = dt * contact * s * at.dot(mobility, i)
        onsets = dt * incubation * e
        return s - infections, e + infections - onsets, i + onsets - dt * recovery * i, i.sum()

    s0, e0, i0 = at.dvectors("s0", "e0", "i0")
    (_, _, _, infected), _ = aesara.scan(step, outputs_info=[s0, e0, i0, None], n_steps=steps, name="SEIR")
    seeded = rng.uniform(0.0, 0.01, patches)
    args = (1.0 - seeded, np.zeros(patches), seeded)
    return Workload(f"SEIR, {patches} patches", 1.0, [s0, e0, i0], infected, None, args, None, ())


WORKLOADS = {
    "SEIR, 500 patches": partial(seir_metapopulation, 10_000, 500),
    "NUTS 2-D Gaussian": partial(nuts_gaussian, 500),
    "scalar recurrence": partial(scalar_recurrence, 10_000),
    "Gaussian random walk": partial(random_walk, 10_000),
}
"""A 10,000-step Scan of about half a second, 500 NUTS transitions in one Scan, and two 10,000-step Scans of a
fraction of a millisecond."""

SHOWS = {
    "SEIR, 500 patches": "a loop to watch",
    "NUTS 2-D Gaussian": "a loop between",
    "scalar recurrence": "fixed cost a call",
    "Gaussian random walk": "fixed cost a call",
}
"""What each workload's row shows."""


def variants(work: Workload, steps: int) -> dict[str, Any]:
    """The workload compiled without bars (twice), with the default bar, with a bar moving once, and with the default
    bar on every call; each called three times (the third call of a short loop compiles its program without bars).

    The second function without bars is the control: its ratio to the first
    is this machine's noise.
    """
    from tqdm import tqdm

    bar = partial(tqdm, file=open(os.devnull, "w"))  # open for the whole run
    modes = {
        "off": aejax.linker.mode,
        "off, again": aejax.linker.mode,
        "20 moves": aejax.linker.mode.with_progress(bar=bar),
        "1 move": aejax.linker.mode.with_progress(every=steps, bar=bar),
        "every call": aejax.linker.mode.with_progress(bar=bar, min_seconds=0),
    }
    calls = {}
    for name, mode in modes.items():
        f = work.aesara_function(mode)
        for _ in range(3):
            ready(f(*work.args))
        calls[name] = partial(f, *work.args)
    return calls


def measure(name: str, rounds: int) -> dict[str, dict[str, float]]:
    """Each variant of workload ``name``: median and fastest call (ms) over the rounds, and both ratios to "off"."""
    work = WORKLOADS[name]()
    calls = variants(work, work.transitions or 10_000)
    times: dict[str, list[float]] = {variant: [] for variant in calls}
    order = list(calls)
    for turn in range(rounds):
        first = order[turn % len(order) :] + order[: turn % len(order)]  # each variant leads a round in turn
        for variant, median in interleaved_medians({v: calls[v] for v in first}).items():
            times[variant].append(median)
    off = times["off"]
    return {
        variant: {
            "ms": 1e3 * statistics.median(t),
            "min ms": 1e3 * min(t),
            "ratio": statistics.median(a / b for a, b in zip(t, off)),
            "min ratio": min(t) / min(off),
        }
        for variant, t in times.items()
    }


def row(name: str, result: dict[str, dict[str, float]]) -> str:
    """One line of the table: the workload, what it shows, then each variant's times and ratios."""
    cells = [name, SHOWS[name]]
    for variant, r in result.items():
        cells.append(f"{r['ms']:.3f} / {r['min ms']:.3f}")
        if variant != "off":
            cells.append(f"{r['ratio']:.3f} / {r['min ratio']:.3f}")
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--only", help="the workloads whose name contains this text")
    args = parser.parse_args(argv)
    print(
        "| workload | shows | off ms, median / min | off again | ratio, median / of mins | 20 moves ms | ratio "
        "| 1 move ms | ratio | every call ms | ratio |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in WORKLOADS:
        if args.only and args.only.lower() not in name.lower():
            continue
        print(row(name, measure(name, args.rounds)), flush=True)


if __name__ == "__main__":
    main()
