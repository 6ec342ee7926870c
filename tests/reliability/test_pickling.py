"""Item 1: a pickled AEJAX function computes what Aesara's does and keeps its shared state."""

import pickle

import aesara
import aesara.tensor as at
import numpy as np
from aesara.tensor.random.utils import RandomStream

import aejax.linker
from tests.reference import REFERENCE


def _accumulator(mode):
    x = at.dvector("x")
    total = aesara.shared(np.float64(1.0), name="total")
    steps, _ = aesara.scan(lambda x_t, s: s + x_t, sequences=x, outputs_info=total)
    return aesara.function([x], steps, updates={total: steps[-1]}, mode=mode), total


def _run_pickled(mode):
    f, total = _accumulator(mode)
    f(np.ones(2))
    g = pickle.loads(pickle.dumps(f))
    results = [g(np.arange(3.0)) for _ in range(2)]
    return results, g.input_storage[-1].data, total.get_value()


def test_pickled_function_matches_aesara_and_keeps_its_shared_variables():
    ours, reference = _run_pickled(aejax.linker.mode), _run_pickled(REFERENCE)
    for got, expected in zip(ours[0], reference[0]):
        np.testing.assert_array_equal(got, expected)
    assert ours[1:] == reference[1:]


def test_pickled_function_with_a_shared_generator_continues_its_stream():
    srng = RandomStream(seed=7)
    walk, updates = aesara.scan(lambda x: x + srng.normal(0, 1), outputs_info=at.constant(np.float64(0)), n_steps=4)
    f = aesara.function([], walk, updates=updates, mode=aejax.linker.mode)
    f()
    copy = pickle.loads(pickle.dumps(f))
    first = copy()
    np.testing.assert_array_equal(first, f())
    assert not np.array_equal(copy(), first)
