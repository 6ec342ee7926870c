"""Shared random generators used directly by the JAX linker."""

import pickle
import warnings

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.tensor.random.utils import RandomStream

import aejax.linker
from aejax.linker import InputValueError


def normal_fn(rng, mode, size=4):
    draw = at.random.normal(0, 1, size=size, rng=rng)
    return aesara.function([], draw, updates={rng: draw.owner.outputs[0]}, mode=mode)


@pytest.fixture(params=[np.random.default_rng, np.random.RandomState], ids=["Generator", "RandomState"])
def ctor(request):
    return request.param


def test_no_copy_warning_and_state_advances(ctor):
    rng = aesara.shared(ctor(5))
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*will not be used.*")
        f = normal_fn(rng, aejax.linker.mode)
        first, second = f(), f()
    assert not np.array_equal(first, second)
    value = rng.get_value(borrow=True)
    assert isinstance(value, type(ctor(0)))
    assert rng.type.filter(value) is value


def test_random_stream_updates_its_shared_generators(ctor):
    srng = RandomStream(seed=1930, rng_ctor=ctor)
    draw = srng.normal(0, 1, size=(2,))
    f = aesara.function([], draw, mode=aejax.linker.mode)
    shared_rng = srng.state_updates[0][0]
    before = pickle.dumps(shared_rng.get_value())
    f()
    assert pickle.dumps(shared_rng.get_value()) != before


def test_set_value_reseeds_like_a_fresh_function(ctor):
    rng = aesara.shared(ctor(1))
    f = normal_fn(rng, aejax.linker.mode)
    f()
    rng.set_value(ctor(7))
    fresh = normal_fn(aesara.shared(ctor(7)), aejax.linker.mode)
    np.testing.assert_array_equal(f(), fresh())
    np.testing.assert_array_equal(f(), fresh())


def test_jax_then_c_then_jax_on_one_shared_variable(ctor):
    rng = aesara.shared(ctor(3))
    jax_fn = normal_fn(rng, aejax.linker.mode)
    c_fn = normal_fn(rng, "FAST_RUN")
    jax_first = jax_fn()
    host = pickle.loads(pickle.dumps(rng.get_value()))
    c_draw = c_fn()
    np.testing.assert_array_equal(c_draw, host.normal(0, 1, size=4))
    after_c = pickle.dumps(rng.get_value())
    jax_second = jax_fn()
    assert not np.array_equal(jax_first, jax_second)
    assert pickle.dumps(rng.get_value()) != after_c
    c_fn()


def test_same_state_gives_same_draws_across_backends_of_one_kind(ctor):
    a, b = aesara.shared(ctor(9)), aesara.shared(ctor(9))
    np.testing.assert_array_equal(normal_fn(a, aejax.linker.mode)(), normal_fn(b, aejax.linker.mode)())


def test_bad_rng_payload_is_a_clear_error_and_changes_nothing(ctor):
    rng = aesara.shared(ctor(2))
    counter = aesara.shared(np.float64(0.0), name="counter")
    draw = at.random.normal(0, 1, size=3, rng=rng)
    f = aesara.function([], draw, updates={rng: draw.owner.outputs[0], counter: counter + 1}, mode=aejax.linker.mode)
    f()
    state = (
        rng.get_value().bit_generator.state
        if ctor is np.random.default_rng
        else rng.get_value().get_state(legacy=False)
    )
    state = pickle.loads(pickle.dumps(state))
    if ctor is np.random.default_rng:
        state["state"]["inc"], field = "not an int", "state.inc"
    else:
        state["has_gauss"], field = 7, "has_gauss"
    rng.set_value(state)
    before = pickle.dumps(rng.get_value())
    with pytest.raises(InputValueError) as info:
        f()
    assert f"field {field!r}" in str(info.value)
    assert "_error_repr" not in str(info.value)
    assert pickle.dumps(rng.get_value()) == before
    assert counter.get_value() == 1.0


def test_bad_tensor_input_leaves_shared_state_unchanged():
    rng = aesara.shared(np.random.default_rng(2))
    x = at.dvector("x")
    draw = at.random.normal(x, 1, rng=rng)
    f = aesara.function([x], draw, updates={rng: draw.owner.outputs[0]}, mode=aejax.linker.mode)
    f(np.zeros(2))
    before = pickle.dumps(rng.get_value())
    with pytest.raises(TypeError, match="x"):
        f(np.zeros((2, 2)))
    with pytest.raises(TypeError):
        f(np.array(["a", "b"]))
    assert pickle.dumps(rng.get_value()) == before


def test_state_dict_values_are_accepted(ctor):
    host = ctor(4)
    state = host.bit_generator.state if ctor is np.random.default_rng else host.get_state(legacy=False)
    rng = aesara.shared(ctor(0))
    rng.set_value(state)
    out = normal_fn(rng, aejax.linker.mode)()
    assert out.shape == (4,)
    assert isinstance(rng.get_value(), type(ctor(0)))


def test_shared_tensor_alternates_between_jax_and_c_inplace_updates():
    total = aesara.shared(np.arange(3.0), name="total")
    jax_fn = aesara.function([], [], updates={total: total + 1}, mode=aejax.linker.mode)
    c_fn = aesara.function([], [], updates={total: total * 2}, mode="FAST_RUN")
    jax_fn()
    assert total.get_value(borrow=True).flags.writeable
    c_fn()
    jax_fn()
    c_fn()
    np.testing.assert_array_equal(total.get_value(), ((np.arange(3.0) + 1) * 2 + 1) * 2)
