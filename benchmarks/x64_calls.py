"""The repeated call of a compiled function with JAX's ``jax_enable_x64`` off against the same call with it on.

    python benchmarks/x64_calls.py [--rounds 15] [--calls 2000] [--save FILE.json]

Run it in a process where the flag is not set (JAX's default, off). Each
workload is compiled twice with mode ``"AEJAX"``: once inside
``enable_x64(True)``, as a process with x64 on makes it,
and once without, as a new user makes it. Both are called first (the
compilation), then as many times as pay for that (a function made without
x64 compiles the program that takes its 64-bit arguments as words once its
calls have: `aejax.linker.call.precision.calls_before_words`), then with
numpy arguments ``--calls`` times per timing, alternately (on, off, on, off, ...) for ``--rounds`` rounds, each in
the setting it was made in, so the machine's drift falls on both alike:
the same arguments on every call (a repeated call, issue #49: at most
1.05), then a new copy of them on each call (a loop over data, each copy
made before the timing). The table shows the median time of one call for
each, and their ratios.

A second table times JAX alone, no aejax code, for ``x * 2`` of a float64
vector of 3: the program jitted with x64 called with x64 on, against the
program taking the argument's words called with x64 off, given a new view
of the argument each call (``x[..., None].view(uint32)``, as aejax's calls
make; or ``x.view(uint32)``, one axis) or one view made once. It is the
floor under the ratio above: what a call taking words costs in JAX itself.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import aejax.adapters  # noqa: F401  # isort: skip  (first: under numpy 2 it makes Aesara 2.9.4 work)
import aesara
import aesara.tensor as at
import jax
import jax.export
import numpy as np

import aejax.linker  # noqa: F401 - registers the mode "AEJAX"
from aejax.adapters.jax_api import enable_x64
from aejax.adapters.words import WORD, program_value
from aejax.linker.call.precision import calls_before_words, taking_words

Workload = tuple[Callable[[], Any], tuple[Any, ...]]


def doubled() -> Workload:
    x = at.dvector("x")
    return lambda: aesara.function([x], x * 2, mode="AEJAX"), (np.ones(3),)


def three_float64() -> Workload:
    x, y, z = at.dvector("x"), at.dvector("y"), at.dscalar("z")
    return lambda: aesara.function([x, y, z], (x * y + z).sum(), mode="AEJAX"), (np.ones(3), np.ones(3), np.float64(2))


def int64() -> Workload:
    i, j = at.lvector("i"), at.lscalar("j")
    return lambda: aesara.function([i, j], i * j + 2**40, mode="AEJAX"), (np.arange(3), np.int64(5))


def shared_update() -> Workload:
    def make() -> Any:
        x = at.dvector("x")
        total = aesara.shared(np.zeros(3), name="total")
        return aesara.function([x], total.sum(), updates={total: total + x}, mode="AEJAX")

    return make, (np.ones(3),)


def float32_only() -> Workload:
    v = at.fvector("v")
    return lambda: aesara.function([v], v * 2, mode="AEJAX"), (np.ones(3, np.float32),)


WORKLOADS = {
    "x * 2 (dvector 3)": doubled,
    "3 float64 inputs": three_float64,
    "int64": int64,
    "shared update": shared_update,
    "float32 only": float32_only,
}


def per_call(f: Callable[..., Any], calls: list[tuple[Any, ...]]) -> float:
    """Microseconds per call of ``f(*args)`` for each ``args`` of ``calls``, Python's garbage collector paused (as
    `timeit` does: a collection falls on whichever timing it happens in)."""
    gc.disable()
    started = time.perf_counter()
    for args in calls:
        f(*args)
    elapsed = time.perf_counter() - started
    gc.enable()
    return elapsed / len(calls) * 1e6


def warmed(f: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """``f`` called first, then as many times again as pay for compiling it (`calls_before_words` of its first call)."""
    started = time.perf_counter()
    f(*args)
    for _ in range(calls_before_words(time.perf_counter() - started)):
        f(*args)
    return f


def measured(workload: Callable[[], Workload], rounds: int, calls: int) -> dict[str, float]:
    """The medians of one call with x64 on and off, each function made and called in its setting, with the same
    arguments each call and with new ones."""
    make, args = workload()
    with enable_x64(True):
        on = warmed(make(), args)
    off = warmed(make(), args)
    same, new = [args] * calls, [tuple(a.copy() for a in args) for _ in range(calls)]
    times: dict[str, list[float]] = {"on": [], "off": [], "on new": [], "off new": []}
    for _ in range(rounds):
        for suffix, arguments in (("", same), (" new", new)):
            with enable_x64(True):
                times["on" + suffix].append(per_call(on, arguments))
            times["off" + suffix].append(per_call(off, arguments))
    medians = {setting: statistics.median(values) for setting, values in times.items()}
    return {**medians, "ratio": medians["off"] / medians["on"], "ratio new": medians["off new"] / medians["on new"]}


def jax_floor(rounds: int, calls: int) -> dict[str, float]:
    """Microseconds per call of ``x * 2`` in JAX alone (module docstring): the x64-on call, and calls taking words."""
    x = np.ones(3)
    with enable_x64(True):
        program = jax.jit(lambda v: (v * 2,))
        program(x)
        pairs = taking_words(program, [jax.ShapeDtypeStruct((3,), np.float64)])
        flat = jax.jit(
            jax.export.export(jax.jit(lambda w: program(program_value(w.reshape(3, 2), x.dtype))))(
                jax.ShapeDtypeStruct((6,), WORD)
            ).call
        )
    made_once = x[..., None].view(WORD)
    cases: dict[str, Callable[[], Any]] = {
        "x64 on": lambda: program(x),
        "words, a new view": lambda: pairs(x[..., None].view(WORD)),
        "words, a new flat view": lambda: flat(x.view(WORD)),
        "words, one view": lambda: pairs(made_once),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for name, call in cases.items():  # first calls: compiled
        with enable_x64(name == "x64 on"):
            call()
    for _ in range(rounds):
        for name, call in cases.items():
            with enable_x64(name == "x64 on"):
                times[name].append(per_call(call, [()] * calls))
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--save", help="write the table as JSON to this file")
    options = parser.parse_args()
    if jax.config.jax_enable_x64:
        parser.error("run it with jax_enable_x64 off (JAX's default): unset JAX_ENABLE_X64")
    table = {name: measured(workload, options.rounds, options.calls) for name, workload in WORKLOADS.items()}
    print(f"{'workload':<20} {'x64 on (us)':>12} {'x64 off (us)':>13} {'off / on':>9} {'new arguments':>14}")
    for name, row in table.items():
        print(f"{name:<20} {row['on']:>12.2f} {row['off']:>13.2f} {row['ratio']:>9.3f} {row['ratio new']:>14.3f}")
    floor = jax_floor(options.rounds, options.calls)
    print(f"\nJAX alone, x * 2: {'case':<24} {'us':>7} {'/ x64 on':>9}")
    for name, micros in floor.items():
        print(f"{'':<18}{name:<24} {micros:>7.2f} {micros / floor['x64 on']:>9.3f}")
    table["JAX alone"] = floor
    if options.save:
        with open(options.save, "w") as file:
            json.dump(table, file, indent=1)


if __name__ == "__main__":
    main()
