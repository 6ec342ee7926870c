"""Static inputs are found by the trace that compiles the program: a first call traces its graph once."""

import warnings

import aesara
import aesara.tensor as at
import numpy as np
import pytest

import aejax.linker
from aejax.adapters.jax_api import enable_x64
from aejax.linker import ShapeInputWarning
from tests.counting import Halve
from tests.reference import compile_both


def _program(f):
    return f.vm.jit_fn.segments[0].program


def _traces(f, *args):
    """How often ``f(*args)`` traced `Halve`, and its value."""
    Halve.traced = 0
    value = f(*args)
    return Halve.traced, value


def test_a_static_input_costs_the_first_call_one_trace():
    x, n = at.dvector("x"), at.lscalar("n")
    reference, ours = compile_both([x, n], at.alloc(Halve()(x).sum(), n))
    traces, value = _traces(ours, np.ones(4), 3)
    assert traces == 1
    np.testing.assert_array_equal(value, reference(np.ones(4), 3))
    assert _program(ours).static_positions == (1,)
    assert _traces(ours, np.arange(4.0), 3)[0] == 0
    with pytest.warns(ShapeInputWarning, match="'n'"):
        traces, value = _traces(ours, np.arange(4.0), 5)
    assert traces == 1
    np.testing.assert_array_equal(value, reference(np.arange(4.0), 5))


@pytest.mark.parametrize("steps", ["input", "constant"])
def test_a_loops_step_count_input_costs_no_more_tracing_than_a_constant(steps):
    x, n = at.dvector("x"), at.lscalar("n")
    hs, _ = aesara.scan(lambda h: Halve()(h), outputs_info=[x], n_steps=n if steps == "input" else 3)
    f = aesara.function([x, n], hs, mode=aejax.linker.mode, on_unused_input="ignore")
    traces, value = _traces(f, np.ones(2), 3)
    np.testing.assert_allclose(value, [[0.5, 0.5], [0.25, 0.25], [0.125, 0.125]])
    constant = aesara.function(
        [x], aesara.scan(lambda h: Halve()(h), outputs_info=[x], n_steps=3)[0], mode=aejax.linker.mode
    )
    assert traces == _traces(constant, np.ones(2))[0]
    assert _program(f).static_positions == ((1,) if steps == "input" else ())


def test_an_integer_input_that_decides_no_shape_stays_dynamic():
    x, i = at.dvector("x"), at.lscalar("i")
    reference, ours = compile_both([x, i], Halve()(x)[i] * 2)
    values = np.arange(5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShapeInputWarning)
        counts = [_traces(ours, values, i)[0] for i in range(3)]
    assert counts == [1, 0, 0]
    assert _program(ours).static_positions == ()
    np.testing.assert_array_equal(ours(values, 2), reference(values, 2))


def test_inputs_a_size_is_computed_from_are_all_static():
    n, m, k = at.lscalars("n", "m", "k")
    reference, ours = compile_both([n, m, k], at.zeros(n * 2 + m) + k, on_unused_input="ignore")
    for args in [(1, 2, 7), (2, 0, 7), (2, 0, 8)]:
        np.testing.assert_array_equal(ours(*args), reference(*args))
    assert _program(ours).static_positions == (0, 1)


def test_a_program_jax_traces_again_reads_the_same_static_values():
    """JAX traces a kept program again for a weak-typed argument of the same shape: it still knows ``n``."""
    jax = pytest.importorskip("jax")
    x, n = at.dscalar("x"), at.lscalar("n")
    f = aesara.function([x, n], at.alloc(Halve()(x), n), mode=aejax.linker.device_mode)
    with enable_x64(True):
        Halve.traced = 0
        np.testing.assert_array_equal(f(jax.numpy.array(2.0, dtype="float64"), 3), [1.0, 1.0, 1.0])
        weak = jax.numpy.asarray(4.0)
        assert weak.weak_type
        np.testing.assert_array_equal(f(weak, 3), [2.0, 2.0, 2.0])
    assert Halve.traced == 2
    assert len(f.vm.jit_fn.segments) == 1  # not ended early at the alloc for want of ``n``
