"""A graph that runs as several programs is planned by the trace of its first call: each program is traced once."""

import warnings

import aesara
import aesara.tensor as at
import jax.numpy as jnp
import numpy as np
import pytest
from aesara.ifelse import ifelse
from aesara.scan.utils import until
from aesara.tensor.extra_ops import unique

import aejax.linker
from aejax.linker import HostNodeWarning, ShapeInputWarning
from aejax.linker.program.host_node import HostNode
from tests.counting import Halve
from tests.reference import compile_both


def _first_call_traces(f, *args):
    Halve.traced = 0
    value = f(*args)
    return Halve.traced, value


def _halved_until(x):
    """``Halve(x)``, then an until loop counting up to its sum: a trace of run-time length."""
    limit = Halve()(x).sum()
    counts, _ = aesara.scan(
        lambda c, k: (c + 1, until(c + 1 >= k)),
        outputs_info=at.constant(np.float64(0)),
        non_sequences=limit,
        n_steps=100,
    )
    return counts


def test_a_trace_of_run_time_length_splits_the_program_without_tracing_again():
    x = at.dvector("x")
    counts = _halved_until(x)
    reference, ours = compile_both([x], at.dot(counts, counts))
    traces, value = _first_call_traces(ours, np.full(4, 3.0))
    assert traces == 1
    assert len(ours.vm.jit_fn.segments) == 2
    np.testing.assert_allclose(value, reference(np.full(4, 3.0)))
    for size in (2, 5, 9):
        np.testing.assert_allclose(ours(np.full(size, 3.0)), reference(np.full(size, 3.0)))


def test_a_node_of_value_dependent_shape_runs_on_the_host_without_tracing_again():
    x = at.dvector("x")
    reference, ours = compile_both([x], unique(Halve()(x)).sum() * 2)
    with pytest.warns(HostNodeWarning, match="Unique"):
        traces, value = _first_call_traces(ours, np.array([1.0, 3.0, 1.0]))
    assert traces == 1
    assert any(isinstance(segment.program, HostNode) for segment in ours.vm.jit_fn.segments)
    np.testing.assert_allclose(value, reference(np.array([1.0, 3.0, 1.0])))
    with warnings.catch_warnings():
        warnings.simplefilter("error", HostNodeWarning)
        np.testing.assert_allclose(ours(np.arange(5.0)), reference(np.arange(5.0)))


def test_a_size_a_program_computes_is_static_in_the_next_program():
    x = at.dvector("x")
    out = at.zeros(at.cast(Halve()(x).max(), "int64") + 1) + x.sum()
    reference, ours = compile_both([x], out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShapeInputWarning)
        traces, value = _first_call_traces(ours, np.array([4.0, 6.0]))
        assert traces == 1
        assert len(ours.vm.jit_fn.segments) == 2
        np.testing.assert_allclose(value, reference(np.array([4.0, 6.0])))
        for values in ([8.0], [1.0, 2.0, 3.0]):
            np.testing.assert_allclose(ours(np.array(values)), reference(np.array(values)))


def test_an_ifelse_of_branches_of_different_shapes_takes_its_condition_static():
    x, c = at.dvector("x"), at.dscalar("c")
    reference, ours = compile_both([x, c], ifelse(c > 0, Halve()(x), Halve()(x)[:2]) * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShapeInputWarning)
        for condition in (1.0, -1.0, 2.0):
            np.testing.assert_allclose(ours(np.arange(4.0), condition), reference(np.arange(4.0), condition))
    assert len(ours.vm.jit_fn.segments) == 2


def test_a_program_that_ends_early_keeps_its_donated_buffers():
    """A resident shared variable that a graph updates is still there for the program after the first ends."""
    w = aesara.shared(jnp.arange(3.0), name="w")
    counts = _halved_until(w)
    f = aesara.function([], [at.dot(counts, counts), w.sum()], updates={w: w + 1}, mode=aejax.linker.mode)
    for step in range(3):
        values = np.arange(3.0) + step
        halved = np.arange(1.0, np.ceil(values.sum() / 2) + 1)
        np.testing.assert_allclose(f(), [halved @ halved, values.sum()])
