"""Newton's iteration for square roots as an until-loop Scan (``lax.while_loop`` on JAX).

The loop stops when every entry has converged. Using only the last value
keeps everything in one jit program; the full trace has a length known only
at run time, which aejax trims at the jit boundary.

Run: python examples/newton.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import aejax.adapters  # noqa: F401  # isort: skip  (first: under numpy 2 it makes Aesara 2.9.4 work)
import aesara
import aesara.tensor as at
import numpy as np
from aesara.scan.utils import until

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import compare_backends, yes  # noqa: E402


def newton_graph(max_steps: int) -> tuple[list, object]:
    """The input vector and the trace of Newton's iteration for its square roots, stopped once converged."""
    a = at.dvector("a")

    def step(x, a):
        new = 0.5 * (x + a / x)
        return new, until(at.max(abs(new - x)) < 1e-12)

    trace, _ = aesara.scan(step, outputs_info=at.ones_like(a), non_sequences=a, n_steps=max_steps)
    return [a], trace


def main(size: int = 100_000, max_steps: int = 1000, calls: int = 5, with_c: bool = True) -> dict:
    inputs, trace = newton_graph(max_steps)
    values = np.linspace(1.0, 1e6, size)
    print(f"Newton's iteration for the square roots of {size} numbers as an until-loop Scan")
    print(f"(at most {max_steps} steps): first its last value (one jit program), then its length (known")
    print("only at run time), each timed on aejax and on Aesara's C backend.")
    timed = {"calls": calls, "with_c": with_c}
    roots = compare_backends("newton -> roots (trace[-1])", inputs, trace[-1], (values,), **timed)
    steps = int(compare_backends("newton -> steps (trace.shape[0])", inputs, trace.shape[0], (values,), **timed))
    error = np.abs(roots / np.sqrt(values) - 1).max()
    print(f"the loop ran {steps} steps; largest relative error against numpy.sqrt {error:.1e}")
    print(f"every root matches numpy.sqrt to 1e-12 (relative): {yes(error < 1e-12)}")
    return {"roots": roots, "steps": steps, "values": values}


if __name__ == "__main__":
    main()
