"""Runs the NUTS programs that ``many_chains.py build`` exported, with JAX, numpy and the standard library alone.

It runs where Aesara cannot be installed (a TPU machine), under any JAX that
reads the exports (tried with 0.7.1 and numpy 1.26 on a CPU, 0.10.2 and numpy 2
on a TPU v5e). For each target and chain count it compiles
aejax's program and NumPyro's, then calls them in turn, each continuing its
own chains as a user's sampler would, and keeps the median time of each.
Progress is printed as it goes, and the results file is rewritten after
each program, so a run cut short still leaves what it measured.

    python benchmarks/chains_runner.py .device/programs --out results.json [--max-chains 64]
    python benchmarks/chains_runner.py --crossover --out crossover.json

``--crossover`` times instead a loop that writes and reads rows of a small
buffer at a per-chain position, by dynamic update/index (which ``vmap``
turns into scatters and gathers) and by masked selects, to find up to which
buffer length selects are the faster way.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import export as jax_export
from jax import lax

MANIFEST = "manifest.json"
FLATBUFFERS_COPY = "flatbuffers_pkg"
SYMBOLIC_CHAINS = "chains"
"""The name of the chain count in the manifest's shapes."""
DEFAULT_BUDGET_S = {"programs": 360.0, "crossover": 95.0}


def log(message: str) -> None:
    """Print at once, so that a run killed at its time limit still shows how far it got."""
    print(message, flush=True)


def use_flatbuffers_copy(folder: Path) -> None:
    """Let `jax.export` deserialize where ``flatbuffers`` is not installed, from the copy the builder put in ``folder``."""
    try:
        import flatbuffers  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(folder / FLATBUFFERS_COPY))


def environment() -> dict[str, Any]:
    """Where the run happens: backend, device kind, versions, ``XLA_FLAGS``."""
    device = jax.devices()[0]
    return {
        "platform": jax.default_backend(),
        "device_kind": device.device_kind,
        "device_count": jax.device_count(),
        "jax_version": jax.__version__,
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def write_results(results: dict[str, Any], out: Path) -> None:
    """Rewrite the results file whole (first to a temporary name, so a kill never leaves half a file)."""
    partial = out.with_name(out.name + ".partial")
    partial.write_text(json.dumps(results, indent=1))
    partial.replace(out)


class Chains:
    """One compiled program and the state of its chains, advanced by every call."""

    def __init__(self, compiled: Any, key_data: Any, q0: Any) -> None:
        self.compiled = compiled
        self.key_data = key_data
        self.q0 = q0

    def call(self) -> tuple[float, Any]:
        """One call from the current state: its seconds and its outputs; the state moves on to the chains' ends."""
        start = time.perf_counter()
        outputs = jax.block_until_ready(self.compiled(self.key_data, self.q0))
        elapsed = time.perf_counter() - start
        self.key_data, self.q0 = jax.block_until_ready((outputs[0], outputs[1][:, -1]))
        return elapsed, outputs


def concrete_shape(shape: Sequence[int | str], chains: int) -> tuple[int, ...]:
    """A manifest shape with its symbolic chain count made ``chains``."""
    return tuple(chains if dim == SYMBOLIC_CHAINS else int(dim) for dim in shape)


def check_outputs(entry: dict[str, Any], chains: int, outputs: Sequence[Any]) -> dict[str, Any]:
    """Whether a call's outputs are finite and of the manifest's shapes, and their mean position after burn-in."""
    key_data, positions, acceptance = (np.asarray(out) for out in outputs)
    expected = [concrete_shape(out["shape"], chains) for out in entry["outputs"]]
    kept = positions[:, entry["burn_in"] :]
    return {
        "shapes_ok": [key_data.shape, positions.shape, acceptance.shape] == expected,
        "finite": bool(np.isfinite(positions).all() and np.isfinite(acceptance).all()),
        "mean": kept.mean(axis=(0, 1)).tolist(),
        "true_mean": entry["true_mean"],
        "acceptance": float(acceptance.mean()),
    }


def start_chains(
    folder: Path, entry: dict[str, Any], chains: int, exported: Any
) -> tuple[Chains, dict[str, Any], list[np.ndarray]]:
    """Compile ``exported`` for ``chains`` chains and call it once from the initial state.

    Returns the chains, moved on by that call, the record of the program
    (compile and first-run seconds, the check of its outputs) and the
    outputs of that call.
    """
    with np.load(folder / entry["keys_file"]) as keys:
        key_data = keys[f"chains_{chains}"]
    q0 = np.zeros(concrete_shape(entry["inputs"][1]["shape"], chains), entry["inputs"][1]["dtype"])
    key_data, q0 = jax.device_put((key_data, q0))
    start = time.perf_counter()
    compiled = jax.jit(exported.call).lower(key_data, q0).compile()
    compile_s = time.perf_counter() - start
    chains_state = Chains(compiled, key_data, q0)
    first_run_s, outputs = chains_state.call()
    record = {
        "name": entry["name"],
        "target": entry["target"],
        "implementation": entry["implementation"],
        "chains": chains,
        "transitions": entry["transitions"],
        "compile_s": compile_s,
        "first_run_s": first_run_s,
        "check": check_outputs(entry, chains, outputs),
    }
    return chains_state, record, [np.asarray(out) for out in outputs]


def interleave(
    chains: Sequence[Chains], min_calls: int, max_calls: int, pair_s: float, deadline: float
) -> list[list[float]]:
    """Call each of ``chains`` in turn, round after round; the seconds of each one's calls.

    Rounds go on until each has ``min_calls`` calls and ``pair_s`` seconds
    have passed (or ``max_calls`` are made); past ``deadline`` they stop
    after the round under way.
    """
    times: list[list[float]] = [[] for _ in chains]
    start = time.perf_counter()
    while True:
        for program, seconds in zip(chains, times):
            seconds.append(program.call()[0])
        calls, now = len(times[0]), time.perf_counter()
        if calls >= max_calls or now > deadline or (calls >= min_calls and now - start >= pair_s):
            return times


def true_mean_text(true_mean: Sequence[float] | None) -> str:
    """The true mean in a progress line: rounded, or "unknown" (a target whose mean has no closed form)."""
    return "unknown" if true_mean is None else str(np.round(true_mean, 3).tolist())


def select_programs(manifest: dict[str, Any], only: Sequence[str]) -> list[dict[str, Any]]:
    """The manifest's programs that ``only`` keeps: each word names a target, an implementation or a program.

    Words of one kind widen the choice; words of different kinds narrow it
    (``gaussian aejax`` is aejax's Gaussian program).
    """
    entries = manifest["programs"]
    for field in ("target", "implementation", "name"):
        words = {word for word in only if any(entry[field] == word for entry in entries)}
        if words:
            entries = [entry for entry in entries if entry[field] in words]
    return entries


def pairs(entries: Sequence[dict[str, Any]], counts: Sequence[int]) -> list[tuple[int, list[dict[str, Any]]]]:
    """The programs timed together: those of one target, at one chain count; fewest chains first."""
    targets = list(dict.fromkeys(entry["target"] for entry in entries))
    grouped = []
    for chains in counts:
        for target in targets:
            group = [entry for entry in entries if entry["target"] == target and chains in entry["chains"]]
            if group:
                grouped.append((chains, group))
    return grouped


def time_pair(
    folder: Path,
    chains: int,
    group: Sequence[dict[str, Any]],
    exported: dict[str, Any],
    settings: argparse.Namespace,
    save: Callable[[dict[str, Any]], None],
) -> None:
    """Compile, check and time the programs of ``group`` at ``chains`` chains; each record goes to ``save``."""
    started: list[tuple[Chains, dict[str, Any]]] = []
    for entry in group:
        try:
            chains_state, record, outputs = start_chains(folder, entry, chains, exported[entry["file"]])
        except Exception as error:  # one broken program must not end the run
            fields = ("name", "target", "implementation", "transitions")
            save({**{f: entry[f] for f in fields}, "chains": chains, "error": repr(error)})
            log(f"  {entry['name']} x{chains}: FAILED {error!r}")
            continue
        if settings.save_outputs:
            settings.save_outputs.mkdir(parents=True, exist_ok=True)
            names = ("key_data", "positions", "acceptance")
            np.savez(settings.save_outputs / f"{entry['name']}-{chains}.npz", **dict(zip(names, outputs)))
        check = record["check"]
        log(
            f"  {entry['name']} x{chains}: compile {record['compile_s']:.2f} s, first run {record['first_run_s']:.3f} s;"
            f" mean {np.round(check['mean'], 3).tolist()} (true {true_mean_text(check['true_mean'])}),"
            f" acceptance {check['acceptance']:.3f}, finite {check['finite']}, shapes ok {check['shapes_ok']}"
        )
        save(record)
        started.append((chains_state, record))
    if not started:
        return
    times = interleave(
        [s for s, _ in started], settings.min_calls, settings.max_calls, settings.pair_s, settings.deadline
    )
    for (_, record), seconds in zip(started, times):
        record["call_ms"] = [s * 1000 for s in seconds]
        record["median_ms"] = statistics.median(record["call_ms"])
        record["calls"] = len(seconds)
        save(record)
    log("  " + ", ".join(f"{r['name']} {r['median_ms']:.3f} ms ({r['calls']} calls)" for _, r in started))


def run_programs(args: argparse.Namespace) -> None:
    """Time every program of the manifest at every chain count up to ``--max-chains``, pair by pair."""
    folder = args.dir
    use_flatbuffers_copy(folder)
    manifest = json.loads((folder / MANIFEST).read_text())
    entries = select_programs(manifest, args.only)
    counts = [n for n in manifest["chain_counts"] if args.max_chains is None or n <= args.max_chains]
    grouped = pairs(entries, counts)
    args.deadline = time.perf_counter() + args.budget_s
    if args.pair_s is None:
        args.pair_s = min(10.0, args.budget_s / (3 * max(1, len(grouped))))
    built_with = {"built_with_jax": manifest.get("jax_version"), "built_with_aejax": manifest.get("aejax")}
    results: dict[str, Any] = {**environment(), **built_with, "programs": []}
    log(f"{results['platform']} ({results['device_kind']}), JAX {results['jax_version']}: {len(grouped)} pairs")
    exported = {}
    for entry in entries:
        exported[entry["file"]] = jax_export.deserialize(bytearray((folder / entry["file"]).read_bytes()))

    def save(record: dict[str, Any]) -> None:
        kept = [r for r in results["programs"] if (r["name"], r["chains"]) != (record["name"], record["chains"])]
        results["programs"] = kept + [record]
        write_results(results, args.out)

    for chains, group in grouped:
        if time.perf_counter() > args.deadline:
            results.setdefault("skipped", []).extend(f"{entry['name']} x{chains}" for entry in group)
            log(f"{group[0]['target']} x{chains}: skipped, the {args.budget_s:.0f} s budget is spent")
            continue
        log(f"{group[0]['target']} x{chains}:")
        time_pair(folder, chains, group, exported, args, save)
    write_results(results, args.out)


BUFFER_WAYS = ("dus", "select", "onehot")
"""How a row of the buffer is written and read: dynamic update/index, or masked selects (read by a chain of
selects over the rows, or by a one-hot masked sum)."""


def write_row(way: str, buffer: Any, position: Any, row: Any) -> Any:
    """``buffer`` with ``row`` at ``position``."""
    if way == "dus":
        return lax.dynamic_update_index_in_dim(buffer, row, position, 0)
    return jnp.where((jnp.arange(buffer.shape[0]) == position)[:, None], row[None, :], buffer)


def read_row(way: str, buffer: Any, position: Any) -> Any:
    """Row ``position`` of ``buffer``."""
    if way == "dus":
        return lax.dynamic_index_in_dim(buffer, position, 0, keepdims=False)
    if way == "onehot":
        return jnp.sum(jnp.where((jnp.arange(buffer.shape[0]) == position)[:, None], buffer, 0), axis=0)
    row = buffer[0]
    for index in range(1, buffer.shape[0]):
        row = jnp.where(position == index, buffer[index], row)
    return row


def buffer_loop(way: str) -> Callable[[Any, Any, Any], tuple[Any, Any]]:
    """One chain's loop of ``steps`` steps: each writes a row at a position of the step and the chain, reads another."""

    def loop(chain: Any, buffer: Any, steps: Any) -> tuple[Any, Any]:
        rows = buffer.shape[0]

        def step(i: Any, carry: tuple[Any, Any]) -> tuple[Any, Any]:
            buffer, total = carry
            # The row depends on what was read, so no step can be hoisted out of the loop.
            buffer = write_row(way, buffer, (i * 7 + chain) % rows, total * 1e-3 + i.astype(total.dtype))
            return buffer, total + read_row(way, buffer, (i * 3 + chain + 1) % rows)

        return lax.fori_loop(0, steps, step, (buffer, jnp.zeros(buffer.shape[1], buffer.dtype)))

    return loop


def time_calls(fn: Callable[[], Any], min_calls: int = 3, max_calls: int = 20, min_s: float = 0.05) -> list[float]:
    """Seconds of calls of ``fn`` (each blocked on): at least ``min_calls`` and ``min_s`` seconds, at most ``max_calls``."""
    times: list[float] = []
    while len(times) < max_calls and (len(times) < min_calls or sum(times) < min_s):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return times


def time_buffer_cell(
    way: str, rows: int, width: int, chains: int | None, steps: int, longest_call_s: float = 0.1
) -> dict[str, Any]:
    """One cell of the crossover: ms per ``steps`` steps of the loop, vmapped over ``chains`` (``None``: no vmap).

    The number of steps is an argument of the program, so a first call of a
    twentieth of them tells how long a step takes: a way slow enough that
    ``steps`` would take over ``longest_call_s`` runs fewer, and its time is
    scaled up to ``steps``.
    """
    loop = buffer_loop(way)
    if chains is None:
        fn, args = loop, (jnp.int32(0), jnp.zeros((rows, width), jnp.float32))
    else:
        fn = jax.vmap(loop, in_axes=(0, 0, None))
        args = (jnp.arange(chains, dtype=jnp.int32), jnp.zeros((chains, rows, width), jnp.float32))
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args, jnp.int32(steps)).compile()
    compile_s = time.perf_counter() - start
    probe_steps = max(1, steps // 20)
    probe_s = time_calls(lambda: compiled(*args, jnp.int32(probe_steps)), min_calls=1, max_calls=1)[0]
    run_steps = min(steps, max(probe_steps, int(longest_call_s * probe_steps / probe_s)))
    times = time_calls(lambda: compiled(*args, jnp.int32(run_steps)))
    return {
        "way": way,
        "rows": rows,
        "width": width,
        "chains": 1 if chains is None else chains,
        "batched": chains is not None,
        "ms": statistics.median(times) * 1000 * steps / run_steps,
        "steps_run": run_steps,
        "calls": len(times),
        "compile_s": compile_s,
    }


def crossover_limits(cells: Sequence[dict[str, Any]], tolerance: float = 0.05) -> list[dict[str, Any]]:
    """For each width, chain count and select way: the largest row count up to which selects keep up with dus.

    A select way keeps up where it takes at most ``1 + tolerance`` times as
    long (at one row both are the same few operations, and only noise tells
    them apart). ``up_to`` is 0 where selects lose already at one row; a row
    count that was not measured ends the run of rows.
    """
    ms = {(c["way"], c["rows"], c["width"], c["chains"], c["batched"]): c["ms"] for c in cells}
    cases = sorted({(c["width"], c["chains"], c["batched"]) for c in cells}, key=lambda k: (not k[2], k[1], k[0]))
    all_rows = sorted({c["rows"] for c in cells})
    limits = []
    for width, chains, is_batched in cases:
        for way in BUFFER_WAYS[1:]:
            up_to = 0
            for rows in all_rows:
                ours, theirs = (
                    ms.get((way, rows, width, chains, is_batched)),
                    ms.get(("dus", rows, width, chains, is_batched)),
                )
                if ours is None or theirs is None or ours > theirs * (1 + tolerance):
                    break
                up_to = rows
            limits.append({"way": way, "width": width, "chains": chains, "batched": is_batched, "up_to": up_to})
    return limits


def run_crossover(args: argparse.Namespace) -> None:
    """Time the buffer loop over the grid of rows, widths, chain counts and ways; print where selects win."""
    accelerated = jax.default_backend() != "cpu"
    chain_counts = args.crossover_chains or ((1, 64, 1024) if accelerated else (1, 64))
    results: dict[str, Any] = {**environment(), "crossover": {"steps": args.crossover_steps, "cells": []}}
    cells, skipped = results["crossover"]["cells"], []
    deadline = time.perf_counter() + args.budget_s
    log(f"{results['platform']} ({results['device_kind']}), JAX {results['jax_version']}: crossover")
    # Fewest rows first: past the budget, the cells left out are those selects are the least likely to win.
    for rows in (1, 2, 4, 8, 16, 32, 64, 128, 256):
        for chains in (None, *chain_counts):
            for width in (1, 8, 64):
                for way in BUFFER_WAYS:
                    label = f"{way} R={rows} W={width} C={'1 (no vmap)' if chains is None else chains}"
                    if time.perf_counter() > deadline:
                        skipped.append(label)
                        continue
                    cells.append(time_buffer_cell(way, rows, width, chains, args.crossover_steps))
                    log(f"  {label}: {cells[-1]['ms']:.3f} ms (compile {cells[-1]['compile_s']:.2f} s)")
        write_results(results, args.out)
    results["crossover"]["skipped"] = skipped
    results["crossover"]["limits"] = crossover_limits(cells)
    write_results(results, args.out)
    log(f"skipped {len(skipped)} cells past the {args.budget_s:.0f} s budget" if skipped else "every cell measured")
    log("largest R up to which the select way takes at most 1.05 times dus's time (0: never), and dus/select by R:")
    speedups = speedups_by_rows(cells)
    for limit in results["crossover"]["limits"]:
        case = (limit["way"], limit["width"], limit["chains"], limit["batched"])
        vmap = f"C={limit['chains']}" if limit["batched"] else "C=1 (no vmap)"
        ratios = " ".join(f"{rows}:{ratio:.3g}" for rows, ratio in speedups[case])
        log(f"  {limit['way']:6} W={limit['width']:<3} {vmap:14} up to R={limit['up_to']:<4} {ratios}")


def speedups_by_rows(cells: Sequence[dict[str, Any]]) -> dict[tuple[Any, ...], list[tuple[int, float]]]:
    """dus's time over each select way's, by row count, for each (way, width, chains, batched)."""
    ms = {(c["way"], c["rows"], c["width"], c["chains"], c["batched"]): c["ms"] for c in cells}
    speedups: dict[tuple[Any, ...], list[tuple[int, float]]] = {}
    for (way, rows, width, chains, is_batched), time_ms in sorted(ms.items(), key=lambda item: item[0][1]):
        dus = ms.get(("dus", rows, width, chains, is_batched))
        if way != "dus" and dus is not None:
            speedups.setdefault((way, width, chains, is_batched), []).append((rows, dus / time_ms))
    return speedups


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir", type=Path, nargs="?", help="the folder many_chains.py build wrote")
    parser.add_argument("--out", type=Path, required=True, help="the results file (JSON)")
    parser.add_argument("--only", nargs="+", default=[], help="targets, implementations or program names to run")
    parser.add_argument("--max-chains", type=int, help="leave out the chain counts above this")
    parser.add_argument("--budget-s", type=float, help="seconds after which no new pair (or crossover cell) starts")
    parser.add_argument("--pair-s", type=float, help="seconds of timed calls per pair (default: from the budget)")
    parser.add_argument("--min-calls", type=int, default=5)
    parser.add_argument("--max-calls", type=int, default=100)
    parser.add_argument("--save-outputs", type=Path, help="write each program's first outputs here (npz)")
    parser.add_argument("--crossover", action="store_true", help="time the buffer loop instead of the programs")
    parser.add_argument("--crossover-steps", type=int, default=1000)
    parser.add_argument("--crossover-chains", type=int, nargs="+")
    args = parser.parse_args(argv)
    if args.dir is None and not args.crossover:
        parser.error("the programs' folder is needed unless --crossover")
    if args.budget_s is None:
        args.budget_s = DEFAULT_BUDGET_S["crossover" if args.crossover else "programs"]
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.crossover:
        run_crossover(args)
    else:
        run_programs(args)


if __name__ == "__main__":
    main()
