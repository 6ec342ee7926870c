"""Compile times of every benchmark with a cold and with a warm Aesara cache (issue #11).

    python benchmarks/compile_times.py [--scale 1.0] [--skip-c] [--only NAME] [--save FILE.json] [--rst]

Aesara's cache is its compile directory of C modules, chosen once per
process, so each workload is compiled by two child processes that share a
fresh temporary ``base_compiledir``: the first finds it empty (cold), the
second finds what the first compiled (warm). Each child compiles the
workload as ``benchmarks/run.py`` does (aejax first, then the hand-written
JAX version, then Aesara's C backend): compile time is the time to compile
and make the first call. JAX's compiles do not use Aesara's cache; its column
is the warm child's, and the saved JSON keeps both children's times.

Each child also reports how long its imports took (Aesara, JAX, aejax and the
workloads' aehmc and aeppl), which is not counted in any compile time. With
Aesara 2.9.4 the import compiles nothing: Aesara's helper modules (``cutils``,
``lazylinker``) are compiled by the first function compile that needs them,
so they are in the cold compile times. aejax's rewriting runs with
``config.cxx`` empty (`aejax.linker.call.function.AejaxFunctionMaker`), so its
constant folding compiles no C and its compile time does not depend on the
cache. The C backend's cold compile comes after aejax's in the same child.
``--save`` keeps the table as JSON; ``--rst`` prints it as a csv-table for
the README.
"""

from __future__ import annotations

import time

IMPORT_STARTED = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import aejax.adapters  # noqa: E402, F401  # isort: skip  (first: under numpy 2 it makes Aesara 2.9.4 work)
from aesara.link.c.cmodule import gcc_version  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import cell, chosen, run_info, systems, tabulated, workload_options  # noqa: E402
from workloads import suite  # noqa: E402

IMPORT_SECONDS = time.perf_counter() - IMPORT_STARTED

RUNS = ("cold", "warm")
COLUMNS = (("aejax", "cold"), ("aejax", "warm"), ("jax", "warm"), ("aesara C", "cold"), ("aesara C", "warm"))
LABELS = ("aejax cold", "aejax warm", "JAX", "C cold", "C warm")
HEADER = f"{'workload':26} {'import cold/warm':>16} " + " ".join(f"{label:>10}" for label in LABELS)


def child(name: str, scale: float, with_c: bool) -> dict[str, float]:
    """This process's import time and each system's compile time for the workload ``name``, in seconds."""
    work = suite(scale)[name]()
    return {"import": IMPORT_SECONDS, **{system: seconds for system, (seconds, _) in systems(work, with_c).items()}}


def run_child(name: str, args: argparse.Namespace, compiledir: str) -> dict[str, float]:
    """:func:`child` in a new process whose Aesara cache is ``compiledir``; its stderr passes through."""
    flags = ",".join(filter(None, [os.environ.get("AESARA_FLAGS"), f"base_compiledir={compiledir}"]))
    command = [sys.executable, __file__, "--child", name, "--scale", str(args.scale)]
    if args.skip_c:
        command.append("--skip-c")
    done = subprocess.run(
        command, env={**os.environ, "AESARA_FLAGS": flags}, stdout=subprocess.PIPE, text=True, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


def measure(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """The workload ``name`` compiled by a child with an empty Aesara cache, then by one with the cache it filled."""
    with tempfile.TemporaryDirectory(prefix="aesara-cache-") as compiledir:
        return {"name": name, **{run: run_child(name, args, compiledir) for run in RUNS}}


def measure_all(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Measure every workload (or those ``--only`` names), printing each table row as soon as it is measured."""
    names = chosen(list(suite(args.scale)), args.only)
    return tabulated("compile times", names, HEADER, lambda name: measure(name, args), table_row)


def imports(result: dict[str, Any]) -> str:
    return " / ".join(f"{result[run]['import']:.2f}" for run in RUNS)


def table_row(result: dict[str, Any]) -> str:
    """One row of the plain-text table, in seconds."""
    times = " ".join(cell(result[run], system, "10.2f") for system, run in COLUMNS)
    return f"{result['name']:26} {imports(result):>16} {times}"


def rst_table(results: list[dict[str, Any]]) -> str:
    """The table as a reStructuredText csv-table, in seconds."""
    header = ", ".join(f'"{label}"' for label in ("workload", "import cold / warm", *LABELS))
    rows = [
        "   "
        + ", ".join([f'"{r["name"]}"', f'"{imports(r)}"', *(cell(r[run], system, ".2f") for system, run in COLUMNS)])
        for r in results
    ]
    return "\n".join([".. csv-table:: Compile times in seconds", f"   :header: {header}", "", *rows])


def compile_info(args: argparse.Namespace) -> dict[str, Any]:
    """What the saved table was measured with: ``run.py``'s description of a run, C compiler and cores added."""
    info = run_info(argparse.Namespace(rounds=None, scale=args.scale, cpu_sync_dispatch=False))
    del info["rounds"], info["cpu_sync_dispatch"]
    return {**info, "gcc": gcc_version(), "cpus": os.cpu_count(), "c_backend": not args.skip_c}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = workload_options(__doc__.splitlines()[0])
    parser.add_argument("--rst", action="store_true", help="print the table as a csv-table for the README")
    parser.add_argument("--child", metavar="NAME", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.scale, not args.skip_c)))
        return
    results = measure_all(args)
    if args.save:
        Path(args.save).write_text(json.dumps({"run": compile_info(args), "workloads": results}, indent=1) + "\n")
        print(f"table: {Path(args.save).resolve()}")
    if args.rst:
        print(rst_table(results))


if __name__ == "__main__":
    main()
