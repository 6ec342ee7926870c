"""The benchmark workloads: each as an Aesara graph and as hand-written JAX.

A workload builds the Aesara graph (run under aejax and under Aesara's C
backend) and a hand-written ``jax.jit`` of ``lax.scan`` / ``lax.while_loop``
doing the same math, plus the inputs both take: the same numpy values, as an
Aesara user would pass them (the random walk's hand-written version keeps its
key on the device, as a JAX user would).

The per-call workloads (P1, P2, one HMC transition) are so short that the cost
of a call itself is measured: their hand-written versions return numpy, as
Aesara functions do, and keep their PRNG key between calls in Python
(:class:`KeyedJax`). ``P1 on device`` runs in the device-I/O mode
``"AEJAX_DEVICE"`` (``Workload.aejax_mode``): a ``jax.Array`` in and out on
both sides. The SGD steps update a shared ``n x n`` weight matrix every call,
made from a ``jax.Array`` so that it stays on the device under aejax; their
hand-written version keeps it as a ``jax.Array`` whose buffer each call
donates (:class:`DonatedSGD`). The NUTS workloads run 500 aehmc NUTS
transitions in one Scan; their anchor is NumPyro's NUTS when NumPyro is
installed (``pip install '.[bench]'``), and they have none otherwise.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import aejax.adapters  # noqa: F401  # isort: skip  (first: under numpy 2 it makes Aesara 2.9.4 work)
import aesara
import aesara.tensor as at
import jax
import jax.numpy as jnp
import numpy as np
from aehmc import hmc, nuts
from aeppl import joint_logprob
from aesara.graph.basic import Apply
from aesara.graph.op import Op
from aesara.ifelse import ifelse
from aesara.scan.utils import until
from aesara.tensor.random.utils import RandomStream
from eight_schools_numpyro import MU_SCALE, STANDARD_ERRORS, TAU_SCALE, TREATMENT_EFFECTS
from jax import lax

from aejax.linker import CallbackWarning


@dataclass
class Workload:
    """One benchmark: an Aesara graph, the same math in JAX, and their inputs."""

    name: str
    target: float
    inputs: list[Any]
    outputs: Any
    updates: Any
    args: tuple[Any, ...]
    jax_fn: Callable[..., Any] | None
    """The hand-written JAX version; ``None`` for a workload without one (the NUTS workloads without NumPyro)."""
    jax_args: tuple[Any, ...]
    aejax_mode: str = "AEJAX"
    """The mode aejax compiles the graph with: ``"AEJAX"``, or ``"AEJAX_DEVICE"`` for ``jax.Array`` in and out."""
    host_graph: tuple[list[Any], Any, Any] | None = None
    """``(inputs, outputs, updates)`` other modes compile instead, with shared variables of their own.

    For a graph whose shared variables stay on the device under aejax: a
    function of another mode compiled with them would make them keep host
    values (`aejax.adapters.resident`).
    """

    gradients: Callable[[], dict[str, float]] | None = None
    """Gradient evaluations per transition of aejax's chain and of the hand-written one, counted on one call (NUTS)."""
    transitions: int | None = None
    """Transitions per call, for a sampler."""

    def aesara_function(self, mode: Any) -> Callable[..., Any]:
        inputs, outputs, updates = self.inputs, self.outputs, self.updates
        if mode != self.aejax_mode and self.host_graph is not None:
            inputs, outputs, updates = self.host_graph
        return aesara.function(inputs, outputs, updates=updates, mode=mode)


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


def _rnn_graph(last_state: bool = False) -> tuple[list[Any], Any]:
    """The RNN's inputs and loss: the mean square of its states, or with ``last_state`` the sum of its last one."""
    W, U, b, h0, xs = (
        at.dmatrix("W"),
        at.dmatrix("U"),
        at.dvector("b"),
        at.dmatrix("h0"),
        at.tensor3("xs", dtype="float64"),
    )
    hs, _ = aesara.scan(
        lambda x, h, W, U, b: at.tanh(at.dot(h, W) + at.dot(x, U) + b),
        sequences=xs,
        outputs_info=h0,
        non_sequences=[W, U, b],
    )
    return [W, U, b, h0, xs], hs[-1].sum() if last_state else (hs**2).mean()


def _rnn_loss(W: Any, U: Any, b: Any, h0: Any, xs: Any, last_state: bool = False) -> Any:
    def step(h: Any, x: Any) -> tuple[Any, Any]:
        new = jnp.tanh(h @ W + x @ U + b)
        return new, new

    hs = lax.scan(step, h0, xs)[1]
    return hs[-1].sum() if last_state else jnp.mean(hs**2)


def rnn(steps: int, hidden: int = 128, batch: int = 32, features: int = 64) -> Workload:
    inputs, loss = _rnn_graph()
    data = _rnn_data(steps, hidden, batch, features)
    return Workload("RNN", 1.1, inputs, loss, None, data, jax.jit(_rnn_loss), data)


def rnn_gradient(
    steps: int, hidden: int = 128, batch: int = 32, features: int = 64, last_state: bool = False
) -> Workload:
    """The gradient of the RNN's loss w.r.t. ``W`` and ``h0``; with ``last_state``, of a loss on its last state only.

    A loss on the last state scatters a constant into a zero buffer as long
    as the trace, which XLA constant-folded in seconds before aejax built such
    buffers behind a barrier (issue #28): its compile time is the measure.
    """
    inputs, loss = _rnn_graph(last_state)
    W, h0 = inputs[0], inputs[3]
    data = _rnn_data(steps, hidden, batch, features)
    hand = jax.jit(jax.grad(partial(_rnn_loss, last_state=last_state), argnums=(0, 3)))
    name = "RNN last-state gradient" if last_state else "RNN gradient (W, h0)"
    return Workload(name, 1.1, inputs, aesara.grad(loss, [W, h0]), None, data, hand, data)


def mit_sot(steps: int) -> Workload:
    """The mit-sot recurrence ``y_t = (y_{t-1} + y_{t-3}) * a`` from three initial values, ``a`` an input."""
    init, a = at.dvector("init"), at.dscalar("a")
    trace, _ = aesara.scan(
        lambda x1, x3, a: (x1 + x3) * a,
        outputs_info=[dict(initial=init, taps=[-1, -3])],
        non_sequences=a,
        n_steps=steps,
    )
    args = (np.array([0.1, 0.2, 0.3]), np.float64(0.5))

    @jax.jit
    def hand(init: Any, a: Any) -> Any:
        def step(window: tuple[Any, Any, Any], _: Any) -> tuple[tuple[Any, Any, Any], Any]:
            oldest, middle, last = window
            new = (last + oldest) * a
            return (middle, last, new), new

        return lax.scan(step, (init[0], init[1], init[2]), length=steps)[1]

    return Workload("mit-sot taps [-1,-3]", 1.2, [init, a], trace, None, args, hand, args)


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
    return Workload("Gaussian random walk", 0.1, [x0], walk, updates, (0.0,), hand, (key, np.float64(0.0)))


def newton_until(max_steps: int, size: int = 1000) -> Workload:
    """Newton's square root of ``size`` values until it settles: the last iterate and the number of steps taken."""
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

        steps, last, _ = lax.while_loop(cond, body, (0, jnp.ones_like(a), False))
        return last, steps

    outputs = [trace[-1], trace.shape[0]]
    return Workload("until-loop (Newton sqrt)", 1.5, [a], outputs, None, (values,), hand, (values,))


def lazy_ifelse(size: int = 200, products: int = 8) -> Workload:
    """An ``ifelse`` whose branch not taken is ``products`` matrix products, against the taken branch alone in JAX.

    Aesara's ``ifelse`` runs only the branch its condition picks; so must
    aejax's (issue #38): its call should cost what the taken branch costs.
    """
    m, c = at.dmatrix("m"), at.dscalar("c")
    expensive = m
    for _ in range(products):
        expensive = at.tanh(expensive @ m)
    out = ifelse(c > 0, at.tanh(m).sum(), expensive.sum())
    value = np.random.default_rng(0).normal(size=(size, size)) / size
    taken = jax.jit(lambda m: jnp.tanh(m).sum())
    return Workload(
        "ifelse, costly branch not taken",
        1.3,
        [m, c],
        out,
        None,
        (value, np.float64(1.0)),
        lambda m: np.asarray(taken(m)),
        (value,),
    )


class KeyedJax:
    """A jitted ``step(key_data, *args) -> (key_data, outputs)`` that keeps its PRNG key between calls.

    This is how a JAX user keeps a sampler's random state: the raw key data
    (``jax.random.key_data``) held in Python, passed to every call and replaced
    by the one it returns. The outputs come back as numpy arrays, as an Aesara
    function's do, so both sides pay the copy out.
    """

    def __init__(self, step: Callable[..., tuple[Any, tuple[Any, ...]]], seed: int) -> None:
        self.step = jax.jit(step)
        self.key_data = jax.random.key_data(jax.random.key(seed))

    def __call__(self, *args: Any) -> list[np.ndarray]:
        self.key_data, outputs = self.step(self.key_data, *args)
        return [np.asarray(out) for out in outputs]


def add_one(size: int = 10) -> Workload:
    """P1: ``x + 1`` on a float64 vector, numpy in and out: the cost of a call."""
    x = at.dvector("x")
    jitted = jax.jit(lambda x: x + 1)
    value = np.linspace(0.0, 1.0, size)
    return Workload("P1 add one", 1.3, [x], x + 1, None, (value,), lambda x: np.asarray(jitted(x)), (value,))


def add_one_on_device(size: int = 10) -> Workload:
    """P1 in the device-I/O mode: ``x + 1`` with a ``jax.Array`` in and out, against ``jax.jit`` of the same."""
    x = at.dvector("x")
    value = jnp.linspace(0.0, 1.0, size)
    hand = jax.jit(lambda x: x + 1)
    return Workload("P1 on device", 1.15, [x], x + 1, None, (value,), hand, (value,), aejax_mode="AEJAX_DEVICE")


def add_normal_noise(size: int = 10, seed: int = 42) -> Workload:
    """P2: ``x + normal(size)`` from a shared generator that advances every call."""
    srng = RandomStream(seed)
    x = at.dvector("x")
    noisy = x + srng.normal(size=size)

    def step(key_data: Any, x: Any) -> tuple[Any, tuple[Any]]:
        key, draw = jax.random.split(jax.random.wrap_key_data(key_data))
        return jax.random.key_data(key), (x + jax.random.normal(draw, x.shape, jnp.float64),)

    value = np.zeros(size)
    return Workload("P2 add normal noise", 1.5, [x], noisy, srng.updates(), (value,), KeyedJax(step, seed), (value,))


SGD_BATCH = 32
SGD_RATE = 0.05


def sgd_data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The SGD step's initial weights (``n x n``, zeros) and its one batch of 32 inputs and targets."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(SGD_BATCH, n)) / np.sqrt(n)
    return np.zeros((n, n)), X, X @ rng.normal(size=(n, n))


def sgd_loss(W: Any, X: Any, Y: Any) -> Any:
    """The mean squared error of the linear model ``X @ W`` on the targets ``Y``, in Aesara or in JAX."""
    return ((X @ W - Y) ** 2).mean()


class DonatedSGD:
    """The SGD step in JAX as a JAX user writes it: ``W`` kept as a ``jax.Array``, its buffer donated to each step.

    Each call returns the loss as numpy, as the Aesara function does.
    """

    def __init__(self, W: np.ndarray) -> None:
        self.W = jnp.asarray(W)

        def step(W: Any, X: Any, Y: Any) -> tuple[Any, Any]:
            loss, grad = jax.value_and_grad(sgd_loss)(W, X, Y)
            return W - SGD_RATE * grad, loss

        self.step = jax.jit(step, donate_argnums=0)

    def __call__(self, X: Any, Y: Any) -> np.ndarray:
        self.W, loss = self.step(self.W, X, Y)
        return np.asarray(loss)


def _sgd_graph(W: Any) -> tuple[list[Any], Any, Any]:
    x, y = at.dmatrix("X"), at.dmatrix("Y")
    loss = sgd_loss(W, x, y)
    return [x, y], loss, {W: W - SGD_RATE * aesara.grad(loss, W)}


def sgd_step(n: int) -> Workload:
    """One SGD step of a linear model: ``W`` (``n x n`` float64, shared) updated every call, a batch of 32.

    aejax's ``W`` is made from a ``jax.Array``, so it stays on the device
    between calls; the C backend's is a numpy shared variable of its own.
    """
    W0, X, Y = sgd_data(n)
    inputs, loss, updates = _sgd_graph(aesara.shared(jnp.asarray(W0), name="W"))
    host_graph = _sgd_graph(aesara.shared(W0, name="W"))
    return Workload(
        f"SGD step n={n}", 1.1, inputs, loss, updates, (X, Y), DonatedSGD(W0), (X, Y), host_graph=host_graph
    )


GAUSSIAN_MEAN = np.array([1.0, -2.0])
GAUSSIAN_PRECISION = np.linalg.inv(np.array([[1.0, 0.5], [0.5, 1.0]]))


def gaussian_logprob(q: Any) -> Any:
    """Log-density (up to a constant) of a 2-D Gaussian with correlation 0.5, for an Aesara or a JAX ``q``.

    The constants are made in ``q``'s dtype: JAX 0.12 converts a float64 numpy constant of an eager op to a float64
    buffer in a thread whose ``jax_enable_x64`` is off while the process's is on, where the op expects float32."""
    mean, precision = (np.asarray(constant, dtype=q.dtype) for constant in (GAUSSIAN_MEAN, GAUSSIAN_PRECISION))
    d = q - mean
    return -0.5 * (d @ precision @ d)


def gaussian_state(q: np.ndarray) -> tuple[np.ndarray, np.float64, np.ndarray]:
    """aehmc's chain state at ``q``: the position, its potential energy and the gradient of that."""
    d = q - GAUSSIAN_MEAN
    return q, np.float64(0.5 * d @ GAUSSIAN_PRECISION @ d), GAUSSIAN_PRECISION @ d


def hmc_step(
    potential: Callable[[Any], Any], step_size: float, integration_steps: int
) -> Callable[..., tuple[Any, tuple[Any, Any, Any]]]:
    """One HMC transition in JAX, for :class:`KeyedJax`: fresh momentum, leapfrog steps, Metropolis accept."""
    energy_and_grad = jax.value_and_grad(potential)

    def leapfrog(state: tuple[Any, ...], _: Any) -> tuple[tuple[Any, ...], None]:
        q, p, _, grad = state
        q = q + step_size * (p - 0.5 * step_size * grad)
        energy, new_grad = energy_and_grad(q)
        return (q, p - 0.5 * step_size * (grad + new_grad), energy, new_grad), None

    def step(key_data: Any, q: Any, energy: Any, grad: Any) -> tuple[Any, tuple[Any, Any, Any]]:
        key, momentum_key, accept_key = jax.random.split(jax.random.wrap_key_data(key_data), 3)
        p = jax.random.normal(momentum_key, q.shape, jnp.float64)
        (q_new, p_new, energy_new, grad_new), _ = lax.scan(leapfrog, (q, p, energy, grad), length=integration_steps)
        log_ratio = energy + 0.5 * p @ p - energy_new - 0.5 * p_new @ p_new
        accept = jnp.log(jax.random.uniform(accept_key)) < log_ratio
        new = tuple(jnp.where(accept, a, b) for a, b in ((q_new, q), (energy_new, energy), (grad_new, grad)))
        return jax.random.key_data(key), new

    return step


def hmc_transition(step_size: float = 0.25, integration_steps: int = 6, seed: int = 1234) -> Workload:
    """One aehmc HMC transition of the 2-D Gaussian per call: ``(q, energy, grad)`` in, the next state out."""
    q, energy, grad = at.dvector("q"), at.dscalar("energy"), at.dvector("energy_grad")
    srng = RandomStream(seed)
    kernel = hmc.new_kernel(srng, gaussian_logprob)
    # The kernel's own updates are empty: its draws advance srng's generators.
    (q_new, energy_new, grad_new, *_), _ = kernel(q, energy, grad, np.float64(step_size), at.ones(2), integration_steps)
    state = gaussian_state(np.zeros(2))
    hand = KeyedJax(hmc_step(lambda q: -gaussian_logprob(q), step_size, integration_steps), seed)
    outputs = [q_new, energy_new, grad_new]
    return Workload("HMC transition", 1.5, [q, energy, grad], outputs, srng.updates(), state, hand, state)


def nuts_chain(
    logprob: Callable[[Any], Any], transitions: int, step_size: float, dims: int, seed: int
) -> tuple[list[Any], list[Any], Any]:
    """``transitions`` aehmc NUTS transitions from ``q0`` as one Scan.

    Returns the inputs (``q0``), the outputs (positions, acceptance
    probabilities, one row per transition) and the generator's updates.
    """
    q0 = at.dvector("q0")
    kernel = nuts.new_kernel(RandomStream(seed), logprob)
    unit_mass = at.as_tensor(np.ones(dims))

    def transition(q: Any, energy: Any, grad: Any) -> tuple[tuple[Any, ...], Any]:
        (q, energy, grad, p_accept, *_), updates = kernel(q, energy, grad, np.float64(step_size), unit_mass)
        return (q, energy, grad, p_accept), updates

    _, energy, grad = hmc.new_state(q0, logprob)
    (positions, _, _, accepts), updates = aesara.scan(
        transition, outputs_info=[q0, energy, grad, None], n_steps=transitions
    )
    return [q0], [positions, accepts], updates


def numpyro_nuts(
    potential: Callable[[Any], Any], transitions: int, step_size: float, dims: int, seed: int, steps: bool = False
) -> KeyedJax | None:
    """NumPyro's NUTS, ``transitions`` of them in one ``lax.scan`` from ``q0``; ``None`` without NumPyro.

    Its outputs are the positions and acceptance probabilities, and with
    ``steps`` each transition's number of leapfrog steps (one gradient each).
    """
    try:
        from numpyro.infer.hmc import hmc as numpyro_hmc
    except ImportError:
        return None
    init_kernel, sample_kernel = numpyro_hmc(potential_fn=potential, algo="NUTS")
    template = init_kernel(
        jnp.zeros(dims),
        num_warmup=0,
        step_size=step_size,
        inverse_mass_matrix=jnp.ones(dims),
        adapt_step_size=False,
        adapt_mass_matrix=False,
        rng_key=jax.random.key(seed),
    )

    def transition(state: Any, _: Any) -> tuple[Any, tuple[Any, ...]]:
        state = sample_kernel(state)
        return state, (state.z, state.accept_prob, state.num_steps) if steps else (state.z, state.accept_prob)

    def chain(key_data: Any, q0: Any) -> tuple[Any, tuple[Any, ...]]:
        key, chain_key = jax.random.split(jax.random.wrap_key_data(key_data))
        energy, grad = jax.value_and_grad(potential)(q0)
        start = template._replace(z=q0, potential_energy=energy, z_grad=grad, rng_key=chain_key)
        return jax.random.key_data(key), lax.scan(transition, start, length=transitions)[1]

    return KeyedJax(chain, seed)


class EvaluationCounter(Op):
    """The identity on a position, run on the host, counting its evaluations: one per potential and gradient."""

    def __init__(self) -> None:
        self.count = 0

    def make_node(self, q: Any) -> Apply:
        q = at.as_tensor_variable(q)
        return Apply(self, [q], [q.type()])

    def perform(self, node: Apply, inputs: list[Any], outputs: list[list[Any]]) -> None:
        self.count += 1
        outputs[0][0] = inputs[0].copy()

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list[Any]) -> list[Any]:
        return shapes

    def grad(self, inputs: list[Any], output_grads: list[Any]) -> list[Any]:
        return output_grads


class NutsSetup(NamedTuple):
    """A NUTS workload's target and settings: aehmc runs on ``logprob``, NumPyro on ``potential`` (its negation)."""

    logprob: Callable[[Any], Any]
    potential: Callable[[Any], Any]
    transitions: int
    step_size: float
    dims: int
    seed: int


def nuts_gradients(setup: NutsSetup) -> dict[str, float]:
    """Gradient evaluations per transition in one call of aejax's chain (``"aejax"``) and of NumPyro's (``"jax"``).

    aejax's are counted by an `EvaluationCounter` in front of the
    log-density (through a host callback; the same seed, so the same draws
    as the timed chain's first call), less the one of the starting point;
    NumPyro's are its transitions' ``num_steps``.
    """
    logprob, potential, transitions, step_size, dims, seed = setup
    counter = EvaluationCounter()
    inputs, outputs, updates = nuts_chain(lambda q: logprob(counter(q)), transitions, step_size, dims, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CallbackWarning)
        aesara.function(inputs, outputs, updates=updates, mode="AEJAX")(np.zeros(dims))
    counts = {"aejax": (counter.count - 1) / transitions}
    hand = numpyro_nuts(potential, transitions, step_size, dims, seed, steps=True)
    if hand is not None:
        counts["jax"] = float(np.mean(hand(np.zeros(dims))[2]))
    return counts


def nuts_workload(name: str, setup: NutsSetup) -> Workload:
    """``setup.transitions`` aehmc NUTS transitions from zero per call, against NumPyro's."""
    logprob, potential, transitions, step_size, dims, seed = setup
    inputs, outputs, updates = nuts_chain(logprob, transitions, step_size, dims, seed)
    hand = numpyro_nuts(potential, transitions, step_size, dims, seed)
    start = (np.zeros(dims),)
    gradients = partial(nuts_gradients, setup)
    return Workload(
        name, 1.5, inputs, outputs, updates, start, hand, start, gradients=gradients, transitions=transitions
    )


def gaussian_setup(transitions: int, step_size: float = 0.25, seed: int = 7) -> NutsSetup:
    """The NUTS setup of the 2-D correlated Gaussian, with the settings of `nuts_gaussian`."""
    potential = lambda q: -gaussian_logprob(q)  # noqa: E731
    return NutsSetup(gaussian_logprob, potential, transitions, step_size, 2, seed)


def nuts_gaussian(transitions: int, step_size: float = 0.25, seed: int = 7) -> Workload:
    """NUTS on the 2-D correlated Gaussian: ``transitions`` transitions per call."""
    return nuts_workload("NUTS 2-D Gaussian", gaussian_setup(transitions, step_size, seed))


def logistic_data(points: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Synthetic logistic-regression data: 3 standard-normal features and 0/1 outcomes."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(points, 3))
    y = rng.uniform(size=points) < 1 / (1 + np.exp(-X @ np.array([1.0, -0.5, 0.25])))
    return X, y.astype("int64")


def logistic_logprob(X: np.ndarray, y: np.ndarray) -> Callable[[Any], Any]:
    """aeppl's joint log-density of coefficients ~ N(0, 1) and outcomes ~ Bernoulli(sigmoid(X @ coefficients))."""
    srng = RandomStream(0)
    beta = srng.normal(0, 1, size=X.shape[1])
    outcome = srng.bernoulli(at.sigmoid(at.dot(at.constant(X), beta)))
    return lambda q: joint_logprob(realized={beta: q, outcome: at.constant(y)})[0]


def logistic_potential(X: np.ndarray, y: np.ndarray) -> Callable[[Any], Any]:
    """The same log-density, negated, in JAX."""

    def potential(q: Any) -> Any:
        z = X @ q
        loglik = jnp.sum(y * jax.nn.log_sigmoid(z) + (1 - y) * jax.nn.log_sigmoid(-z))
        return 0.5 * q @ q + 0.5 * len(q) * jnp.log(2 * jnp.pi) - loglik

    return potential


def nuts_regression(
    name: str,
    logprob_of: Callable[[np.ndarray, np.ndarray], Callable[[Any], Any]],
    transitions: int,
    step_size: float,
    seed: int,
) -> Workload:
    """NUTS on the logistic regression of `logistic_data` whose log-density ``logprob_of(X, y)`` builds."""
    return nuts_workload(name, regression_setup(logprob_of, transitions, step_size, seed))


def regression_setup(
    logprob_of: Callable[[np.ndarray, np.ndarray], Callable[[Any], Any]], transitions: int, step_size: float, seed: int
) -> NutsSetup:
    """The NUTS setup of the logistic regression of `logistic_data`, its log-density built by ``logprob_of(X, y)``."""
    X, y = logistic_data()
    return NutsSetup(logprob_of(X, y), logistic_potential(X, y), transitions, step_size, 3, seed)


def logistic_setup(transitions: int, step_size: float = 0.15, seed: int = 3) -> NutsSetup:
    """The NUTS setup of the aeppl logistic regression, with the settings of `nuts_logistic`."""
    return regression_setup(logistic_logprob, transitions, step_size, seed)


def nuts_logistic(transitions: int, step_size: float = 0.15, seed: int = 3) -> Workload:
    """NUTS on an aeppl logistic regression (200 points, 3 coefficients): ``transitions`` transitions per call."""
    return nuts_regression("NUTS logistic regression", logistic_logprob, transitions, step_size, seed)


def softplus_logprob(X: np.ndarray, y: np.ndarray) -> Callable[[Any], Any]:
    """The same log-density written directly in Aesara with ``softplus``, as a user writes it without aeppl."""
    X_, y_ = at.constant(X), at.constant(y.astype("float64"))

    def logprob(q: Any) -> Any:
        z = at.dot(X_, q)
        loglik = at.sum(y_ * z - at.softplus(z))
        return loglik - 0.5 * at.dot(q, q) - 0.5 * X.shape[1] * np.log(2 * np.pi)

    return logprob


def nuts_softplus(transitions: int, step_size: float = 0.15, seed: int = 3) -> Workload:
    """NUTS on the logistic regression of `nuts_logistic` written with ``at.softplus``: ``transitions`` per call."""
    return nuts_regression("NUTS softplus regression", softplus_logprob, transitions, step_size, seed)


def eight_schools_logprob(q: Any, math: Any) -> Any:
    """The non-centered eight schools' log-density at ``q = (mu, log tau, theta_tilde...)``, the Jacobian of
    ``tau = exp(log tau)`` included, up to a constant; ``math`` is ``aesara.tensor`` or ``jax.numpy``.

    The model and data of ``eight_schools_numpyro.py``, NumPyro's own.
    """
    mu, log_tau, theta_tilde = q[0], q[1], q[2:]
    tau = math.exp(log_tau)
    residuals = (np.array(TREATMENT_EFFECTS) - (mu + tau * theta_tilde)) / np.array(STANDARD_ERRORS)
    return (
        -0.5 * (mu / MU_SCALE) ** 2
        - math.log1p((tau / TAU_SCALE) ** 2)
        + log_tau
        - 0.5 * math.sum(theta_tilde**2)
        - 0.5 * math.sum(residuals**2)
    )


def eight_schools_setup(transitions: int, step_size: float = 0.3, seed: int = 11) -> NutsSetup:
    """The NUTS setup of the eight schools (10 dimensions) at a fixed step size and a unit mass matrix."""
    logprob = partial(eight_schools_logprob, math=at)
    potential = lambda q: -eight_schools_logprob(q, jnp)  # noqa: E731
    return NutsSetup(logprob, potential, transitions, step_size, 10, seed)


SGD_SIZES = (128, 1024, 2048)
"""The sizes of the SGD step's weight matrix (issue #27: 1.31x and 1.53x at 1024 and 2048 with a host ``W``)."""


def suite(scale: float = 1.0) -> dict[str, Callable[[], Workload]]:
    """The workloads of issues #4, #11 (per call), #9 (NUTS), #27 (device I/O, SGD) and #38 (ifelse) by name,
    each built when called.

    ``scale`` shrinks step counts for a quick run. Building is lazy because
    the NUTS graphs take seconds to build.
    """

    def n(steps: int) -> int:
        return max(2, int(steps * scale))

    return {
        "scalar recurrence": partial(scalar_recurrence, n(10_000)),
        "RNN": partial(rnn, n(1_000)),
        "mit-sot taps [-1,-3]": partial(mit_sot, n(5_000)),
        "RNN gradient (W, h0)": partial(rnn_gradient, n(1_000)),
        "RNN last-state gradient": partial(rnn_gradient, n(1_000), last_state=True),
        "Gaussian random walk": partial(random_walk, n(10_000)),
        "until-loop (Newton sqrt)": partial(newton_until, n(1_000)),
        "ifelse, costly branch not taken": lazy_ifelse,
        "P1 add one": add_one,
        "P1 on device": add_one_on_device,
        "P2 add normal noise": add_normal_noise,
        "HMC transition": hmc_transition,
        "NUTS 2-D Gaussian": partial(nuts_gaussian, n(500)),
        "NUTS logistic regression": partial(nuts_logistic, n(500)),
        "NUTS softplus regression": partial(nuts_softplus, n(500)),
        **{f"SGD step n={size}": partial(sgd_step, size) for size in SGD_SIZES},
    }
