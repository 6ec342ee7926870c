"""Timing helper shared by the examples: aejax's JAX mode vs Aesara's C backend (its Python code under numpy 2)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import aejax.adapters  # noqa: F401  # isort: skip  (first: under numpy 2 it makes Aesara 2.9.4 work)
import aesara
from progress import Progress

import aejax.linker

AEJAX = "aejax (JAX)"
AESARA = "Aesara C" if aesara.config.cxx else "Aesara Py"
"""Aesara's own backend: C, or its Python code where it compiles no C (under numpy 2: docs/limits.md, Two stacks)."""
BACKENDS = {AEJAX: aejax.linker.mode, AESARA: "FAST_RUN"}


def median_seconds(fn: Callable[[], Any], calls: int) -> float:
    """The median time of ``calls`` calls of ``fn``."""
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def timing_line(what: str, backend: str, first: float, per_call: float, unit: str = "call") -> str:
    """One labelled timing line: what was timed, on which backend, compile+first call and the median call."""
    return f"  {what:38} {backend:12} compile+first {unit} {first:7.2f} s   per {unit} {per_call * 1e3:9.3f} ms"


def time_backends(
    what: str, build: Callable[[Any], Callable[[], Any]], calls: int, with_c: bool = True, unit: str = "call"
) -> dict[str, list[Any]]:
    """For each backend, ``build(mode)`` compiles a zero-argument call; make it ``1 + calls`` times.

    Prints one timing line per backend labelled ``what`` and returns every
    call's result per backend (the first call's result first).
    """
    chosen = {label: mode for label, mode in BACKENDS.items() if with_c or label == AEJAX}
    results: dict[str, list[Any]] = {}
    with Progress(what, len(chosen)) as progress:
        for label, mode in chosen.items():
            progress.step(f"compile and run on {label}")
            start = time.perf_counter()
            call = build(mode)
            results[label] = [call()]
            first = time.perf_counter() - start
            per_call = median_seconds(lambda: results[label].append(call()), calls)  # noqa: B023  (called in this iteration)
            progress.print(timing_line(what, label, first, per_call, unit))
    return results


def compare_backends(
    what: str,
    inputs: Sequence[Any],
    outputs: Any,
    args: Sequence[Any],
    updates: Any = None,
    calls: int = 5,
    with_c: bool = True,
) -> Any:
    """Compile the graph for aejax (and Aesara's C backend), print timings labelled ``what``; aejax's first result."""

    def build(mode: Any) -> Callable[[], Any]:
        return partial(aesara.function(list(inputs), outputs, updates=updates, mode=mode), *args)

    return time_backends(what, build, calls, with_c)[AEJAX][0]


def yes(condition: bool) -> str:
    """'yes' or 'no', for the line each example ends with."""
    return "yes" if condition else "no"
