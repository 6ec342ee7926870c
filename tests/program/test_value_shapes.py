"""Nodes whose output shape depends on values: a program of their own, or the host between two programs."""

import warnings

import aesara
import aesara.tensor as at
import jax
import numpy as np
import pytest
from aesara.ifelse import ifelse
from aesara.tensor.extra_ops import bincount, repeat, unique

import aejax.linker
from aejax.linker import HostNodeWarning, LoweringError, ShapeInputWarning, jaxify
from tests.reference import REFERENCE, assert_matches_reference

X, K, R, C = at.dvector("x"), at.lvector("k"), at.lvector("r"), at.dscalar("c")
SIZE = at.TensorType("int64", shape=(2,))("size")
DATA = np.array([3.0, 1.0, 3.0, 2.0])
COUNTS = np.array([0, 3, 3, 1])

CASES = {
    "repeat": ([X, R], repeat(X, R), (DATA, np.array([1, 0, 2, 1]))),
    "repeat, then more work": ([X, R], (repeat(X, R) * 2).sum() + X.sum(), (DATA, np.array([1, 0, 2, 1]))),
    "unique": ([X], unique(X), (DATA,)),
    "unique with counts and inverse": ([X], unique(X, return_counts=True, return_inverse=True), (DATA,)),
    "bincount": ([K], bincount(K), (COUNTS,)),
    "zeros of a computed size": ([K], at.zeros(K.max() + 1), (COUNTS,)),
    "zeros of a computed size, then more work": ([K, X], at.zeros(K.max() + 1) + X.sum(), (COUNTS, DATA)),
    "ifelse of branches of different shapes, true": ([X, C], ifelse(C > 0, X, X[:2]) * 2, (DATA, 1.0)),
    "ifelse of branches of different shapes, false": ([X, C], ifelse(C > 0, X, X[:2]) * 2, (DATA, -1.0)),
}


@pytest.mark.parametrize("inputs, outputs, args", CASES.values(), ids=CASES)
def test_value_dependent_shapes_match_the_reference(inputs, outputs, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (ShapeInputWarning, HostNodeWarning))
        assert_matches_reference(inputs, outputs, *args)


def test_a_size_computed_from_data_compiles_per_value_and_stays_right():
    reference = aesara.function([K], at.zeros(K.max() + 1) + K.sum(), mode=REFERENCE)
    f = aesara.function([K], at.zeros(K.max() + 1) + K.sum(), mode=aejax.linker.mode)
    f(COUNTS)
    with pytest.warns(ShapeInputWarning):
        for value in ([5, 2], [0], [7, 7, 1], [5, 2]):
            np.testing.assert_array_equal(f(np.array(value)), reference(np.array(value)))


def test_a_node_run_on_the_host_warns_once_and_serves_every_call():
    reference = aesara.function([X], unique(X) * 2, mode=REFERENCE)
    f = aesara.function([X], unique(X) * 2, mode=aejax.linker.mode)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for value in (DATA, np.array([1.0]), np.arange(5.0), DATA):
            np.testing.assert_array_equal(f(value), reference(value))
    assert [w.category for w in record] == [HostNodeWarning]
    assert "Unique" in str(record[0].message)


def test_a_failing_host_node_raises_as_the_reference_and_updates_nothing():
    state = aesara.shared(np.float64(1.0), name="state")
    outputs = repeat(X, R).sum()
    reference = aesara.function([X, R], outputs, mode=REFERENCE)
    f = aesara.function([X, R], outputs, updates={state: state + 1}, mode=aejax.linker.mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HostNodeWarning)
        assert f(DATA, np.array([1, 0, 2, 1])) == reference(DATA, np.array([1, 0, 2, 1]))
        assert state.get_value() == 2.0
        with pytest.raises(ValueError):
            reference(DATA, np.array([1, -1, 2, 1]))
        with pytest.raises(ValueError):
            f(DATA, np.array([1, -1, 2, 1]))
    assert state.get_value() == 2.0


def test_an_integer_vector_input_of_fixed_length_that_decides_a_size_is_made_static():
    draws = at.random.normal(size=SIZE)
    f = aesara.function([SIZE], draws, mode=aejax.linker.mode)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShapeInputWarning)  # one value: one program, nothing to warn of
        assert f(np.array([2, 3])).shape == (2, 3)
    with pytest.warns(ShapeInputWarning, match="size"):
        assert f(np.array([4, 1])).shape == (4, 1)


def test_jaxify_names_the_node_whose_shape_depends_on_values():
    graph = jaxify([X], [unique(X)], {})
    with pytest.raises(LoweringError, match="Unique"):
        jax.jit(graph.fn)({}, DATA)
