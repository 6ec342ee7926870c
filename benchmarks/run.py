"""Run the benchmark suite: aejax vs hand-written JAX vs Aesara's C backend.

    python benchmarks/run.py [--rounds 7] [--scale 1.0] [--skip-c] [--only NAME] [--save FILE.json] [--cpu-sync-dispatch]
    python benchmarks/run.py --load FILE.json [--plot [FILE.png]] [--rst]

In every round aejax and hand-written JAX take turns of 5 ms, in a shuffled
order, about 0.3 s each, and Aesara's C backend runs apart, before or after
them; each system's time in a round is the median of its calls
(``block_until_ready`` for JAX), and ratios are taken per round, then their
median is reported, since this machine is noisy. Compile time is the time
to compile and make the first call.
A workload without a hand-written JAX version (NUTS without NumPyro) has no
ratios: "-" in the tables, left out of the chart.
``--save`` keeps the measured table as JSON; ``--load`` reads it back instead
of measuring, so the chart (``--plot``, needs matplotlib) and the README's
table (``--rst``) come from the same run.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aejax.adapters  # noqa: F401  # isort: skip  (first: under numpy 2 it makes Aesara 2.9.4 work)
import aesara
import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import figures  # noqa: E402
from progress import Progress  # noqa: E402
from workloads import Workload, suite  # noqa: E402

import aejax.linker  # noqa: E402, F401  (registers the modes "AEJAX" and "AEJAX_DEVICE")

SYSTEMS = ("aejax", "jax", "aesara C")
HEADER = (
    f"{'workload':26} {'aejax ms':>9} {'JAX ms':>9} {'C ms':>9} {'aejax/JAX':>9} {'target':>6} {'C/JAX':>8} "
    f"{'compile aejax/JAX/C s':>22}"
)
SAMPLER_HEADER = (
    f"{'sampler':26} {'us/transition aejax/JAX':>24} {'gradients/transition':>21} "
    f"{'us/gradient aejax/JAX':>22} {'per gradient':>12}"
)


def ready(value: Any) -> Any:
    """``value`` once computed: JAX arrays are waited for, numpy arrays (or a list of them) already are.

    Checking for numpy first keeps ``jax.block_until_ready``'s few microseconds
    out of the per-call workloads' timings, which are about 10 µs.
    """
    if isinstance(value, np.ndarray) or (type(value) is list and all(isinstance(v, np.ndarray) for v in value)):
        return value
    return jax.block_until_ready(value)


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    ready(fn())
    return time.perf_counter() - start


def interleaved_medians(
    calls: dict[str, Callable[[], Any]], budget: float = 0.3, turn: float = 0.005, max_calls: int = 2000
) -> dict[str, float]:
    """The median call time of each of ``calls``, the systems taking turns of ``turn`` seconds.

    In its turn a system is called at least once, then again while the turn
    lasts; the systems take turns in the given order until each had about
    ``budget`` seconds (or ``max_calls`` calls). Short turns put every system
    under the same load from the rest of the machine, whose speed here
    changes within a fraction of a second; a whole turn, rather than one call,
    keeps a call of microseconds from being timed right after another
    system's call of tens of milliseconds, whose cold caches it would pay for.
    ``max_calls`` is large so that calls of microseconds (P1, P2) get a stable
    median.
    """
    times: dict[str, list[float]] = {name: [] for name in calls}
    total, each = 0.0, 0
    while each == 0 or (total < budget * len(calls) and each < max_calls):
        for name, call in calls.items():
            if len(times[name]) < max_calls:
                turn_times = timed_turn(call, turn, max_calls - len(times[name]))
                times[name] += turn_times
                total += sum(turn_times)
        each = min(map(len, times.values()))
    return {name: statistics.median(t) for name, t in times.items()}


def timed_turn(call: Callable[[], Any], turn: float, most: int) -> list[float]:
    """The times of calls of ``call``: one, then more while their total is under ``turn`` seconds, at most ``most``."""
    times = [timed(call)]
    total = times[0]
    while total < turn and len(times) < most:
        times.append(timed(call))
        total += times[-1]
    return times


def systems(work: Workload, with_c: bool) -> dict[str, tuple[float, Callable[[], Any]]]:
    """Each system's compile time and a zero-argument call ("jax" only if the workload has a hand-written version).

    aejax compiles first: Aesara's own backends rewrite the inner graphs of
    Scans in place when they compile, and aejax recognises nested loops (NUTS)
    in the graphs Aesara builds, not in rewritten ones.
    """
    found = {}
    start = time.perf_counter()
    ours = work.aesara_function(work.aejax_mode)
    ready(ours(*work.args))
    found["aejax"] = (time.perf_counter() - start, lambda: ours(*work.args))
    if work.jax_fn is not None:
        start = time.perf_counter()
        ready(work.jax_fn(*work.jax_args))
        found["jax"] = (time.perf_counter() - start, lambda: work.jax_fn(*work.jax_args))
    if with_c:
        start = time.perf_counter()
        c_fn = work.aesara_function("FAST_RUN")
        c_fn(*work.args)
        found["aesara C"] = (time.perf_counter() - start, lambda: c_fn(*work.args))
    return found


def call_groups(names: list[str]) -> list[list[str]]:
    """``names`` split into the systems that take turns within a round: aejax with JAX, and the C backend apart.

    The C backend never takes turns with aejax: they share the
    workload's shared variables, and a random generator that passes between
    the two backends is converted each time, which neither pays when called
    over and over.
    """
    return [group for group in ([n for n in names if n != "aesara C"], [n for n in names if n == "aesara C"]) if group]


def measure(work: Workload, rounds: int, with_c: bool) -> dict[str, Any]:
    """Compile times, median call times, and ratios to hand-written JAX (none without it): each round's and their median."""
    found = systems(work, with_c)
    per_round: dict[str, list[float]] = {name: [] for name in found}
    for _ in range(rounds):
        groups = call_groups(list(found))
        for group in random.sample(groups, len(groups)):
            shuffled = random.sample(group, len(group))
            for name, median in interleaved_medians({name: found[name][1] for name in shuffled}).items():
                per_round[name].append(median)
    round_ratios = {
        name: [a / b for a, b in zip(per_round[name], per_round["jax"])]
        for name in found
        if name != "jax" and "jax" in found
    }
    result = {
        "compile": {name: c for name, (c, _) in found.items()},
        "call": {name: statistics.median(t) for name, t in per_round.items()},
        "ratio": {name: statistics.median(r) for name, r in round_ratios.items()},
        "round_ratios": round_ratios,
    }
    if work.gradients is not None:
        result["transitions"] = work.transitions
        result["gradients"] = work.gradients()
    return result


def per_step(result: dict[str, Any]) -> dict[str, dict[str, float]] | None:
    """A sampler's time per transition and per gradient evaluation (s), by system; ``None`` for other workloads."""
    counts = result.get("gradients")
    if not counts:
        return None
    transition = {name: result["call"][name] / result["transitions"] for name in counts}
    gradient = {name: transition[name] / counts[name] for name in counts}
    return {"transition": transition, "gradients": counts, "gradient": gradient}


def chosen(names: list[str], only: list[str] | None) -> list[str]:
    """The workload ``names`` that contain one of ``only`` (case-insensitive), or all of them."""
    if not only:
        return names
    picked = [name for name in names if any(part.lower() in name.lower() for part in only)]
    if not picked:
        raise SystemExit(f"no workload matches --only {' '.join(only)}; the workloads are: {', '.join(names)}")
    return picked


def tabulated(
    title: str,
    names: list[str],
    header: str,
    measure_one: Callable[[str], dict[str, Any]],
    row: Callable[[dict[str, Any]], str],
) -> list[dict[str, Any]]:
    """``measure_one`` of each name, in order, printing the table ``header`` and each ``row`` as soon as it is measured."""
    results = []
    print(header)
    print("-" * len(header))
    with Progress(title, len(names)) as progress:
        for name in names:
            progress.step(name)
            results.append(measure_one(name))
            progress.print(row(results[-1]))
    return results


def measure_all(scale: float, rounds: int, with_c: bool, only: list[str] | None = None) -> list[dict[str, Any]]:
    """Measure every workload (or those ``only`` names), printing each table row as soon as it is measured."""
    builders = suite(scale)

    def measure_one(name: str) -> dict[str, Any]:
        work = builders[name]()
        return {"name": work.name, "target": work.target, **measure(work, rounds, with_c)}

    results = tabulated("benchmarks", chosen(list(builders), only), HEADER, measure_one, table_row)
    print_sampler_table(results)
    return results


def print_sampler_table(results: list[dict[str, Any]]) -> None:
    """The samplers' table: time per transition and per gradient evaluation (none if no sampler was measured)."""
    rows = [sampler_row(r) for r in results if per_step(r) is not None]
    if rows:
        print("\n".join(["", SAMPLER_HEADER, "-" * len(SAMPLER_HEADER), *rows]))


def sampler_cells(result: dict[str, Any]) -> list[str]:
    """A sampler's µs per transition, gradients per transition and µs per gradient (aejax/JAX each), and the ratio per gradient."""
    steps = per_step(result)
    assert steps is not None

    def pair(values: dict[str, float], spec: str, scale: float = 1.0) -> str:
        return "/".join(cell(values, k, spec, scale).strip() for k in ("aejax", "jax"))

    grad = steps["gradient"]
    ratio = grad["aejax"] / grad["jax"] if "jax" in grad else None
    return [
        pair(steps["transition"], ".1f", 1e6),
        pair(steps["gradients"], ".1f"),
        pair(grad, ".2f", 1e6),
        "-" if ratio is None else f"{ratio:.2f}",
    ]


def sampler_row(result: dict[str, Any]) -> str:
    """One row of the samplers' plain-text table."""
    transition, gradients, gradient, ratio = sampler_cells(result)
    return f"{result['name']:26} {transition:>24} {gradients:>21} {gradient:>22} {ratio:>12}"


def sampler_rst_row(result: dict[str, Any]) -> str:
    """One row of the README's samplers csv-table."""
    return "   " + ", ".join([f'"{result["name"]}"', *(f'"{c}"' for c in sampler_cells(result))])


def cell(values: dict[str, float], key: str, spec: str, scale: float = 1.0) -> str:
    """``values[key] * scale`` formatted with ``spec``, or "-" as wide when it is missing."""
    if key not in values:
        return format("-", ">" + spec.split(".")[0])
    return format(values[key] * scale, spec)


def table_row(result: dict[str, Any]) -> str:
    """One row of the plain-text table that ``measure_all`` prints."""
    call, comp, ratio = result["call"], result["compile"], result["ratio"]
    compiles = "/".join(cell(comp, k, ".2f") for k in SYSTEMS)
    ok = ("o" if ratio["aejax"] <= result["target"] else "M") if "aejax" in ratio else " "
    return (
        f"{result['name']:26} {cell(call, 'aejax', '9.3f', 1e3)} {cell(call, 'jax', '9.3f', 1e3)} "
        f"{cell(call, 'aesara C', '9.2f', 1e3)} {cell(ratio, 'aejax', '9.2f')} {result['target']:5.1f}{ok} "
        f"{cell(ratio, 'aesara C', '8.1f')} {compiles:>22}"
    )


def milliseconds(seconds: float) -> str:
    """A time in ms with three significant digits, or one decimal from 100 ms up."""
    ms = seconds * 1e3
    return f"{ms:.1f}" if ms >= 100 else f"{ms:.3g}"


def rst_row(result: dict[str, Any]) -> str:
    """One row of the README's csv-table: times in ms, ratios, compile times in s."""
    call, comp, ratio = result["call"], result["compile"], result["ratio"]
    cells = [f'"{result["name"]}"', *(milliseconds(call[k]) if k in call else "-" for k in SYSTEMS)]
    cells += [cell(ratio, "aejax", ".2f"), f"{result['target']:.1f}", cell(ratio, "aesara C", ".1f")]
    cells.append('"' + " / ".join(cell(comp, k, ".2f") for k in SYSTEMS) + '"')
    return "   " + ", ".join(cells)


def plot(results: list[dict[str, Any]], path: str) -> Path | None:
    """The chart of the table: each workload's time over hand-written JAX's, aejax and Aesara C side by side.

    Workloads without a hand-written JAX version have no ratio and are left out.
    """
    results = [r for r in results if "aejax" in r["ratio"]]
    if not results:
        print("chart not drawn: no workload has a hand-written JAX version to compare with")
        return None
    names = [r["name"] for r in results]
    systems = {"aejax": "aejax", "aesara C": "Aesara C"}
    ratios = {
        label: [r["ratio"][key] for r in results]
        for key, label in systems.items()
        if all(key in r["ratio"] for r in results)
    }
    return figures.ratio_bars(path, "Time per call relative to hand-written JAX", names, ratios)


def installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution``, or ``None`` (NumPyro, the NUTS anchor, is optional)."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def run_info(args: argparse.Namespace) -> dict[str, Any]:
    """What the saved table was measured with (``XLA_FLAGS`` too: it changes how XLA compiles loops on a CPU)."""
    return {
        "rounds": args.rounds,
        "scale": args.scale,
        "cpu_sync_dispatch": args.cpu_sync_dispatch,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "versions": {
            "jax": jax.__version__,
            "aesara": aesara.__version__,
            "python": platform.python_version(),
            "numpyro": installed_version("numpyro"),
        },
        "machine": platform.machine(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }


def workload_options(description: str) -> argparse.ArgumentParser:
    """A parser with the options that choose and save the workloads: ``--scale``, ``--skip-c``, ``--only``, ``--save``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--skip-c", action="store_true", help="leave out Aesara's C backend")
    parser.add_argument(
        "--only",
        metavar="NAME",
        action="append",
        help="measure only the workloads whose name contains NAME (case-insensitive; repeatable)",
    )
    parser.add_argument("--save", metavar="JSON", help="write the measured table to this file")
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = workload_options(__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--load", metavar="JSON", help="read the table written by --save instead of measuring")
    parser.add_argument(
        "--plot",
        metavar="PNG",
        nargs="?",
        const="benchmarks.png",
        help="draw the chart of ratios to hand-written JAX (default benchmarks.png)",
    )
    parser.add_argument("--rst", action="store_true", help="print the rows of the README's csv-table")
    parser.add_argument(
        "--cpu-sync-dispatch",
        action="store_true",
        help="run JAX's CPU computations inline on the calling thread (jax_cpu_enable_async_dispatch=False)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.cpu_sync_dispatch:  # read when JAX makes its CPU client, so before any computation
        jax.config.update("jax_cpu_enable_async_dispatch", False)
    if args.load:
        results = json.loads(Path(args.load).read_text())["workloads"]
        print("\n".join([HEADER, "-" * len(HEADER), *map(table_row, results)]))
        print_sampler_table(results)
    else:
        results = measure_all(args.scale, args.rounds, not args.skip_c, args.only)
    if args.save:
        Path(args.save).write_text(json.dumps({"run": run_info(args), "workloads": results}, indent=1) + "\n")
        print(f"table: {Path(args.save).resolve()}")
    if args.rst:
        print("\n".join(map(rst_row, results)))
        print("\n".join(sampler_rst_row(r) for r in results if per_step(r) is not None))
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
