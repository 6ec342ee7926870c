"""aejax exports run where Aesara cannot be installed: their values against AEJAX's own, two calls each.

``build`` (needs aejax) compiles three graphs with aejax's mode (draws from a
shared generator, a random walk Scan, an ``until`` loop), exports each with
`aejax.linker.export_graph` for the CPU and the TPU, and saves beside each
export the arguments and what two successive calls of the compiled function
return, and a copy of `aejax.linker.loader`. ``run`` (needs JAX and numpy alone, as on the TPU machine)
loads the exports with that copy, as docs/export.md's runner does, calls each twice, passing the new
state on, and writes the largest relative error against those values.

    python benchmarks/export_roundtrip.py build .device/export_rt
    python benchmarks/export_roundtrip.py run .device/export_rt --out results.json [--flatbuffers DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

CALLS = 2


def graphs() -> dict[str, tuple[Callable[..., Any], list[np.ndarray]]]:
    """Each case's compiled function and its arguments."""
    import aesara
    import aesara.tensor as at
    from aesara.scan.utils import until
    from aesara.tensor.random.utils import RandomStream

    import aejax.linker  # noqa: F401 (registers the mode)

    srng = RandomStream(seed=7)
    x = at.dvector("x")
    noise = aesara.function([x], x + srng.normal(0, 1, size=3), updates=srng.updates(), mode="AEJAX")

    walk_rng = RandomStream(seed=11)
    start = at.dscalar("start")
    walk, walk_updates = aesara.scan(lambda s: s + walk_rng.normal(0, 1), outputs_info=start, n_steps=50)
    walk_fn = aesara.function([start], walk, updates=walk_updates, mode="AEJAX")

    v = at.dscalar("v")

    def newton(y: Any) -> Any:
        better = 0.5 * (y + v / y)
        return better, until(abs(better - y) < 1e-12)

    roots, _ = aesara.scan(newton, outputs_info=v, n_steps=200)
    newton_fn = aesara.function([v], [roots[-1], roots.shape[0]], mode="AEJAX")
    return {
        "noise": (noise, [np.arange(3.0)]),
        "walk": (walk_fn, [np.float64(1.0)]),
        "until": (newton_fn, [np.float64(7.0)]),
    }


def build(out: Path) -> None:
    """Export every case for the CPU and the TPU, with its arguments and the compiled function's values."""
    import aejax.linker.loader

    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(aejax.linker.loader.__file__, out / "loader.py")  # what ``run`` reads the exports with
    for name, (function, args) in graphs().items():
        exported = aejax.linker.export_graph(function, *args, platforms=["cpu", "tpu"])
        (out / f"{name}.aejax").write_bytes(exported.serialize())
        values = {f"arg_{i}": np.asarray(arg) for i, arg in enumerate(args)}
        for call in range(CALLS):
            outputs = function(*args)
            outputs = outputs if isinstance(outputs, list) else [outputs]
            values.update({f"call{call}_{i}": np.asarray(value) for i, value in enumerate(outputs)})
        np.savez(out / f"{name}.npz", **values)
        print(f"{name}: {len(args)} argument(s), x64 {exported.x64}")


def largest_error(program: Any, state: dict, values: Any) -> float:
    """The largest relative error of ``CALLS`` successive calls of ``program`` against the saved ``values``."""
    args = [values[f"arg_{i}"] for i in range(sum(key.startswith("arg_") for key in values.files))]
    worst = 0.0
    for call in range(CALLS):
        outputs, state = program.call(state, *args)
        outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        for i, value in enumerate(outputs):
            expected = values[f"call{call}_{i}"]
            error = np.abs(np.asarray(value, np.float64) - expected) / (1e-12 + np.abs(expected))
            worst = max(worst, float(np.max(error)))
    return worst


def run(folder: Path, out: Path) -> None:
    """Call every export in ``folder`` and write each case's largest relative error to ``out``."""
    import jax

    sys.path.insert(0, str(folder))
    from loader import load  # aejax.linker.loader, copied by ``build``: it needs JAX and numpy alone

    results: dict[str, Any] = {"jax": jax.__version__, "device": str(jax.devices()[0]), "cases": {}}
    for path in sorted(folder.glob("*.aejax")):
        description, program, state = load(path.read_bytes())
        jax.config.update("jax_enable_x64", description["x64"])
        error = largest_error(program, state, np.load(folder / f"{path.stem}.npz"))
        results["cases"][path.stem] = {"platforms": description["platforms"], "max_rel_err": error}
        print(path.stem, results["cases"][path.stem], flush=True)
    out.write_text(json.dumps(results, indent=1))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("build").add_argument("dir", type=Path)
    runner = commands.add_parser("run")
    runner.add_argument("dir", type=Path)
    runner.add_argument("--out", type=Path, required=True)
    runner.add_argument("--flatbuffers", type=Path, help="a folder holding the flatbuffers package, if not installed")
    args = parser.parse_args(argv)
    if args.command == "build":
        build(args.dir)
    else:
        if args.flatbuffers:
            sys.path.insert(0, str(args.flatbuffers))
        run(args.dir, args.out)


if __name__ == "__main__":
    main()
