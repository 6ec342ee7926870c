"""Many chains of NUTS, aejax against NumPyro, exported to run where Aesara cannot be installed (issue #36).

``build`` exports aehmc's NUTS with `aejax.linker.export_graph` over a
symbolic number of chains, and NumPyro's vmapped by hand, each as
``(key_data, q0) -> (new_key_data, positions, acceptance)``, one row a chain,
serialized with `jax.export` for the CPU and the TPU, in 32 bits.
``chains_runner.py`` runs them with JAX alone; ``table`` turns its results into tables, and ``ops``
shows the batched gathers and scatters of each program exported for each
platform alone, counted while building. ``direct``, where aejax and Aesara
are installed (a TPU host's own JAX too), builds aejax's NUTS of each target
in its own process and runs it with `aejax.linker.many_chains`, timed call by
call in turn with the exported program of the same target, chain count and keys.

    python benchmarks/many_chains.py build --out .device/programs
    python benchmarks/chains_runner.py .device/programs --out cpu.json --max-chains 64
    python benchmarks/many_chains.py table cpu.json tpu.json [--rst]
    python benchmarks/many_chains.py ops .device/programs
    python benchmarks/many_chains.py direct .device/programs --out direct.json [--max-chains 64]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import re
import shutil
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import export as jax_export
from jax import lax
from jax.sharding import Mesh, PartitionSpec

CHAIN_COUNTS = (1, 64, 1024, 8192)
TRANSITIONS = 200
PLATFORMS = ("cpu", "tpu")
BURN_IN = 50
"""Transitions left out of the mean position the runner checks."""
IMPLEMENTATIONS = ("aejax", "numpyro")
MANIFEST = "manifest.json"
SYMBOLIC_CHAINS = "chains"
"""The name of the symbolic number of chains, in the programs and the manifest's shapes."""
FLATBUFFERS_COPY = "flatbuffers_pkg"
"""The folder of the program directory holding a copy of the pure-Python ``flatbuffers`` package."""


@dataclass(frozen=True)
class Target:
    """A NUTS target as issue #36 names it, with the `workloads` builder of its setup and its true mean."""

    name: str
    setup_name: str
    """The name of the `workloads` function that builds its ``NutsSetup`` from a number of transitions."""
    true_mean: Callable[[], np.ndarray] | None
    """``None`` where it is not known in closed form (the eight schools)."""


ChainsFunction = Callable[[Any, Any], tuple[Any, Any, Any]]
"""``(key_data, q0) -> (key_data, positions, acceptance)`` of every chain at once, one row a chain."""


@dataclass
class ChainProgram:
    """One implementation's NUTS on one target, for many chains.

    ``batched(platforms)`` is its `ChainsFunction`, to be exported for
    ``platforms`` in 32 bits. ``keys`` are the typed PRNG keys that a
    chain's row of ``key_data`` holds the data of, one row each; every chain
    gets its own split of each.
    """

    target: Target
    implementation: str
    batched: Callable[[Sequence[str]], ChainsFunction]
    keys: list[Any]
    dims: int
    transitions: int
    step_size: float
    seed: int

    @property
    def name(self) -> str:
        return f"{self.implementation}-{self.target.name}"


def _workloads() -> Any:
    """The `workloads` module, imported only to build: ``table`` and ``ops`` run without Aesara."""
    return _sibling("workloads")


def _x64_off() -> Any:
    """This thread's ``jax_enable_x64`` off, for building (imported then: ``aejax.adapters`` imports Aesara)."""
    from aejax.adapters.jax_api import disable_x64

    return disable_x64()


def _sibling(name: str) -> Any:
    """The module ``name`` of this folder (`workloads`, `chains_runner`)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    return importlib.import_module(name)


def gaussian_mean() -> np.ndarray:
    """The 2-D Gaussian's mean."""
    return np.array([1.0, -2.0])


@cache
def logistic_mean(points_per_axis: int = 48, chunk: int = 8192) -> np.ndarray:
    """The logistic regression's posterior mean, integrated on a grid around its mode.

    The grid spans 7 standard deviations of the Laplace approximation each
    way along its principal axes, fine enough for four digits.
    """
    X, y = _workloads().logistic_data()

    def gradient_and_hessian(beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = 1 / (1 + np.exp(-X @ beta))
        return X.T @ (y - p) - beta, -(X.T * (p * (1 - p))) @ X - np.eye(len(beta))

    mode = np.zeros(X.shape[1])
    for _ in range(30):
        gradient, hessian = gradient_and_hessian(mode)
        mode = mode - np.linalg.solve(hessian, gradient)
    variances, axes = np.linalg.eigh(np.linalg.inv(-gradient_and_hessian(mode)[1]))
    offsets = np.linspace(-7, 7, points_per_axis)
    grid = np.stack(np.meshgrid(*[offsets] * X.shape[1], indexing="ij"), -1).reshape(-1, X.shape[1])
    betas = mode + (grid * np.sqrt(variances)) @ axes.T
    logdensity = np.concatenate(
        [_logistic_logdensity(X, y, part) for part in np.array_split(betas, len(betas) // chunk)]
    )
    weights = np.exp(logdensity - logdensity.max())
    return weights @ betas / weights.sum()


def _logistic_logdensity(X: np.ndarray, y: np.ndarray, betas: np.ndarray) -> np.ndarray:
    """The unnormalized log posterior of each row of ``betas``."""
    z = betas @ X.T
    return (y * z - np.logaddexp(0, z)).sum(1) - 0.5 * (betas**2).sum(1)


TARGETS = {
    "gaussian": Target("gaussian", "gaussian_setup", gaussian_mean),
    "logistic": Target("logistic", "logistic_setup", logistic_mean),
    "eight_schools": Target("eight_schools", "eight_schools_setup", None),
}


def aejax_graph(setup: Any) -> Any:
    """aehmc's NUTS chain of `workloads.nuts_chain` on a ``NutsSetup``, as the `JaxGraph` of `jaxify`.

    Lowered, as it is exported, in 32 bits (aejax lowers a graph in the
    precision JAX has when `jaxify` is called).
    """
    from aejax.linker import jaxify

    chain = _workloads().nuts_chain(setup.logprob, setup.transitions, setup.step_size, setup.dims, setup.seed)
    with _x64_off():
        return jaxify(*chain)


def aejax_program(target: Target, transitions: int) -> ChainProgram:
    """aehmc's NUTS of `aejax_graph`, exported over a symbolic number of chains by `export_graph`.

    The graph's state holds several generators, all of it random; ``key_data``
    has one row for each, in the state's order.
    """
    from aejax.linker import export_graph

    setup = getattr(_workloads(), target.setup_name)(transitions)
    graph = aejax_graph(setup)
    names = list(graph.state)

    def batched(platforms: Sequence[str]) -> ChainsFunction:
        chains = export_graph(graph, np.zeros(setup.dims), platforms=platforms, chains=SYMBOLIC_CHAINS)

        def run(key_data: Any, q0: Any) -> tuple[Any, Any, Any]:
            # A static slice: indexing (key_data[:, row]) would add a gather per key.
            state = {name: lax.index_in_dim(key_data, row, axis=1, keepdims=False) for row, name in enumerate(names)}
            (positions, acceptance), new_state = chains.call(state, q0)
            return jnp.stack([new_state[name] for name in names], axis=1), positions, acceptance

        return run

    keys = [graph.state[name] for name in names]
    return ChainProgram(target, "aejax", batched, keys, setup.dims, transitions, setup.step_size, setup.seed)


def numpyro_program(target: Target, transitions: int) -> ChainProgram:
    """NumPyro's NUTS chain of `workloads.numpyro_nuts` on the target's JAX potential, as a `ChainProgram`."""
    setup = getattr(_workloads(), target.setup_name)(transitions)
    return numpyro_nuts_program(target, setup, setup.potential, "numpyro")


def jaxify_program(target: Target, transitions: int) -> ChainProgram:
    """NumPyro's NUTS on the target's Aesara log-density exported by `aejax.linker.jaxify`, negated: the route of
    ``examples/eight_schools.py --route numpyro``, lowered in 32 bits as the other programs."""
    import aesara.tensor as at

    from aejax.linker import jaxify

    setup = getattr(_workloads(), target.setup_name)(transitions)
    q = at.dvector("q")
    with _x64_off():
        graph = jaxify([q], setup.logprob(q))
    return numpyro_nuts_program(target, setup, lambda z: -graph.fn(graph.state, z)[0], "jaxify")


def numpyro_nuts_program(
    target: Target, setup: Any, potential: Callable[[Any], Any], implementation: str
) -> ChainProgram:
    """NumPyro's NUTS chain of `workloads.numpyro_nuts` on ``potential``: one key, so ``key_data`` has one row."""
    # NumPyro builds its template state eagerly: in 32 bits only if built so.
    with _x64_off():
        keyed = _workloads().numpyro_nuts(potential, setup.transitions, setup.step_size, setup.dims, setup.seed)
    if keyed is None:
        raise RuntimeError("NumPyro is not installed: pip install '.[bench]'")

    def chain(key_data: Any, q0: Any) -> tuple[Any, Any, Any]:
        new_key_data, (positions, acceptance) = keyed.step(key_data[0], q0)
        return new_key_data[None], positions, acceptance

    def batched(platforms: Sequence[str]) -> ChainsFunction:
        return jax.vmap(chain)

    keys = [jax.random.key(setup.seed)]
    return ChainProgram(
        target, implementation, batched, keys, setup.dims, setup.transitions, setup.step_size, setup.seed
    )


def aejax_mesh_program(target: Target, transitions: int) -> ChainProgram:
    """`aejax_program` as `aejax.linker.many_chains` runs it on a mesh: ``jax.shard_map`` of the chains over a mesh
    of one device (one TPU chip), each device its own block of chains; to compare with `aejax_program` (issue #48)."""
    program = aejax_program(target, transitions)

    def batched(platforms: Sequence[str]) -> ChainsFunction:
        mesh = Mesh(np.array(jax.devices()[:1]), ("chains",))
        chains = PartitionSpec("chains")
        return jax.shard_map(program.batched(platforms), mesh=mesh, in_specs=chains, out_specs=chains, check_vma=False)

    return dataclasses.replace(program, implementation="aejax_mesh", batched=batched)


BUILDERS = {
    "aejax": aejax_program,
    "aejax_mesh": aejax_mesh_program,
    "numpyro": numpyro_program,
    "jaxify": jaxify_program,
}


def make_programs(
    targets: Sequence[str] = tuple(TARGETS),
    transitions: int = TRANSITIONS,
    implementations: Sequence[str] = IMPLEMENTATIONS,
) -> list[ChainProgram]:
    """The chain programs of ``targets`` and ``implementations``."""
    with warnings.catch_warnings():
        # aejax warns of each check the exported program cannot raise.
        warnings.simplefilter("ignore", UserWarning)
        return [BUILDERS[impl](TARGETS[name], transitions) for name in targets for impl in implementations]


def input_specs(program: ChainProgram) -> tuple[jax.ShapeDtypeStruct, jax.ShapeDtypeStruct]:
    """The shapes of ``(key_data, q0)`` for a symbolic number of chains, in 32 bits."""
    batch = jax_export.symbolic_shape(SYMBOLIC_CHAINS)
    key_shape = jax.random.key_data(program.keys[0]).shape
    return (
        jax.ShapeDtypeStruct((*batch, len(program.keys), *key_shape), jnp.uint32),
        jax.ShapeDtypeStruct((*batch, program.dims), jnp.float32),
    )


def export_program(program: ChainProgram, platforms: Sequence[str] = PLATFORMS) -> jax_export.Exported:
    """``program``'s chains exported for ``platforms`` in 32 bits, for a symbolic number of chains.

    The graph is float64 (aehmc makes float64 values itself); exporting it
    with x64 off computes it all in 32 bits.
    """
    with warnings.catch_warnings(), _x64_off():
        warnings.simplefilter("ignore", UserWarning)
        batched = program.batched(platforms)
        return jax_export.export(jax.jit(batched), platforms=platforms)(*input_specs(program))


def platform_op_counts(program: ChainProgram) -> dict[str, dict[str, int]]:
    """`count_ops` of ``program`` exported for each of `PLATFORMS` alone.

    A program exported for several platforms holds each one's choices
    (`aejax.linker.dispatch.rows` picks selects or scatters per platform).
    """
    return {platform: count_ops(export_program(program, platforms=[platform]).mlir_module()) for platform in PLATFORMS}


def chain_key_data(program: ChainProgram, chains: int) -> np.ndarray:
    """The initial ``key_data`` of ``chains`` chains: each of the program's keys split ``chains`` ways."""
    rows = [np.asarray(jax.random.key_data(jax.random.split(key, chains))) for key in program.keys]
    return np.stack(rows, axis=1)


def describe(spec: jax.ShapeDtypeStruct, name: str) -> dict[str, Any]:
    """``spec`` in the manifest: a name, the shape with the symbolic chain count as a string, the dtype."""
    return {"name": name, "shape": [d if isinstance(d, int) else str(d) for d in spec.shape], "dtype": str(spec.dtype)}


def write_program(program: ChainProgram, out: Path, chain_counts: Sequence[int]) -> dict[str, Any]:
    """Export and serialize ``program`` with its initial key data for ``chain_counts``; its manifest entry."""
    start = time.perf_counter()
    exported = export_program(program)
    serialized = exported.serialize()
    file = f"{program.name}.jaxexport"
    (out / file).write_bytes(serialized)
    keys_file = f"{program.name}.keys.npz"
    np.savez_compressed(out / keys_file, **{f"chains_{n}": chain_key_data(program, n) for n in chain_counts})
    return {
        "name": program.name,
        "target": program.target.name,
        "implementation": program.implementation,
        "file": file,
        "keys_file": keys_file,
        "chains": list(chain_counts),
        "platforms": list(exported.platforms),
        "inputs": [describe(spec, name) for spec, name in zip(exported.in_avals, ("key_data", "q0"))],
        "outputs": [describe(aval, n) for aval, n in zip(exported.out_avals, ("key_data", "positions", "acceptance"))],
        "transitions": program.transitions,
        "dims": program.dims,
        "step_size": program.step_size,
        "seed": program.seed,
        "true_mean": None if program.target.true_mean is None else program.target.true_mean().tolist(),
        "burn_in": min(BURN_IN, program.transitions // 2),
        "bytes": len(serialized),
        "build_s": round(time.perf_counter() - start, 2),
        "ops": platform_op_counts(program),
    }


def copy_flatbuffers(out: Path) -> None:
    """Copy the installed pure-Python ``flatbuffers`` into ``out``, for a runner on a machine that lacks it."""
    import flatbuffers

    destination = out / FLATBUFFERS_COPY / "flatbuffers"
    shutil.rmtree(destination, ignore_errors=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(Path(flatbuffers.__file__).parent, destination, ignore=ignore)


def leapfrog_steps(programs: Sequence[ChainProgram]) -> dict[str, float]:
    """Leapfrog steps per transition of each program, by name, counted here on one chain from zero.

    `workloads.nuts_gradients` counts aehmc's by a host callback in front of
    the log-density (which an exported program cannot hold) and NumPyro's by
    its ``num_steps`` (the ``jaxify`` route's as NumPyro's: its sampler, on the same density); the seed and settings are the programs', in the
    precision JAX has (64 bits under ``build --leapfrog``: aehmc's graph is float64, and so is the counter's callback).
    """
    workloads = _workloads()
    counted = {}
    for target, transitions in dict.fromkeys((p.target, p.transitions) for p in programs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            counted[target.name] = workloads.nuts_gradients(getattr(workloads, target.setup_name)(transitions))
    return {
        p.name: counted[p.target.name]["aejax" if p.implementation.startswith("aejax") else "jax"] for p in programs
    }


def write_programs(
    programs: Sequence[ChainProgram], out: Path, chain_counts: Sequence[int] = CHAIN_COUNTS, count_steps: bool = False
) -> dict:
    """Write ``programs``, the ``flatbuffers`` copy and the manifest into ``out``; the manifest.

    With ``count_steps`` each entry holds its `leapfrog_steps` per transition.
    """
    out.mkdir(parents=True, exist_ok=True)
    copy_flatbuffers(out)
    steps = leapfrog_steps(programs) if count_steps else {}
    entries = []
    for program in programs:
        entries.append(write_program(program, out, chain_counts))
        if program.name in steps:
            entries[-1]["leapfrog_steps_per_transition"] = steps[program.name]
        print(f"{program.name}: {entries[-1]['bytes']} bytes in {entries[-1]['build_s']} s", flush=True)
    manifest = {
        "jax_version": jax.__version__,
        "aejax": aejax_source(),
        "chain_counts": list(chain_counts),
        "programs": entries,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return manifest


def aejax_source() -> dict[str, Any]:
    """Where the aejax that built the programs came from: its folder, the commit there and the files changed since."""
    import aejax.linker

    folder = Path(aejax.linker.__file__).resolve().parent
    source: dict[str, Any] = {"linker": str(folder)}
    try:
        git = ["git", "-C", str(folder)]
        source["commit"] = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        status = subprocess.run([*git, "status", "--porcelain", "."], capture_output=True, text=True).stdout
        source["changed"] = [line[3:] for line in status.splitlines()]
    except OSError:  # no git: the folder is all there is to say
        pass
    return source


def folder_bytes(folder: Path) -> int:
    """The size of every file under ``folder``."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def build(args: argparse.Namespace) -> None:
    """The ``build`` subcommand (the programs are exported in 32 bits whatever JAX's precision)."""
    if args.leapfrog:  # counting runs aehmc's float64 graph through a host callback of float64 values
        jax.config.update("jax_enable_x64", True)
    programs = make_programs(args.targets, args.transitions, args.implementations)
    write_programs(programs, args.out, args.chains, args.leapfrog)
    print(f"{args.out}: {folder_bytes(args.out) / 2**20:.2f} MiB in all")


OP_PATTERNS = {
    "gathers": r'"?stablehlo\.(?:dynamic_)?gather"?\(',
    "batched gathers": r"operand_batching_dims",
    "scatters": r'"?stablehlo\.scatter"?\(',
    "batched scatters": r"input_batching_dims",
    "dynamic slices": r'"?stablehlo\.dynamic_slice"?\(',
    "dynamic update slices": r'"?stablehlo\.dynamic_update_slice"?\(',
    "while loops": r'"?stablehlo\.while"?\(',
}


def count_ops(module: str) -> dict[str, int]:
    """How often each of `OP_PATTERNS` occurs in the text of a StableHLO module."""
    return {name: len(re.findall(pattern, module)) for name, pattern in OP_PATTERNS.items()}


def ops(args: argparse.Namespace) -> None:
    """The ``ops`` subcommand: the gathers and scatters of each program on each platform, batched ones apart."""
    manifest = json.loads((args.dir / MANIFEST).read_text())
    print("| program | platform | " + " | ".join(OP_PATTERNS) + " |")
    print("|---" * (len(OP_PATTERNS) + 2) + "|")
    for entry in manifest["programs"]:
        for platform, counts in entry["ops"].items():
            print(f"| {entry['name']} | {platform} | " + " | ".join(str(counts[name]) for name in OP_PATTERNS) + " |")


def result_rows(results: dict) -> list[dict[str, Any]]:
    """One row per target and chain count of a runner's results: both implementations side by side."""
    timed: dict[tuple[str, int], dict[str, dict]] = {}
    for run in results["programs"]:
        timed.setdefault((run["target"], run["chains"]), {})[run["implementation"]] = run
    rows = []
    for (target, chains), runs in sorted(timed.items(), key=lambda item: (item[0][0], item[0][1])):
        row: dict[str, Any] = {"target": target, "chains": chains}
        for impl in IMPLEMENTATIONS:
            run = runs.get(impl, {})
            ms = run.get("median_ms")
            row[f"{impl} ms"] = ms
            row[f"{impl} chain-transitions/s"] = chains * run["transitions"] / ms * 1000 if ms else None
            first = run.get("compile_s"), run.get("first_run_s")
            row[f"{impl} compile+first s"] = sum(first) if None not in first else None
        a, n = row["aejax ms"], row["numpyro ms"]
        row["aejax/NumPyro"] = a / n if a and n else None
        rows.append(row)
    return rows


COLUMNS = (
    "target",
    "chains",
    "aejax ms",
    "numpyro ms",
    "aejax/NumPyro",
    "aejax chain-transitions/s",
    "numpyro chain-transitions/s",
    "aejax compile+first s",
    "numpyro compile+first s",
)


def column_title(column: str) -> str:
    """A column's title, with the implementations as their projects spell them."""
    return column.replace("numpyro", "NumPyro")


def cell(value: Any) -> str:
    """A table cell: numbers to three significant digits, large ones whole, missing ones as a dash."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    return str(value)


def platform_title(results: dict) -> str:
    """The platform of a runner's results: backend, device kind and JAX version."""
    return f"{results['platform']} ({results['device_kind']}), JAX {results['jax_version']}"


def markdown_table(results: dict) -> str:
    """A markdown table of a runner's results, with its platform as a heading."""
    header = "| " + " | ".join(column_title(c) for c in COLUMNS) + " |"
    lines = [f"### {platform_title(results)}", "", header, "|---" * len(COLUMNS) + "|"]
    lines += ["| " + " | ".join(cell(row[c]) for c in COLUMNS) + " |" for row in result_rows(results)]
    return "\n".join(lines)


def rst_table(results: dict) -> str:
    """An RST list-table of a runner's results, titled with its platform."""
    lines = [f".. list-table:: {platform_title(results)}", "   :header-rows: 1", ""]
    for row in [{c: column_title(c) for c in COLUMNS}] + result_rows(results):
        lines.append("   * - " + cell(row[COLUMNS[0]]))
        lines += [f"     - {cell(row[c])}" for c in COLUMNS[1:]]
    return "\n".join(lines)


def table(args: argparse.Namespace) -> None:
    """The ``table`` subcommand: one table per results file, so per platform."""
    render = rst_table if args.rst else markdown_table
    print("\n\n".join(render(json.loads(Path(path).read_text())) for path in args.results))


def ess_row(entry: dict[str, Any], record: dict[str, Any], positions: np.ndarray) -> dict[str, Any]:
    """A program's ESS at one chain count: the smaller bulk ESS of its first two coordinates over the second half
    of its first call's transitions, per second of the calls' median time, per draw and per leapfrog step."""
    import arviz as az

    kept = positions[:, positions.shape[1] // 2 :]
    ess = min(float(az.ess(np.ascontiguousarray(kept[..., k]), method="bulk")) for k in range(2))
    draws = kept.shape[0] * kept.shape[1]
    row = {"name": entry["name"], "target": entry["target"], "implementation": entry["implementation"]}
    row |= {"chains": record["chains"], "median_ms": record["median_ms"], "ess": ess, "ess_per_draw": ess / draws}
    row["ess_per_s"] = ess / (record["median_ms"] / 1000 * kept.shape[1] / positions.shape[1])
    steps = entry.get("leapfrog_steps_per_transition")
    row["leapfrog_steps_per_transition"] = steps
    row["ess_per_step"] = ess / (draws * steps) if steps else None
    return row


def ess_rows(manifest: dict, results: dict, outputs: Path) -> list[dict[str, Any]]:
    """`ess_row` of every timed program whose outputs were saved, each with aejax's figures over NumPyro's."""
    entries = {entry["name"]: entry for entry in manifest["programs"]}
    rows = []
    for record in results["programs"]:
        saved = outputs / f"{record['name']}-{record['chains']}.npz"
        if "median_ms" in record and saved.exists():
            with np.load(saved) as arrays:
                rows.append(ess_row(entries[record["name"]], record, arrays["positions"]))
    anchors = {(r["target"], r["chains"]): r for r in rows if r["implementation"] == "numpyro"}
    for row in rows:
        anchor = anchors.get((row["target"], row["chains"]))
        for name in ("ess_per_s", "ess_per_draw", "ess_per_step"):
            mine, theirs = row[name], anchor and anchor[name]
            row[f"{name} / NumPyro"] = mine / theirs if mine and theirs else None
    return rows


ESS_COLUMNS = (
    "name",
    "chains",
    "median_ms",
    "leapfrog_steps_per_transition",
    "ess",
    "ess_per_s",
    "ess_per_s / NumPyro",
    "ess_per_draw",
    "ess_per_draw / NumPyro",
    "ess_per_step",
    "ess_per_step / NumPyro",
)


def ess(args: argparse.Namespace) -> None:
    """The ``ess`` subcommand: a markdown table of `ess_rows`, under the runner's platform."""
    results = json.loads(args.results.read_text())
    rows = ess_rows(json.loads((args.dir / MANIFEST).read_text()), results, args.outputs)
    print(f"### {platform_title(results)}\n")
    print("| " + " | ".join(ESS_COLUMNS) + " |\n" + "|---" * len(ESS_COLUMNS) + "|")
    print("\n".join("| " + " | ".join(cell(row[c]) for c in ESS_COLUMNS) + " |" for row in rows))
    if args.save:
        args.save.write_text(json.dumps({"platform": platform_title(results), "rows": rows}, indent=1) + "\n")


DIRECT_ROUTES = ("many_chains", "fn")
"""How ``direct`` runs aejax's graph built in its own process: `aejax.linker.many_chains`, as a user does (its
program also returns each chain's failure code, and the call reads them), and the graph's own pure function
``JaxGraph.fn`` vmapped and jitted here, which computes what the export does (no checks)."""


class DirectChains:
    """aejax's chains of one target run in this process by one of `DIRECT_ROUTES`, continuing from call to call:
    `chains_runner.Chains`' interface, so that they are timed in turn with the exported program's.

    ``key_data`` is what ``build`` wrote for the export (one row a chain, a
    column a random state, in the graph's order), so every route draws the same numbers.
    """

    def __init__(self, run: Any, route: str, key_data: np.ndarray, q0: Any) -> None:
        self.step = direct_step(run, route)
        self.names = list(run.graph.state)
        impls = {name: jax.random.key_impl(key) for name, key in run.graph.state.items()}
        self.state = {
            name: jax.random.wrap_key_data(key_data[:, row], impl=impls[name]) for row, name in enumerate(self.names)
        }
        self.q0 = q0

    def call(self) -> tuple[float, Any]:
        """One call from the current state: its seconds and its outputs as the export's ``(key_data, positions,
        acceptance)``; the state moves on to the chains' ends."""
        start = time.perf_counter()
        (positions, acceptance), state = jax.block_until_ready(self.step(self.state, self.q0))
        elapsed = time.perf_counter() - start
        self.state, self.q0 = jax.block_until_ready((state, positions[:, -1]))
        key_data = jnp.stack([jax.random.key_data(self.state[name]) for name in self.names], axis=1)
        return elapsed, (key_data, positions, acceptance)


def direct_step(run: Any, route: str) -> Callable[[Any, Any], tuple[Any, Any]]:
    """``(state, q0) -> ((positions, acceptance), new_state)`` of every chain by ``route`` (`DIRECT_ROUTES`)."""
    if route == "fn":
        return jax.jit(jax.vmap(run.graph.fn))

    def step(state: Any, q0: Any) -> tuple[Any, Any]:
        result = run(None, len(q0), q0, state=state)
        return result.outputs, result.state

    return step


def direct_run(entry: dict[str, Any]) -> Any:
    """`aejax.linker.many_chains` of `aejax_graph` of a manifest entry's target and transitions, built here."""
    from aejax.linker import many_chains

    setup = getattr(_workloads(), TARGETS[entry["target"]].setup_name)(entry["transitions"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return many_chains(aejax_graph(setup))


def start_direct(
    folder: Path, entry: dict[str, Any], chains: int, run: Any, route: str, export_outputs: Sequence[np.ndarray]
) -> tuple[DirectChains, dict[str, Any]]:
    """`DirectChains` of ``route`` from the build's keys, called once (it compiles); its record, with the first
    call's largest difference from the export's first positions."""
    runner = _sibling("chains_runner")
    with np.load(folder / entry["keys_file"]) as keys:
        key_data = keys[f"chains_{chains}"]
    q0 = np.zeros(runner.concrete_shape(entry["inputs"][1]["shape"], chains), entry["inputs"][1]["dtype"])
    chains_state = DirectChains(run, route, *jax.device_put((key_data, q0)))
    with warnings.catch_warnings():  # aejax and JAX warn that the float64 graph is traced in 32 bits, as exported
        warnings.simplefilter("ignore", UserWarning)
        first_call_s, outputs = chains_state.call()
    record = {"name": f"{entry['name']}-{route}", "target": entry["target"], "route": route, "chains": chains}
    record |= {"transitions": entry["transitions"], "first_call_s": first_call_s}
    record["check"] = runner.check_outputs(entry, chains, outputs)
    difference = np.abs(np.asarray(outputs[1]) - export_outputs[1]).max()
    record["largest_difference_from_export"] = float(difference)
    return chains_state, record


def time_direct(
    folder: Path, entry: dict[str, Any], chains: int, run: Any, exported: Any, settings: argparse.Namespace
) -> list[dict[str, Any]]:
    """The records of the exported program and of each of `DIRECT_ROUTES` at ``chains`` chains: each started from
    the build's keys and checked, then all called in turn (`chains_runner.interleave`)."""
    runner = _sibling("chains_runner")
    export_chains, export_record, export_outputs = runner.start_chains(folder, entry, chains, exported)
    export_record["route"] = "export"
    started = [start_direct(folder, entry, chains, run, route, export_outputs) for route in DIRECT_ROUTES]
    records = [export_record] + [record for _, record in started]
    times = runner.interleave(
        [export_chains] + [chains_state for chains_state, _ in started],
        settings.min_calls,
        settings.max_calls,
        settings.pair_s,
        settings.deadline,
    )
    for record, seconds in zip(records, times):
        record["call_ms"] = [s * 1000 for s in seconds]
        record["median_ms"] = statistics.median(record["call_ms"])
        record["calls"] = len(seconds)
        record["/export"] = record["median_ms"] / export_record["median_ms"]
    return records


def direct(args: argparse.Namespace) -> None:
    """The ``direct`` subcommand: aejax's programs of the manifest, each timed beside its target built and run here
    by each of `DIRECT_ROUTES` in 32 bits, from the same keys, at every chain count up to ``--max-chains``."""
    runner = _sibling("chains_runner")
    runner.use_flatbuffers_copy(args.dir)
    manifest = json.loads((args.dir / MANIFEST).read_text())
    entries = [e for e in runner.select_programs(manifest, args.only) if e["implementation"] == "aejax"]
    counts = [n for n in manifest["chain_counts"] if args.max_chains is None or n <= args.max_chains]
    args.deadline = time.perf_counter() + args.budget_s
    if args.pair_s is None:
        args.pair_s = min(10.0, args.budget_s / (3 * max(1, len(entries) * len(counts))))
    results: dict[str, Any] = {**runner.environment(), "built_with_jax": manifest.get("jax_version"), "programs": []}
    runner.log(f"{platform_title(results)}: built here against exported, {len(entries)} programs x {counts} chains")
    with _x64_off():
        for entry in entries:
            exported = jax_export.deserialize(bytearray((args.dir / entry["file"]).read_bytes()))
            start = time.perf_counter()
            run = direct_run(entry)
            runner.log(f"{entry['target']}: built here in {time.perf_counter() - start:.1f} s")
            for chains in counts:
                if time.perf_counter() > args.deadline:
                    results.setdefault("skipped", []).append(f"{entry['name']} x{chains}")
                    continue
                records = time_direct(args.dir, entry, chains, run, exported, args)
                results["programs"] += records
                runner.write_results(results, args.out)
                runner.log(f"  x{chains}: " + "; ".join(map(direct_text, records)))
    runner.write_results(results, args.out)
    print(direct_table(results))


def direct_text(record: dict[str, Any]) -> str:
    """A route's part of a progress line: median, calls, first call, ratio, and for a direct route its check."""
    if record["route"] == "export":
        first = f"compile {record['compile_s']:.1f} s + first run {record['first_run_s']:.3f} s"
        return f"export {record['median_ms']:.3f} ms ({record['calls']} calls, {first})"
    check = record["check"]
    return (
        f"{record['route']} {record['median_ms']:.3f} ms ({record['calls']} calls, first call"
        f" {record['first_call_s']:.1f} s), /export {record['/export']:.3f}, mean {np.round(check['mean'], 3).tolist()},"
        f" finite {check['finite']}, largest difference from the export {record['largest_difference_from_export']:.2g}"
    )


def direct_table(results: dict) -> str:
    """A markdown table of ``direct``'s results: one row per target and chain count, each route's median ms and
    its ratio to the export's."""
    columns = ["target", "chains", "export ms"]
    columns += [f"{route} {what}" for route in DIRECT_ROUTES for what in ("ms", "/ export")]
    lines = [f"### {platform_title(results)}", "", "| " + " | ".join(columns) + " |", "|---" * len(columns) + "|"]
    rows: dict[tuple[str, int], dict[str, dict]] = {}
    for record in results["programs"]:
        rows.setdefault((record["target"], record["chains"]), {})[record["route"]] = record
    for (target, chains), routes in rows.items():
        row = [target, chains, routes["export"]["median_ms"]]
        row += [routes[route][what] for route in DIRECT_ROUTES for what in ("median_ms", "/export")]
        lines.append("| " + " | ".join(cell(value) for value in row) + " |")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    build_parser = commands.add_parser("build", help="export the programs into a folder")
    build_parser.add_argument("--out", type=Path, required=True)
    build_parser.add_argument("--targets", nargs="+", choices=list(TARGETS), default=list(TARGETS))
    build_parser.add_argument("--implementations", nargs="+", choices=list(BUILDERS), default=list(IMPLEMENTATIONS))
    build_parser.add_argument("--chains", nargs="+", type=int, default=list(CHAIN_COUNTS))
    build_parser.add_argument("--transitions", type=int, default=TRANSITIONS)
    build_parser.add_argument(
        "--leapfrog", action="store_true", help="count each program's leapfrog steps per transition (slow)"
    )
    build_parser.set_defaults(run=build)
    table_parser = commands.add_parser("table", help="tables of the runner's results")
    table_parser.add_argument("results", nargs="+")
    table_parser.add_argument("--rst", action="store_true")
    table_parser.set_defaults(run=table)
    ops_parser = commands.add_parser("ops", help="count the batched gathers and scatters of the exported programs")
    ops_parser.add_argument("dir", type=Path)
    ops_parser.set_defaults(run=ops)
    ess_parser = commands.add_parser("ess", help="ESS of the draws the runner saved (--save-outputs), per second")
    ess_parser.add_argument("dir", type=Path, help="the programs' folder (its manifest)")
    ess_parser.add_argument("results", type=Path, help="the runner's results file")
    ess_parser.add_argument("outputs", type=Path, help="the folder the runner's --save-outputs wrote")
    ess_parser.add_argument("--save", type=Path, help="write the rows as JSON")
    ess_parser.set_defaults(run=ess)
    direct_parser = commands.add_parser("direct", help="time aejax built and run here beside its exported programs")
    direct_parser.add_argument("dir", type=Path, help="the programs' folder (its manifest and keys)")
    direct_parser.add_argument("--out", type=Path, required=True, help="the results file (JSON)")
    direct_parser.add_argument("--only", nargs="+", default=[], help="targets or program names to run")
    direct_parser.add_argument("--max-chains", type=int, help="leave out the chain counts above this")
    direct_parser.add_argument("--budget-s", type=float, default=300.0, help="seconds after which no pair starts")
    direct_parser.add_argument(
        "--pair-s", type=float, help="seconds of timed calls per pair (default: from the budget)"
    )
    direct_parser.add_argument("--min-calls", type=int, default=5)
    direct_parser.add_argument("--max-calls", type=int, default=100)
    direct_parser.set_defaults(run=direct)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main()
