"""A user's first minute: a 500-transition NUTS chain compiled and called once in a fresh process (issue #39).

    python benchmarks/cold_start.py [--repeats 3] [--only gaussian] [--transitions 500] [--profile DIR] [--save FILE.json]

Each measurement is a new process with the program store and JAX's
persistent cache off (``AEJAX_PERSISTENT_CACHE=0``) and a fresh Aesara
``base_compiledir``, so nothing a previous run compiled is found. aejax's
time is ``aesara.function`` (Aesara's rewriting, then the linker's set-up)
and the first call (our lowering traced by JAX, JAX's lowering to MLIR, XLA's
compile and the run); NumPyro's is its NUTS set-up (``init_kernel``, which
runs eagerly) and the first call of the jitted chain (the same phases).
Both compute in float64, as ``run.py`` does; building aehmc's symbolic graph
is reported apart and counted in neither. Each system runs alone in its
process; the processes take turns, and each ratio is the median of the
rounds' ratios: aejax's total against NumPyro's (set-up and first call), and
against NumPyro's first call alone.

JAX's own timers (`jax.monitoring`) split each total, and the first call
alone, into ``trace`` (JAX tracing a jitted function; for aejax its Python
lowering of every node runs inside it), ``mlir`` (the jaxpr lowered to a
module) and ``xla`` (XLA's compile), an instant inside several counted in
the innermost; ``rest`` is the time outside them (aejax's rewriting and the
Scans' lowering, the run). ``--profile DIR`` writes a cProfile of each
process's measured part there.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

TARGETS = {"gaussian": "gaussian_setup", "logistic": "logistic_setup"}
SYSTEMS = ("aejax", "numpyro")
JAX_PHASES = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "mlir",
    "/jax/core/compile/backend_compile_duration": "xla",
}
"""JAX's compile stages, innermost last: a compile inside a trace (an eager op) counts as the compile."""
STAGES = {"aejax": ("rewrite", "link", "call"), "numpyro": ("setup", "call")}
"""The stages of each system's measured time, in order; they add up to its total."""
JAX_COLUMNS = (*JAX_PHASES.values(), "rest")


class JaxTimers:
    """The time spans of JAX's compile stages while listening (`jax.monitoring`)."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float, int]] = []
        self.listening = False

    def __call__(self, event: str, start: float, end: float, **kwargs: Any) -> None:
        if self.listening and event in JAX_PHASES:
            self.spans.append((start, end, list(JAX_PHASES).index(event)))

    @contextmanager
    def listen(self) -> Iterator[None]:
        self.spans.clear()
        self.listening = True
        try:
            yield
        finally:
            self.listening = False

    def phases(self, total: float, within: tuple[float, float] = (0.0, float("inf"))) -> dict[str, float]:
        """The seconds of each stage ``within`` a span of wall-clock time, each instant counted once (in its
        innermost stage); ``rest`` is what is left of ``total``."""
        spans = [(max(start, within[0]), min(end, within[1]), rank) for start, end, rank in self.spans]
        spans = [span for span in spans if span[0] < span[1]]
        edges = sorted({t for start, end, _ in spans for t in (start, end)})
        names = list(JAX_PHASES.values())
        seconds = dict.fromkeys(names, 0.0)
        for left, right in zip(edges, edges[1:]):
            inner = max((rank for start, end, rank in spans if start <= left and right <= end), default=None)
            if inner is not None:
                seconds[names[inner]] += right - left
        return {**seconds, "rest": total - sum(seconds.values())}


CALL_WINDOW = "call_window"
"""The key of the first call's wall-clock span in a child's stages, taken out before they are reported."""


def timed(stage: Callable[[], Any]) -> tuple[Any, float, tuple[float, float]]:
    """``stage()`` waited for, its seconds, and its span of wall-clock time (JAX's spans are in ``time.time``)."""
    import jax

    wall, start = time.time(), time.perf_counter()
    value = jax.block_until_ready(stage())
    return value, time.perf_counter() - start, (wall, time.time())


def setup_of(target: str, transitions: int) -> Any:
    import workloads

    return getattr(workloads, TARGETS[target])(transitions)


def aejax_child(target: str, transitions: int, timers: JaxTimers) -> dict[str, float]:
    """aejax's stages: the NUTS graph's ``aesara.function`` (rewrite, link) and its first call."""
    import aesara
    import numpy as np
    from workloads import nuts_chain

    import aejax.linker

    setup = setup_of(target, transitions)
    (inputs, outputs, updates), built, _ = timed(
        lambda: nuts_chain(setup.logprob, transitions, setup.step_size, setup.dims, setup.seed)
    )
    mode, seconds = timed_mode(aejax.linker.mode)
    with measured(timers):
        fn = aesara.function(inputs, outputs, updates=updates, mode=mode)
        _, seconds["call"], window = timed(lambda: fn(np.zeros(setup.dims)))
    return {"build": built, **seconds, CALL_WINDOW: window}


def timed_mode(mode: Any) -> tuple[Any, dict[str, float]]:
    """``mode`` whose function maker adds the seconds of rewriting and of the linker's set-up to a dict."""
    seconds = {"rewrite": 0.0, "link": 0.0}

    class TimedMaker(mode.function_maker):  # type: ignore[misc, name-defined]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            start = time.perf_counter()
            super().__init__(*args, **kwargs)
            seconds["rewrite"] += time.perf_counter() - start

        def create(self, *args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return super().create(*args, **kwargs)
            finally:
                seconds["link"] += time.perf_counter() - start

    timed = mode.clone()
    timed.function_maker = TimedMaker
    return timed, seconds


def numpyro_child(target: str, transitions: int, timers: JaxTimers) -> dict[str, float]:
    """NumPyro's stages: its NUTS set-up (``init_kernel``, eager) and the jitted chain's first call."""
    import numpy as np
    from workloads import numpyro_nuts

    setup = setup_of(target, transitions)
    with measured(timers):
        chain, built, _ = timed(
            lambda: numpyro_nuts(setup.potential, transitions, setup.step_size, setup.dims, setup.seed)
        )
        if chain is None:
            raise RuntimeError("NumPyro is not installed: pip install '.[bench]'")
        _, called, window = timed(lambda: chain(np.zeros(setup.dims)))
    return {"setup": built, "call": called, CALL_WINDOW: window}


PROFILE_ENV = "COLD_START_PROFILE"


@contextmanager
def measured(timers: JaxTimers) -> Iterator[None]:
    """The measured part of a child: JAX's stages listened to, and cProfiled into ``$COLD_START_PROFILE`` if set."""
    path = os.environ.get(PROFILE_ENV)
    profile = cProfile.Profile() if path else None
    with timers.listen():
        if profile:
            profile.enable()
        try:
            yield
        finally:
            if profile:
                profile.disable()
                profile.dump_stats(path)


def child(system: str, target: str, transitions: int) -> dict[str, float]:
    """One system's stages in this (fresh) process, in seconds, its ``total`` and JAX's phases of that total."""
    import jax

    jax.config.update("jax_enable_x64", True)
    timers = JaxTimers()
    jax.monitoring.register_event_time_span_listener(timers)
    run = aejax_child if system == "aejax" else numpyro_child
    seconds = run(target, transitions, timers)
    window = seconds.pop(CALL_WINDOW)
    total = sum(seconds[stage] for stage in STAGES[system])
    call = {f"call {phase}": value for phase, value in timers.phases(seconds["call"], window).items()}
    return {**seconds, "total": total, **timers.phases(total), **call}


def run_child(system: str, target: str, args: argparse.Namespace, repeat: int) -> dict[str, float]:
    """`child` in a new process with the store off and an empty Aesara compile directory."""
    with tempfile.TemporaryDirectory(prefix="aesara-cold-") as compiledir:
        flags = ",".join(filter(None, [os.environ.get("AESARA_FLAGS"), f"base_compiledir={compiledir}"]))
        env = {**os.environ, "AESARA_FLAGS": flags, "AEJAX_PERSISTENT_CACHE": "0"}
        env.pop("JAX_COMPILATION_CACHE_DIR", None)
        if args.profile:
            Path(args.profile).mkdir(parents=True, exist_ok=True)
            env[PROFILE_ENV] = str(Path(args.profile) / f"{system}-{target}-{repeat}.prof")
        command = [sys.executable, __file__, "--child", system, target, "--transitions", str(args.transitions)]
        done = subprocess.run(command, env=env, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def measure(target: str, args: argparse.Namespace) -> dict[str, Any]:
    """Each system's phases on ``target`` in ``args.repeats`` rounds of fresh processes, and the median ratio."""
    runs: dict[str, list[dict[str, float]]] = {system: [] for system in SYSTEMS}
    for repeat in range(args.repeats):
        for system in SYSTEMS:
            runs[system].append(run_child(system, target, args, repeat))
            print(f"  {target} {system} #{repeat}: {phase_line(system, runs[system][-1])}", flush=True)
    pairs = list(zip(runs["aejax"], runs["numpyro"]))
    ratios = {of: statistics.median(ours["total"] / theirs[of] for ours, theirs in pairs) for of in ("total", "call")}
    return {"target": target, "runs": runs, "ratio": ratios}


def phase_line(system: str, seconds: dict[str, float]) -> str:
    stages = " + ".join(f"{stage} {seconds[stage]:.2f}" for stage in STAGES[system])
    phases = " ".join(f"{phase} {seconds[phase]:.2f}" for phase in JAX_COLUMNS)
    call = " ".join(f"{phase} {seconds['call ' + phase]:.2f}" for phase in JAX_COLUMNS)
    built = f"; graph build {seconds['build']:.2f} not counted" if "build" in seconds else ""
    return f"total {seconds['total']:.2f} s = {stages}\n      all: {phases}; first call: {call}{built}"


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def report(result: dict[str, Any]) -> str:
    """The median phases of each system on one target, and the ratio of their totals."""
    ratio = result["ratio"]
    lines = [
        f"{result['target']}: aejax / NumPyro = {ratio['total']:.2f}, / NumPyro's first call alone = "
        f"{ratio['call']:.2f} (medians of per-round ratios)"
    ]
    for system in SYSTEMS:
        lines.append(f"  {system:8} median {phase_line(system, medians(result['runs'][system]))}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="fresh processes per system and target")
    parser.add_argument("--only", choices=list(TARGETS), help="measure one target")
    parser.add_argument("--transitions", type=int, default=500, help="NUTS transitions in the chain")
    parser.add_argument("--profile", metavar="DIR", help="write a cProfile of each process's measured part to DIR")
    parser.add_argument("--save", metavar="FILE", help="keep every process's phases as JSON")
    parser.add_argument("--child", nargs=2, metavar=("SYSTEM", "TARGET"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.child:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        print(json.dumps(child(*args.child, args.transitions)))
        return
    results = [measure(target, args) for target in ([args.only] if args.only else TARGETS)]
    print("\n".join(report(result) for result in results))
    if args.save:
        Path(args.save).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
