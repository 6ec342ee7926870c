"""The benchmark workloads: each as an Aesara graph and as hand-written JAX.

A workload builds the Aesara graph (run under aejax and under Aesara's C
backend) and a hand-written ``jax.jit`` of ``lax.scan`` / ``lax.while_loop``
doing the same math, plus the inputs both take: the same numpy values, as an
Aesara user would pass them (the random walk's hand-written version keeps its
key on the device, as a JAX user would).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import aesara
import aesara.tensor as at
import jax
import jax.numpy as jnp
import numpy as np
from aesara.scan.utils import until
from aesara.tensor.random.utils import RandomStream
from jax import lax


@dataclass
class Workload:
    """One benchmark: an Aesara graph, the same math in JAX, and their inputs."""

    name: str
    target: float
    inputs: list[Any]
    outputs: Any
    updates: Any
    args: tuple[Any, ...]
    jax_fn: Callable[..., Any]
    jax_args: tuple[Any, ...]

    def aesara_function(self, mode: Any) -> Callable[..., Any]:
        return aesara.function(self.inputs, self.outputs, updates=self.updates, mode=mode)


def scalar_recurrence(steps: int) -> Workload:
    x0 = at.dscalar("x0")
    trace, _ = aesara.scan(lambda x: at.sin(x) * 0.9 + 0.1, outputs_info=x0, n_steps=steps)

    @jax.jit
    def hand(x0: Any) -> Any:
        def step(x: Any, _: Any) -> tuple[Any, Any]:
            new = jnp.sin(x) * 0.9 + 0.1
            return new, new

        return lax.scan(step, x0, length=steps)[1]

    return Workload("scalar recurrence", 1.2, [x0], trace, None, (0.5,), hand, (np.float64(0.5),))


def _rnn_data(steps: int, hidden: int, batch: int, features: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    W = rng.normal(size=(hidden, hidden)) / np.sqrt(hidden)
    U = rng.normal(size=(features, hidden)) / np.sqrt(features)
    b = rng.normal(size=hidden) * 0.1
    h0 = np.zeros((batch, hidden))
    xs = rng.normal(size=(steps, batch, features))
    return W, U, b, h0, xs


def _rnn_graph() -> tuple[list[Any], Any]:
    W, U, b, h0, xs = at.dmatrix("W"), at.dmatrix("U"), at.dvector("b"), at.dmatrix("h0"), at.tensor3("xs", dtype="float64")
    hs, _ = aesara.scan(
        lambda x, h, W, U, b: at.tanh(at.dot(h, W) + at.dot(x, U) + b),
        sequences=xs,
        outputs_info=h0,
        non_sequences=[W, U, b],
    )
    return [W, U, b, h0, xs], (hs**2).mean()


def _rnn_loss(W: Any, U: Any, b: Any, h0: Any, xs: Any) -> Any:
    def step(h: Any, x: Any) -> tuple[Any, Any]:
        new = jnp.tanh(h @ W + x @ U + b)
        return new, new

    return jnp.mean(lax.scan(step, h0, xs)[1] ** 2)


def rnn(steps: int, hidden: int = 128, batch: int = 32, features: int = 64) -> Workload:
    inputs, loss = _rnn_graph()
    data = _rnn_data(steps, hidden, batch, features)
    return Workload("RNN", 1.1, inputs, loss, None, data, jax.jit(_rnn_loss), data)


def rnn_gradient(steps: int, hidden: int = 128, batch: int = 32, features: int = 64) -> Workload:
    inputs, loss = _rnn_graph()
    W, h0 = inputs[0], inputs[3]
    data = _rnn_data(steps, hidden, batch, features)
    hand = jax.jit(jax.grad(_rnn_loss, argnums=(0, 3)))
    return Workload("RNN gradient (W, h0)", 1.1, inputs, aesara.grad(loss, [W, h0]), None, data, hand, data)


def mit_sot(steps: int) -> Workload:
    init = at.dvector("init")
    trace, _ = aesara.scan(
        lambda x1, x3: 0.6 * x1 - 0.2 * x3 + 0.1, outputs_info=[dict(initial=init, taps=[-1, -3])], n_steps=steps
    )
    start = np.array([0.1, 0.2, 0.3])

    @jax.jit
    def hand(init: Any) -> Any:
        def step(window: Any, _: Any) -> tuple[Any, Any]:
            new = 0.6 * window[2] - 0.2 * window[0] + 0.1
            return jnp.concatenate([window[1:], new[None]]), new

        return lax.scan(step, init, length=steps)[1]

    return Workload("mit-sot taps [-1,-3]", 1.2, [init], trace, None, (start,), hand, (start,))


def random_walk(steps: int) -> Workload:
    srng = RandomStream(seed=123)
    x0 = at.dscalar("x0")
    walk, updates = aesara.scan(lambda x: x + srng.normal(0.0, 1.0), outputs_info=x0, n_steps=steps)

    @jax.jit
    def hand(key: Any, x0: Any) -> tuple[Any, Any]:
        def step(carry: Any, _: Any) -> tuple[Any, Any]:
            key, x = carry
            key, draw = jax.random.split(key)
            new = x + jax.random.normal(draw, (), jnp.float64)
            return (key, new), new

        (key, _), trace = lax.scan(step, (key, x0), length=steps)
        return key, trace

    key = jax.random.key(0)
    return Workload("Gaussian random walk", 1.1, [x0], walk, updates, (0.0,), hand, (key, np.float64(0.0)))


def newton_until(max_steps: int, size: int = 1000) -> Workload:
    a = at.dvector("a")

    def step(x: Any, a: Any) -> Any:
        new = 0.5 * (x + a / x)
        return new, until(at.max(abs(new - x)) < 1e-12)

    trace, _ = aesara.scan(step, outputs_info=at.ones_like(a), non_sequences=a, n_steps=max_steps)
    values = np.linspace(1.0, 1e6, size)

    @jax.jit
    def hand(a: Any) -> Any:
        def cond(state: Any) -> Any:
            i, x, done = state
            return (i < max_steps) & ~done

        def body(state: Any) -> Any:
            i, x, _ = state
            new = 0.5 * (x + a / x)
            return i + 1, new, jnp.max(jnp.abs(new - x)) < 1e-12

        return lax.while_loop(cond, body, (0, jnp.ones_like(a), False))[1]

    return Workload("until-loop (Newton sqrt)", 1.3, [a], trace[-1], None, (values,), hand, (values,))


def all_workloads(scale: float = 1.0) -> list[Workload]:
    """The suite of issue #4; ``scale`` shrinks step counts for a quick run."""

    def n(steps: int) -> int:
        return max(2, int(steps * scale))

    return [
        scalar_recurrence(n(10_000)),
        rnn(n(1_000)),
        mit_sot(n(5_000)),
        rnn_gradient(n(1_000)),
        random_walk(n(10_000)),
        newton_until(n(1_000)),
    ]
