"""Train a small RNN with gradients through the Scan, on JAX via aejax and on Aesara's C backend.

The task: predict the next value of a noisy sine wave. The gradient graph is
built by `aesara.grad` (a Scan with mit-mot outputs), and the parameter
updates are Aesara shared-variable updates. Both backends start from the same
weights and compute the same float64 arithmetic, so their losses per epoch
agree.

Run: python examples/rnn_training.py   (writes rnn_training.png with ``pip install '.[examples]'``)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import aejax.adapters  # noqa: F401  # isort: skip  (first: under numpy 2 it makes Aesara 2.9.4 work)
import aesara
import aesara.tensor as at
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import figures  # noqa: E402
from timing import AEJAX, AESARA, time_backends, yes  # noqa: E402

LEARNING_RATE = 0.05


def sine_data(steps: int, batch: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and next-step targets: ``batch`` noisy sine waves of ``steps`` steps, shaped (steps, batch, 1)."""
    rng = np.random.default_rng(seed)
    phase = rng.uniform(0, 2 * np.pi, size=(1, batch, 1))
    t = np.arange(steps + 1).reshape(-1, 1, 1) * 0.2
    wave = np.sin(t + phase) + rng.normal(scale=0.05, size=(steps + 1, batch, 1))
    return wave[:-1], wave[1:]


def training_function(hidden: int, mode: Any, seed: int = 1) -> Callable[[np.ndarray, np.ndarray], Any]:
    """One epoch of gradient descent: returns the loss before the update, updates the weights in place."""
    rng = np.random.default_rng(seed)
    W = aesara.shared(rng.normal(size=(hidden, hidden)) * 0.9 / np.sqrt(hidden), name="W")
    U = aesara.shared(rng.normal(size=(1, hidden)) * 0.3, name="U")
    V = aesara.shared(rng.normal(size=(hidden, 1)) * 0.3, name="V")
    xs, ys = at.tensor3("xs", dtype="float64"), at.tensor3("ys", dtype="float64")
    h0 = at.zeros((xs.shape[1], hidden), dtype="float64")
    hs, _ = aesara.scan(lambda x, h: at.tanh(at.dot(h, W) + at.dot(x, U)), sequences=xs, outputs_info=h0)
    loss = ((at.dot(hs, V) - ys) ** 2).mean()
    params = [W, U, V]
    grads = aesara.grad(loss, params)
    updates = {p: p - LEARNING_RATE * g for p, g in zip(params, grads)}
    return aesara.function([xs, ys], loss, updates=updates, mode=mode)


def draw(path: str, losses: dict[str, list[float]]) -> Path | None:
    """Training loss per epoch, one line per backend."""
    styles = {AEJAX: "line", AESARA: "dashed"}
    series = [
        figures.Series(label, np.asarray(history), np.arange(1, len(history) + 1), styles[label])
        for label, history in losses.items()
    ]
    return figures.lines(path, "RNN training loss per epoch", series, "epoch", "mean squared error", log_y=True)


def main(
    steps: int = 200,
    batch: int = 16,
    hidden: int = 32,
    epochs: int = 30,
    with_c: bool = True,
    figure: str = "rnn_training.png",
) -> dict:
    xs, ys = sine_data(steps, batch)
    print(f"RNN training: predict the next value of {batch} noisy sine waves of {steps} steps, hidden size {hidden},")
    print(f"{epochs} epochs of gradient descent through the Scan, on aejax and on Aesara's C backend, same start.")

    def epoch(mode: Any) -> Callable[[], Any]:
        return partial(training_function(hidden, mode), xs, ys)

    results = time_backends("train epoch: loss, grad, update", epoch, epochs - 1, with_c, "epoch")
    losses = {label: [float(loss) for loss in history] for label, history in results.items()}
    for label, history in losses.items():
        print(f"  {label:12} loss {history[0]:.4f} -> {history[-1]:.4f}")
    draw(figure, losses)
    ours = np.asarray(losses[AEJAX])
    agree = all(np.allclose(history, ours, rtol=1e-6) for history in losses.values())
    agreement = f", and aejax's and {AESARA}'s losses agree to 1e-6 at every epoch" if with_c else ""
    print(f"the loss fell below a tenth of its first value{agreement}: {yes(ours[-1] < ours[0] / 10 and agree)}")
    return losses


if __name__ == "__main__":
    main()
