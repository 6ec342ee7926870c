"""Train a small RNN a few steps with gradients through the Scan, on JAX via aejax.

The task: predict the next value of a noisy sine wave. The gradient graph is
built by `aesara.grad` (a Scan with mit-mot outputs), and the parameter
updates are Aesara shared-variable updates.

Run: python examples/rnn_training.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import aesara
import aesara.tensor as at
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import BACKENDS, median_seconds  # noqa: E402


def sine_data(steps: int, batch: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    phase = rng.uniform(0, 2 * np.pi, size=(1, batch, 1))
    t = np.arange(steps + 1).reshape(-1, 1, 1) * 0.2
    wave = np.sin(t + phase) + rng.normal(scale=0.05, size=(steps + 1, batch, 1))
    return wave[:-1], wave[1:]


def training_function(hidden: int, mode, seed: int = 1):
    rng = np.random.default_rng(seed)
    W = aesara.shared(rng.normal(size=(hidden, hidden)) * 0.3, name="W")
    U = aesara.shared(rng.normal(size=(1, hidden)) * 0.3, name="U")
    V = aesara.shared(rng.normal(size=(hidden, 1)) * 0.3, name="V")
    xs, ys = at.tensor3("xs", dtype="float64"), at.tensor3("ys", dtype="float64")
    h0 = at.zeros((xs.shape[1], hidden), dtype="float64")
    hs, _ = aesara.scan(lambda x, h: at.tanh(at.dot(h, W) + at.dot(x, U)), sequences=xs, outputs_info=h0)
    loss = ((at.dot(hs, V) - ys) ** 2).mean()
    params = [W, U, V]
    grads = aesara.grad(loss, params)
    updates = {p: p - 0.05 * g for p, g in zip(params, grads)}
    return aesara.function([xs, ys], loss, updates=updates, mode=mode)


def main(steps: int = 200, batch: int = 16, hidden: int = 32, epochs: int = 30, with_c: bool = True) -> dict:
    xs, ys = sine_data(steps, batch)
    print(f"RNN training, {steps} steps x batch {batch}, hidden {hidden}, {epochs} epochs")
    losses = {}
    for label, mode in BACKENDS.items():
        if mode == "FAST_RUN" and not with_c:
            continue
        start = time.perf_counter()
        train = training_function(hidden, mode)
        history = [float(train(xs, ys))]
        compile_time = time.perf_counter() - start
        per_epoch = median_seconds(lambda: history.append(float(train(xs, ys))), epochs - 1)
        losses[label] = history
        print(f"  {label:12} compile+first epoch {compile_time:6.2f} s   per epoch {per_epoch * 1e3:8.2f} ms   "
              f"loss {history[0]:.4f} -> {history[-1]:.4f}")
    return losses


if __name__ == "__main__":
    main()
