"""Small outputs of one dtype leave the program as one buffer and reach the caller as Aesara returns them.

Each test compares with Aesara's reference backend, on the first call (the
general path) and on later calls (the exact call), and checks that the
program really packed what it should, so that the comparison covers packing.
"""

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.scan.utils import until

import aejax.linker
from aejax.linker.program.packing import PACKED_SIZE, PackedResults
from tests.reference import REFERENCE


def _pair(inputs, outputs, **kwargs):
    return [aesara.function(inputs, outputs, mode=mode, **kwargs) for mode in (REFERENCE, aejax.linker.mode)]


def _packed_positions(function, args):
    """The outputs ``function``'s last program packs for ``args`` (``function`` has been called)."""
    program = function.vm.jit_fn.segments[0].program.shortcut.program
    results = program(*args)
    if type(results) is not PackedResults:
        return set()
    return {piece.output for pieces in results.layout for piece in pieces}


def _assert_same_outputs(expected, got):
    assert len(expected) == len(got)
    for e, g in zip(expected, got):
        assert type(g) is np.ndarray and g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e)


def test_small_outputs_of_one_dtype_are_packed_and_returned_as_aesara_returns_them():
    x, s, m = at.dvector("x"), at.dscalar("s"), at.dmatrix("m")
    outputs = [x * s, (x + s).sum(), m.T * 2, at.argmax(x), at.arange(x.shape[0])]
    reference, ours = _pair([x, s, m], outputs)
    calls = [(np.arange(3.0), np.float64(v), np.arange(6.0).reshape(2, 3) + v) for v in (1.0, 2.5, -4.0)]
    for args in calls:  # the general path, then the exact call
        _assert_same_outputs(reference(*args), ours(*args))
    assert _packed_positions(ours, calls[-1]) == {0, 1, 2, 3, 4}  # float64: 0, 1, 2; int64: 3, 4


def test_packed_outputs_are_writable_and_independent():
    x = at.dvector("x")
    ours = aesara.function([x], [x + 1, x * 2, x.sum()], mode=aejax.linker.mode)
    for value in (np.zeros(4), np.ones(4)):
        first, second, total = ours(value)
        first[:] = -1.0
        total[...] = 99.0
        np.testing.assert_array_equal(second, value * 2)
        again = ours(value)
        np.testing.assert_array_equal(again[0], value + 1)
        assert again[2] == value.sum()


def test_a_large_output_is_not_packed():
    x = at.dvector("x")
    reference, ours = _pair([x], [x + 1, x.sum(), x.max()])
    args = (np.arange(PACKED_SIZE + 1.0),)
    for _ in range(2):
        _assert_same_outputs(reference(*args), ours(*args))
    assert _packed_positions(ours, args) == {1, 2}


@pytest.mark.parametrize("borrow", [False, True])
def test_a_packed_shared_update_is_stored_apart_from_the_returned_outputs(borrow):
    x = at.dvector("x")
    functions, states = [], []
    for mode in (REFERENCE, aejax.linker.mode):
        state = aesara.shared(np.zeros(3), name="state", borrow=borrow)
        functions.append(aesara.function([x], [state + x, x.sum()], updates={state: state + x}, mode=mode))
        states.append(state)
    for value in (np.arange(3.0), np.ones(3), -np.arange(3.0)):
        for f, _state in zip(functions, states):
            returned, _ = f(value)
            returned[:] = 1e6  # must not reach the shared value
        np.testing.assert_allclose(states[1].get_value(), states[0].get_value())
    assert _packed_positions(functions[1], (value, states[1].get_value())) == {0, 1, 2}


def test_small_outputs_beside_a_trace_of_run_time_length():
    x0, a = at.dscalar("x0"), at.dscalar("a")

    def step(x, a):
        new = 0.5 * (x + a / x)
        return new, until(abs(new - x) < 1e-10)

    trace, _ = aesara.scan(step, outputs_info=x0, non_sequences=a, n_steps=100)
    outputs = [trace, trace[-1], a * 2, at.stack([x0, a])]
    reference, ours = _pair([x0, a], outputs)
    for a_value in (2.0, 1e6, 9.0):
        _assert_same_outputs(reference(1.0, a_value), ours(1.0, a_value))
