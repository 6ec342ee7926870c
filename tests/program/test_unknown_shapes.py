"""Nodes whose output shapes nothing tells while tracing run on the host between programs; graphs of one host node."""

import warnings

import aesara
import aesara.tensor as at
import jax
import numpy as np
import pytest
from aesara.tensor.extra_ops import unique

import aejax.linker
from aejax.linker import HostNodeWarning, LoweringError, jaxify
from tests.python_ops import NoShape
from tests.reference import REFERENCE, assert_matches_reference, compile_both
from tests.reliability.shared_state import assert_unchanged, shared_of, snapshot

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from aesara.sandbox.rng_mrg import DotModulo, MRG_RandomStream

X = at.dvector("x")
V = np.array([3.0, 1.0, 2.0])


def _matrices_and_vectors():
    a, a2 = at.lmatrix("A"), at.lmatrix("A2")
    s, s2 = at.ivector("s"), at.ivector("s2")
    m, m2 = at.iscalar("m"), at.iscalar("m2")
    return [a, s, m, a2, s2, m2]


DOT_MODULO_ARGS = (
    np.array([[0, 4194304, 129], [1, 0, 0], [0, 1, 0]]),
    np.array([12345, 67890, 13579], "int32"),
    np.int32(2147483647),
    np.array([[32768, 0, 32769], [1, 0, 0], [0, 1, 0]]),
    np.array([24680, 97531, 11111], "int32"),
    np.int32(2147462579),
)


def test_an_op_without_output_shapes_runs_on_the_host_and_warns_naming_it():
    reference, ours = compile_both([X], NoShape()(X))
    with pytest.warns(HostNodeWarning, match=r"NoShape.*infer_shape"):
        np.testing.assert_array_equal(ours(V), reference(V))
    for value in (np.arange(5.0), np.array([1.0])):
        np.testing.assert_array_equal(ours(value), reference(value))
    graph = jaxify([X], [NoShape()(X)], {})  # one pure JAX function: no node runs on the host
    with pytest.raises(LoweringError, match=r"NoShape.*infer_shape"):
        jax.jit(graph.fn)({}, V)


def test_the_work_around_an_op_without_output_shapes_stays_in_jit_programs():
    reference, ours = compile_both([X], NoShape()(at.exp(X)).sum(axis=0) * X + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HostNodeWarning)
        for value in (V, np.arange(4.0)):
            np.testing.assert_allclose(ours(value), reference(value), rtol=1e-12)
    kinds = [type(segment.program).__name__ for segment in ours.vm.jit_fn.segments]
    assert kinds == ["StaticInputProgram", "HostNode", "StaticInputProgram"]


def test_dot_modulo_of_mrg_random_streams_matches_the_reference():
    inputs = _matrices_and_vectors()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HostNodeWarning)
        (got,) = assert_matches_reference(inputs, DotModulo()(*inputs), *DOT_MODULO_ARGS)
    assert got.dtype == np.int32


def test_dot_modulo_runs_through_its_storage_as_mrg_random_streams_call_it():
    """`aesara.sandbox.rng_mrg.multMatVect` sets the input storage and calls the function's ``vm`` directly."""
    inputs = _matrices_and_vectors()
    results = []
    for mode in (REFERENCE, aejax.linker.mode):
        f = aesara.function(inputs, DotModulo()(*inputs), mode=mode)
        for container, value in zip(f.input_storage, DOT_MODULO_ARGS):
            container.storage[0] = value
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HostNodeWarning)
            f.vm()
        results.append(f.output_storage[0].storage[0])
    np.testing.assert_array_equal(results[1], results[0])


def _mrg_draws(mode, seed=1234):
    stream = MRG_RandomStream(seed)
    weights = aesara.shared(np.random.default_rng(0).random((4, 5)), name="weights")
    pvals = weights / weights.sum(axis=1, keepdims=True)
    draws = [stream.uniform((3, 2)), stream.normal((5,)), stream.multinomial(pvals=pvals, n=1)]
    return aesara.function([], draws, mode=mode), stream


def test_mrg_random_streams_draw_exactly_the_reference_values_for_the_same_seed():
    reference, reference_stream = _mrg_draws(REFERENCE)
    ours, our_stream = _mrg_draws(aejax.linker.mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HostNodeWarning)
        for _ in range(3):
            for got, expected in zip(ours(), reference()):
                assert got.dtype == expected.dtype
                np.testing.assert_array_equal(got, expected)
    for ours_state, reference_state in zip(our_stream.state_updates, reference_stream.state_updates):
        np.testing.assert_array_equal(ours_state[0].get_value(), reference_state[0].get_value())


def test_a_failed_call_after_an_mrg_draw_raises_as_the_reference_and_updates_nothing():
    calls = {}
    for mode in (REFERENCE, aejax.linker.mode):
        stream = MRG_RandomStream(42)
        calls[mode] = aesara.function([X], stream.uniform((3,)) + X, mode=mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HostNodeWarning)
        np.testing.assert_array_equal(calls[aejax.linker.mode](V), calls[REFERENCE](V))
        before = snapshot(shared_of(calls[aejax.linker.mode]))
        for f in (calls[REFERENCE], calls[aejax.linker.mode], calls[aejax.linker.mode]):
            with pytest.raises(ValueError):
                f(np.ones(5))
    assert_unchanged(shared_of(calls[aejax.linker.mode]), before)
    np.testing.assert_array_equal(calls[aejax.linker.mode](V), calls[REFERENCE](V))


def test_a_graph_whose_only_node_runs_on_the_host_takes_its_inputs_in_their_order():
    unused = at.dvector("unused")
    reference, ours = compile_both([unused, X], unique(X), on_unused_input="ignore")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HostNodeWarning)
        for value in (V, np.array([2.0, 2.0, 5.0, 1.0])):
            np.testing.assert_array_equal(ours(np.ones(2), value), reference(np.ones(2), value))
