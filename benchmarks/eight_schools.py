"""Eight schools, same work, side by side: time to first result, leapfrog steps and ESS per second (issue #50).

    python benchmarks/eight_schools.py [--rounds 3] [--chains 4 64] [--warmup 1000] [--draws 1000]
        [--routes aehmc numpyro blackjax numpyro_model] [--variants cold warm] [--save FILE.json] [--plot [FILE.png]]
    python benchmarks/eight_schools.py --load FILE.json [--plot [FILE.png]]

Each run is a new process, as a user's: ``examples/eight_schools.py --route
ROUTE`` (aehmc's NUTS on aejax; the ``jaxify``'d log-density in NumPyro's
NUTS; in BlackJAX's, when ``blackjax`` imports) or NumPyro's own model
(``eight_schools_numpyro.py``), each warming up then drawing every chain.
The routes take turns within a round (a-b-c, a-b-c, ...), and each ratio
is the median of the rounds' ratios, since this machine is noisy.
``cold`` runs get a new, empty Aesara compile directory each (a new
user's first run: aejax's program store and JAX's persistent cache live
there); ``warm`` runs share one per route and chain count, filled by a run
that is not counted.

Time to first result is the process's wall time: imports, compile, warmup,
draws and the conversion to ArviZ. Sampling is warmup and draws. ESS is the
smaller bulk ESS of ``mu`` and ``tau``; per draw it is over every chain's
draws, per leapfrog step over their leapfrog steps, each then over NumPyro's
own model's ("what a draw is worth").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent / "examples" / "eight_schools.py"
NUMPYRO_MODEL = HERE / "eight_schools_numpyro.py"
ANCHOR = "numpyro_model"
"""NumPyro's own model: the route the others are compared with."""
ROUTES = ("aehmc", "numpyro", "blackjax", ANCHOR)
ROUTE_NAMES = {
    "aehmc": "aehmc NUTS on aejax",
    "numpyro": "jaxify + NumPyro NUTS",
    "blackjax": "jaxify + BlackJAX NUTS",
    ANCHOR: "NumPyro's own model",
}
VARIANTS = ("cold", "warm")
HEADER = (
    f"{'variant':7} {'chains':>6} {'route':24} {'first s':>8} {'/NumPyro':>8} {'imports':>7} {'compile':>7} "
    f"{'warmup':>7} {'draws':>7} {'leapfrog':>8} {'ESS':>6} {'ESS/s':>7} {'ESS/s1st':>8} {'div':>4} "
    f"{'ESS/draw':>8} {'/NumPyro':>8} {'ESS/step':>8} {'/NumPyro':>8}"
)


def command(route: str, chains: int, args: argparse.Namespace, json_path: Path) -> list[str]:
    """The command line of one run of ``route``."""
    script = [str(NUMPYRO_MODEL)] if route == ANCHOR else [str(EXAMPLE), "--route", route]
    sizes = ["--chains", str(chains), "--warmup", str(args.warmup), "--draws", str(args.draws)]
    return [sys.executable, *script, *sizes, "--seed", str(args.seed), "--json", str(json_path)]


def environment(compiledir: str) -> dict[str, str]:
    """This process's environment with ``compiledir`` as Aesara's ``base_compiledir`` and no JAX cache of its own."""
    flags = ",".join(filter(None, [os.environ.get("AESARA_FLAGS"), f"base_compiledir={compiledir}"]))
    env = {**os.environ, "AESARA_FLAGS": flags}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    return env


def run_once(route: str, chains: int, args: argparse.Namespace, compiledir: str) -> dict[str, Any]:
    """One run of ``route`` in a new process: the JSON it writes, with its wall time and the load around it.

    A run that fails is kept as its route, chain count, exit status and the
    end of its stderr (``failed``): the other runs still make the table.
    """
    with tempfile.TemporaryDirectory(prefix="eight-schools-") as folder:
        json_path = Path(folder) / "result.json"
        load = os.getloadavg()[0]
        start = time.perf_counter()
        done = subprocess.run(
            command(route, chains, args, json_path), env=environment(compiledir), capture_output=True, text=True
        )
        wall = time.perf_counter() - start
        if done.returncode != 0:
            return {"route": route, "chains": chains, "failed": done.returncode, "stderr": done.stderr[-4000:]}
        result = json.loads(json_path.read_text())
    return {**result, "first_result_s": wall, "load_before": load, "load_after": os.getloadavg()[0]}


def importable(module: str) -> bool:
    """Whether ``module`` imports in a new process of this Python (BlackJAX is optional, and may lack its own needs)."""
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


def chosen_routes(routes: Sequence[str]) -> list[str]:
    """``routes`` less those that cannot run here: the example's without it, BlackJAX's where it does not import."""
    missing = {"blackjax"} if "blackjax" in routes and not importable("blackjax") else set()
    if not EXAMPLE.exists():
        missing |= set(routes) - {ANCHOR}
    for route in sorted(missing):
        print(f"route {route} left out: " + ("blackjax does not import" if route == "blackjax" else f"no {EXAMPLE}"))
    return [route for route in routes if route not in missing]


@contextmanager
def compile_directories(variant: str, routes: Sequence[str]) -> Iterator[dict[str, str | None]]:
    """Each route's compile directory for a ``variant``: ``None`` (a new one per run) when cold, one kept when warm."""
    with ExitStack() as stack:
        if variant == "cold":
            yield dict.fromkeys(routes)
        else:
            yield {route: stack.enter_context(tempfile.TemporaryDirectory(prefix="aesara-warm-")) for route in routes}


def measure_chains(variant: str, chains: int, routes: Sequence[str], args: argparse.Namespace) -> list[dict[str, Any]]:
    """``args.rounds`` rounds of ``routes`` taking turns at ``chains`` chains; every run, with its round."""
    runs = []
    with compile_directories(variant, routes) as directories:
        for route, directory in directories.items():
            if directory is not None:
                print(f"  {variant} x{chains} {route}: filling the compile directory (not counted)", flush=True)
                run_once(route, chains, args, directory)
        for round_number in range(args.rounds):
            for route in routes:
                with ExitStack() as stack:
                    directory = directories[route] or stack.enter_context(
                        tempfile.TemporaryDirectory(prefix="aesara-cold-")
                    )
                    run = run_once(route, chains, args, directory)
                runs.append({"variant": variant, "round": round_number, **run})
                print(f"  {variant} x{chains} #{round_number} {route}: {run_line(run)}", flush=True)
    return runs


def number(value: float | None, spec: str) -> str:
    """``value`` formatted with ``spec``, or "-" as wide where it is unknown."""
    return format("-", ">" + spec.split(".")[0]) if value is None else format(value, spec)


def run_line(run: dict[str, Any]) -> str:
    """One run in a line: its wall time and stages, leapfrog steps, ESS and divergences (or how it failed)."""
    if "failed" in run:
        return f"FAILED (exit status {run['failed']}): {run['stderr'].strip().splitlines()[-1:]}"
    stages = " ".join(f"{name} {value:.1f}" for name, value in run["seconds"].items())
    return (
        f"first result {run['first_result_s']:.1f} s ({stages}), "
        f"leapfrog {number(run['leapfrog_steps_per_transition'], '.1f')}, "
        f"ESS {min(run['ess_bulk'].values()):.0f}, divergences {run['divergences']}, load {run['load_before']:.1f}"
    )


def derived(run: dict[str, Any]) -> dict[str, float | None]:
    """A run's figures of merit: ESS per second of sampling and of first result, per draw and per leapfrog step
    (``None`` where the route does not count its leapfrog steps: aehmc reports tree depths)."""
    ess = min(run["ess_bulk"].values())
    draws = run["chains"] * run["draws"]
    sampling = run["seconds"]["warmup"] + run["seconds"]["draws"]
    steps = run["leapfrog_steps_per_transition"]
    return {
        "ess": ess,
        "ess_per_s": ess / sampling,
        "ess_per_first_s": ess / run["first_result_s"],
        "ess_per_draw": ess / draws,
        "ess_per_step": None if steps is None else ess / (draws * steps),
    }


def median_known(values: Iterable[float | None]) -> float | None:
    """The median of the ``values`` that are known, ``None`` if none is."""
    known = [value for value in values if value is not None]
    return statistics.median(known) if known else None


def summarize(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per variant, chain count and route: medians of its runs, and medians of per-round ratios to NumPyro's
    (failed runs left out)."""
    rows = []
    runs = [r for r in runs if "failed" not in r]
    keys = list(dict.fromkeys((r["variant"], r["chains"], r["route"]) for r in runs))
    by_round = {(r["variant"], r["chains"], r["route"], r["round"]): r for r in runs}
    for variant, chains, route in keys:
        mine = [r for r in runs if (r["variant"], r["chains"], r["route"]) == (variant, chains, route)]
        pairs = [(r, by_round.get((variant, chains, ANCHOR, r["round"]))) for r in mine]
        pairs = [(r, anchor) for r, anchor in pairs if anchor is not None]
        row: dict[str, Any] = {"variant": variant, "chains": chains, "route": route, "runs": len(mine)}
        row["first_result_s"] = statistics.median(r["first_result_s"] for r in mine)
        row["seconds"] = {stage: statistics.median(r["seconds"][stage] for r in mine) for stage in mine[0]["seconds"]}
        row["leapfrog_steps_per_transition"] = median_known(r["leapfrog_steps_per_transition"] for r in mine)
        row["divergences"] = statistics.median(r["divergences"] for r in mine)
        row.update({name: median_known(derived(r)[name] for r in mine) for name in derived(mine[0])})
        row["vs_numpyro"] = ratios(pairs)
        rows.append(row)
    return rows


def ratios(pairs: Sequence[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, float]:
    """Medians over rounds of a route's figures over NumPyro's own model's in the same round (none without it, or
    where the route does not know the figure)."""
    found = {}
    if pairs:
        found["first_result_s"] = statistics.median(r["first_result_s"] / a["first_result_s"] for r, a in pairs)
    for name in ("ess_per_s", "ess_per_first_s", "ess_per_draw", "ess_per_step"):
        known = [(derived(r)[name], derived(a)[name]) for r, a in pairs]
        if known and all(mine is not None for mine, _ in known):
            found[name] = statistics.median(mine / theirs for mine, theirs in known)
    return found


def table_row(row: dict[str, Any]) -> str:
    """One row of the table printed to stdout."""
    seconds, vs = row["seconds"], row["vs_numpyro"]

    def ratio(name: str) -> str:
        return f"{vs[name]:8.2f}" if name in vs else f"{'-':>8}"

    return (
        f"{row['variant']:7} {row['chains']:6d} {ROUTE_NAMES[row['route']]:24} {row['first_result_s']:8.1f} "
        f"{ratio('first_result_s')} {seconds['imports']:7.1f} {seconds['compile']:7.1f} {seconds['warmup']:7.1f} "
        f"{seconds['draws']:7.1f} {number(row['leapfrog_steps_per_transition'], '8.1f')} {row['ess']:6.0f} "
        f"{row['ess_per_s']:7.0f} {row['ess_per_first_s']:8.1f} {row['divergences']:4.0f} "
        f"{row['ess_per_draw']:8.3f} {ratio('ess_per_draw')} {number(row['ess_per_step'], '8.4f')} {ratio('ess_per_step')}"
    )


def table(rows: Sequence[dict[str, Any]]) -> str:
    """The plain-text table of ``rows``, with a legend of its columns."""
    legend = (
        "first s: time to first result (process wall time); /NumPyro: over NumPyro's own model's, median of "
        "rounds;\nimports, compile, warmup, draws: the run's own split (s; NumPyro's own model, and the numpyro and "
        "blackjax routes (aejax.sampling.sample), run warmup and draws in one program: both under warmup);\nleapfrog: steps per transition (draws); "
        "ESS: min bulk ESS of mu, tau;\nESS/s: per second of warmup + draws; ESS/s1st: per second of first result; "
        "div: divergences; ESS/draw, ESS/step: per draw and per leapfrog step, all chains"
    )
    return "\n".join([HEADER, "-" * len(HEADER), *map(table_row, rows), legend])


RST_HEADER = (
    '"variant", "chains", "route", "first result s", "/ NumPyro", "imports / compile / warmup / draws s", '
    '"leapfrog steps", "ESS", "ESS/s sampling", "ESS/s first result", "divergences", "ESS per draw (/ NumPyro)"'
)


def rst_row(row: dict[str, Any]) -> str:
    """One row of docs/benchmarks.rst's csv-table (``RST_HEADER``)."""
    seconds, vs = row["seconds"], row["vs_numpyro"]
    stages = " / ".join(f"{seconds[stage]:.1f}" for stage in ("imports", "compile", "warmup", "draws"))
    cells = [row["variant"], str(row["chains"]), f'"{ROUTE_NAMES[row["route"]]}"', f"{row['first_result_s']:.1f}"]
    cells += [
        number(vs.get("first_result_s"), ".2f"),
        f'"{stages}"',
        number(row["leapfrog_steps_per_transition"], ".1f"),
    ]
    cells += [
        f"{row['ess']:.0f}",
        f"{row['ess_per_s']:.0f}",
        f"{row['ess_per_first_s']:.0f}",
        f"{row['divergences']:.0f}",
    ]
    cells.append(f'"{row["ess_per_draw"]:.3f} ({number(vs.get("ess_per_draw"), ".2f")})"')
    return "   " + ", ".join(cells)


def plot(rows: Sequence[dict[str, Any]], path: str) -> Path | None:
    """Time to first result by route and chain count (cold runs), bars labelled with the ratio to NumPyro's own."""
    sys.path.insert(0, str(HERE.parent / "examples"))
    import figures

    cold = [row for row in rows if row["variant"] == "cold"]
    counts = sorted({row["chains"] for row in cold})
    routes = list(dict.fromkeys(row["route"] for row in cold))

    def draw(axes: Any) -> None:
        height = 0.8 / len(counts)
        for k, chains in enumerate(counts):
            found = {row["route"]: row for row in cold if row["chains"] == chains}
            positions = [i + k * height for i, route in enumerate(routes) if route in found]
            values = [found[route]["first_result_s"] for route in routes if route in found]
            bars = axes.barh(positions, values, height, label=f"{chains} chains")
            labels = [f"{found[r]['vs_numpyro'].get('first_result_s', 1.0):.2f}x" for r in routes if r in found]
            axes.bar_label(bars, labels=labels, padding=2, fontsize=7)
        axes.set_yticks([i + height * (len(counts) - 1) / 2 for i in range(len(routes))])
        axes.set_yticklabels([ROUTE_NAMES[route] for route in routes], fontsize=8)
        axes.invert_yaxis()
        axes.set_xlabel("time to first result, s (labels: over NumPyro's own model's)")
        axes.legend(fontsize=8)

    return figures.save(path, "Eight schools, a new user's first run", draw, size=(7.0, 0.5 * len(routes) + 1.6))


def run_info(args: argparse.Namespace) -> dict[str, Any]:
    """What the runs were made with."""
    return {
        "rounds": args.rounds,
        "warmup": args.warmup,
        "draws": args.draws,
        "seed": args.seed,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chains", type=int, nargs="+", default=[4, 64])
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--routes", nargs="+", choices=ROUTES, default=list(ROUTES))
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--save", metavar="JSON", help="write every run and the table's rows to this file")
    parser.add_argument("--load", metavar="JSON", help="read the file --save wrote instead of measuring")
    parser.add_argument("--rst", action="store_true", help="print the rows of docs/benchmarks.rst's csv-table")
    parser.add_argument("--plot", metavar="PNG", nargs="?", const="eight_schools.png", help="draw the cold runs' times")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    if args.load:
        saved = json.loads(Path(args.load).read_text())
    else:
        routes = chosen_routes(args.routes)
        runs = [
            run
            for variant in args.variants
            for chains in args.chains
            for run in measure_chains(variant, chains, routes, args)
        ]
        saved = {"run": run_info(args), "runs": runs, "rows": summarize(runs)}
    print(table(saved["rows"]))
    if args.save:
        Path(args.save).write_text(json.dumps(saved, indent=1) + "\n")
        print(f"saved: {Path(args.save).resolve()}")
    if args.rst:
        print("\n".join([f"   :header: {RST_HEADER}", "", *map(rst_row, saved["rows"])]))
    if args.plot:
        plot(saved["rows"], args.plot)
    return saved


if __name__ == "__main__":
    main()
