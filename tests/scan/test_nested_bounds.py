"""A loop nested in a step, over a range computed from the step's sequence row, stays in JAX.

aehmc's NUTS has this shape: the loop over tree depths ``d`` (``arange(10)``)
runs in each step the trajectory loop over ``arange(1, 1 + 2 ** d)``, an
``until`` loop. ``d`` is traced in the step, but the outer sequence bounds
it, so the nested loop is a `lax.while_loop` whose trace has as many rows as
the largest range: no host callback, whose shapes would depend on values.
"""

import warnings

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.scan.utils import until

import aejax.linker
from aejax.linker import CallbackWarning, HostNodeWarning
from tests.reference import REFERENCE, assert_matches_reference


def trajectory_step(i, x):
    """``x * i``, until ``i * x > 40``."""
    return x * i, until(at.gt(i * x, 40.0))


def doubling_trajectories(x, stop_of, outer_until=False):
    """For each depth ``d`` of ``arange(5)``: the sum, first row and length of the trace of
    `trajectory_step` over ``i`` in ``arange(1, stop_of(d))``."""

    def depth_step(d, x):
        trace, _ = aesara.scan(trajectory_step, sequences=at.arange(1, stop_of(d)), non_sequences=x)
        outputs = (trace.sum(), trace[0], trace.shape[0])
        return (outputs, until(at.gt(trace.sum(), 1e4))) if outer_until else outputs

    outputs, _ = aesara.scan(depth_step, sequences=at.arange(0, 5), non_sequences=x)
    return outputs


def assert_in_jax_as_reference(inputs, outputs, args, mode=aejax.linker.mode):
    """One jit program, nothing on the host, the reference's values."""
    candidate = aesara.function(inputs, outputs, mode=mode)
    reference = aesara.function(inputs, outputs, mode=REFERENCE)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CallbackWarning)
        warnings.simplefilter("error", HostNodeWarning)
        got = candidate(*args)
    assert len(candidate.vm.jit_fn.segments) == 1
    for e, g in zip(reference(*args), got):
        assert np.asarray(g).dtype == np.asarray(e).dtype
        np.testing.assert_allclose(g, e, rtol=1e-12)
    return got


@pytest.mark.parametrize("x_value", [1.5, 20.0])
def test_trajectory_over_two_to_the_depth_kept_in_the_step(x_value):
    """``1 + 2 ** d`` stays in the step (as in aehmc's NUTS, where it is used twice): the bound
    of a power of a row of ``arange(5)``. With ``x = 1.5`` the longest trace fills its buffer."""
    x = at.dscalar("x")
    outputs = doubling_trajectories(x, lambda d: 1 + 2**d, outer_until=True)
    mode = aejax.linker.mode.excluding("scan_pushout_seqs_ops")
    *_, lengths = assert_in_jax_as_reference([x], outputs, [x_value], mode=mode)
    if x_value == 1.5:
        np.testing.assert_array_equal(lengths, [1, 2, 4, 8, 16])


@pytest.mark.parametrize("stop_of", [lambda d: 1 + 2**d, lambda d: d + 3], ids=["power", "sum"])
def test_trajectory_over_a_range_pushed_out_of_the_step(stop_of):
    """Aesara computes ``stop_of(d)`` before the loop, as a constant sequence: its rows' bound is its largest element."""
    x = at.dscalar("x")
    _, firsts, lengths = assert_in_jax_as_reference([x], doubling_trajectories(x, stop_of), [1.5])
    np.testing.assert_array_equal(firsts, np.full(5, 1.5))
    assert lengths[-1] == max(stop_of(d) for d in range(5)) - 1  # the longest trace as long as its buffer


def test_a_trace_whose_length_must_be_known_in_the_step_runs_the_loop_on_the_host():
    """``dot(trace, trace)`` needs the nested trace's length, and no program splits inside a loop:
    the loop runs on the host with Aesara's implementation, as when the trace had no bound."""
    x = at.dscalar("x")

    def depth_step(d, x):
        trace, _ = aesara.scan(trajectory_step, sequences=at.arange(1, d), non_sequences=x)
        return at.dot(trace, trace)

    out, _ = aesara.scan(depth_step, sequences=at.as_tensor(np.array([3, 7])), non_sequences=x)
    with pytest.warns(CallbackWarning, match="has a step whose shapes depend on its values"):
        assert_matches_reference([x], out, 1.5)
