"""Many chains across devices and processes (issue #48): `many_chains` with no mesh, on 8 devices, on 2 x 4.

The chains are those of examples/many_chains.py (aehmc's NUTS on an aeppl
regression, ``--transitions`` transitions a call). On this machine's CPU,
with devices forced by ``XLA_FLAGS=--xla_force_host_platform_device_count``
(the devices share its cores):

- one process of 8 devices: the chains with no mesh and on a mesh of the 8
  devices, taking turns; the mesh's first block of chains compared bit for
  bit with the same block run alone on one device (the whole run differs from
  every chain run at once in one batch by XLA:CPU's rounding of another batch
  size, ``max_abs_diff``); the collectives inside the mesh program's loops
  counted (each one would make every iteration wait for every device);
- two processes of 4 devices each, joined by ``jax.distributed`` on
  localhost: the chains on a mesh of all 8, gathered in each process and
  compared with that process's own run of them on one device.

Each cell is the median of ``--rounds`` calls (ms). ``--save PATH`` writes the
rows as JSON.

    python benchmarks/mesh_chains.py [--chains 16 64] [--transitions 40] [--rounds 9] [--save docs/mesh_chains_cpu.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.processes import run_in_processes  # noqa: E402

DEVICES = 8
PROCESSES = 2


def example() -> Any:
    """examples/many_chains.py as a module (its name is also this folder's benchmark of exported chains)."""
    spec = importlib.util.spec_from_file_location("many_chains_example", ROOT / "examples" / "many_chains.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def chain_function(transitions: int) -> tuple[Any, Any]:
    """The example's NUTS chain compiled with aejax's mode, and a function of a chain count giving the starts."""
    import numpy as np

    module = example()
    X, y = module.regression_data()
    mean, sd = module.exact_posterior(X, y)
    f = module.nuts_chain(module.regression_logprob(X, y), transitions, X.shape[1])
    return f, lambda chains: mean + 3 * sd * np.random.default_rng(0).normal(size=(chains, len(mean)))


def timed(call: Callable[[], Any]) -> float:
    """Seconds of one call, its outputs computed."""
    import jax

    start = time.perf_counter()
    jax.block_until_ready(call().outputs)
    return time.perf_counter() - start


def taking_turns(calls: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """The median ms of each of ``calls``, called once each to compile, then in turn ``rounds`` times (a fixed count:
    the processes of a run must call together)."""
    for call in calls.values():
        timed(call)
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            times[name].append(timed(call))
    return {name: 1e3 * statistics.median(t) for name, t in times.items()}


def first_block(alone: Any, key: Any, chains: int, starts: Any, block: int) -> Any:
    """The outputs of chains ``0 .. block - 1`` of a run of ``chains``, run as a batch of ``block`` on one device."""
    import jax

    keys = jax.random.split(key, chains)[:block]
    state = {name: jax.vmap(alone.chain_state)(keys)[name] for name in alone.random_names}
    return alone(None, block, starts[:block], state=state).outputs


def compared(outputs: Any, alone: Any, key: Any, chains: int, starts: Any, block: int) -> dict[str, Any]:
    """How ``outputs`` (of a mesh of blocks of ``block`` chains) differ from one device's: the largest difference
    from every chain run at once (XLA:CPU rounds a batch of 2 and one of 16 differently, one device alone too),
    and whether the first block is that block run alone, bit for bit."""
    import numpy as np

    whole = [np.asarray(x) for x in alone(key, chains, starts).outputs]
    outputs = [np.asarray(x) for x in outputs]
    same = all(np.array_equal(a[:block], b) for a, b in zip(outputs, first_block(alone, key, chains, starts, block)))
    return {"max_abs_diff": max(float(np.max(np.abs(a - b))) for a, b in zip(outputs, whole)), "block_identical": same}


def one_process(chain_counts: Sequence[int], transitions: int, rounds: int) -> list[dict[str, Any]]:
    """The rows of one process of `DEVICES` devices: no mesh against the mesh of all, per chain count."""
    import jax

    from aejax.linker import many_chains
    from tests.stablehlo import collectives_in_loops

    f, starts_of = chain_function(transitions)
    alone, mesh = many_chains(f), many_chains(f, mesh=jax.devices())
    rows = []
    for chains in chain_counts:
        key, starts = jax.random.key(0), starts_of(chains)
        same = compared(mesh(key, chains, starts).outputs, alone, key, chains, starts, chains // DEVICES)
        calls = {
            "none": lambda k=key, n=chains, s=starts: alone(k, n, s),
            "mesh": lambda k=key, n=chains, s=starts: mesh(k, n, s),
        }
        ms = taking_turns(calls, rounds)
        loops = collectives_in_loops(mesh.lower(key, chains, starts).compile().as_text())
        rows.append({"chains": chains, "no_mesh_ms": ms["none"], "mesh_8_ms": ms["mesh"], **same, **loops})
    return rows


def several_processes(chain_counts: Sequence[int], transitions: int, rounds: int) -> list[dict[str, Any]]:
    """The rows of this process of a run of `PROCESSES`: the mesh of every process's devices, per chain count."""
    import jax

    from aejax.linker import many_chains

    f, starts_of = chain_function(transitions)
    alone, mesh = many_chains(f), many_chains(f, mesh=jax.devices())
    rows = []
    for chains in chain_counts:
        key, starts = jax.random.key(0), starts_of(chains)
        same = compared(mesh(key, chains, starts).gathered().outputs, alone, key, chains, starts, chains // DEVICES)
        ms = taking_turns({"mesh": lambda k=key, n=chains, s=starts: mesh(k, n, s)}, rounds)
        rows.append({"chains": chains, "processes_2x4_ms": ms["mesh"], **{f"gathered_{k}": v for k, v in same.items()}})
    return rows


WORKER = """
import json, sys
sys.path.insert(0, "benchmarks")
from mesh_chains import several_processes
print("ROWS", json.dumps(several_processes({counts}, {transitions}, {rounds})))
"""


def rows_of(output: str) -> list[dict[str, Any]]:
    """The rows a worker printed."""
    return json.loads(next(line for line in output.splitlines() if line.startswith("ROWS "))[5:])


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every row: one process of 8 devices, then 2 processes of 4, merged by chain count."""
    env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={DEVICES}", "JAX_PLATFORMS": "cpu"}
    command = [sys.executable, __file__, "--one-process", *map(str, args.chains)]
    command += ["--transitions", str(args.transitions), "--rounds", str(args.rounds)]
    single = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    rows = rows_of(single.stdout)
    worker = WORKER.format(counts=list(args.chains), transitions=args.transitions, rounds=args.rounds)
    first, *_ = run_in_processes(worker, PROCESSES, DEVICES // PROCESSES, timeout=1800)
    for row, other in zip(rows, rows_of(first)):
        row.update(other)
        row["ratio_mesh_8"] = row["mesh_8_ms"] / row["no_mesh_ms"]
        row["ratio_2x4_to_mesh_8"] = row["processes_2x4_ms"] / row["mesh_8_ms"]
    return rows


COLUMNS = (
    "chains",
    "no_mesh_ms",
    "mesh_8_ms",
    "ratio_mesh_8",
    "processes_2x4_ms",
    "ratio_2x4_to_mesh_8",
    "max_abs_diff",
    "block_identical",
    "gathered_block_identical",
    "all-reduce",
    "all-gather",
    "collective-permute",
)


def table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    cell = lambda value: f"{value:.3g}" if isinstance(value, float) else str(value)
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(row.get(column)) for column in COLUMNS) + " |" for row in rows]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chains", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--transitions", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--save", type=Path, help="write the rows as JSON here")
    parser.add_argument("--one-process", type=int, nargs="+", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.one_process:
        print("ROWS", json.dumps(one_process(args.one_process, args.transitions, args.rounds)))
        return
    rows = measure(args)
    print(table(rows))
    if args.save:
        args.save.write_text(json.dumps({"xla_flags": os.environ.get("XLA_FLAGS"), "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
