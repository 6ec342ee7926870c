"""Run the benchmark suite: aejax vs hand-written JAX vs Aesara's C backend.

    python benchmarks/run.py [--rounds 7] [--scale 1.0] [--skip-c] [--save FILE.json]
    python benchmarks/run.py --load FILE.json [--plot [FILE.png]] [--rst]

Every round runs the three systems in a shuffled order; each system's time in
a round is the median of repeated calls (``block_until_ready`` for JAX), and
ratios are taken per round, then their median is reported, since this
machine is noisy. Compile time is the time to compile and make the first call.
``--save`` keeps the measured table as JSON; ``--load`` reads it back instead
of measuring, so the chart (``--plot``, needs matplotlib) and the README's
table (``--rst``) come from the same run.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import aesara
import jax

jax.config.update("jax_enable_x64", True)

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import aejax.linker  # noqa: E402
import figures  # noqa: E402
from progress import Progress  # noqa: E402
from workloads import Workload, all_workloads  # noqa: E402

SYSTEMS = ("aejax", "jax", "aesara C")
HEADER = (
    f"{'workload':26} {'aejax ms':>9} {'JAX ms':>9} {'C ms':>9} {'aejax/JAX':>9} {'target':>6} {'C/JAX':>8} "
    f"{'compile aejax/JAX/C s':>22}"
)


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


def measure_all(scale: float, rounds: int, with_c: bool) -> list[dict[str, Any]]:
    """Measure every workload, printing each table row as soon as it is measured."""
    suite = all_workloads(scale)
    results = []
    print(HEADER)
    print("-" * len(HEADER))
    with Progress("benchmarks", len(suite)) as progress:
        for work in suite:
            progress.step(work.name)
            results.append({"name": work.name, "target": work.target, **measure(work, rounds, with_c)})
            progress.print(table_row(results[-1]))
    return results


def table_row(result: dict[str, Any]) -> str:
    """One row of the plain-text table that ``measure_all`` prints."""
    call, comp, ratio = result["call"], result["compile"], result["ratio"]
    c_ms = f"{call['aesara C'] * 1e3:9.2f}" if "aesara C" in call else f"{'-':>9}"
    c_ratio = f"{ratio['aesara C']:8.1f}" if "aesara C" in ratio else f"{'-':>8}"
    compiles = "/".join(f"{comp[k]:.2f}" for k in SYSTEMS if k in comp)
    ok = "o" if ratio["aejax"] <= result["target"] else "M"
    return (
        f"{result['name']:26} {call['aejax'] * 1e3:9.3f} {call['jax'] * 1e3:9.3f} {c_ms} "
        f"{ratio['aejax']:9.2f} {result['target']:5.1f}{ok} {c_ratio} {compiles:>22}"
    )


def milliseconds(seconds: float) -> str:
    """A time in ms with three significant digits, or one decimal from 100 ms up."""
    ms = seconds * 1e3
    return f"{ms:.1f}" if ms >= 100 else f"{ms:.3g}"


def rst_row(result: dict[str, Any]) -> str:
    """One row of the README's csv-table: times in ms, ratios, compile times in s."""
    call, comp, ratio = result["call"], result["compile"], result["ratio"]
    cells = [f'"{result["name"]}"', *(milliseconds(call[k]) if k in call else "-" for k in SYSTEMS)]
    c_ratio = f"{ratio['aesara C']:.1f}" if "aesara C" in ratio else "-"
    cells += [f"{ratio['aejax']:.2f}", f"{result['target']:.1f}", c_ratio]
    cells.append('"' + " / ".join(f"{comp[k]:.2f}" for k in SYSTEMS if k in comp) + '"')
    return "   " + ", ".join(cells)


def plot(results: list[dict[str, Any]], path: str) -> Path | None:
    """The chart of the table: each workload's time over hand-written JAX's, aejax and Aesara C side by side."""
    names = [r["name"] for r in results]
    systems = {"aejax": "aejax", "aesara C": "Aesara C"}
    ratios = {
        label: [r["ratio"][key] for r in results]
        for key, label in systems.items()
        if all(key in r["ratio"] for r in results)
    }
    return figures.ratio_bars(path, "Time per call relative to hand-written JAX", names, ratios)


def run_info(args: argparse.Namespace) -> dict[str, Any]:
    """What the saved table was measured with."""
    return {
        "rounds": args.rounds,
        "scale": args.scale,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "versions": {"jax": jax.__version__, "aesara": aesara.__version__, "python": platform.python_version()},
        "machine": platform.machine(),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--skip-c", action="store_true", help="leave out Aesara's C backend")
    parser.add_argument("--save", metavar="JSON", help="write the measured table to this file")
    parser.add_argument("--load", metavar="JSON", help="read the table written by --save instead of measuring")
    parser.add_argument("--plot", metavar="PNG", nargs="?", const="benchmarks.png",
                        help="draw the chart of ratios to hand-written JAX (default benchmarks.png)")
    parser.add_argument("--rst", action="store_true", help="print the rows of the README's csv-table")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.load:
        results = json.loads(Path(args.load).read_text())["workloads"]
        print("\n".join([HEADER, "-" * len(HEADER), *map(table_row, results)]))
    else:
        results = measure_all(args.scale, args.rounds, not args.skip_c)
    if args.save:
        Path(args.save).write_text(json.dumps({"run": run_info(args), "workloads": results}, indent=1) + "\n")
        print(f"table: {Path(args.save).resolve()}")
    if args.rst:
        print("\n".join(map(rst_row, results)))
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
