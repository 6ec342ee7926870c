"""jaxify's inputs checked against their Aesara Types, directly, under ``jax.jit`` and under ``jax.vmap``.

Every value refused here is refused by Aesara too (its reference backend, on the same graph and value), with a
`TypeError` (a `ValueError` for a ragged list); ours names the input. Valid values still give the reference's values.
"""

import aesara
import aesara.tensor as at
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aejax.adapters.jax_api import disable_x64
from aejax.linker import jaxify
from tests.reference import REFERENCE


def graph_inputs():
    return [
        at.fvector("x"),
        at.dvector("d"),
        at.TensorType("float64", shape=(1, None))("row"),
        at.ivector("i"),
        at.dscalar("s"),
    ]


def outputs(x, d, row, i, s):
    return [x * 2, d.sum() * s, row * d, i + 1]


GOOD = (np.ones(3, "float32"), np.arange(4.0), np.ones((1, 4)), np.arange(3, dtype="int32"), np.float64(0.5))
BAD = [
    pytest.param(0, np.array([1 + 1j, 2]), TypeError, id="complex into a float32 vector"),
    pytest.param(1, np.array([1 + 1j, 2, 3, 4]), TypeError, id="complex into a float64 vector"),
    pytest.param(0, np.ones((2, 3), "float32"), TypeError, id="matrix into a float32 vector"),
    pytest.param(1, np.ones((2, 3)), TypeError, id="matrix into a float64 vector"),
    pytest.param(1, np.array(6.0), TypeError, id="0-d array into a float64 vector"),
    pytest.param(1, np.float64(6.0), TypeError, id="numpy scalar into a float64 vector"),
    pytest.param(2, np.ones((2, 4)), TypeError, id="two rows into a broadcastable row"),
    pytest.param(2, np.ones(4), TypeError, id="vector into a row"),
    pytest.param(3, np.ones(3), TypeError, id="float into an int32 vector"),
    pytest.param(3, np.array([1 + 0j]), TypeError, id="complex into an int32 vector"),
    pytest.param(4, np.ones(2), TypeError, id="vector into a scalar"),
    pytest.param(1, [[1.0, 2.0], [3.0]], ValueError, id="ragged list"),
]


def _with(position, value):
    args = list(GOOD)
    args[position] = value
    return args


def _reference_raises(position, value, error):
    inputs = graph_inputs()
    reference = aesara.function(inputs, outputs(*inputs), mode=REFERENCE)
    with pytest.raises(error):
        reference(*_with(position, value))
    return inputs[position].name


@pytest.fixture(scope="module")
def graph():
    inputs = graph_inputs()
    return jaxify(inputs, outputs(*inputs))


@pytest.mark.parametrize("position, value, error", BAD)
@pytest.mark.parametrize("traced", [False, True], ids=["direct", "jit"])
def test_a_value_aesara_refuses_raises_naming_the_input(graph, position, value, error, traced):
    name = _reference_raises(position, value, error)
    fn = jax.jit(graph.fn) if traced else graph.fn
    with pytest.raises(error, match=rf"input '{name}' \(argnum {position + 1}\)"):
        fn(graph.state, *_with(position, value))


@pytest.mark.parametrize("position, value, error", [p for p in BAD if p.id != "ragged list"])
def test_under_vmap_a_wrong_value_per_example_raises(graph, position, value, error):
    name = _reference_raises(position, value, error)
    batched = [np.stack([v] * 5) for v in _with(position, value)]
    with pytest.raises(error, match=rf"input '{name}'"):
        jax.vmap(graph.fn, in_axes=(None, 0, 0, 0, 0, 0))(graph.state, *batched)


def _assert_reference_values(got, args):
    inputs = graph_inputs()
    expected = aesara.function(inputs, outputs(*inputs), mode=REFERENCE)(*args)
    for e, g in zip(expected, got):
        assert np.asarray(g).dtype == e.dtype
        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-7)


VALID = [
    pytest.param(GOOD, id="exact dtypes"),
    pytest.param(_with(1, [1, 2, 3, 4]), id="list of ints into a float64 vector"),
    pytest.param(_with(1, np.array([True, False, True, True])), id="bool into a float64 vector"),
    pytest.param(_with(0, np.arange(3, dtype="int16")), id="int16 into a float32 vector"),
    pytest.param(_with(3, np.arange(3, dtype="uint8")), id="uint8 into an int32 vector"),
    pytest.param(_with(4, 2.0), id="Python float into a float64 scalar"),
    pytest.param(_with(2, [[1.0, 2.0, 3.0, 4.0]]), id="nested list into a row"),
]


@pytest.mark.parametrize("args", VALID)
@pytest.mark.parametrize("traced", [False, True], ids=["direct", "jit"])
def test_values_aesara_takes_give_the_references_values(graph, args, traced):
    fn = jax.jit(graph.fn) if traced else graph.fn
    _assert_reference_values(fn(graph.state, *args)[0], args)


def test_under_vmap_each_example_gives_the_references_values(graph):
    batched = [np.stack([np.asarray(v) * (k + 1) for k in range(3)]) for v in GOOD]
    got = jax.jit(jax.vmap(graph.fn, in_axes=(None, 0, 0, 0, 0, 0)))(graph.state, *batched)[0]
    for k in range(3):
        _assert_reference_values([g[k] for g in got], [b[k] for b in batched])


def test_a_float64_value_for_a_float32_input_is_rounded_as_jax_rounds_it(graph):
    """Aesara refuses it (possible loss of precision); jaxify follows JAX: the input's float32 dtype."""
    value = np.array([0.1, 1 / 3, 2.0])
    inputs = graph_inputs()
    with pytest.raises(TypeError):
        aesara.function(inputs, outputs(*inputs), mode=REFERENCE)(*_with(0, value))
    got = graph.fn(graph.state, *_with(0, value))[0][0]
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, value.astype("float32") * 2)
    np.testing.assert_array_equal(jax.jit(graph.fn)(graph.state, *_with(0, jnp.asarray(value)))[0][0], got)


def test_integers_that_do_not_fit_the_inputs_dtype_raise(graph):
    with pytest.raises(TypeError, match=r"input 'i' \(argnum 4\).*int32 values cannot hold"):
        graph.fn(graph.state, *_with(3, np.array([1, 2**40])))


def test_checks_run_while_tracing_and_leave_no_operation_in_the_program(graph):
    """A program of arguments of the inputs' dtypes is the same with and without the checks: no conversion."""
    lowered = jax.jit(graph.fn).lower(graph.state, *GOOD).as_text()
    assert "convert" not in lowered


def test_without_x64_a_float64_input_takes_float32_values():
    d = at.dvector("d")
    with disable_x64():
        graph = jaxify([d], d * 2)
        with pytest.warns(UserWarning, match="computes in float32"):
            got = jax.jit(graph.fn)(graph.state, np.arange(3.0))[0]
        assert got.dtype == np.float32
        with pytest.raises(TypeError, match="input 'd'"):
            jax.jit(graph.fn)(graph.state, np.ones((2, 2), "float32"))


def test_the_state_is_checked_as_its_codec_validates_it():
    w = aesara.shared(np.zeros(3), name="w")
    x = at.dvector("x")
    graph = jaxify([x], x + w)
    with pytest.raises(TypeError, match="state entry 'w'"):
        jax.jit(graph.fn)({"w": np.zeros((2, 3))}, np.ones(3))
    with pytest.raises(TypeError, match="state entry 'w'"):
        graph.fn({"w": np.zeros(3, "complex128")}, np.ones(3))
