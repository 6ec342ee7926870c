"""Newton's iteration for square roots as an until-loop Scan (``lax.while_loop`` on JAX).

The loop stops when every entry has converged. Using only the last value
keeps everything in one jit program; the full trace has a length known only
at run time, which aejax trims at the jit boundary.

Run: python examples/newton.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import aesara
import aesara.tensor as at
import numpy as np
from aesara.scan.utils import until

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import compare_backends  # noqa: E402


def newton_graph(max_steps: int) -> tuple[list, object]:
    a = at.dvector("a")

    def step(x, a):
        new = 0.5 * (x + a / x)
        return new, until(at.max(abs(new - x)) < 1e-12)

    trace, _ = aesara.scan(step, outputs_info=at.ones_like(a), non_sequences=a, n_steps=max_steps)
    return [a], trace


def main(size: int = 100_000, max_steps: int = 1000, calls: int = 5, with_c: bool = True) -> dict:
    inputs, trace = newton_graph(max_steps)
    values = np.linspace(1.0, 1e6, size)
    print(f"Newton sqrt of {size} numbers, at most {max_steps} steps")
    roots = compare_backends(inputs, trace[-1], (values,), calls=calls, with_c=with_c)
    print(f"max error vs numpy.sqrt: {np.abs(roots - np.sqrt(values)).max():.2e}")
    steps = compare_backends(inputs, trace.shape[0], (values,), calls=calls, with_c=with_c)
    print(f"the loop ran {int(steps)} steps")
    return {"roots": roots, "steps": int(steps), "values": values}


if __name__ == "__main__":
    main()
