"""Timing helper shared by the examples: aejax's JAX mode vs Aesara's C backend."""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Sequence

import aesara

import aejax.linker


def median_seconds(fn: Callable[[], Any], calls: int) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


BACKENDS = {"aejax (JAX)": aejax.linker.mode, "Aesara C": "FAST_RUN"}


def compare_backends(
    inputs: Sequence[Any], outputs: Any, args: Sequence[Any], updates: Any = None, calls: int = 5, with_c: bool = True
) -> Any:
    """Compile the graph for aejax (and Aesara's C backend), print the timings, return aejax's result."""
    results = {}
    for label, mode in BACKENDS.items():
        if mode == "FAST_RUN" and not with_c:
            continue
        start = time.perf_counter()
        fn = aesara.function(list(inputs), outputs, updates=updates, mode=mode)
        results[label] = fn(*args)
        compile_time = time.perf_counter() - start
        call_time = median_seconds(lambda: fn(*args), calls)
        print(f"  {label:12} compile+first call {compile_time:7.2f} s   per call {call_time * 1e3:9.3f} ms")
    return results["aejax (JAX)"]
