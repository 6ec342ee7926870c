"""Float32 graphs exported for a TPU hold no float64 operation, however JAX's ``jax_enable_x64`` is set while they are
traced; a float64 graph traced without x64 says that it computes in float32."""

import warnings

import aeppl
import aesara
import aesara.tensor as at
import jax
import jax.export
import numpy as np
import pytest
from aesara.tensor.random.utils import RandomStream

from aejax.adapters.jax_api import disable_x64, enable_x64
from aejax.linker import PrecisionWarning, jaxify


def mlp():
    X, W2 = at.matrix("X"), at.matrix("W2")
    W1 = aesara.shared(np.full((3, 4), 0.5, "float32"), name="W1")
    b = aesara.shared(np.zeros(4, "float32"), name="b")
    return [X, W2], at.sigmoid(at.tanh(X @ W1 + b) @ W2), None, (np.ones((5, 3), "float32"), np.ones((4, 2), "float32"))


def random_walk():
    srng = RandomStream(seed=3)
    x0 = at.scalar("x0")
    walk, updates = aesara.scan(lambda x: x + srng.normal(0, 1), outputs_info=x0, n_steps=20)
    return [x0], walk, updates, (np.float32(0),)


def rnn():
    W, xs, h0 = at.matrix("W"), at.matrix("xs"), at.vector("h0")
    hs, _ = aesara.scan(lambda x, h, W: at.tanh(at.dot(W, h) + x), sequences=xs, outputs_info=h0, non_sequences=W)
    return (
        [W, xs, h0],
        (hs**2).sum(),
        None,
        (np.eye(3, dtype="float32"), np.ones((7, 3), "float32"), np.zeros(3, "float32")),
    )


def mean():
    v = at.vector("v")
    return [v], v.mean(), None, (np.ones(10, "float32"),)


def log_density():
    srng = RandomStream(seed=4)
    mu, sigma = at.scalar("mu"), at.scalar("sigma")
    logp, (y,) = aeppl.joint_logprob(srng.normal(mu, sigma, size=5, name="Y"))
    return [mu, sigma, y], logp, None, (np.float32(0), np.float32(1), np.ones(5, "float32"))


def on_key_data(graph):
    """``graph.fn`` as a function of raw key data (typed keys do not cross an export), and its state so."""
    impls = {
        name: jax.random.key_impl(v)
        for name, v in graph.state.items()
        if jax.dtypes.issubdtype(v.dtype, jax.dtypes.prng_key)
    }

    def as_data(state):
        return {name: jax.random.key_data(v) if name in impls else v for name, v in state.items()}

    def fn(state, *args):
        keys = {
            name: jax.random.wrap_key_data(v, impl=impls[name]) if name in impls else v for name, v in state.items()
        }
        outputs, new_state = graph.fn(keys, *args)
        return outputs, as_data(new_state)

    return fn, as_data(graph.state)


@pytest.mark.parametrize("x64", [True, False], ids=["x64 on", "x64 off"])
@pytest.mark.parametrize("build", [mlp, random_walk, rnn, mean, log_density])
def test_a_float32_graph_exported_for_a_tpu_holds_no_float64_operation(build, x64):
    with aesara.config.change_flags(floatX="float32"):
        inputs, outputs, updates, args = build()
    with enable_x64(x64), warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionWarning)
        fn, state = on_key_data(jaxify(inputs, outputs, updates))
        exported = jax.export.export(jax.jit(fn), platforms=["tpu"])(state, *args)
    text = exported.mlir_module()
    assert "f32" in text and "f64" not in text


def test_a_float64_graph_traced_without_x64_warns_once_naming_its_float64_variables():
    x = at.dscalar("x")
    with disable_x64():
        graph = jaxify([x], x + 1e-10)
        with pytest.warns(PrecisionWarning, match="float64 values \\('x'.*computes in float32"):
            assert float(jax.jit(graph.fn)(graph.state, 1.0)[0]) == 1.0  # float32 cannot hold 1 + 1e-10
        with warnings.catch_warnings():
            warnings.simplefilter("error", PrecisionWarning)
            jax.jit(graph.fn)(graph.state, np.float32(2.0))  # traced again: no second warning
    with enable_x64(True), warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionWarning)
        graph = jaxify([x], x + 1e-10)
        assert float(jax.jit(graph.fn)(graph.state, 1.0)[0]) - 1.0 == (1.0 + 1e-10) - 1.0
