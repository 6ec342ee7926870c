"""jaxify: Aesara graphs as pure JAX functions under jit, vmap, grad and sharding."""

import os
import subprocess
import sys
import textwrap

import aesara
import aesara.tensor as at
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from aesara.tensor.random.utils import RandomStream

from aejax.linker import LoweringError, jaxify
from tests.reference import REFERENCE

RNG = np.random.default_rng(11)
W0 = RNG.normal(size=(3, 3)) * 0.5
XS = RNG.normal(size=(7, 3))


def rnn():
    W, xs, h0 = at.dmatrix("W"), at.dmatrix("xs"), at.dvector("h0")
    hs, _ = aesara.scan(lambda x, h, W: at.tanh(at.dot(W, h) + x), sequences=xs, outputs_info=h0, non_sequences=W)
    return [W, xs, h0], (hs**2).sum()


def random_walk(steps=30):
    srng = RandomStream(seed=21)
    x0 = at.dscalar("x0")
    walk, updates = aesara.scan(lambda x: x + srng.normal(0, 1), outputs_info=x0, n_steps=steps)
    return [x0], walk, updates


def test_jit_matches_reference():
    inputs, loss = rnn()
    graph = jaxify(inputs, [loss, loss * 2])
    assert graph.state == {}
    (value, doubled), state = jax.jit(graph.fn)(graph.state, W0, XS, np.zeros(3))
    expected = aesara.function(inputs, loss, mode=REFERENCE)(W0, XS, np.zeros(3))
    np.testing.assert_allclose(value, expected, rtol=1e-10)
    np.testing.assert_allclose(doubled, 2 * expected, rtol=1e-10)


def test_grad_matches_aesara_grad_on_the_reference():
    inputs, loss = rnn()
    graph = jaxify(inputs, loss)
    jax_grad = jax.grad(lambda W: graph.fn(graph.state, W, XS, np.zeros(3))[0])(jnp.asarray(W0))
    expected = aesara.function(inputs, aesara.grad(loss, inputs[0]), mode=REFERENCE)(W0, XS, np.zeros(3))
    np.testing.assert_allclose(jax_grad, expected, rtol=1e-9)


def test_vmap_runs_one_chain_per_key():
    inputs, walk, updates = random_walk()
    graph = jaxify(inputs, walk, updates)
    (name,) = graph.state
    keys = jax.random.split(graph.state[name], 2000)
    paths, states = jax.jit(jax.vmap(graph.fn, in_axes=({name: 0}, None)))({name: keys}, 0.0)
    assert paths.shape == (2000, 30)
    assert states[name].shape == (2000,)
    steps = np.diff(np.concatenate([np.zeros((2000, 1)), paths], axis=1), axis=1)
    assert abs(steps.mean()) < 0.02 and abs(steps.var() - 1) < 0.03
    assert len({float(p) for p in paths[:, -1]}) == 2000


def test_state_advances_and_stores_back_into_aesara():
    inputs, walk, updates = random_walk(5)
    graph = jaxify(inputs, walk, updates)
    (name,) = graph.state
    first, state = graph.fn(graph.state, 0.0)
    second, state2 = graph.fn(state, 0.0)
    assert not np.array_equal(first, second)
    graph.store(state2)
    shared = graph.shared[name]
    assert isinstance(shared.get_value(), np.random.Generator)
    again = jaxify(inputs, walk, updates)
    np.testing.assert_array_equal(jax.random.key_data(again.state[name]), jax.random.key_data(state2[name]))
    c_fn = aesara.function(inputs, walk, updates=updates, mode="FAST_RUN")
    assert c_fn(0.0).shape == (5,)


def test_until_trace_cannot_leave_but_last_value_can():
    from aesara.scan.utils import until

    a = at.dscalar("a")

    def newton(x, a):
        new = 0.5 * (x + a / x)
        return new, until(abs(new - x) < 1e-12)

    out, _ = aesara.scan(newton, outputs_info=at.as_tensor_variable(np.float64(1.0)), non_sequences=a, n_steps=40)
    last = jaxify([a], out[-1])
    np.testing.assert_allclose(last.fn(last.state, 2.0)[0], np.sqrt(2.0))
    trace = jaxify([a], out)
    with pytest.raises(LoweringError, match="until-loop"):
        trace.fn(trace.state, 2.0)


SHARDING_PROGRAM = textwrap.dedent(
    """
    import jax, numpy as np
    jax.config.update("jax_enable_x64", True)
    import aejax.adapters  # first: under numpy 2 it makes Aesara 2.9.4 work
    import aesara, aesara.tensor as at
    from jax.sharding import Mesh, NamedSharding, PartitionSpec
    from aejax.linker import jaxify

    xs, w = at.dmatrix("xs"), at.dvector("w")
    out, _ = aesara.scan(lambda x, s, w: s * 0.5 + at.tanh(x * w), sequences=xs, outputs_info=at.zeros_like(w), non_sequences=w)
    graph = jaxify([xs, w], out[-1])
    assert len(jax.devices()) == 2
    mesh = Mesh(np.array(jax.devices()), ("batch",))
    data = np.random.default_rng(0).normal(size=(5, 8))
    weights = jax.device_put(np.linspace(0.1, 1.0, 8), NamedSharding(mesh, PartitionSpec("batch")))
    sharded = jax.jit(graph.fn)(graph.state, data, weights)[0]
    expected = aesara.function([xs, w], out[-1], mode="FAST_COMPILE")(data, np.linspace(0.1, 1.0, 8))
    np.testing.assert_allclose(np.asarray(sharded), expected, rtol=1e-10)
    print("devices", len(sharded.sharding.device_set))
    """
)


def test_sharding_across_two_cpu_devices():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    done = subprocess.run([sys.executable, "-c", SHARDING_PROGRAM], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "devices 2" in done.stdout


def test_shape_deciding_input_is_static_under_the_callers_jit():
    n, x0 = at.iscalar("n"), at.dscalar("x0")
    out, _ = aesara.scan(lambda x: x * 2, outputs_info=x0, n_steps=n)
    graph = jaxify([n, x0], out)
    run = jax.jit(graph.fn, static_argnums=1)
    np.testing.assert_allclose(run(graph.state, 3, 1.0)[0], [2.0, 4.0, 8.0])
    assert run(graph.state, 5, 1.0)[0].shape == (5,)
    with pytest.raises(LoweringError, match=r"n \(argnum 1\): mark it static"):
        jax.jit(graph.fn)(graph.state, 3, 1.0)
